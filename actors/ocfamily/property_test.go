package ocfamily

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// world runs a Family against the model, playing the runtime (journal,
// snapshots, crashes), the executor (effects and their results) and the
// host (which sessions exist).
type world struct {
	k   *Family
	s   *State
	now time.Time
	m   *model

	journal [][]byte
	snap    []byte // a snapshot of the state after journal[:snapAt]
	snapAt  int

	// The executor's outstanding work.
	creates  int
	prompts  []string
	fetches  []uint64 // the check numbers of FetchMessages not yet answered
	exits    int
	compacts int // CompactSession effects not yet answered
	notes    int // RecordFamilyDeleted effects not yet answered
	timers   map[string]bool

	// The host.
	hostChildren map[string]string // child id -> title
	extraction   map[string]bool   // every id ever made as an extraction child
	tasks        map[string]bool   // every id ever made as a task child
	lastExt      string
	nextID       int

	completed map[uint64]bool // every entry number completed so far
	stats     map[string]int  // what happened, for -v
	actions   map[string]action
}

func newWorld() *world {
	cfg := Config{BufferLimit: 4, StaleAfter: 15 * time.Minute, FinishGrace: 10 * time.Second}
	k := New(cfg)
	return &world{
		k: k, s: k.Initial(parent), now: t0,
		m:      newModel(cfg.BufferLimit, cfg.StaleAfter),
		timers: map[string]bool{}, hostChildren: map[string]string{},
		extraction: map[string]bool{}, tasks: map[string]bool{}, completed: map[uint64]bool{},
		stats: map[string]int{},
	}
}

func (w *world) id(prefix string) string {
	w.nextID++
	return fmt.Sprintf("%s%d", prefix, w.nextID)
}

// deliver runs one message through Decide/journal/Apply, checks what can be
// checked about the decision itself, and plays its effects into the
// executor's queues.
func (w *world) deliver(t *rapid.T, msg any) actors.Decision {
	before := encode(t, w.s)
	prev := w.s.Clone()
	d := w.k.Decide(w.s, msg, w.now)
	if !bytes.Equal(before, encode(t, w.s)) {
		t.Fatalf("Decide(%T) changed its input state", msg)
	}
	for _, ev := range d.Events {
		b, err := messages.Encode(ev)
		if err != nil {
			t.Fatalf("encode %T: %v", ev, err)
		}
		w.journal = append(w.journal, b)
		w.s = w.k.Apply(w.s, ev)
	}
	w.checkEvents(t, prev, d.Events)
	for _, ev := range d.Events {
		if _, ok := ev.(*messages.FamilyHostSeen); ok {
			t.Fatalf("Decide(%T) journaled a host: the registry owns it", msg)
		}
	}
	for _, e := range d.Effects {
		if h := effectHost(e); h != "" {
			t.Fatalf("Decide(%T) released %T naming host %q: the front end asks the registry", msg, e, h)
		}
	}
	for _, ev := range d.Events {
		name, _ := messages.TypeName(ev)
		if c, ok := ev.(*messages.FamilyClaimCompleted); ok {
			name += "/" + c.Cause
		}
		if r, ok := ev.(*messages.FamilyEntriesRequeued); ok {
			name += "/" + r.Cause
		}
		if b, ok := ev.(*messages.FamilyInteractionBuffered); ok && len(b.Dropped) > 0 {
			name += "/overflow"
		}
		w.stats[name]++
	}
	for _, e := range d.Effects {
		w.stats[fmt.Sprintf("%T", e)]++
		switch e := e.(type) {
		case *messages.CreateChildSession:
			w.creates++
		case *messages.PromptSession:
			w.prompts = append(w.prompts, e.SessionID)
		case *messages.FetchMessages:
			w.fetches = append(w.fetches, e.Check)
		case *messages.CompactSession:
			w.compacts++
		case *messages.ExitSession:
			w.exits++
		case *messages.RecordFamilyDeleted:
			w.notes++
		case *actors.StartTimer:
			w.timers[e.Name] = true
		case *actors.CancelTimer:
			delete(w.timers, e.Name)
		case *messages.DeleteSession:
			if !w.extraction[e.SessionID] || w.tasks[e.SessionID] {
				t.Fatalf("DeleteSession for %s, which is not an extraction child", e.SessionID)
			}
			delete(w.hostChildren, e.SessionID)
		}
	}
	return d
}

