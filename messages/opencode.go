package messages

import "encoding/json"

// This file holds the messages that reach opencode session entities (from a
// host actor or from the plugin's control API) and the effects that those
// entities ask the host to carry out. Messages are named after what happened,
// effects after what must be done. Every field that names a session carries
// the opencode session id ("ses_...").

// Interaction is one buffered tool call of a session.
type Interaction struct {
	// ID is unique within the session; the plugin uses opencode's callID.
	ID        string          `json:"id"`
	SessionID string          `json:"sessionID"`
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args,omitempty"`
	Title     string          `json:"title,omitempty"`
	Output    string          `json:"output,omitempty"`
}

// SessionCreated is opencode's session.created (or a session first seen while
// reconciling). ParentID is empty for a top-level session.
type SessionCreated struct {
	Host      string `json:"host"`
	SessionID string `json:"sessionID"`
	ParentID  string `json:"parentID,omitempty"`
	Title     string `json:"title,omitempty"`
	Directory string `json:"directory,omitempty"`
}

// SessionIdle is opencode's session.idle, or session.status with type idle.
type SessionIdle struct {
	Host      string `json:"host"`
	SessionID string `json:"sessionID"`
}

// SessionErrored is opencode's session.error for a session.
type SessionErrored struct {
	Host      string `json:"host"`
	SessionID string `json:"sessionID"`
	Error     string `json:"error,omitempty"`
}

// SessionDeleted is opencode's session.deleted.
type SessionDeleted struct {
	Host      string `json:"host"`
	SessionID string `json:"sessionID"`
}

// SessionCompacted is opencode's session.compacted.
type SessionCompacted struct {
	Host      string `json:"host"`
	SessionID string `json:"sessionID"`
}

// ToolExecuted comes from the plugin's tool.execute.after hook.
type ToolExecuted struct {
	Host        string      `json:"host"`
	Interaction Interaction `json:"interaction"`
}

// CommandExecuting comes from the plugin's command.execute.before hook.
// Command is the command name without the leading slash, e.g. "thatch/exit".
type CommandExecuting struct {
	Host      string `json:"host"`
	SessionID string `json:"sessionID"`
	Command   string `json:"command"`
	Arguments string `json:"arguments,omitempty"`
}

// FetchPayload is the thatch_get_extraction_payload tool, called by the model
// in session CallerID. TargetID is the tool's optional session_id argument.
// The reply is *PayloadFetched.
type FetchPayload struct {
	CallerID string `json:"callerID"`
	TargetID string `json:"targetID,omitempty"`
}

// PayloadFetched answers FetchPayload. Interactions is empty (and the tool
// returns null) when nothing was pending.
type PayloadFetched struct {
	ParentID     string        `json:"parentID"`
	Interactions []Interaction `json:"interactions"`
	// Note, when not empty, tells the extractor that it sees only the
	// newest interactions: older ones were dropped by the buffer limit.
	Note string `json:"note,omitempty"`
}

// ExtractionDone is the thatch_extraction_done tool, called in CallerID.
// The reply is *ExtractionAcked.
type ExtractionDone struct {
	CallerID string `json:"callerID"`
}

// ExtractionAcked answers ExtractionDone with how many entries it completed.
type ExtractionAcked struct {
	Completed int `json:"completed"`
}

// MemoryOp says what a memory tool call did.
type MemoryOp string

const (
	MemoryCreated MemoryOp = "new"
	MemoryUpdated MemoryOp = "updated"
	MemoryDeleted MemoryOp = "deleted"
)

// MemoryWritten is sent after memory_remember or memory_forget succeeded in
// session CallerID. No reply.
type MemoryWritten struct {
	CallerID string   `json:"callerID"`
	Op       MemoryOp `json:"op"`
}

// HostSession is one session as the host lists it while reconciling.
type HostSession struct {
	SessionID string `json:"sessionID"`
	ParentID  string `json:"parentID,omitempty"`
	Title     string `json:"title,omitempty"`
	Directory string `json:"directory,omitempty"`
	// Busy is true when the host's status map lists the session as busy or
	// retrying; idle sessions are absent from that map.
	Busy bool `json:"busy"`
}

// FamilyReconciled tells a parent entity what the host lists for it and its
// children after a (re)connect. Present is false when the parent itself is
// no longer listed.
type FamilyReconciled struct {
	Host     string        `json:"host"`
	Present  bool          `json:"present"`
	Parent   HostSession   `json:"parent"`
	Children []HostSession `json:"children"`
}

// Effect results: the executor sends these back to the entity that asked.

// FailReason says why an effect failed, so that a decision can tell a
// session the host no longer has from a call that timed out. It is empty
// on success; a result whose Err is set and whose Reason is empty comes
// from an older journal and counts as FailOther.
type FailReason string

