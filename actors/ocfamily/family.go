package ocfamily

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// KindName is the kind part of a family entity's identity; the id part is
// the parent session id.
const KindName = "opencode.session"

// finishTimerPrefix names the grace timer of a child found idle after a
// reconnect: "finish:" + child id.
const finishTimerPrefix = "finish:"

// exitTimer ends a greenlit /thatch/exit whose close did not go out within
// ExitRetryWindow.
const exitTimer = "exit"

// Config tunes a Family. A zero field takes its default from DefaultConfig.
type Config struct {
	// BufferLimit is how many interactions a session's buffer holds; a new
	// one beyond it drops the oldest. Default: 20.
	BufferLimit int
	// StaleAfter is how long an accepted entry may wait for its completion
	// before the parent's next idle returns it to pending. Default: 15m.
	StaleAfter time.Duration
	// FinishGrace is how long an extraction child found idle after a
	// reconnect is given before it is finished. Default: 10s; NoGrace
	// finishes it at once.
	FinishGrace time.Duration
	// JournalOutputLimit cuts output and top-level string args, in
	// characters, before an interaction is journaled. Default: 2000.
	JournalOutputLimit int
	// PayloadOutputLimit cuts output in the payload an extractor receives.
	// Default: 500.
	PayloadOutputLimit int
	// PayloadArgsLimit is the length of the args summary in the payload.
	// Default: 120.
	PayloadArgsLimit int
	// ExitRetryWindow is how long after a greenlit /thatch/exit the family
	// still closes the session when the close did not go out (thatch
	// restarted, or the host was unreachable): it issues the exit again
	// when the host reconnects. Later, the user may have gone on working
	// in the session, so it is left open and the user told to run the
	// command again. Default: 2m.
	ExitRetryWindow time.Duration
}

// DefaultConfig returns the defaults the issue sets.
func DefaultConfig() Config {
	return Config{
		BufferLimit:        20,
		StaleAfter:         15 * time.Minute,
		FinishGrace:        10 * time.Second,
		JournalOutputLimit: 2000,
		PayloadOutputLimit: 500,
		PayloadArgsLimit:   120,
		ExitRetryWindow:    2 * time.Minute,
	}
}

// Family is the opencode session family kind. It implements
// actors.Kind[State]; it holds only configuration, so one value serves
// every family and is safe for concurrent use.
type Family struct {
	cfg Config
}

var _ actors.Kind[State] = (*Family)(nil)

// NoGrace, as Config.FinishGrace, finishes an idle child at once (a zero
// FinishGrace takes the default).
const NoGrace time.Duration = -1

// New returns the family kind with cfg; zero fields take their defaults.
func New(cfg Config) *Family {
	def := DefaultConfig()
	grace := cfg.FinishGrace
	cfg.BufferLimit = orDefault(cfg.BufferLimit, def.BufferLimit)
	cfg.StaleAfter = orDefault(cfg.StaleAfter, def.StaleAfter)
	cfg.FinishGrace = orDefault(cfg.FinishGrace, def.FinishGrace)
	cfg.JournalOutputLimit = orDefault(cfg.JournalOutputLimit, def.JournalOutputLimit)
	cfg.PayloadOutputLimit = orDefault(cfg.PayloadOutputLimit, def.PayloadOutputLimit)
	cfg.PayloadArgsLimit = orDefault(cfg.PayloadArgsLimit, def.PayloadArgsLimit)
	cfg.ExitRetryWindow = orDefault(cfg.ExitRetryWindow, def.ExitRetryWindow)
	if grace == NoGrace {
		cfg.FinishGrace = 0
	}
	return &Family{cfg: cfg}
}

// orDefault is v, or def when v is not positive.
func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Config returns the configuration in effect, defaults filled in.
func (f *Family) Config() Config { return f.cfg }

// Name returns KindName.
func (f *Family) Name() string { return KindName }

// Effects are the effects a family releases (actors.EffectLister).
func (f *Family) Effects() []any {
	return []any{
		(*RecordExtractionCost)(nil), (*messages.CompactSession)(nil), (*messages.CreateChildSession)(nil),
		(*messages.DeleteSession)(nil), (*messages.ExitSession)(nil), (*messages.FetchMessages)(nil),
		(*messages.PromptSession)(nil), (*messages.RecordFamilyDeleted)(nil), (*messages.SendStartReminder)(nil),
		(*messages.ShowToast)(nil),
	}
}

// Initial returns the empty family of parent session id.
func (f *Family) Initial(id string) *State { return &State{ID: id} }