// checkResumed checks that a step re-issued exactly the lost host calls the
// model expects.
func (w *world) checkResumed(t *rapid.T, d actors.Decision, step string) {
	create, fetch := w.m.resumes()
	if got := len(effectsOf[messages.CreateChildSession](d.Effects)) > 0; got != create {
		t.Fatalf("%s: create re-issued %v, want %v", step, got, create)
	}
	if got := len(effectsOf[messages.FetchMessages](d.Effects)) > 0; got != fetch {
		t.Fatalf("%s: message fetch re-issued %v, want %v", step, got, fetch)
	}
}

// checkDeleted checks that a child's idle (or finish timer) deleted the
// child exactly when it is an extraction child: task sub-agents never are.
func (w *world) checkDeleted(t *rapid.T, d actors.Decision, id string, want bool) {
	got := slices.ContainsFunc(effectsOf[messages.DeleteSession](d.Effects), func(e *messages.DeleteSession) bool { return e.SessionID == id })
	if got != want {
		t.Fatalf("idle of %s: deleted %v, want %v (effects %s)", id, got, want, show(d.Effects))
	}
}

// checkEvents checks each completion against the claims before the step:
// only the fetcher's own claim, except the fallback of a child that never
// fetched, and nothing completed twice.
func (w *world) checkEvents(t *rapid.T, prev *State, evs []any) {
	holder := map[uint64]string{}
	for f, c := range prev.Claims {
		for _, e := range c.Entries {
			holder[e.Seq] = f
		}
	}
	for _, ev := range evs {
		var seqs []uint64
		switch ev := ev.(type) {
		case *messages.FamilyClaimCompleted:
			seqs = ev.Seqs
			if ev.Cause == messages.CompletedByFallback {
				c := prev.Children[ev.FetcherID]
				if c == nil || c.Fetched || !slices.Equal(ev.Seqs, prev.acceptedSeqs()) {
					t.Fatalf("fallback completion by %s of %v: child %+v, accepted %v", ev.FetcherID, ev.Seqs, c, prev.acceptedSeqs())
				}
			} else {
				if !slices.Equal(ev.Seqs, prev.claimSeqs(ev.FetcherID)) || len(ev.Seqs) == 0 {
					t.Fatalf("%s completion by %s of %v, but its claim is %v", ev.Cause, ev.FetcherID, ev.Seqs, prev.claimSeqs(ev.FetcherID))
				}
			}
		case *messages.FamilyParentDeleted:
			seqs = ev.Completed
		case *messages.FamilyEntriesRequeued:
			for _, s := range ev.Seqs {
				if _, ok := holder[s]; !ok {
					t.Fatalf("requeued %d, which was not accepted", s)
				}
			}
		}
		for _, s := range seqs {
			if _, ok := holder[s]; !ok {
				t.Fatalf("completed %d, which was not accepted", s)
			}
			if w.completed[s] {
				t.Fatalf("entry %d completed twice", s)
			}
			w.completed[s] = true
		}
	}
}

// rebuild folds the journal into a new state, through the snapshot when
// there is one.
func (w *world) rebuild(t *rapid.T, useSnap bool) *State {
	s, from := w.k.Initial(parent), 0
	if useSnap && w.snap != nil {
		var err error
		if s, err = messages.DecodeAs[State](w.snap); err != nil {
			t.Fatalf("decode snapshot: %v", err)
		}
		from = w.snapAt
	}
	for _, b := range w.journal[from:] {
		ev, err := messages.Decode(b)
		if err != nil {
			t.Fatalf("decode event: %v", err)
		}
		s = w.k.Apply(s, ev)
	}
	return s
}

func (w *world) pickChild(t *rapid.T, label string) string {
	set := map[string]bool{"ses_unknown": true}
	for id := range w.m.children {
		set[id] = true
	}
	for id := range w.hostChildren {
		set[id] = true
	}
	return rapid.SampledFrom(slices.Sorted(maps.Keys(set))).Draw(t, label)
}

func (w *world) pickCaller(t *rapid.T, label string) string {
	if rapid.IntRange(0, 3).Draw(t, label+"IsParent") == 0 {
		return parent
	}
	return w.pickChild(t, label)
}

