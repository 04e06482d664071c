// Package actors is the vocabulary of thatch's entity kinds: the Kind
// contract, the Decision a kind returns, the timer and Send effects, and
// the Clock. The kinds themselves live in its subpackages (ocfamily,
// ocregistry, sweeper, imbinding); the runtime that drives them is in
// supervisor.
//
// Every long-lived thing thatch looks after (an opencode session family, an
// IM binding, a sweeper) is an entity named by a stable Identity that owns
// its state. A kind is a pure decision core:
//
//	Decide(state, msg, now) -> Decision{Events, Effects, Reply, Unhandled}
//	Apply(state, event)     -> state
//
// The runtime applies a decision's events to the state at once (the next
// message sees them) and journals them behind, fsync'd; it releases the
// reply and the effects only once those events are durable, in the order
// the messages were handled (write-behind). A restarted or woken entity
// rebuilds its state from its latest snapshot plus the journal and then
// receives Recovered, where it reconciles with the outside world.
//
// # Imports
//
// actors and its subpackages may import messages and the standard library
// only: no persistence, no protoactor, no net/http, no front end. The
// dependency closure is checked by the root package's boundaries test.
package actors