// Active reports unfinished work that the runtime must keep track of
// without any message from the host: it is rehydrated on start and swept
// by the stale reaper. That is an extraction, a running wrap-up check, a
// greenlit exit not yet issued, an outstanding claim (which may go stale)
// or a pending finish timer, and for a tombstone its missing sweep note.
// An armed wrap-up that is not being checked waits for the parent's next
// idle, which wakes the family anyway.
func (f *Family) Active(s *State) bool {
	if s.Deleted {
		return !s.DeletionNoted
	}
	return s.Extracting || (s.WrapUp != nil && s.WrapUp.Checking) || !s.ExitingSince.IsZero() || len(s.Claims) > 0 || s.finishing()
}

// Decide turns one message into events, effects and a reply. It never
// changes s. Messages that do not concern this family yield an empty
// Decision; a message of a type it does not handle at all (a value where a
// pointer is expected, another kind's message) is marked Unhandled.
func (f *Family) Decide(s *State, msg any, now time.Time) actors.Decision {
	d := newDecider(f, s, now)
	switch m := msg.(type) {
	case *messages.FetchPayload:
		d.fetch(m)
	case *messages.ExtractionDone:
		d.done(m)
	default:
		if s.Deleted {
			return d.tombstone(msg)
		}
		if !d.live(msg) {
			return actors.Decision{Unhandled: true}
		}
	}
	return d.Decision()
}

// tombstone decides for a deleted family: it notes its deletion once and
// ignores the late events of its sessions. Whether a message is one the
// family knows at all is live's to say: the one list of its types.
func (d *decider) tombstone(msg any) actors.Decision {
	s := d.S
	switch m := msg.(type) {
	case *actors.Recovered:
		if !s.DeletionNoted {
			// The note was lost in a crash (or the tombstone is older
			// than notes): the sweep needs it to forget the family.
			d.Effect(&messages.RecordFamilyDeleted{SessionID: s.ID})
		}
		return d.Decision()
	case *messages.DeletionNoted:
		if m.SessionID == s.ID && !s.DeletionNoted {
			d.Event(&messages.FamilyDeletionNoted{})
		}
		return d.Decision()
	}
	// Decide is pure: deciding on a copy tells whether the type is known,
	// and what it would do is dropped.
	if !newDecider(d.f, s, d.now).live(msg) {
		return actors.Decision{Unhandled: true}
	}
	return actors.Decision{}
}

// live decides on msg for a family that is not deleted; it reports false
// for a message of a type the family does not handle (its default branch
// is the one list of the types it does).
func (d *decider) live(msg any) bool {
	s := d.S
	switch m := msg.(type) {
	case *messages.ToolExecuted:
		d.toolExecuted(m)
	case *messages.SessionCreated:
		d.created(m)
	case *messages.SessionIdle:
		d.idle(m)
	case *messages.SessionErrored:
		d.errored(m)
	case *messages.SessionDeleted:
		d.deleted(m)
	case *messages.SessionCompacted:
		if m.SessionID == s.ID && s.Compacting {
			d.Event(&messages.FamilyCompactionFinished{})
		}
	case *messages.CommandExecuting:
		d.command(m)
	case *messages.MemoryWritten:
		d.memoryWritten(m)
	case *messages.MessagesFetched:
		d.messagesFetched(m)
	case *messages.ChildSessionCreated:
		d.childCreated(m)
	case *messages.SessionExitIssued:
		d.exitIssued(m)
	case *messages.SessionCompactIssued:
		if m.Err != "" && m.SessionID == s.ID && s.Compacting {
			// No session.compacted will come: extraction may go on.
			d.Event(&messages.FamilyCompactionFinished{})
			d.warn("thatch could not start the compaction (" + m.Err + "). Run /thatch/compact again.")
		}
	case *messages.SessionPrompted:
		if m.Err != "" && s.Extracting && s.ExtractionChild != "" && m.SessionID == s.ExtractionChild {
			d.Event(&messages.FamilyExtractionStopped{Cause: "prompt failed: " + m.Err})
			d.incident(IncidentStartFailed, "extraction could not start: prompt failed: "+m.Err, d.S.kept())
		}
	case *messages.FamilyReconciled:
		d.reconciled(m)
	case *messages.StaleSweep:
		d.requeueStale()
		d.giveUpStaleExtraction()
		d.giveUpLostCheck()
	case *actors.Tick:
		d.tick(m)
	case *actors.Recovered:
		d.recovered(m)
	default:
		return false
	}
	return true
}

// decider builds one Decision (actors.Plan). S starts as the caller's
// state; the first event replaces it with a clone to which every event is
// applied (the family's Apply changes the state it is given), so later
// steps of the same decision see their effect.
type decider struct {
	actors.Plan[State]
	f   *Family
	now time.Time
}