// check compares the family's state with the model and checks the
// invariants that hold after every step.
func (w *world) check(t *rapid.T) {
	s, m := w.s, w.m

	// Replay determinism, from scratch and through the snapshot.
	live := encode(t, s)
	if got := encode(t, w.rebuild(t, false)); !bytes.Equal(got, live) {
		t.Fatalf("replayed state differs from live state:\n got %s\nlive %s", got, live)
	}
	if w.snap != nil {
		if got := encode(t, w.rebuild(t, true)); !bytes.Equal(got, live) {
			t.Fatalf("state from snapshot differs from live state:\n got %s\nlive %s", got, live)
		}
	}

	// Every entry is in one place only, and never one already completed.
	seen := map[uint64]string{}
	where := map[string]string{} // call id -> where the family has it
	note := func(e Entry, at string) {
		if other, ok := seen[e.Seq]; ok {
			t.Fatalf("entry %d is both in %s and %s", e.Seq, other, at)
		}
		if w.completed[e.Seq] {
			t.Fatalf("entry %d is in %s after its completion", e.Seq, at)
		}
		seen[e.Seq] = at
		where[e.Interaction.ID] = at
	}
	for _, e := range s.Pending {
		note(e, "pending")
	}
	for f, c := range s.Claims {
		if len(c.Entries) == 0 {
			t.Fatalf("empty claim of %s kept", f)
		}
		for _, e := range c.Entries {
			note(e, "claim of "+f)
		}
	}
	for id, c := range s.Children {
		for _, e := range c.Buffer {
			note(e, "buffer of "+id)
		}
	}

	// The family holds exactly what the model says, and each interaction
	// is in exactly one of the model's places.
	for id, e := range m.entries {
		var want string
		switch e.where {
		case atPending:
			want = "pending"
		case atAccepted:
			want = "claim of " + e.holder
		case atChildBuf:
			want = "buffer of " + e.holder
		}
		if where[id] != want {
			t.Fatalf("interaction %s: family has it at %q, model at %s %q", id, where[id], e.where, e.holder)
		}
	}
	if len(where) != len(m.list(atPending, ""))+len(m.list(atAccepted, ""))+len(m.list(atChildBuf, "")) {
		t.Fatalf("family holds interactions the model does not know: %v", where)
	}
	if got, want := callIDs(s.Pending), ids(m.list(atPending, "")); !slices.Equal(got, want) {
		t.Fatalf("pending order %v, model %v", got, want)
	}

	// Children and flags.
	if len(s.Children) != len(m.children) {
		t.Fatalf("children %v, model %v", slices.Sorted(maps.Keys(s.Children)), slices.Sorted(maps.Keys(m.children)))
	}
	for id, mc := range m.children {
		c := s.Children[id]
		if c == nil || c.Kind != mc.kind || c.Fetched != mc.fetched || c.Finishing != mc.finishing || c.Metrics != mc.metrics {
			t.Fatalf("child %s: %+v, model %+v", id, c, mc)
		}
	}
	if s.Deleted != m.deleted || s.Extracting != m.extracting || s.ExtractionChild != m.attached || s.Compacting != m.compacting {
		t.Fatalf("flags deleted %v extracting %v (%q) compacting %v; model %v %v (%q) %v",
			s.Deleted, s.Extracting, s.ExtractionChild, s.Compacting, m.deleted, m.extracting, m.attached, m.compacting)
	}
	if (s.WrapUp == nil) != (m.wrap == nil) || s.WrapUp != nil && (s.WrapUp.Kind != m.wrap.kind || s.WrapUp.Checking != m.wrap.checking) {
		t.Fatalf("wrap-up %+v, model %+v", s.WrapUp, m.wrap)
	}
	// Liveness: a child waiting to be finished has its timer running.
	for id, c := range m.children {
		if c.finishing && !w.timers["finish:"+id] {
			t.Fatalf("child %s waits for a finish timer that is not running", id)
		}
	}
	if !s.ExitingSince.Equal(m.exitSince) {
		t.Fatalf("exiting since %v, model %v", s.ExitingSince, m.exitSince)
	}
	// Liveness: a waiting exit has its window timer running, so it ends
	// even if its host never comes back.
	if !m.exitSince.IsZero() && !w.timers[exitTimer] {
		t.Fatalf("a greenlit exit waits without its window timer")
	}
	wantActive := m.deleted && !m.noted || !m.deleted && (m.extracting || m.wrap != nil && m.wrap.checking || !m.exitSince.IsZero() || len(m.list(atAccepted, "")) > 0 || slices.ContainsFunc(slices.Collect(maps.Values(m.children)), func(c *mChild) bool { return c.finishing }))
	if got := w.k.Active(s); got != wantActive {
		t.Fatalf("Active = %v, want %v", got, wantActive)
	}
}

