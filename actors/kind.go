package actors

import (
	"time"

	"github.com/thatch-run/thatch/messages"
)

// Identity names an entity (see messages.Identity).
type Identity = messages.Identity

// Decision is what a kind's pure Decide returns for one message. The entity
// runtime carries it out in this order:
//
//  1. Each event is encoded and folded into the state with Apply at once,
//     so that the next message is decided on the state it makes.
//  2. The events are appended to the journal behind (write-behind: one
//     fsync'd append in flight per entity; the events of messages handled
//     meanwhile go in the next one). If an append fails, nothing decided
//     since the last durable one is released, and the actor fails: its
//     supervisor restarts it from the journal and the messages are
//     handled again.
//  3. Once the append that holds its events has landed, the effects are
//     handed, in order, to the executor, and then Reply, if not nil, is
//     sent to the message's sender. Neither happens before the events that
//     caused them are durable; outputs are released in handling order.
type Decision struct {
	// Events to journal. Each must be a pointer to a type registered with
	// messages.Register. Default: none.
	Events []any
	// Effects to execute after the events are durable. Default: none.
	Effects []any
	// Reply to the sender (a requester's future). Default: no reply.
	Reply any
	// Unhandled marks a message of a type the kind does not handle at all
	// (protoactor would drop a value sent where a pointer is expected
	// without a word). The runtime logs and counts it, and a requester
	// gets a rejection, never an acknowledgement. Events and effects must
	// be empty. Default: false.
	Unhandled bool
}

// Kind is one entity kind: its name and its pure decision core. Decide and
// Apply must be deterministic: no I/O, no clock, no goroutines, no globals.
// S is the state type, registered with messages.Register so that snapshots
// use the versioned encoding.
type Kind[S any] interface {
	// Name is the kind part of the entities' identities, e.g. "opencode.session".
	Name() string
	// Initial is the state of an entity that has no snapshot and no events.
	Initial(id string) *S
	// Decide turns one message into a Decision. It must not change s.
	Decide(s *S, msg any, now time.Time) Decision
	// Apply folds one journaled event into the state and returns the new
	// state. It is used both live and during replay, so it must not fail:
	// an event was valid when it was journaled.
	Apply(s *S, ev any) *S
	// Active reports whether s has unfinished work (an extraction in flight,
	// an armed wrap-up, a prompt waiting for a user). Active entities are
	// rehydrated when the daemon starts; the others stay passivated until
	// their first message.
	Active(s *S) bool
}

// EffectLister is a Kind that names the effects it releases, a value of
// each type (a nil pointer will do), besides StartTimer, CancelTimer and
// Send: the runtime then refuses to start without a handler for each,
// instead of dropping the effect when it is first released.
type EffectLister interface {
	Effects() []any
}

// Recovered is delivered to an entity right after it rebuilt its state from
// its snapshot and journal, before any other message. A kind reconciles here:
// it re-arms timers and re-issues effects whose results may have been lost.
type Recovered struct {
	// Restarted is true when the actor failed and was restarted, false when
	// it was spawned (first use, rehydration, wake from passivation).
	Restarted bool
	// Events is how many journaled events were replayed on top of the snapshot.
	Events int
}

// Tick is the message a timer delivers. Kinds schedule it with the
// StartTimer effect; Name tells timers apart.
type Tick struct {
	Name string
}

// StartTimer is an effect: deliver &Tick{Name} to this entity after After,
// as measured by the runtime's clock. Timers do not survive passivation or a
// crash; a kind re-arms them when it handles Recovered. Starting a timer
// with the name of a running one replaces it.
type StartTimer struct {
	Name  string
	After time.Duration
}

// CancelTimer is an effect that stops the named timer, if it runs.
type CancelTimer struct {
	Name string
}

// Send is an effect: deliver Msg to the entity To (spawning it if needed).
// Delivery is at most once; a kind that needs more re-sends on Recovered.
type Send struct {
	To  Identity
	Msg any
}

// Executor runs the effects that the runtime itself does not handle
// (everything but StartTimer, CancelTimer and Send). Execute must not block:
// it starts the work and returns. Results come back as messages delivered
// through the Sender the executor was built with.
type Executor interface {
	Execute(from Identity, effect any)
}

// Sender delivers a message to an entity by identity, spawning it from
// storage if it is passivated.
type Sender interface {
	Send(to Identity, msg any)
}

// Clock is the runtime's source of time. Tests use a fake clock.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d; Stop prevents it.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	Stop() bool
}

// Viewer is implemented by kinds that can show their state to a person
// (`thatch status`). View must not change s.
type Viewer[S any] interface {
	View(s *S) any
}
