// Package supervisor builds thatch's supervision tree and owns the entities'
// life cycle: root, then one supervisor per entity kind, then the entities.
//
// # What it does
//
//   - Routes a message to an entity by identity, spawning the entity (named
//     by its id, so the name survives restarts) when it is not live.
//   - Restarts a failed entity with exponential backoff and jitter, within
//     Erlang-style restart intensity (at most MaxRestarts within Window);
//     past that the entity is stopped and comes back on its next message.
//   - Passivates idle entities: an entity asks to stop, its supervisor stops
//     it after every message already routed to it, and holds messages that
//     arrive meanwhile until it can respawn it. One writer per entity, always.
//   - On start (and when a kind supervisor itself restarts) it scans the
//     journal index and rehydrates every entity marked active (unfinished
//     work); the others stay passivated until their first message.
//
// # The message that crashed an actor
//
// protoactor drops the message whose handling panicked. thatch does not: the
// entity keeps it across the restart, replays its journal, and handles it
// again (MaxRedeliveries times, default 1). A message that fails again is a
// poison message: it is dropped, logged, recorded in the tree's last errors,
// and a requester gets *Rejected instead of waiting for a timeout.
//
// # The entity runtime
//
// Entity adapts a pure actors.Kind to protoactor (entity.go): it applies a
// decision's events at once and journals them behind, one append in
// flight per entity, and releases replies and effects only once their
// events are durable, in handling order (write-behind). A kind that marks
// a message Unhandled gets it logged and counted (Tree.UnknownMessages),
// and a requester gets *Rejected, never an acknowledgement.
//
// # Effects
//
// The tree is the entities' executor: every effect that is not a timer or
// a Send is dispatched by its Go type to the Handler registered for it
// (Options.Effects, from the front ends), on a FIFO per entity, and the
// handler's result is sent back to the entity. Tree.Quiesce waits until
// everything released so far has run.
//
// # Imports
//
// supervisor may import actors, persistence, messages, protoactor and hclog.
// It must not depend on a front end (hosts, im) or on config.
package supervisor