// TestPropertyFamily runs random interleavings of everything a family can
// receive (tool calls, idles, child creation, errors and deletion, fetches,
// acks, memory writes, parent deletion, compaction, wrap-ups with and
// without their token, effect results that succeed or fail, timer ticks,
// time passing the stale window, reconnects, snapshots and crashes) and
// checks after every step that:
//
//   - every interaction is exactly where the model puts it: pending (in
//     order), accepted under one claim, in a child's own buffer, or gone
//     for good (completed, taken with the deleted parent, dropped on
//     overflow, discarded with its child);
//   - a completion consumes exactly its fetcher's claim, or, for the
//     done-ack of a child that never fetched, the whole accepted set;
//     nothing is completed twice or seen again after its completion;
//   - DeleteSession only ever names extraction children;
//   - the journal, folded from scratch or from the snapshot, rebuilds the
//     live state, and Decide never changes its input;
//   - a child waiting to be finished has its timer running, and Active
//     agrees with the model.
func TestPropertyFamily(t *testing.T) {
	// With -v, log how often each action ran and each event and effect
	// came out, to see that the interleavings reach every rule.
	total := map[string]int{}
	defer func() {
		if !testing.Verbose() {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(total)) {
			t.Logf("%6d %s", total[k], k)
		}
	}()
	rapid.Check(t, func(t *rapid.T) {
		w := newWorld()
		defer func() {
			for k, v := range w.stats {
				total[k] += v
			}
		}()
		// Each round runs every action as often as its weight, in an order
		// drawn as a permutation: rapid's index draws favour the first
		// choices, its permutations do not.
		names := w.actionNames()
		for range rapid.IntRange(1, 4).Draw(t, "rounds") {
			for _, name := range rapid.Permutation(names).Draw(t, "round") {
				w.stats["action "+name]++
				w.actions[name].run(t)
				w.check(t)
			}
		}
	})
}

type action struct {
	weight int
	run    func(*rapid.T)
}

// actionNames lists every action as often as its weight.
func (w *world) actionNames() []string {
	w.actions = w.newActions()
	var names []string
	for _, name := range slices.Sorted(maps.Keys(w.actions)) {
		for range w.actions[name].weight {
			names = append(names, name)
		}
	}
	return names
}

