// Package ocfamily is the pure decision core of an opencode session family:
// one top-level (parent) session together with its extraction children and
// task sub-agents. It decides what to journal and what the host must do; it
// does no I/O, reads no clock and starts no goroutines. The entity runtime
// in package supervisor drives it, and the opencode front end
// (hosts/opencode/front) carries out its effects.
//
// # Imports
//
// ocfamily may import actors (for the Kind contract and the timer effects)
// and messages. It must not import persistence, hosts, im, net/http or
// Pebble.
//
// # Model
//
// A family's entity is named after the parent session id and owns every
// fact about the family:
//
//   - the parent's pending buffer: tool interactions waiting for extraction,
//     each with a family-unique entry number;
//   - the claims: which entries each fetcher (a session that called
//     thatch_get_extraction_payload) received and has not yet completed;
//   - the children, each an extraction child (titled thatch-extraction) or a
//     task sub-agent, with its own small buffer and its toast counts;
//     which family a child belongs to is the registry's fact
//     (actors/ocregistry);
//   - the flags: extracting (and which child), compacting, an armed
//     /thatch/compact or /thatch/exit wrap-up.
//
// The host and directory a family lives on are the registry's facts too:
// the family keeps neither, and its effects name no host (their Host is
// left empty, but for the start reminder's, which names the host of the
// session.created it answers). The front end sends each effect to the host
// the registry records for the family that released it. Events of an
// older thatch that carried a host or a directory (FamilyHostSeen,
// FamilyParentCreated.Directory) still decode, and replay ignores what
// they say of them.
//
// Every interaction the family buffered is at any moment pending, accepted
// under exactly one claim, completed, taken with the deleted parent, or
// dropped on overflow. Only a claim's own fetcher completes it; the one
// exception is the explicit done-ack of a child that never fetched, which
// completes the parent's whole accepted set.
//
// # Incidents and cost
//
// What goes wrong with extraction is shown to the user once per incident
// (IncidentRecorded, journaled with its toast): an extraction that could
// not start (the child's create or prompt failed, or no child came within
// the stale window), an extraction child that errored or was given up on
// as hung, and interactions the buffer limit dropped. While an incident
// of a kind is open, retries failing the same way record nothing more; a
// completed extraction (or, for drops, the next fetch) closes it. The
// parent's drops are counted (Dropped, DroppedSinceFetch), and the next
// extractor is told it sees only a tail, in its prompt and its payload's
// Note. Each payload's size is journaled (PayloadMeasured) and handed to
// the front end (RecordExtractionCost), which keeps the cost per store and
// enforces memory.daily_budget_tokens: a create it refuses for the budget
// (messages.FailPaused) stops the extraction with everything still
// pending, and records no incident (the front end toasts once per store
// and day).
//
// # Example
//
//	k := ocfamily.New(ocfamily.Config{})
//	s := k.Initial("ses_parent")
//	d := k.Decide(s, &messages.SessionIdle{Host: "h", SessionID: "ses_parent"}, now)
//	for _, ev := range d.Events {
//		s = k.Apply(s, ev) // the runtime applies at once, journals behind
//	}
//	// once those events are durable: d.Effects to the executor, then
//	// d.Reply to the sender
package ocfamily
