// Package actors holds thatch's entity runtime and its actor kinds.
//
// Every long-lived thing thatch looks after (a parent session, an IM
// binding, a sweeper) is an entity: a protoactor actor named by a stable
// Identity that owns its state. An entity kind is a pure decision core:
//
//	Decide(state, msg, now) -> Decision{Events, Effects, Reply}
//	Apply(state, event)     -> state
//
// The runtime journals the events (fsync'd) before it applies them, replies,
// or hands effects to an Executor. A restarted or woken entity rebuilds its
// state from its latest snapshot plus the journal and then receives
// Recovered, where it reconciles with the outside world.
//
// # Imports
//
// actors may import messages and persistence (for the journal interface and
// identities), protoactor-go and hclog. It must not import net/http, Pebble,
// hosts or im: effects leave through the Executor interface.
package actors
