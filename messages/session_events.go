package messages

import "time"

// This file holds the events that an opencode session family journals. A
// family is one top-level session together with its children (extraction
// children and task sub-agents); its entity is named after the top-level
// session. Events record decisions already made: they carry the exact entry
// numbers that moved, so that replaying them needs no configuration and
// always rebuilds the same state.
//
// Entry numbers (Seq) are unique within a family and never reused. An entry
// is one buffered Interaction.

// FamilyHostSeen is no longer written: the opencode registry owns which
// server serves a family. Journals written before that still hold it, and
// it decodes and replays as a no-op.
type FamilyHostSeen struct {
	Host string `json:"host"`
}

// FamilyParentCreated records that the top-level session was created. The
// start reminder is sent once, on the first of these. Directory is no
// longer written (the registry owns it); old journals may hold it, and it
// is ignored.
type FamilyParentCreated struct {
	Directory string `json:"directory,omitempty"`
}

// FamilyChildRecorded records a child session of the family. Extraction is
// true for a child titled thatch-extraction; any other child is a task
// sub-agent.
type FamilyChildRecorded struct {
	ChildID    string `json:"childID"`
	Title      string `json:"title,omitempty"`
	Extraction bool   `json:"extraction,omitempty"`
}

// FamilyInteractionBuffered appends one interaction (already truncated for
// the journal) to the buffer of SessionID: the parent's pending queue or a
// child's own buffer. Dropped lists the entries of that buffer dropped to
// make room, oldest first; they are gone for good.
type FamilyInteractionBuffered struct {
	SessionID   string      `json:"sessionID"`
	Seq         uint64      `json:"seq"`
	Interaction Interaction `json:"interaction"`
	Dropped     []uint64    `json:"dropped,omitempty"`
}

// FamilyPayloadClaimed moves the listed pending entries (all that were
// pending) into the claim of FetcherID, accepted at At. Seqs may be empty:
// a child that fetched nothing still counts as having fetched.
type FamilyPayloadClaimed struct {
	FetcherID string    `json:"fetcherID"`
	Seqs      []uint64  `json:"seqs,omitempty"`
	At        time.Time `json:"at"`
}

// Causes of FamilyClaimCompleted.
const (
	CompletedByAck      = "ack"      // thatch_extraction_done with a claim
	CompletedByFallback = "fallback" // done-ack from a child that never fetched
	CompletedByIdle     = "idle"     // the fetcher went idle (or was finished)
	CompletedByMemory   = "memory"   // memory_remember/forget by a claiming child
)

// FamilyClaimCompleted completes the listed accepted entries. Normally they
// are exactly FetcherID's claim; with Cause CompletedByFallback they are the
// parent's whole accepted set, whoever held them.
type FamilyClaimCompleted struct {
	FetcherID string   `json:"fetcherID"`
	Seqs      []uint64 `json:"seqs"`
	Cause     string   `json:"cause"`
}

// FamilyEntriesRequeued returns the listed accepted entries to pending. They
// keep their entry numbers, so they go ahead of newer pending entries.
type FamilyEntriesRequeued struct {
	Seqs  []uint64 `json:"seqs"`
	Cause string   `json:"cause"`
}

// FamilyMemoryCounted counts one memory write of a child for its toast.
type FamilyMemoryCounted struct {
	ChildID string   `json:"childID"`
	Op      MemoryOp `json:"op"`
	// At is when the write was made (zero in journals older than it).
	At time.Time `json:"at,omitzero"`
}

// FamilyExtractionStarted sets the extracting flag: a CreateChildSession is
// on its way. While the flag is set no other extraction starts.
type FamilyExtractionStarted struct {
	At time.Time `json:"at"`
}

// FamilyExtractionChildAttached records the created extraction child of the
// running extraction (and records the child if it is not yet known).
type FamilyExtractionChildAttached struct {
	ChildID string `json:"childID"`
	// At is when the child was attached: the extraction's stale window
	// runs from then (zero in journals older than it).
	At time.Time `json:"at,omitzero"`
}

// FamilyExtractionStopped clears the extracting flag (and the attached
// child), so that the parent's next idle may start a new extraction.
type FamilyExtractionStopped struct {
	Cause string `json:"cause"`
}

// FamilyChildCleared forgets a child: its record, its own buffer (whose
// entries are discarded), its toast counts and any finish mark.
type FamilyChildCleared struct {
	ChildID string `json:"childID"`
	Cause   string `json:"cause"`
}