// newDecider starts a decision of f on s.
func newDecider(f *Family, s *State, now time.Time) *decider {
	return &decider{Plan: actors.NewPlan(s, f.Apply, (*State).Clone), f: f, now: now}
}

// warn shows the user a warning toast on the family's host.
func (d *decider) warn(msg string) {
	d.Effect(&messages.ShowToast{Title: "thatch", Message: msg, Variant: "warning"})
}

// buffered reports whether a call of tool is kept for extraction: thatch's
// own tools and the agent-dispatch tools carry no facts of their own.
func buffered(tool string) bool {
	switch tool {
	case "", "skill", "task", "subagent":
		return false
	case MemoryRemember, MemoryRecall, MemoryForget, MemoryList:
		// thatch's memory tools: a memory written by a parent is already
		// durable, and extracting it again would duplicate it. Another
		// plugin's memory_* tools are buffered like any tool.
		return false
	}
	return !strings.HasPrefix(tool, "thatch_")
}

// The memory tools thatch's plugin defines.
const (
	MemoryRemember = "memory_remember"
	MemoryRecall   = "memory_recall"
	MemoryForget   = "memory_forget"
	MemoryList     = "memory_list"
)

func (d *decider) toolExecuted(m *messages.ToolExecuted) {
	in := m.Interaction
	if !buffered(in.Tool) {
		return
	}
	var buf []Entry
	switch c := d.S.Children[in.SessionID]; {
	case in.SessionID == d.S.ID:
		buf = d.S.Pending
	case c != nil:
		buf = c.Buffer
	default:
		return // not a session of this family that we know
	}
	if in.ID != "" && d.S.holds(in.SessionID, in.ID) {
		return // a redelivered call
	}
	var dropped []uint64
	for i := 0; len(buf)-i >= d.f.cfg.BufferLimit; i++ {
		dropped = append(dropped, buf[i].Seq)
	}
	d.EventLast(&messages.FamilyInteractionBuffered{
		SessionID:   in.SessionID,
		Seq:         d.S.LastSeq + 1,
		Interaction: forJournal(in, d.f.cfg.JournalOutputLimit),
		Dropped:     dropped,
	})
	if len(dropped) > 0 && in.SessionID == d.S.ID {
		// Only the parent's drops lose facts: a child's buffer is never
		// extracted. The buffered event is not applied (EventLast), so the
		// counts below add this drop by hand.
		total := d.S.DroppedSinceFetch + uint64(len(dropped))
		d.incident(IncidentBufferDrop,
			fmt.Sprintf("buffer full: %d older interactions dropped before extraction", total),
			fmt.Sprintf("the last %d kept", d.f.cfg.BufferLimit))
	}
}

// holds reports whether the buffer of session (or, for the parent, a
// claim) still holds the interaction with callID.
func (s *State) holds(session, callID string) bool {
	has := func(list []Entry) bool {
		return slices.ContainsFunc(list, func(e Entry) bool { return e.Interaction.ID == callID })
	}
	if session != s.ID {
		return has(s.Children[session].Buffer)
	}
	if has(s.Pending) {
		return true
	}
	for _, c := range s.Claims {
		if has(c.Entries) {
			return true
		}
	}
	return false
}

func (d *decider) created(m *messages.SessionCreated) {
	s := d.S
	if m.ParentID == "" {
		if m.SessionID != s.ID || s.Created {
			return
		}
		d.Event(&messages.FamilyParentCreated{})
		// The registry names the host; the event's own is at hand too, for
		// when the registry could not record it.
		d.Effect(&messages.SendStartReminder{Host: m.Host, SessionID: s.ID, Directory: m.Directory})
		return
	}
	if m.SessionID == s.ID || m.SessionID == "" || s.Children[m.SessionID] != nil {
		return
	}
	d.Event(&messages.FamilyChildRecorded{ChildID: m.SessionID, Title: m.Title, Extraction: m.Title == ExtractionTitle})
}

// fetch serves thatch_get_extraction_payload: everything pending moves
// into the caller's claim, and the caller receives it cut for the payload.
func (d *decider) fetch(m *messages.FetchPayload) {
	s := d.S
	reply := &messages.PayloadFetched{ParentID: s.ID}
	d.Reply(reply)
	if s.Deleted || m.CallerID == "" {
		return
	}
	switch t := m.TargetID; {
	case t == "", t == m.CallerID, t == s.ID, s.Children[t] != nil:
	default:
		return // another family's queue
	}
	child := s.Children[m.CallerID]
	if len(s.Pending) == 0 && (child == nil || child.Fetched) {
		return
	}
	seqs := make([]uint64, 0, len(s.Pending))
	payload := make([]messages.Interaction, 0, len(s.Pending))
	for _, e := range s.Pending {
		seqs = append(seqs, e.Seq)
		payload = append(payload, forPayload(e.Interaction, d.f.cfg.PayloadOutputLimit, d.f.cfg.PayloadArgsLimit))
	}
	reply.Note = tailNote(len(payload), s.DroppedSinceFetch)
	d.Event(&messages.FamilyPayloadClaimed{FetcherID: m.CallerID, Seqs: seqs, At: d.now})
	if len(payload) > 0 {
		reply.Interactions = payload
		n := payloadBytes(payload)
		d.Event(&PayloadMeasured{FetcherID: m.CallerID, Bytes: n})
		d.Effect(&RecordExtractionCost{FetcherID: m.CallerID, Bytes: n, At: d.now})
	}
}