// The reasons a host call fails.
const (
	// FailNotFound: the host answered that the session does not exist.
	FailNotFound FailReason = "not_found"
	// FailTimeout: no answer within the request timeout (or the daemon
	// stopping cancelled the call).
	FailTimeout FailReason = "timeout"
	// FailUnreachable: the host is not connected.
	FailUnreachable FailReason = "unreachable"
	// FailUnsupported: the host's API cannot do this (opencode's v2
	// surface has no child sessions).
	FailUnsupported FailReason = "unsupported"
	// FailOther: any other failure; Err says what.
	FailOther FailReason = "other"
	// FailPaused: the call was not made: extraction is paused for the
	// session's memory store (its daily token budget is reached). Nothing
	// failed; the work waits.
	FailPaused FailReason = "paused"
)

// ChildSessionCreated answers CreateChildSession. Err is set on failure.
type ChildSessionCreated struct {
	ParentID string     `json:"parentID"`
	ChildID  string     `json:"childID,omitempty"`
	Err      string     `json:"err,omitempty"`
	Reason   FailReason `json:"reason,omitempty"`
}

// SessionPrompted answers PromptSession. Err is set on failure.
type SessionPrompted struct {
	SessionID string     `json:"sessionID"`
	Err       string     `json:"err,omitempty"`
	Reason    FailReason `json:"reason,omitempty"`
}

// SessionExitIssued answers ExitSession once the close was sent to the
// host. Err is set on failure.
type SessionExitIssued struct {
	SessionID string     `json:"sessionID"`
	Err       string     `json:"err,omitempty"`
	Reason    FailReason `json:"reason,omitempty"`
}

// SessionCompactIssued answers CompactSession once the host was asked to
// compact. Err is set on failure: the family then stops waiting for a
// session.compacted that will not come.
type SessionCompactIssued struct {
	SessionID string     `json:"sessionID"`
	Err       string     `json:"err,omitempty"`
	Reason    FailReason `json:"reason,omitempty"`
}

// MessagesFetched answers FetchMessages with the text of the final assistant
// message. Err is set when the messages could not be read.
type MessagesFetched struct {
	SessionID string `json:"sessionID"`
	// Check is FetchMessages.Check, echoed.
	Check              uint64     `json:"check,omitempty"`
	FinalAssistantText string     `json:"finalAssistantText"`
	Err                string     `json:"err,omitempty"`
	Reason             FailReason `json:"reason,omitempty"`
}

// Effects: what an opencode session entity asks its host to do.

// CreateChildSession creates a session with ParentID and Title on Host. The
// executor first checks whether a child with that title already exists
// under the parent (a repeat after a crash) and reuses it.
type CreateChildSession struct {
	Host     string `json:"host"`
	ParentID string `json:"parentID"`
	Title    string `json:"title"`
}

// PromptSession posts a prompt. NoReply prompts carry a synthetic text part
// and start no turn; the others are sent with prompt_async.
type PromptSession struct {
	Host      string `json:"host"`
	SessionID string `json:"sessionID"`
	Text      string `json:"text"`
	NoReply   bool   `json:"noReply"`
}

// SendStartReminder posts the session-start reminder (noReply, synthetic),
// with the hygiene heartbeat for Directory's stores when it is non-zero.
type SendStartReminder struct {
	Host      string `json:"host"`
	SessionID string `json:"sessionID"`
	Directory string `json:"directory,omitempty"`
}

// DeleteSession deletes a session on the host.
type DeleteSession struct {
	Host      string `json:"host"`
	SessionID string `json:"sessionID"`
}

// ShowToast shows a toast in the host's TUI. Variant is info, success,
// warning or error.
type ShowToast struct {
	Host    string `json:"host"`
	Title   string `json:"title,omitempty"`
	Message string `json:"message"`
	Variant string `json:"variant"`
}

// FetchMessages reads a session's messages; the answer is MessagesFetched.
type FetchMessages struct {
	Host      string `json:"host"`
	SessionID string `json:"sessionID"`
	// Check numbers the wrap-up check the fetch is for; the answer echoes
	// it, so that a repeated fetch's late answer cannot end a later check.
	Check uint64 `json:"check,omitempty"`
}

// CompactSession starts the host's compaction of the session. The executor
// answers with SessionCompactIssued.
type CompactSession struct {
	Host      string `json:"host"`
	SessionID string `json:"sessionID"`
}

// ExitSession closes the session's host (the TUI's app.exit). The executor
// must answer with SessionExitIssued: the family keeps the exit pending
// (and tries again when the host reconnects) until it does.
type ExitSession struct {
	Host      string `json:"host"`
	SessionID string `json:"sessionID"`
}

// RecordFamilyDeleted notes, as runtime state, that a parent session was
// deleted and its family is a tombstone. The runtime-state sweep forgets
// the family's journal once the note is older than the state's lifetime.
// Recording it again keeps the first note's time. The executor answers
// with DeletionNoted once the note is stored.
type RecordFamilyDeleted struct {
	SessionID string `json:"sessionID"`
}

// DeletionNoted answers RecordFamilyDeleted.
type DeletionNoted struct {
	SessionID string `json:"sessionID"`
}

// StaleSweep is sent by the stale reaper to every family with unfinished
// work: accepted entries older than the stale window return to pending, a
// child create or a wrap-up check whose answer has not come within that
// window is given up, and an extraction child that hangs is deleted.
type StaleSweep struct{}