// FamilyCompactionStarted sets the compacting flag; no extraction starts
// while it is set.
type FamilyCompactionStarted struct{}

// FamilyCompactionFinished clears the compacting flag.
type FamilyCompactionFinished struct{}

// FamilyWrapUpArmed arms the parent's wrap-up: on its next idle the final
// assistant text is checked for Token. Kind is "compact" or "exit".
type FamilyWrapUpArmed struct {
	Kind  string `json:"kind"`
	Token string `json:"token"`
}

// FamilyWrapUpCheckStarted marks the armed wrap-up's check in flight (a
// FetchMessages effect was issued); the idle handling resumes on its result.
type FamilyWrapUpCheckStarted struct {
	// At is when the check started (zero in journals older than it).
	At time.Time `json:"at,omitzero"`
}

// FamilyWrapUpCheckFinished ends a check that did not greenlight the
// wrap-up; it stays armed for the next idle.
type FamilyWrapUpCheckFinished struct {
	Cause string `json:"cause"`
}

// FamilyWrapUpDisarmed removes the armed wrap-up.
type FamilyWrapUpDisarmed struct {
	Cause string `json:"cause"`
}

// FamilyExitGreenlit records that /thatch/exit was greenlit at At: the
// session's watcher deaths, its chat unregistration and its close are
// issued, and issued again if the close does not go out and the host
// reconnects within the family's exit window.
type FamilyExitGreenlit struct {
	At time.Time `json:"at"`
}

// FamilyDeletionNoted records that the runtime-state note of the family's
// deletion is stored: the tombstone needs nothing more and is no longer
// rehydrated on start.
type FamilyDeletionNoted struct{}

// FamilyExitFinished ends a greenlit exit: the close went out, or the exit
// window ended without it and the session was left open.
type FamilyExitFinished struct {
	Cause string `json:"cause"`
}

// FamilyFinishScheduled marks an extraction child found idle after a
// reconnect: it is finished as if it went idle when the grace timer fires.
type FamilyFinishScheduled struct {
	ChildID string `json:"childID"`
}

// FamilyFinishCancelled removes a finish mark (the child turned out busy).
type FamilyFinishCancelled struct {
	ChildID string `json:"childID"`
}

// FamilyParentDeleted turns the family into a tombstone. Completed lists the
// accepted entries taken with the parent, Dropped the pending ones.
type FamilyParentDeleted struct {
	Completed []uint64 `json:"completed,omitempty"`
	Dropped   []uint64 `json:"dropped,omitempty"`
}

func init() {
	Register[FamilyHostSeen]("session.host_seen", 1)
	Register[FamilyParentCreated]("session.parent_created", 1)
	Register[FamilyChildRecorded]("session.child_recorded", 1)
	Register[FamilyInteractionBuffered]("session.interaction_buffered", 1)
	Register[FamilyPayloadClaimed]("session.payload_claimed", 1)
	Register[FamilyClaimCompleted]("session.claim_completed", 1)
	Register[FamilyEntriesRequeued]("session.entries_requeued", 1)
	Register[FamilyMemoryCounted]("session.memory_counted", 1)
	Register[FamilyExtractionStarted]("session.extraction_started", 1)
	Register[FamilyExtractionChildAttached]("session.extraction_child_attached", 1)
	Register[FamilyExtractionStopped]("session.extraction_stopped", 1)
	Register[FamilyChildCleared]("session.child_cleared", 1)
	Register[FamilyCompactionStarted]("session.compaction_started", 1)
	Register[FamilyCompactionFinished]("session.compaction_finished", 1)
	Register[FamilyWrapUpArmed]("session.wrapup_armed", 1)
	Register[FamilyWrapUpCheckStarted]("session.wrapup_check_started", 1)
	Register[FamilyWrapUpCheckFinished]("session.wrapup_check_finished", 1)
	Register[FamilyWrapUpDisarmed]("session.wrapup_disarmed", 1)
	Register[FamilyExitGreenlit]("session.exit_greenlit", 1)
	Register[FamilyExitFinished]("session.exit_finished", 1)
	Register[FamilyDeletionNoted]("session.deletion_noted", 1)
	Register[FamilyFinishScheduled]("session.finish_scheduled", 1)
	Register[FamilyFinishCancelled]("session.finish_cancelled", 1)
	Register[FamilyParentDeleted]("session.parent_deleted", 1)
}