// done serves thatch_extraction_done.
func (d *decider) done(m *messages.ExtractionDone) {
	s := d.S
	reply := &messages.ExtractionAcked{}
	d.Reply(reply)
	if s.Deleted || m.CallerID == "" {
		return
	}
	if seqs := s.claimSeqs(m.CallerID); len(seqs) > 0 {
		d.Event(&messages.FamilyClaimCompleted{FetcherID: m.CallerID, Seqs: seqs, Cause: messages.CompletedByAck})
		reply.Completed = len(seqs)
		return
	}
	if c := s.Children[m.CallerID]; c != nil && !c.Fetched {
		if seqs := s.acceptedSeqs(); len(seqs) > 0 {
			d.Event(&messages.FamilyClaimCompleted{FetcherID: m.CallerID, Seqs: seqs, Cause: messages.CompletedByFallback})
			reply.Completed = len(seqs)
		}
	}
}

func (d *decider) memoryWritten(m *messages.MemoryWritten) {
	if d.S.Children[m.CallerID] == nil {
		return // only children's writes count or complete
	}
	if seqs := d.S.claimSeqs(m.CallerID); len(seqs) > 0 {
		d.Event(&messages.FamilyClaimCompleted{FetcherID: m.CallerID, Seqs: seqs, Cause: messages.CompletedByMemory})
	}
	switch m.Op {
	case messages.MemoryCreated, messages.MemoryUpdated, messages.MemoryDeleted:
		d.Event(&messages.FamilyMemoryCounted{ChildID: m.CallerID, Op: m.Op, At: d.now})
	}
}

func (d *decider) idle(m *messages.SessionIdle) {
	if m.SessionID == d.S.ID {
		d.parentIdle()
		return
	}
	if d.S.Children[m.SessionID] != nil {
		d.childIdle(m.SessionID, false)
	}
}

// parentIdle first resolves an armed wrap-up: its check needs the final
// assistant text, so the rest of the idle waits for MessagesFetched.
func (d *decider) parentIdle() {
	if d.S.WrapUp != nil {
		// A check still running is started over: its stale window runs
		// again, and only this fetch's answer counts.
		d.Event(&messages.FamilyWrapUpCheckStarted{At: d.now})
		d.Effect(&messages.FetchMessages{SessionID: d.S.ID, Check: d.S.Checks})
		return
	}
	d.normalIdle()
}

// normalIdle requeues stale entries, then starts an extraction if there is
// something to extract and nothing stands in the way.
func (d *decider) normalIdle() {
	d.requeueStale()
	d.giveUpStaleExtraction()
	s := d.S
	if s.Compacting || s.Extracting || len(s.Pending) == 0 {
		return
	}
	d.Event(&messages.FamilyExtractionStarted{At: d.now})
	d.Effect(&messages.CreateChildSession{ParentID: s.ID, Title: ExtractionTitle})
}

// giveUpStaleExtraction ends an extraction that cannot be waited for any
// longer, so that it does not keep the family from extracting again:
//   - its child was asked for a stale window ago and never came (the
//     create's answer was lost: its host never came back after a restart,
//     or its reconcile failed);
//   - its child was attached a stale window ago, has neither fetched nor
//     written a memory since then, and holds no claim (it never fetched,
//     or what it fetched went back as stale): it hangs, and anything it
//     still did would consume nothing. It is deleted. A child waiting out
//     its finish grace is left to its timer.
//
// The parent's idle and the stale reaper's sweep run this after returning
// stale claims, so that no family stays busy for ever.
func (d *decider) giveUpStaleExtraction() {
	s := d.S
	if !s.Extracting || d.now.Sub(s.ExtractionSince) < d.f.cfg.StaleAfter {
		return
	}
	id := s.ExtractionChild
	if id == "" {
		d.Event(&messages.FamilyExtractionStopped{Cause: "no child within the stale window"})
		d.incident(IncidentNoChild, "extraction could not start: no child within the stale window (host gone?)", d.S.kept())
		return
	}
	if c := s.Children[id]; c != nil && (c.Finishing || d.now.Sub(c.ActiveAt) < d.f.cfg.StaleAfter) {
		return
	}
	if len(s.claimSeqs(id)) > 0 {
		return
	}
	d.Event(&messages.FamilyExtractionStopped{Cause: "extraction child hangs"})
	d.Event(&messages.FamilyChildCleared{ChildID: id, Cause: "hangs"})
	d.incident(IncidentChildHung, "extraction child "+id+" given up on: idle for the stale window", d.S.kept())
	d.Effect(&messages.DeleteSession{SessionID: id})
}