func (w *world) newActions() map[string]action {
	tools := []string{"bash", "read", "edit", "webfetch", "thatch_memory_search", "skill", "task", "subagent", "memory_remember", "memory_recall", "memory_graph"}
	ops := []messages.MemoryOp{messages.MemoryCreated, messages.MemoryUpdated, messages.MemoryDeleted}
	toolCall := func(t *rapid.T, session string) {
		id := w.id("call")
		name := rapid.SampledFrom(tools).Draw(t, "tool")
		out := strings.Repeat("o", rapid.IntRange(0, 3000).Draw(t, "outLen"))
		w.deliver(t, &messages.ToolExecuted{Host: host, Interaction: messages.Interaction{
			ID: id, SessionID: session, Tool: name, Output: out, Args: json.RawMessage(`{"path":"/f/` + id + `"}`),
		}})
		w.m.tool(session, id, name)
	}
	return map[string]action{
		"toolParent": {8, func(t *rapid.T) { toolCall(t, parent) }},
		"toolChild":  {3, func(t *rapid.T) { toolCall(t, w.pickChild(t, "session")) }},
		"pluginNamesAnotherHost": {1, func(t *rapid.T) {
			// The plugin names its server, which may be watched under
			// another name: the family re-issues nothing.
			id := w.id("call")
			d := w.deliver(t, &messages.ToolExecuted{Host: w.id("h-plugin"), Interaction: messages.Interaction{
				ID: id, SessionID: parent, Tool: "bash", Output: "o",
			}})
			w.m.tool(parent, id, "bash")
			if len(effectsOf[messages.CreateChildSession](d.Effects))+len(effectsOf[messages.FetchMessages](d.Effects)) > 0 {
				t.Fatalf("a plugin call re-issued %s", show(d.Effects))
			}
		}},
		"parentCreated": {1, func(t *rapid.T) {
			w.deliver(t, created(parent, "", "main"))
		}},
		"taskCreated": {2, func(t *rapid.T) {
			id := w.id("ses_task")
			w.tasks[id] = true
			w.hostChildren[id] = "general"
			w.deliver(t, created(id, parent, "general"))
			w.m.sessionCreated(id, "general")
		}},
		"extractionAnnounced": {2, func(t *rapid.T) {
			// session.created of an extraction child, before or after its
			// ChildSessionCreated.
			if w.lastExt == "" {
				return
			}
			w.deliver(t, extChild(w.lastExt))
			w.m.sessionCreated(w.lastExt, ExtractionTitle)
		}},
		"parentIdle": {6, func(t *rapid.T) {
			d := w.deliver(t, idle(parent))
			wantFetch, abandoned := w.m.idle(parent, w.now)
			if got := len(effectsOf[messages.FetchMessages](d.Effects)) > 0; got != wantFetch {
				t.Fatalf("FetchMessages issued %v, want %v", got, wantFetch)
			}
			var deleted []string
			for _, e := range effectsOf[messages.DeleteSession](d.Effects) {
				deleted = append(deleted, e.SessionID)
			}
			if abandoned != "" && !slices.Equal(deleted, []string{abandoned}) || abandoned == "" && len(deleted) > 0 {
				t.Fatalf("parent idle deleted %v, want the hung extractor %q", deleted, abandoned)
			}
		}},
		"childIdle": {4, func(t *rapid.T) {
			id := w.pickChild(t, "child")
			c := w.m.children[id]
			wantDelete := !w.m.deleted && c != nil && c.kind == ChildExtraction
			d := w.deliver(t, idle(id))
			_, _ = w.m.idle(id, w.now)
			w.checkDeleted(t, d, id, wantDelete)
		}},
		"childError": {2, func(t *rapid.T) {
			id := w.pickChild(t, "child")
			w.deliver(t, errored(id))
			w.m.errored(id)
		}},
		"childDeleted": {2, func(t *rapid.T) {
			id := w.pickChild(t, "child")
			delete(w.hostChildren, id)
			w.deliver(t, deletedMsg(id))
			w.m.deletedSession(id)
		}},
		"parentDeleted": {1, func(t *rapid.T) {
			if rapid.IntRange(0, 19).Draw(t, "rarely") != 0 {
				return // parents are deleted rarely: it ends the story
			}
			w.deliver(t, deletedMsg(parent))
			w.m.deletedSession(parent)
		}},
		"fetch": {5, func(t *rapid.T) {
			caller := w.pickCaller(t, "caller")
			target := rapid.SampledFrom([]string{"", caller, parent, "ses_other"}).Draw(t, "target")
			d := w.deliver(t, fetch(caller, target))
			want := w.m.fetch(caller, target, w.now)
			if got := payloadIDs(d.Reply); !slices.Equal(got, want) {
				t.Fatalf("payload %v, model %v", got, want)
			}
		}},
		"ack": {3, func(t *rapid.T) {
			caller := w.pickCaller(t, "caller")
			d := w.deliver(t, doneAck(caller))
			want := w.m.ack(caller)
			if got := d.Reply.(*messages.ExtractionAcked).Completed; got != want {
				t.Fatalf("acked %d, model %d", got, want)
			}
		}},
		"memory": {3, func(t *rapid.T) {
			caller := w.pickCaller(t, "caller")
			op := rapid.SampledFrom(ops).Draw(t, "op")
			w.deliver(t, remember(caller, op))
			w.m.memory(caller, op, w.now)
		}},
		"command": {2, func(t *rapid.T) {
			name := rapid.SampledFrom([]string{"thatch/compact", "thatch/exit", "review"}).Draw(t, "command")
			w.deliver(t, command(name))
			w.m.command(name)
		}},
		"compacted": {2, func(t *rapid.T) {
			w.deliver(t, &messages.SessionCompacted{Host: host, SessionID: parent})
			if !w.m.deleted {
				w.m.compacting = false
			}
		}},
		"completeCreate": {5, func(t *rapid.T) {
			if w.creates == 0 {
				return
			}
			w.creates--
			if rapid.IntRange(0, 3).Draw(t, "createFails") == 0 {
				w.deliver(t, &messages.ChildSessionCreated{ParentID: parent, Err: "500"})
				w.m.childCreated("", true, w.now)
				return
			}
			// The executor reuses an extraction child the host still has.
			id := w.lastExt
			if _, ok := w.hostChildren[id]; !ok || rapid.Bool().Draw(t, "newChild") {
				id = w.id("ses_ext")
				w.lastExt = id
			}
			w.extraction[id] = true
			w.hostChildren[id] = ExtractionTitle
			d := w.deliver(t, childOK(id))
			wantDelete := w.m.childCreated(id, false, w.now)
			if got := len(effectsOf[messages.DeleteSession](d.Effects)) > 0; got != wantDelete {
				t.Fatalf("unused child deleted %v, want %v", got, wantDelete)
			}
		}},
		"completePrompt": {3, func(t *rapid.T) {
			if len(w.prompts) == 0 {
				return
			}
			i := rapid.IntRange(0, len(w.prompts)-1).Draw(t, "prompt")
			id := w.prompts[i]
			w.prompts = slices.Delete(w.prompts, i, i+1)
			if rapid.IntRange(0, 3).Draw(t, "promptFails") == 0 {
				w.deliver(t, &messages.SessionPrompted{SessionID: id, Err: "timeout"})
				w.m.promptFailed(id)
			} else {
				w.deliver(t, &messages.SessionPrompted{SessionID: id})
			}
		}},
		"completeFetchMessages": {4, func(t *rapid.T) {
			if len(w.fetches) == 0 {
				return
			}
			// Answers may come in any order: a repeated fetch's answer can
			// arrive after a later check started.
			i := rapid.IntRange(0, len(w.fetches)-1).Draw(t, "fetch")
			check := w.fetches[i]
			w.fetches = slices.Delete(w.fetches, i, i+1)
			text := rapid.SampledFrom([]string{
				"done\nTHATCH_COMPACT_READY", "done\nTHATCH_EXIT_READY\n", "THATCH_EXIT_READY is next\nblocked", "still working", "",
			}).Draw(t, "finalText")
			failed := rapid.IntRange(0, 4).Draw(t, "fetchFails") == 0
			msg := &messages.MessagesFetched{SessionID: parent, Check: check, FinalAssistantText: text}
			if failed {
				msg.Err = "503"
			}
			w.deliver(t, msg)
			w.m.messagesFetched(text, failed, w.now, check)
		}},
		"completeCompact": {2, func(t *rapid.T) {
			if w.compacts == 0 {
				return
			}
			w.compacts--
			msg := &messages.SessionCompactIssued{SessionID: parent}
			if rapid.IntRange(0, 2).Draw(t, "compactRefused") == 0 {
				msg.Err = "503"
			}
			d := w.deliver(t, msg)
			refused := msg.Err != "" && !w.m.deleted && w.m.compacting
			if refused {
				w.m.compacting = false
			}
			if got := len(effectsOf[messages.ShowToast](d.Effects)) > 0; got != refused {
				t.Fatalf("refused compaction told the user %v, want %v", got, refused)
			}
		}},
		"completeExit": {2, func(t *rapid.T) {
			if w.exits == 0 {
				return
			}
			w.exits--
			msg := &messages.SessionExitIssued{SessionID: parent}
			failed := rapid.IntRange(0, 3).Draw(t, "exitFails") == 0
			if failed {
				msg.Err = "host gone"
			}
			w.deliver(t, msg)
			w.m.exitIssued(failed, w.now, w.k.Config().ExitRetryWindow)
		}},
		"completeNote": {2, func(t *rapid.T) {
			if w.notes == 0 {
				return
			}
			w.notes--
			w.deliver(t, &messages.DeletionNoted{SessionID: parent})
			if w.m.deleted {
				w.m.noted = true
			}
		}},
		"tick": {3, func(t *rapid.T) {
			if len(w.timers) == 0 {
				return
			}
			name := rapid.SampledFrom(slices.Sorted(maps.Keys(w.timers))).Draw(t, "timer")
			delete(w.timers, name)
			child := strings.TrimPrefix(name, "finish:")
			c := w.m.children[child]
			wantDelete := name != exitTimer && !w.m.deleted && c != nil && c.finishing && c.kind == ChildExtraction
			d := w.deliver(t, &actors.Tick{Name: name})
			if name == exitTimer {
				w.m.exitTick()
			} else {
				w.m.tick(child)
			}
			w.checkDeleted(t, d, child, wantDelete)
		}},
		"lateTick": {1, func(t *rapid.T) {
			// A timer that fires although it was cancelled, or for a
			// child that is gone.
			id := w.pickChild(t, "child")
			w.deliver(t, &actors.Tick{Name: "finish:" + id})
			w.m.tick(id)
		}},
		"staleSweep": {1, func(t *rapid.T) {
			d := w.deliver(t, &messages.StaleSweep{})
			abandoned := w.m.staleSweep(w.now)
			w.m.giveUpLostCheck(w.now)
			var want []any
			if abandoned != "" {
				want = append(want, &messages.DeleteSession{SessionID: abandoned})
			}
			// Giving up shows an incident's toast (the family tests pin
			// it); the host calls are what the model knows.
			got := slices.DeleteFunc(slices.Clone(d.Effects), func(e any) bool { _, toast := e.(*messages.ShowToast); return toast })
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("a stale sweep issued %s, want %s", show(d.Effects), show(want))
			}
		}},
		"advance": {4, func(t *rapid.T) {
			w.now = w.now.Add(time.Duration(rapid.IntRange(0, 20).Draw(t, "minutes")) * time.Minute)
		}},
		"reconcile": {2, func(t *rapid.T) {
			r := &messages.FamilyReconciled{
				Host:    host,
				Present: rapid.IntRange(0, 39).Draw(t, "parentGone") != 0,
				Parent:  messages.HostSession{SessionID: parent, Busy: rapid.Bool().Draw(t, "parentBusy")},
			}
			for _, id := range slices.Sorted(maps.Keys(w.hostChildren)) {
				r.Children = append(r.Children, messages.HostSession{
					SessionID: id, ParentID: parent, Title: w.hostChildren[id], Busy: rapid.Bool().Draw(t, "busy"),
				})
			}
			reissue := r.Present && w.m.exitReconciled(w.now, w.k.Config().ExitRetryWindow)
			d := w.deliver(t, r)
			if got := len(effectsOf[messages.ExitSession](d.Effects)) > 0; got != reissue {
				t.Fatalf("exit issued again on reconcile: %v, want %v", got, reissue)
			}
			w.m.reconciled(r, w.now)
			// The host is back: lost creates and message fetches go out again.
			w.checkResumed(t, d, "reconcile")
		}},
		"snapshot": {1, func(t *rapid.T) {
			w.snap, w.snapAt = encode(t, w.s), len(w.journal)
		}},
		"crash": {2, func(t *rapid.T) {
			// Everything journaled survives; effects not yet carried out
			// and all timers may be lost.
			w.s = w.rebuild(t, rapid.Bool().Draw(t, "fromSnapshot"))
			w.timers = map[string]bool{}
			if rapid.Bool().Draw(t, "loseCreates") {
				w.creates = 0
			}
			if rapid.Bool().Draw(t, "loseFetches") {
				w.fetches = nil
			}
			if rapid.Bool().Draw(t, "losePrompts") {
				w.prompts = nil
			}
			if rapid.Bool().Draw(t, "loseCompacts") {
				w.compacts = 0
			}
			if rapid.Bool().Draw(t, "loseExits") {
				w.exits = 0
			}
			if rapid.Bool().Draw(t, "loseNotes") {
				w.notes = 0
			}
			// An actor restart (the host still connected) or a process start
			// (the host connects later, and its reconcile resumes).
			restarted := rapid.Bool().Draw(t, "actorRestart")
			d := w.deliver(t, &actors.Recovered{Restarted: restarted, Events: len(w.journal)})
			if len(d.Events) != 0 {
				t.Fatalf("Recovered journaled %v", eventNames(d.Events))
			}
			// The host is not back yet: a waiting exit only gets its timer.
			if len(effectsOf[messages.ExitSession](d.Effects)) > 0 {
				t.Fatalf("exit issued on Recovered, before the host is back")
			}
			if got, want := w.timers[exitTimer], !w.m.exitSince.IsZero(); got != want {
				t.Fatalf("exit timer running %v, want %v", got, want)
			}
			if got, want := len(effectsOf[messages.RecordFamilyDeleted](d.Effects)) > 0, w.m.deleted && !w.m.noted; got != want {
				t.Fatalf("deletion note asked for again %v, want %v", got, want)
			}
			if restarted {
				w.checkResumed(t, d, "actor restart")
			} else if len(effectsOf[messages.CreateChildSession](d.Effects))+len(effectsOf[messages.FetchMessages](d.Effects)) > 0 {
				t.Fatalf("host calls issued on a process start, before the host is connected: %s", show(d.Effects))
			}
		}},
	}
}