// giveUpLostCheck ends a wrap-up check whose messages never came within
// the stale window (its host never came back): the wrap-up stays armed,
// and the parent's next idle checks again. A parent idle starts a check
// over by itself, so only the stale reaper's sweep runs this. A check
// with no start time (journaled before checks had one) counts as stale.
func (d *decider) giveUpLostCheck() {
	w := d.S.WrapUp
	if w != nil && w.Checking && d.now.Sub(w.CheckingSince) >= d.f.cfg.StaleAfter {
		d.Event(&messages.FamilyWrapUpCheckFinished{Cause: "no messages within the stale window"})
	}
}

// requeueStale returns to pending every accepted entry whose completion has
// not come within StaleAfter. The parent's idle runs it, and so does the
// stale reaper's sweep, so a claim held by an extractor that hung returns
// even when the parent never goes idle again.
func (d *decider) requeueStale() {
	var stale []uint64
	for _, c := range d.S.Claims {
		for _, e := range c.Entries {
			if d.now.Sub(e.AcceptedAt) >= d.f.cfg.StaleAfter {
				stale = append(stale, e.Seq)
			}
		}
	}
	if len(stale) > 0 {
		slices.Sort(stale)
		d.Event(&messages.FamilyEntriesRequeued{Seqs: stale, Cause: "stale"})
	}
}

// View implements actors.Viewer: what `thatch status` shows of a family.
func (f *Family) View(s *State) any {
	v := s.Status()
	return v
}

// childIdle handles a child that went idle, or an extraction child whose
// finish timer fired (fired is then true: there is no timer to cancel).
func (d *decider) childIdle(id string, fired bool) {
	c := d.S.Children[id]
	kind, metrics, finishing := c.Kind, c.Metrics, c.Finishing
	cancel := finishing && !fired
	if seqs := d.S.claimSeqs(id); len(seqs) > 0 {
		d.Event(&messages.FamilyClaimCompleted{FetcherID: id, Seqs: seqs, Cause: messages.CompletedByIdle})
	}
	if kind == ChildTask {
		if finishing {
			d.Event(&messages.FamilyFinishCancelled{ChildID: id})
		}
		if cancel {
			d.Effect(&actors.CancelTimer{Name: finishTimerPrefix + id})
		}
		return
	}
	if d.S.ExtractionChild == id {
		d.Event(&messages.FamilyExtractionStopped{Cause: "extraction child idle"})
	}
	d.Event(&messages.FamilyChildCleared{ChildID: id, Cause: "idle"})
	if !metrics.zero() {
		d.Effect(&messages.ShowToast{
			Title:   "thatch",
			Message: fmt.Sprintf("memories saved: %d new, %d updated, %d deleted", metrics.New, metrics.Updated, metrics.Deleted),
			Variant: "success",
		})
	}
	if cancel {
		d.Effect(&actors.CancelTimer{Name: finishTimerPrefix + id})
	}
	d.Effect(&messages.DeleteSession{SessionID: id})
}

// errored handles session.error of a child. A parent's own errors change
// nothing here.
func (d *decider) errored(m *messages.SessionErrored) {
	c := d.S.Children[m.SessionID]
	if c == nil {
		return
	}
	id, fetched, finishing, kind := c.ID, c.Fetched, c.Finishing, c.Kind
	switch {
	case kind == ChildTask:
		// Task sub-agents error routinely (an interrupted task ends in
		// session.error). Like their deletion, their error hands back
		// only their own claim and leaves a running extraction alone.
		d.requeue(d.S.claimSeqs(id), "task child error")
	case fetched:
		d.requeue(d.S.claimSeqs(id), "child error")
	default:
		d.requeue(d.S.acceptedSeqs(), "child error before fetch")
	}
	if kind == ChildExtraction && d.S.Extracting {
		d.Event(&messages.FamilyExtractionStopped{Cause: "child error"})
	}
	d.Event(&messages.FamilyChildCleared{ChildID: id, Cause: "error"})
	if kind == ChildExtraction {
		reason := "extraction child " + id + " errored"
		if m.Error != "" {
			reason += ": " + m.Error
		}
		d.incident(IncidentChildError, reason, d.S.kept())
	}
	if finishing {
		d.Effect(&actors.CancelTimer{Name: finishTimerPrefix + id})
	}
	if kind == ChildExtraction {
		// An errored extractor is done for: delete it, or the next
		// extraction's create-or-reuse check would prompt it again.
		d.Effect(&messages.DeleteSession{SessionID: id})
	}
}

func (d *decider) requeue(seqs []uint64, cause string) {
	if len(seqs) > 0 {
		d.Event(&messages.FamilyEntriesRequeued{Seqs: seqs, Cause: cause})
	}
}

func (d *decider) deleted(m *messages.SessionDeleted) {
	if m.SessionID == d.S.ID {
		d.parentDeleted()
		return
	}
	d.childGone(m.SessionID, "deleted")
}

// childGone hands back what a deleted child held. A task child hands back
// only its own claim: task children are deleted routinely, and that must
// never pull an extractor's payload back. An extraction child that never
// fetched hands back the parent's whole accepted set.
func (d *decider) childGone(id, cause string) {
	c := d.S.Children[id]
	if c == nil {
		// Not a child we know, but it may have fetched: its claim can never
		// complete now.
		d.requeue(d.S.claimSeqs(id), cause)
		return
	}
	kind, fetched, finishing := c.Kind, c.Fetched, c.Finishing
	if kind == ChildExtraction && !fetched {
		d.requeue(d.S.acceptedSeqs(), cause+" before fetch")
	} else {
		d.requeue(d.S.claimSeqs(id), cause)
	}
	if d.S.ExtractionChild == id {
		d.Event(&messages.FamilyExtractionStopped{Cause: "extraction child " + cause})
	}
	d.Event(&messages.FamilyChildCleared{ChildID: id, Cause: cause})
	if finishing {
		d.Effect(&actors.CancelTimer{Name: finishTimerPrefix + id})
	}
}

// parentDeleted makes the family a tombstone: accepted entries go with the
// parent, pending ones are dropped with it.
func (d *decider) parentDeleted() {
	var dropped []uint64
	for _, e := range d.S.Pending {
		dropped = append(dropped, e.Seq)
	}
	timers := d.S.finishingChildren()
	d.Event(&messages.FamilyParentDeleted{Completed: d.S.acceptedSeqs(), Dropped: dropped})
	for _, id := range timers {
		d.Effect(&actors.CancelTimer{Name: finishTimerPrefix + id})
	}
	d.Effect(&messages.RecordFamilyDeleted{SessionID: d.S.ID})
}

func (s *State) finishingChildren() []string {
	var ids []string
	for id, c := range s.Children {
		if c.Finishing {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (d *decider) command(m *messages.CommandExecuting) {
	if m.SessionID != d.S.ID {
		return
	}
	var kind, token string
	switch strings.TrimPrefix(m.Command, "/") {
	case "thatch/compact":
		kind, token = WrapUpCompact, TokenCompact
	case "thatch/exit":
		kind, token = WrapUpExit, TokenExit
	default:
		return
	}
	d.Event(&messages.FamilyWrapUpArmed{Kind: kind, Token: token})
}

// hasToken reports whether text, trimmed, ends with token alone on its last
// line. A token anywhere else does not count.
func hasToken(text, token string) bool {
	text = strings.TrimSpace(text)
	last := text
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		last = text[i+1:]
	}
	return token != "" && strings.TrimSpace(last) == token
}

// messagesFetched resumes the parent idle that started a wrap-up check.
func (d *decider) messagesFetched(m *messages.MessagesFetched) {
	s := d.S
	if m.SessionID != s.ID || s.WrapUp == nil || !s.WrapUp.Checking {
		return // a repeated answer: the check already ended
	}
	if m.Check != 0 && m.Check != s.Checks {
		return // a repeated fetch's late answer, for an earlier check
	}
	w := *s.WrapUp
	if m.Err != "" {
		d.Event(&messages.FamilyWrapUpCheckFinished{Cause: "messages unavailable: " + m.Err})
		d.normalIdle()
		return
	}
	if hasToken(m.FinalAssistantText, w.Token) {
		switch w.Kind {
		case WrapUpCompact:
			d.Event(&messages.FamilyCompactionStarted{})
			d.Event(&messages.FamilyWrapUpDisarmed{Cause: "compact greenlit"})
			d.Effect(&messages.CompactSession{SessionID: s.ID})
		case WrapUpExit:
			d.Event(&messages.FamilyWrapUpDisarmed{Cause: "exit greenlit"})
			d.Event(&messages.FamilyExitGreenlit{At: d.now})
			d.exitEffects()
			d.Effect(&actors.StartTimer{Name: exitTimer, After: d.f.cfg.ExitRetryWindow})
		}
		return
	}
	d.Event(&messages.FamilyWrapUpCheckFinished{Cause: "token missing"})
	d.warn(fmt.Sprintf("/thatch/%s is waiting: finish the reply with %s alone on the last line once its blockers are resolved.",
		w.Kind, w.Token))
	d.normalIdle()
}

// exitEffects has the session's host close it.
func (d *decider) exitEffects() {
	s := d.S
	d.Effect(&messages.ExitSession{SessionID: s.ID})
}

// exitIssued ends a greenlit exit once its close went to the host. A close
// that failed (most often: thatch restarted and the host has not connected
// yet) is tried again when the host reconnects, until the exit's window
// ends.
func (d *decider) exitIssued(m *messages.SessionExitIssued) {
	if m.SessionID != d.S.ID || d.S.ExitingSince.IsZero() {
		return
	}
	if m.Err == "" {
		d.Event(&messages.FamilyExitFinished{Cause: "closed"})
		d.Effect(&actors.CancelTimer{Name: exitTimer})
		return
	}
	if !d.exitDue() {
		d.abandonExit("close failed: " + m.Err)
	}
}

// exitDue reports whether a greenlit exit is still within its window.
func (d *decider) exitDue() bool {
	return d.now.Sub(d.S.ExitingSince) <= d.f.cfg.ExitRetryWindow
}

// abandonExit ends a greenlit exit without the close and tells the user,
// who may be working in the session again by now. Its watcher deaths and
// chat unregistration may have happened already; only the close is left.
func (d *decider) abandonExit(cause string) {
	ago := d.now.Sub(d.S.ExitingSince).Round(time.Second)
	d.Event(&messages.FamilyExitFinished{Cause: cause})
	d.Effect(&actors.CancelTimer{Name: exitTimer})
	d.warn(fmt.Sprintf("thatch could not close this session after /thatch/exit was greenlit (%s ago), and left it open; Run /thatch/exit again to close it.", ago))
}

// extractionPrompt is the prompt an extraction child of parentID receives;
// note, when not empty, tells it that it sees only a tail (tailNote).
func extractionPrompt(parentID, note string) string {
	p := fmt.Sprintf(`Load the thatch-fact-extractor skill and use it for this task.
1. Call thatch_get_extraction_payload with session_id %q to receive the tool interactions to review.
2. Save every durable fact you find with memory_remember.
3. Always call thatch_extraction_done when you are finished, even if you saved nothing.`, parentID)
	if note != "" {
		p += "\nNote: " + note + "."
	}
	return p
}

func (d *decider) childCreated(m *messages.ChildSessionCreated) {
	s := d.S
	if m.ParentID != "" && m.ParentID != s.ID {
		return
	}
	if m.Err != "" {
		if s.Extracting && s.ExtractionChild == "" && m.Reason == messages.FailPaused {
			// The store's budget is spent: everything stays pending for
			// the next idle after the pause ends. The front end tells the
			// user, once per store and day.
			d.Event(&messages.FamilyExtractionStopped{Cause: "paused: " + m.Err})
			return
		}
		if s.Extracting && s.ExtractionChild == "" {
			d.Event(&messages.FamilyExtractionStopped{Cause: "create failed: " + m.Err})
			d.incident(IncidentStartFailed, "extraction could not start: child create failed: "+m.Err, d.S.kept())
		}
		return
	}
	if m.ChildID == "" || m.ChildID == s.ID || m.ChildID == s.ExtractionChild {
		return // a repeated answer
	}
	if s.Extracting && s.ExtractionChild == "" {
		finishing := s.Children[m.ChildID] != nil && s.Children[m.ChildID].Finishing
		d.Event(&messages.FamilyExtractionChildAttached{ChildID: m.ChildID, At: d.now})
		if finishing {
			// A reconcile found the reused child idle (it was never
			// prompted); it is about to work, so it must not be finished.
			d.Event(&messages.FamilyFinishCancelled{ChildID: m.ChildID})
			d.Effect(&actors.CancelTimer{Name: finishTimerPrefix + m.ChildID})
		}
		d.Effect(&messages.PromptSession{SessionID: m.ChildID, Text: extractionPrompt(s.ID, tailNote(len(s.Pending), s.DroppedSinceFetch))})
		return
	}
	// An extraction child nobody waits for (a create repeated after a
	// restart made a second one). Delete it unless it already took work.
	if c := s.Children[m.ChildID]; c != nil {
		if c.Kind != ChildExtraction || c.Fetched {
			return
		}
		d.Event(&messages.FamilyChildCleared{ChildID: m.ChildID, Cause: "unused extraction child"})
	}
	d.Effect(&messages.DeleteSession{SessionID: m.ChildID})
}

// reconciled compares the journal's children with the host's list after a
// (re)connect.
func (d *decider) reconciled(m *messages.FamilyReconciled) {
	if !m.Present {
		d.parentDeleted()
		return
	}
	if !d.S.ExitingSince.IsZero() {
		// A greenlit exit whose close did not go out: the host is back.
		if d.exitDue() {
			d.exitEffects()
		} else {
			d.abandonExit("host back after the window")
		}
	}
	listed := make(map[string]messages.HostSession, len(m.Children))
	for _, h := range m.Children {
		listed[h.SessionID] = h
	}
	ids := make([]string, 0, len(d.S.Children))
	for id := range d.S.Children {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		h, ok := listed[id]
		if !ok {
			d.childGone(id, "gone after reconnect")
			continue
		}
		c := d.S.Children[id]
		if c.Kind != ChildExtraction {
			continue
		}
		switch {
		case !h.Busy:
			if !c.Finishing {
				d.Event(&messages.FamilyFinishScheduled{ChildID: id})
			}
			d.Effect(&actors.StartTimer{Name: finishTimerPrefix + id, After: d.f.cfg.FinishGrace})
		case c.Finishing:
			d.Event(&messages.FamilyFinishCancelled{ChildID: id})
			d.Effect(&actors.CancelTimer{Name: finishTimerPrefix + id})
		}
	}
	for _, h := range m.Children {
		// Task children the journal does not know come back as plain task
		// records. An unknown extraction child is left to the repeated
		// CreateChildSession, which finds and reuses it.
		if h.SessionID == "" || h.SessionID == d.S.ID || d.S.Children[h.SessionID] != nil || h.Title == ExtractionTitle {
			continue
		}
		d.Event(&messages.FamilyChildRecorded{ChildID: h.SessionID, Title: h.Title})
	}
	if d.S.Compacting && !m.Parent.Busy {
		d.Event(&messages.FamilyCompactionFinished{}) // the compaction ended while we were away
	}
	// The calls a restart may have lost go out again now; their stale
	// windows run from now, the time they were asked again.
	if s := d.S; s.Extracting && s.ExtractionChild == "" {
		d.Event(&messages.FamilyExtractionStarted{At: d.now})
	}
	if w := d.S.WrapUp; w != nil && w.Checking {
		d.Event(&messages.FamilyWrapUpCheckStarted{At: d.now})
	}
	d.resume()
}

func (d *decider) tick(m *actors.Tick) {
	if m.Name == exitTimer {
		if !d.S.ExitingSince.IsZero() {
			d.abandonExit("not closed within the window")
		}
		return
	}
	id, ok := strings.CutPrefix(m.Name, finishTimerPrefix)
	if !ok {
		return
	}
	if c := d.S.Children[id]; c != nil && c.Finishing {
		d.childIdle(id, true)
	}
}

// resume re-issues the host calls whose answers a crash may have lost: the
// create of an extraction child that has none yet, and the message fetch
// of a wrap-up check. A repeat is harmless: the create reuses the child it
// finds, and an answer that comes twice is ignored the second time.
func (d *decider) resume() {
	s := d.S
	if s.Extracting && s.ExtractionChild == "" {
		d.Effect(&messages.CreateChildSession{ParentID: s.ID, Title: ExtractionTitle})
	}
	if s.WrapUp != nil && s.WrapUp.Checking {
		d.Effect(&messages.FetchMessages{SessionID: s.ID, Check: s.Checks})
	}
}

// recovered re-arms timers (they do not survive a restart) and, after an
// actor restart, resumes lost host calls at once. After a process start the
// host is not connected yet, so they wait for its reconcile.
func (d *decider) recovered(m *actors.Recovered) {
	s := d.S
	if m.Restarted {
		d.resume()
	}
	for _, id := range s.finishingChildren() {
		d.Effect(&actors.StartTimer{Name: finishTimerPrefix + id, After: d.f.cfg.FinishGrace})
	}
	if !s.ExitingSince.IsZero() {
		// Stopped between the exit's greenlight and its close. The host
		// is not connected yet after a process restart (and after an
		// actor restart the first close may still be queued), so the
		// close is issued again when the host reconnects; the timer ends
		// the exit if that does not happen within the window, giving the
		// host at least the finish grace to come back.
		d.Effect(&actors.StartTimer{Name: exitTimer, After: max(s.ExitingSince.Add(d.f.cfg.ExitRetryWindow).Sub(d.now), d.f.cfg.FinishGrace)})
	}
}
