package ocfamily

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/internal/redact"
	"github.com/thatch-run/thatch/messages"
)

// decideCase delivers setup, then msg, and checks the last decision.
type decideCase struct {
	name  string
	cfg   Config
	setup []any
	msg   any
	// events lists the event type names (without "session."); nil skips
	// the check, an empty slice wants none.
	events []string
	// effects are compared exactly unless anyEffects is set.
	effects    []any
	anyEffects bool
	check      func(t *testing.T, d actors.Decision, s *State)
}

func runCases(t *testing.T, cases []decideCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFam(t, tc.cfg)
			f.sendAll(tc.setup...)
			d := f.send(tc.msg)
			if tc.events != nil {
				wantIDs(t, "events", eventNames(d.Events), tc.events...)
			}
			if !tc.anyEffects {
				// A fetch's cost record is pinned by its own case
				// (TestFetchRecordsItsCost), not by every fetch's.
				effects := slices.DeleteFunc(slices.Clone(d.Effects), func(e any) bool { _, ok := e.(*RecordExtractionCost); return ok })
				wantEffects(t, effects, tc.effects...)
			}
			if tc.check != nil {
				tc.check(t, d, f.s)
			}
			// Replay determinism: the journal rebuilds the live state.
			if got, want := encode(t, f.replay()), encode(t, f.s); string(got) != string(want) {
				t.Errorf("replayed state differs:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestToolExecuted(t *testing.T) {
	long := strings.Repeat("é", 2500)
	runCases(t, []decideCase{
		{
			name:   "a parent's call is buffered with the next entry number",
			setup:  []any{tool(parent, "c1")},
			msg:    tool(parent, "c2"),
			events: []string{"interaction_buffered"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				wantIDs(t, "pending", callIDs(s.Pending), "c1", "c2")
				if s.Pending[1].Seq != 2 || s.LastSeq != 2 {
					t.Errorf("seqs: %+v last %d", s.Pending, s.LastSeq)
				}
			},
		},
		{name: "thatch tools are not buffered", msg: toolNamed(parent, "c", "thatch_get_extraction_payload"), events: []string{}},
		{name: "memory tools are not buffered", msg: toolNamed(parent, "c", "memory_remember"), events: []string{}},
		{name: "memory recall is not buffered", msg: toolNamed(parent, "c", "memory_recall"), events: []string{}},
		{name: "another plugin's memory_* tool is buffered", setup: []any{tool(parent, "c0")}, msg: toolNamed(parent, "c", "memory_graph_query"), events: []string{"interaction_buffered"}},
		{name: "skill is not buffered", msg: toolNamed(parent, "c", "skill"), events: []string{}},
		{name: "task is not buffered", msg: toolNamed(parent, "c", "task"), events: []string{}},
		{name: "subagent is not buffered", msg: toolNamed(parent, "c", "subagent"), events: []string{}},
		{
			name:    "a full buffer drops its oldest entry",
			cfg:     Config{BufferLimit: 3},
			setup:   []any{tool(parent, "c1"), tool(parent, "c2"), tool(parent, "c3")},
			msg:     tool(parent, "c4"),
			events:  []string{"interaction_buffered", "incident_recorded"},
			effects: []any{warning("buffer full: 1 older interactions dropped before extraction; the last 3 kept")},
			check: func(t *testing.T, d actors.Decision, s *State) {
				ev := eventOf[messages.FamilyInteractionBuffered](t, d.Events)
				if !slices.Equal(ev.Dropped, []uint64{1}) {
					t.Errorf("dropped %v, want [1]", ev.Dropped)
				}
				wantIDs(t, "pending", callIDs(s.Pending), "c2", "c3", "c4")
				if s.Dropped != 1 || s.DroppedSinceFetch != 1 {
					t.Errorf("dropped %d, since fetch %d; want 1, 1", s.Dropped, s.DroppedSinceFetch)
				}
			},
		},
		{
			name:   "further drops before a fetch are counted without another toast",
			cfg:    Config{BufferLimit: 3},
			setup:  []any{tool(parent, "c1"), tool(parent, "c2"), tool(parent, "c3"), tool(parent, "c4")},
			msg:    tool(parent, "c5"),
			events: []string{"interaction_buffered"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if s.Dropped != 2 || s.DroppedSinceFetch != 2 {
					t.Errorf("dropped %d, since fetch %d; want 2, 2", s.Dropped, s.DroppedSinceFetch)
				}
			},
		},
		{
			name:  "the extractor is told it sees a tail, and its fetch resets the count",
			cfg:   Config{BufferLimit: 3},
			setup: []any{tool(parent, "c1"), tool(parent, "c2"), tool(parent, "c3"), tool(parent, "c4"), tool(parent, "c5"), idle(parent), childOK(ext)},
			msg:   fetch(ext, ""),
			check: func(t *testing.T, d actors.Decision, s *State) {
				r := d.Reply.(*messages.PayloadFetched)
				want := "you see the last 3 of 5 interactions (2 older ones were dropped by the buffer limit)"
				if r.Note != want {
					t.Errorf("note %q, want %q", r.Note, want)
				}
				if s.Dropped != 2 || s.DroppedSinceFetch != 0 || s.OpenIncidents[IncidentBufferDrop] {
					t.Errorf("dropped %d, since fetch %d, open %v", s.Dropped, s.DroppedSinceFetch, s.OpenIncidents)
				}
			},
		},
		{
			name:       "the extraction prompt says so too",
			cfg:        Config{BufferLimit: 3},
			setup:      []any{tool(parent, "c1"), tool(parent, "c2"), tool(parent, "c3"), tool(parent, "c4"), idle(parent)},
			msg:        childOK(ext),
			anyEffects: true,
			check: func(t *testing.T, d actors.Decision, s *State) {
				p := effectsOf[messages.PromptSession](d.Effects)
				if len(p) != 1 || !strings.Contains(p[0].Text, "you see the last 3 of 4 interactions (1 older ones were dropped by the buffer limit)") {
					t.Errorf("prompt %+v", p)
				}
			},
		},
		{
			name:   "a child's own buffer drops silently: it is never extracted",
			cfg:    Config{BufferLimit: 1},
			setup:  []any{taskChild(task), tool(task, "t1")},
			msg:    tool(task, "t2"),
			events: []string{"interaction_buffered"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if s.Dropped != 0 {
					t.Errorf("dropped %d", s.Dropped)
				}
			},
		},
		{
			name:  "a child's call goes to the child's own buffer",
			setup: []any{taskChild(task)},
			msg:   tool(task, "t1"),
			check: func(t *testing.T, d actors.Decision, s *State) {
				wantIDs(t, "pending", callIDs(s.Pending))
				wantIDs(t, "task buffer", callIDs(s.Children[task].Buffer), "t1")
			},
		},
		{name: "an unknown session's call is ignored", msg: tool("ses_stranger", "x"), events: []string{}},
		{name: "a redelivered call is not buffered twice", setup: []any{tool(parent, "c1")}, msg: tool(parent, "c1"), events: []string{}},
		{
			name: "the journal cuts output and top-level string args to 2000 characters",
			msg: &messages.ToolExecuted{Host: host, Interaction: messages.Interaction{
				ID: "c1", SessionID: parent, Tool: "write", Output: long,
				Args: json.RawMessage(`{"content":"` + long + `","n":7,"nested":{"s":"` + long + `"}}`),
			}},
			check: func(t *testing.T, d actors.Decision, s *State) {
				in := eventOf[messages.FamilyInteractionBuffered](t, d.Events).Interaction
				if n := utf8.RuneCountInString(in.Output); n != 2000 {
					t.Errorf("output has %d characters", n)
				}
				var args struct {
					Content string
					N       int
					Nested  struct{ S string }
				}
				if err := json.Unmarshal(in.Args, &args); err != nil {
					t.Fatal(err)
				}
				if n := utf8.RuneCountInString(args.Content); n != 2000 || args.N != 7 {
					t.Errorf("content has %d characters, n=%d", n, args.N)
				}
				if args.Nested.S != long {
					t.Errorf("nested string was cut; only top-level strings are")
				}
			},
		},
	})
}

func TestSessionCreated(t *testing.T) {
	runCases(t, []decideCase{
		{
			name:    "a top-level session gets the start reminder",
			msg:     created(parent, "", "hello"),
			effects: []any{&messages.SendStartReminder{Host: host, SessionID: parent, Directory: "/repo"}},
		},
		{
			name:    "only once",
			setup:   []any{created(parent, "", "hello")},
			msg:     created(parent, "", "hello"),
			events:  []string{},
			effects: nil,
		},
		{
			name:   "a child is recorded as a task sub-agent and gets no reminder",
			msg:    taskChild(task),
			events: []string{"child_recorded"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if c := s.Children[task]; c == nil || c.Kind != ChildTask {
					t.Errorf("child record %+v", c)
				}
			},
		},
		{
			name: "a child titled thatch-extraction is an extraction child",
			msg:  extChild(ext),
			check: func(t *testing.T, d actors.Decision, s *State) {
				if c := s.Children[ext]; c == nil || c.Kind != ChildExtraction {
					t.Errorf("child record %+v", c)
				}
			},
		},
	})
}

func TestFetchPayload(t *testing.T) {
	long := strings.Repeat("x", 900)
	runCases(t, []decideCase{
		{
			name:   "a child's fetch claims everything pending and measures it",
			setup:  []any{tool(parent, "c1"), tool(parent, "c2"), extChild(ext)},
			msg:    fetch(ext, ""),
			events: []string{"payload_claimed", "payload_measured"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				wantIDs(t, "payload", payloadIDs(d.Reply), "c1", "c2")
				if d.Reply.(*messages.PayloadFetched).ParentID != parent {
					t.Errorf("reply %+v", d.Reply)
				}
				wantIDs(t, "pending", callIDs(s.Pending))
				wantIDs(t, "claim", claimIDs(s, ext), "c1", "c2")
				if !s.Claims[ext].Entries[0].AcceptedAt.Equal(t0) {
					t.Errorf("accepted at %v", s.Claims[ext].Entries[0].AcceptedAt)
				}
			},
		},
		{
			name:  "the child's own id means its parent's queue",
			setup: []any{tool(parent, "c1"), extChild(ext)},
			msg:   fetch(ext, ext),
			check: func(t *testing.T, d actors.Decision, s *State) { wantIDs(t, "payload", payloadIDs(d.Reply), "c1") },
		},
		{
			name:  "so does the parent's id",
			setup: []any{tool(parent, "c1"), extChild(ext)},
			msg:   fetch(ext, parent),
			check: func(t *testing.T, d actors.Decision, s *State) { wantIDs(t, "payload", payloadIDs(d.Reply), "c1") },
		},
		{
			name:   "another family's id gets nothing here",
			setup:  []any{tool(parent, "c1"), extChild(ext)},
			msg:    fetch(ext, "ses_other"),
			events: []string{},
			check:  func(t *testing.T, d actors.Decision, s *State) { wantIDs(t, "payload", payloadIDs(d.Reply)) },
		},
		{
			name:   "a second fetcher sees only what is still pending and measures it",
			setup:  []any{tool(parent, "c1"), extChild(ext), extChild(ext2), fetch(ext, ""), tool(parent, "c2")},
			msg:    fetch(ext2, ""),
			events: []string{"payload_claimed", "payload_measured"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				wantIDs(t, "payload", payloadIDs(d.Reply), "c2")
				wantIDs(t, "first claim", claimIDs(s, ext), "c1")
				wantIDs(t, "second claim", claimIDs(s, ext2), "c2")
			},
		},
		{
			name:   "nothing pending: an empty reply and, for a parent, no event",
			msg:    fetch(parent, ""),
			events: []string{},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if r, ok := d.Reply.(*messages.PayloadFetched); !ok || len(r.Interactions) != 0 {
					t.Errorf("reply %#v", d.Reply)
				}
			},
		},
		{
			name:   "a child that fetched nothing still counts as having fetched",
			setup:  []any{extChild(ext)},
			msg:    fetch(ext, ""),
			events: []string{"payload_claimed"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if !s.Children[ext].Fetched || len(s.Claims) != 0 {
					t.Errorf("state %+v claims %v", s.Children[ext], s.Claims)
				}
			},
		},
		{
			name: "the payload cuts output to 500 and summarises args to 120 characters",
			setup: []any{&messages.ToolExecuted{Host: host, Interaction: messages.Interaction{
				ID: "c1", SessionID: parent, Tool: "write", Output: long, Args: json.RawMessage(`{"content": "` + long + `"}`),
			}}, tool(parent, "c2")},
			msg: fetch(parent, ""),
			check: func(t *testing.T, d actors.Decision, s *State) {
				r := d.Reply.(*messages.PayloadFetched)
				if n := utf8.RuneCountInString(r.Interactions[0].Output); n != 500 {
					t.Errorf("output has %d characters", n)
				}
				var summary string
				if err := json.Unmarshal(r.Interactions[0].Args, &summary); err != nil {
					t.Fatalf("args %s: %v", r.Interactions[0].Args, err)
				}
				if n := utf8.RuneCountInString(summary); n != 120 || !strings.HasPrefix(summary, `{"content":"xxx`) {
					t.Errorf("summary %q has %d characters", summary, n)
				}
				if string(r.Interactions[1].Args) != `{"command":"ls c2"}` {
					t.Errorf("short args changed: %s", r.Interactions[1].Args)
				}
				// The journal keeps the longer text.
				if n := len(s.Claims[parent].Entries[0].Interaction.Output); n != 900 {
					t.Errorf("claimed entry output has %d bytes", n)
				}
			},
		},
		{
			name:   "a deleted parent's family answers with nothing",
			setup:  []any{tool(parent, "c1"), deletedMsg(parent)},
			msg:    fetch("ses_x", parent),
			events: []string{},
			check:  func(t *testing.T, d actors.Decision, s *State) { wantIDs(t, "payload", payloadIDs(d.Reply)) },
		},
	})
}

func acked(d actors.Decision) int { return d.Reply.(*messages.ExtractionAcked).Completed }

func TestExtractionDone(t *testing.T) {
	runCases(t, []decideCase{
		{
			name: "two extractors: the first completion consumes only its own entries",
			setup: []any{
				tool(parent, "c1"), tool(parent, "c2"), extChild(ext), extChild(ext2),
				fetch(ext, ""), tool(parent, "c3"), fetch(ext2, ""),
			},
			msg:    doneAck(ext),
			events: []string{"claim_completed"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if acked(d) != 2 {
					t.Errorf("completed %d, want 2", acked(d))
				}
				wantIDs(t, "first claim", claimIDs(s, ext))
				wantIDs(t, "second claim", claimIDs(s, ext2), "c3")
			},
		},
		{
			name: "a done-ack before any fetch completes the parent's whole accepted set",
			setup: []any{
				tool(parent, "c1"), fetch(parent, ""), tool(parent, "c2"), taskChild(task), fetch(task, ""),
				tool(parent, "c3"), extChild(ext),
			},
			msg: doneAck(ext),
			check: func(t *testing.T, d actors.Decision, s *State) {
				ev := eventOf[messages.FamilyClaimCompleted](t, d.Events)
				if acked(d) != 2 || ev.Cause != messages.CompletedByFallback {
					t.Errorf("completed %d by %q, want 2 by fallback", acked(d), ev.Cause)
				}
				if len(s.Claims) != 0 {
					t.Errorf("claims left: %v", s.Claims)
				}
				wantIDs(t, "pending", callIDs(s.Pending), "c3")
			},
		},
		{
			name:   "a child that fetched but holds nothing completes nothing",
			setup:  []any{tool(parent, "c1"), extChild(ext), extChild(ext2), fetch(ext2, ""), fetch(ext, "")},
			msg:    doneAck(ext),
			events: []string{},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if acked(d) != 0 {
					t.Errorf("completed %d", acked(d))
				}
				wantIDs(t, "other claim", claimIDs(s, ext2), "c1")
			},
		},
		{
			name:  "a parent completes its own claim and nothing else",
			setup: []any{tool(parent, "c1"), fetch(parent, ""), tool(parent, "c2"), extChild(ext), fetch(ext, "")},
			msg:   doneAck(parent),
			check: func(t *testing.T, d actors.Decision, s *State) {
				if acked(d) != 1 {
					t.Errorf("completed %d", acked(d))
				}
				wantIDs(t, "child claim", claimIDs(s, ext), "c2")
			},
		},
		{
			name:   "a parent without a claim completes nothing",
			setup:  []any{tool(parent, "c1"), extChild(ext), fetch(ext, "")},
			msg:    doneAck(parent),
			events: []string{},
			check:  func(t *testing.T, d actors.Decision, s *State) { wantIDs(t, "claim", claimIDs(s, ext), "c1") },
		},
		{
			name:   "a stranger without a claim completes nothing",
			setup:  []any{tool(parent, "c1"), extChild(ext), fetch(ext, "")},
			msg:    doneAck("ses_stranger"),
			events: []string{},
		},
	})
}

func TestMemoryWritten(t *testing.T) {
	runCases(t, []decideCase{
		{
			name:   "a write by a claiming child completes its claim and counts",
			setup:  []any{tool(parent, "c1"), extChild(ext), fetch(ext, "")},
			msg:    remember(ext, messages.MemoryCreated),
			events: []string{"claim_completed", "memory_counted"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if len(s.Claims) != 0 || s.Children[ext].Metrics.New != 1 {
					t.Errorf("claims %v metrics %+v", s.Claims, s.Children[ext].Metrics)
				}
			},
		},
		{
			name:   "a write by a child without a claim only counts",
			setup:  []any{tool(parent, "c1"), extChild(ext), extChild(ext2), fetch(ext2, "")},
			msg:    remember(ext, messages.MemoryDeleted),
			events: []string{"memory_counted"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				wantIDs(t, "other claim", claimIDs(s, ext2), "c1")
				if s.Children[ext].Metrics.Deleted != 1 {
					t.Errorf("metrics %+v", s.Children[ext].Metrics)
				}
			},
		},
		{
			name:   "a parent's write consumes nothing",
			setup:  []any{tool(parent, "c1"), fetch(parent, "")},
			msg:    remember(parent, messages.MemoryUpdated),
			events: []string{},
		},
	})
}

func TestChildIdle(t *testing.T) {
	runCases(t, []decideCase{
		{
			name: "an extraction child's idle completes its claim, toasts, forgets it and deletes it",
			setup: append(startExtraction(ext), fetch(ext, ""),
				remember(ext, messages.MemoryCreated), tool(parent, "c1"), remember(ext, messages.MemoryCreated),
				remember(ext, messages.MemoryUpdated), tool(ext, "own1")),
			msg:    idle(ext),
			events: []string{"extraction_stopped", "child_cleared"},
			effects: []any{
				&messages.ShowToast{Title: "thatch", Message: "memories saved: 2 new, 1 updated, 0 deleted", Variant: "success"},
				&messages.DeleteSession{SessionID: ext},
			},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if s.Extracting || s.Children[ext] != nil {
					t.Errorf("extracting %v, child %+v", s.Extracting, s.Children[ext])
				}
				wantIDs(t, "pending", callIDs(s.Pending), "c1")
			},
		},
		{
			name:   "its claim is completed on idle when no write did it",
			setup:  append(startExtraction(ext), fetch(ext, "")),
			msg:    idle(ext),
			events: []string{"claim_completed", "extraction_stopped", "child_cleared"},
			// nothing written: no toast
			effects: []any{&messages.DeleteSession{SessionID: ext}},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if len(s.Claims) != 0 {
					t.Errorf("claims %v", s.Claims)
				}
			},
		},
		{
			name:    "a child that never fetched consumes nothing",
			setup:   append(startExtraction(ext), taskChild(task), fetch(task, "")),
			msg:     idle(ext),
			events:  []string{"extraction_stopped", "child_cleared"},
			effects: []any{&messages.DeleteSession{SessionID: ext}},
			check:   func(t *testing.T, d actors.Decision, s *State) { wantIDs(t, "task claim", claimIDs(s, task), "c0") },
		},
		{
			name:   "a sibling task sub-agent's idle leaves the extractor's claim alone",
			setup:  []any{tool(parent, "c0"), extChild(ext), fetch(ext, ""), taskChild(task), tool(task, "t1")},
			msg:    idle(task),
			events: []string{},
			check: func(t *testing.T, d actors.Decision, s *State) {
				wantIDs(t, "extractor claim", claimIDs(s, ext), "c0")
				wantIDs(t, "task buffer kept", callIDs(s.Children[task].Buffer), "t1")
			},
		},
		{
			name:   "a task sub-agent's idle completes its own claim and never deletes it",
			setup:  []any{tool(parent, "c0"), taskChild(task), fetch(task, ""), tool(parent, "c1"), extChild(ext), fetch(ext, "")},
			msg:    idle(task),
			events: []string{"claim_completed"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				wantIDs(t, "task claim", claimIDs(s, task))
				wantIDs(t, "extractor claim", claimIDs(s, ext), "c1")
				if s.Children[task] == nil {
					t.Errorf("task record cleared")
				}
			},
		},
	})
}

func TestParentIdle(t *testing.T) {
	create := &messages.CreateChildSession{ParentID: parent, Title: ExtractionTitle}
	runCases(t, []decideCase{
		{
			name:    "pending work starts an extraction",
			setup:   []any{tool(parent, "c1")},
			msg:     idle(parent),
			events:  []string{"extraction_started"},
			effects: []any{create},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if !s.Extracting || s.ExtractionChild != "" {
					t.Errorf("extracting %v child %q", s.Extracting, s.ExtractionChild)
				}
			},
		},
		{name: "nothing pending, nothing to do", msg: idle(parent), events: []string{}},
		{name: "not while extracting", setup: []any{tool(parent, "c1"), idle(parent), tool(parent, "c2")}, msg: idle(parent), events: []string{}},
		{
			name:   "not while compacting",
			setup:  []any{tool(parent, "c1"), command("thatch/compact"), idle(parent), fetched("done\nTHATCH_COMPACT_READY"), tool(parent, "c2")},
			msg:    idle(parent),
			events: []string{},
		},
		{
			name:       "the created child is prompted to extract",
			anyEffects: true,
			setup:      []any{tool(parent, "c1"), idle(parent)},
			msg:        childOK(ext),
			events:     []string{"extraction_child_attached"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				p := effectsOf[messages.PromptSession](d.Effects)
				if len(p) != 1 || len(d.Effects) != 1 || p[0].SessionID != ext || p[0].NoReply {
					t.Fatalf("effects %s", show(d.Effects))
				}
				for _, want := range []string{"thatch-fact-extractor", "thatch_get_extraction_payload", `"` + parent + `"`, "memory_remember", "thatch_extraction_done", "even if you saved nothing"} {
					if !strings.Contains(p[0].Text, want) {
						t.Errorf("prompt lacks %q:\n%s", want, p[0].Text)
					}
				}
				if s.ExtractionChild != ext || s.Children[ext].Kind != ChildExtraction {
					t.Errorf("child %q %+v", s.ExtractionChild, s.Children[ext])
				}
			},
		},
		{
			name:    "a failed create clears the flag and tells the user once",
			setup:   []any{tool(parent, "c1"), idle(parent)},
			msg:     &messages.ChildSessionCreated{ParentID: parent, Err: "500"},
			events:  []string{"extraction_stopped", "incident_recorded"},
			effects: []any{warning("extraction could not start: child create failed: 500; 1 interactions kept for the next extraction")},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if len(s.Incidents) != 1 || s.Incidents[0].Kind != IncidentStartFailed || !s.OpenIncidents[IncidentStartFailed] {
					t.Errorf("incidents %+v open %v", s.Incidents, s.OpenIncidents)
				}
			},
		},
		{
			name: "a retry failing the same way records and shows nothing more",
			setup: []any{tool(parent, "c1"), idle(parent), &messages.ChildSessionCreated{ParentID: parent, Err: "500"},
				idle(parent)},
			msg:    &messages.ChildSessionCreated{ParentID: parent, Err: "500"},
			events: []string{"extraction_stopped"},
		},
		{
			name: "a completed extraction closes the incident: the next failure is shown again",
			setup: []any{tool(parent, "c1"), idle(parent), &messages.ChildSessionCreated{ParentID: parent, Err: "500"},
				idle(parent), childOK(ext), fetch(ext, ""), remember(ext, messages.MemoryCreated), idle(ext),
				tool(parent, "c2"), idle(parent)},
			msg:     &messages.ChildSessionCreated{ParentID: parent, Err: "502"},
			events:  []string{"extraction_stopped", "incident_recorded"},
			effects: []any{warning("extraction could not start: child create failed: 502; 1 interactions kept for the next extraction")},
		},
		{
			name:    "so the next idle retries",
			setup:   []any{tool(parent, "c1"), idle(parent), &messages.ChildSessionCreated{ParentID: parent, Err: "500"}},
			msg:     idle(parent),
			effects: []any{create},
		},
		{
			name:    "a failed prompt clears the flag and tells the user",
			setup:   []any{tool(parent, "c1"), idle(parent), childOK(ext)},
			msg:     &messages.SessionPrompted{SessionID: ext, Err: "timeout"},
			events:  []string{"extraction_stopped", "incident_recorded"},
			effects: []any{warning("extraction could not start: prompt failed: timeout; 1 interactions kept for the next extraction")},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if s.Extracting {
					t.Error("still extracting")
				}
			},
		},
		{
			name:    "a second child from a repeated create is deleted",
			setup:   []any{tool(parent, "c1"), idle(parent), childOK(ext)},
			msg:     childOK(ext2),
			events:  []string{},
			effects: []any{&messages.DeleteSession{SessionID: ext2}},
		},
		{
			name:   "a create answer naming a task child never deletes it",
			setup:  []any{tool(parent, "c1"), idle(parent), childOK(ext), taskChild(task)},
			msg:    childOK(task),
			events: []string{},
		},
		{
			name: "a reused child that a reconcile found idle is attached and not finished",
			setup: []any{tool(parent, "c1"), idle(parent), extChild(ext),
				reconciled(true, hs(ext, ExtractionTitle, false))},
			msg:     childOK(ext),
			events:  []string{"extraction_child_attached", "finish_cancelled"},
			effects: []any{&actors.CancelTimer{Name: "finish:" + ext}, &messages.PromptSession{SessionID: ext, Text: extractionPrompt(parent, "")}},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if s.Children[ext].Finishing || s.ExtractionChild != ext {
					t.Errorf("child %+v attached %q", s.Children[ext], s.ExtractionChild)
				}
			},
		},
		{
			name:   "a repeated answer for the attached child is ignored",
			setup:  []any{tool(parent, "c1"), idle(parent), childOK(ext)},
			msg:    childOK(ext),
			events: []string{},
		},
		{
			name: "stale accepted entries go back ahead of newer ones",
			setup: []any{
				tool(parent, "c1"), tool(parent, "c2"), extChild(ext), fetch(ext, ""), advance(5 * time.Minute),
				tool(parent, "c3"), fetch(ext, ""), tool(parent, "c4"), advance(10 * time.Minute),
			},
			msg:     idle(parent),
			events:  []string{"entries_requeued", "extraction_started"},
			effects: []any{create},
			check: func(t *testing.T, d actors.Decision, s *State) {
				wantIDs(t, "pending", callIDs(s.Pending), "c1", "c2", "c4")
				wantIDs(t, "claim", claimIDs(s, ext), "c3") // accepted 10 minutes ago only
				if !s.Pending[0].AcceptedAt.IsZero() {
					t.Errorf("requeued entry keeps its accepted time")
				}
			},
		},
		{
			name: "a second pass creates no duplicates",
			setup: []any{
				tool(parent, "c1"), extChild(ext), fetch(ext, ""), tool(parent, "c2"), advance(16 * time.Minute),
				idle(parent), childOK(ext2), fetch(ext2, ""), advance(16 * time.Minute),
			},
			msg: idle(parent),
			// c1 went stale twice, under two fetchers; c2 once. The second
			// extractor has run for the whole window: it is deleted and a
			// new one asked for.
			events: []string{"entries_requeued", "extraction_stopped", "child_cleared", "incident_recorded", "extraction_started"},
			effects: []any{warning("extraction child ses_ext2 given up on: idle for the stale window; 2 interactions kept for the next extraction"),
				&messages.DeleteSession{SessionID: ext2}, create},
			check: func(t *testing.T, d actors.Decision, s *State) {
				wantIDs(t, "pending", callIDs(s.Pending), "c1", "c2")
				if len(s.Claims) != 0 {
					t.Errorf("claims left: %v", s.Claims)
				}
			},
		},
		{
			name:   "an extractor still running after the stale window is deleted, its claim goes back, and a new one is asked for",
			setup:  append(startExtraction(ext), fetch(ext, ""), tool(parent, "c1"), tool(ext, "own"), advance(15*time.Minute)),
			msg:    idle(parent),
			events: []string{"entries_requeued", "extraction_stopped", "child_cleared", "incident_recorded", "extraction_started"},
			effects: []any{warning("extraction child ses_ext given up on: idle for the stale window; 2 interactions kept for the next extraction"),
				&messages.DeleteSession{SessionID: ext}, create},
			check: func(t *testing.T, d actors.Decision, s *State) {
				wantIDs(t, "pending", callIDs(s.Pending), "c0", "c1")
				if s.Children[ext] != nil || len(s.Claims) != 0 {
					t.Errorf("the hung extractor is still recorded: %+v claims %v", s.Children[ext], s.Claims)
				}
			},
		},
		{
			name: "a child attached late gets its own stale window",
			setup: []any{tool(parent, "c0"), idle(parent), advance(14 * time.Minute), childOK(ext), extChild(ext),
				advance(30 * time.Second), fetch(ext, ""), advance(45 * time.Second)},
			msg:    idle(parent),
			events: []string{},
		},
		{
			name:   "a child working on a fresh claim is waited for, however long it was attached",
			setup:  append(startExtraction(ext), advance(14*time.Minute), tool(parent, "c1"), fetch(ext, ""), advance(2*time.Minute)),
			msg:    idle(parent),
			events: []string{},
			check:  func(t *testing.T, d actors.Decision, s *State) { wantIDs(t, "claim", claimIDs(s, ext), "c0", "c1") },
		},
		{
			name: "a child still writing memories is not hung, though its writes completed its claim",
			setup: append(startExtraction(ext), fetch(ext, ""), advance(13*time.Minute), tool(parent, "c1"), fetch(ext, ""),
				remember(ext, messages.MemoryCreated), advance(2*time.Minute)),
			msg:    idle(parent),
			events: []string{},
		},
		{
			name:   "a child waiting out its finish grace is left to its timer",
			setup:  append(startExtraction(ext), reconciled(true, hs(ext, ExtractionTitle, false)), advance(16*time.Minute)),
			msg:    idle(parent),
			events: []string{},
		},
		{
			name:   "an extractor within the stale window is waited for",
			setup:  append(startExtraction(ext), fetch(ext, ""), tool(parent, "c1"), advance(14*time.Minute)),
			msg:    idle(parent),
			events: []string{},
		},
		{
			name:    "a create whose answer never came is given up after the stale window",
			setup:   []any{tool(parent, "c1"), idle(parent), advance(15 * time.Minute)},
			msg:     idle(parent),
			events:  []string{"extraction_stopped", "incident_recorded", "extraction_started"},
			effects: []any{warning("extraction could not start: no child within the stale window (host gone?); 1 interactions kept for the next extraction"), create},
		},
		{
			name:   "a create still unanswered within the stale window is waited for",
			setup:  []any{tool(parent, "c1"), idle(parent), advance(14 * time.Minute)},
			msg:    idle(parent),
			events: []string{},
		},
	})
}

func TestChildError(t *testing.T) {
	runCases(t, []decideCase{
		{
			name:    "a child that fetched hands back its claim only",
			setup:   append(startExtraction(ext), tool(parent, "c1"), fetch(ext, ""), tool(parent, "c2"), extChild(ext2), fetch(ext2, ""), tool(ext, "own")),
			msg:     errored(ext),
			events:  []string{"entries_requeued", "extraction_stopped", "child_cleared", "incident_recorded"},
			effects: []any{warning("extraction child ses_ext errored: boom; 3 interactions kept for the next extraction"), &messages.DeleteSession{SessionID: ext}},
			check: func(t *testing.T, d actors.Decision, s *State) {
				wantIDs(t, "pending", callIDs(s.Pending), "c0", "c1")
				wantIDs(t, "other claim", claimIDs(s, ext2), "c2")
				if s.Extracting || s.Children[ext] != nil {
					t.Errorf("extracting %v record %+v", s.Extracting, s.Children[ext])
				}
			},
		},
		{
			name:    "a child that never fetched hands back the whole accepted set",
			setup:   append(startExtraction(ext), tool(parent, "c1"), fetch(parent, ""), tool(parent, "c2"), extChild(ext2), fetch(ext2, "")),
			msg:     errored(ext),
			events:  []string{"entries_requeued", "extraction_stopped", "child_cleared", "incident_recorded"},
			effects: []any{warning("extraction child ses_ext errored: boom; 3 interactions kept for the next extraction"), &messages.DeleteSession{SessionID: ext}},
			check: func(t *testing.T, d actors.Decision, s *State) {
				wantIDs(t, "pending", callIDs(s.Pending), "c0", "c1", "c2")
				if len(s.Claims) != 0 {
					t.Errorf("claims %v", s.Claims)
				}
			},
		},
		{
			name:   "a task child's error hands back only its claim and leaves the extraction running",
			setup:  append(startExtraction(ext), tool(parent, "c1"), fetch(ext, ""), taskChild(task), tool(parent, "c2"), fetch(task, ""), tool(parent, "c3")),
			msg:    errored(task),
			events: []string{"entries_requeued", "child_cleared"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				wantIDs(t, "pending", callIDs(s.Pending), "c2", "c3")
				wantIDs(t, "extractor's claim", claimIDs(s, ext), "c0", "c1")
				if !s.Extracting || s.ExtractionChild != ext || s.Children[task] != nil {
					t.Errorf("extracting %v child %q task record %+v", s.Extracting, s.ExtractionChild, s.Children[task])
				}
			},
		},
		{
			name:   "a task child that never fetched pulls nothing back",
			setup:  append(startExtraction(ext), fetch(ext, ""), taskChild(task)),
			msg:    errored(task),
			events: []string{"child_cleared"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				wantIDs(t, "extractor's claim", claimIDs(s, ext), "c0")
				if !s.Extracting {
					t.Error("extraction stopped by a task child's error")
				}
			},
		},
		{name: "a parent's error changes nothing", setup: []any{tool(parent, "c1"), idle(parent)}, msg: errored(parent), events: []string{}},
	})
}

func TestSessionDeleted(t *testing.T) {
	runCases(t, []decideCase{
		{
			name:    "a deleted extraction child hands back its claim, and the next idle re-extracts",
			setup:   append(startExtraction(ext), tool(parent, "c1"), fetch(ext, ""), deletedMsg(ext)),
			msg:     idle(parent),
			events:  []string{"extraction_started"},
			effects: []any{&messages.CreateChildSession{ParentID: parent, Title: ExtractionTitle}},
			check:   func(t *testing.T, d actors.Decision, s *State) { wantIDs(t, "pending", callIDs(s.Pending), "c0", "c1") },
		},
		{
			name:   "an extraction child that never fetched hands back the whole accepted set",
			setup:  append(startExtraction(ext), tool(parent, "c1"), fetch(parent, "")),
			msg:    deletedMsg(ext),
			events: []string{"entries_requeued", "extraction_stopped", "child_cleared"},
			check:  func(t *testing.T, d actors.Decision, s *State) { wantIDs(t, "pending", callIDs(s.Pending), "c0", "c1") },
		},
		{
			// The issue's "if it has none" reads here as "if it never
			// fetched", as for an error: a child whose claim is already
			// completed processed its payload, and the accepted set may be
			// a second extractor's.
			name:   "an extraction child whose claim was completed hands back nothing",
			setup:  append(startExtraction(ext), fetch(ext, ""), doneAck(ext), tool(parent, "c1"), extChild(ext2), fetch(ext2, "")),
			msg:    deletedMsg(ext),
			events: []string{"extraction_stopped", "child_cleared"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				wantIDs(t, "pending", callIDs(s.Pending))
				wantIDs(t, "second extractor's claim", claimIDs(s, ext2), "c1")
			},
		},
		{
			name:   "a task child without a claim never pulls an extractor's payload back",
			setup:  append(startExtraction(ext), tool(parent, "c1"), fetch(ext, ""), taskChild(task)),
			msg:    deletedMsg(task),
			events: []string{"child_cleared"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				wantIDs(t, "extractor claim", claimIDs(s, ext), "c0", "c1")
				if !s.Extracting {
					t.Error("extraction flag cleared by a task child")
				}
			},
		},
		{
			name:   "a task child hands back its own claim only",
			setup:  []any{tool(parent, "c1"), taskChild(task), fetch(task, ""), tool(parent, "c2"), extChild(ext), fetch(ext, "")},
			msg:    deletedMsg(task),
			events: []string{"entries_requeued", "child_cleared"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				wantIDs(t, "pending", callIDs(s.Pending), "c1")
				wantIDs(t, "extractor claim", claimIDs(s, ext), "c2")
			},
		},
		{
			name: "a deleted parent takes its accepted entries and drops its pending ones",
			setup: append(startExtraction(ext), tool(parent, "c1"), fetch(ext, ""), tool(parent, "c2"),
				command("thatch/exit")),
			msg:     deletedMsg(parent),
			events:  []string{"parent_deleted"},
			effects: []any{gone},
			check: func(t *testing.T, d actors.Decision, s *State) {
				ev := eventOf[messages.FamilyParentDeleted](t, d.Events)
				if !slices.Equal(ev.Completed, []uint64{1, 2}) || !slices.Equal(ev.Dropped, []uint64{3}) {
					t.Errorf("event %+v", ev)
				}
				if !s.Deleted || s.Extracting || s.WrapUp != nil || len(s.Pending)+len(s.Claims)+len(s.Children) != 0 {
					t.Errorf("not a tombstone: %+v", s)
				}
				if !New(Config{}).Active(s) {
					t.Error("a tombstone whose note is not stored yet is not active: a crash now would never note it")
				}
			},
		},
		{
			name:   "a tombstone ignores everything else",
			setup:  []any{tool(parent, "c1"), deletedMsg(parent)},
			msg:    idle(parent),
			events: []string{},
		},
	})
}

func TestCompacted(t *testing.T) {
	runCases(t, []decideCase{
		{
			name:   "session.compacted clears the flag",
			setup:  []any{command("thatch/compact"), idle(parent), fetched("THATCH_COMPACT_READY")},
			msg:    &messages.SessionCompacted{Host: host, SessionID: parent},
			events: []string{"compaction_finished"},
		},
		{
			name:       "a compaction the host refused clears the flag and tells the user",
			setup:      []any{tool(parent, "c1"), command("thatch/compact"), idle(parent), fetched("THATCH_COMPACT_READY")},
			msg:        &messages.SessionCompactIssued{SessionID: parent, Err: "503 Service Unavailable"},
			events:     []string{"compaction_finished"},
			anyEffects: true,
			check: func(t *testing.T, d actors.Decision, s *State) {
				toasts := effectsOf[messages.ShowToast](d.Effects)
				if len(toasts) != 1 || toasts[0].Variant != "warning" || !strings.Contains(toasts[0].Message, "/thatch/compact again") {
					t.Errorf("effects %s", show(d.Effects))
				}
				if s.Compacting {
					t.Error("still compacting")
				}
			},
		},
		{
			name:   "a compaction the host started waits for session.compacted",
			setup:  []any{command("thatch/compact"), idle(parent), fetched("THATCH_COMPACT_READY")},
			msg:    &messages.SessionCompactIssued{SessionID: parent},
			events: []string{},
		},
		{
			name:    "after a refused compaction an idle extracts again",
			setup:   []any{tool(parent, "c1"), command("thatch/compact"), idle(parent), fetched("THATCH_COMPACT_READY"), &messages.SessionCompactIssued{SessionID: parent, Err: "503"}},
			msg:     idle(parent),
			effects: []any{&messages.CreateChildSession{ParentID: parent, Title: ExtractionTitle}},
		},
		{
			name:    "after which an idle extracts again",
			setup:   []any{tool(parent, "c1"), command("thatch/compact"), idle(parent), fetched("THATCH_COMPACT_READY"), &messages.SessionCompactIssued{SessionID: parent}, &messages.SessionCompacted{Host: host, SessionID: parent}},
			msg:     idle(parent),
			effects: []any{&messages.CreateChildSession{ParentID: parent, Title: ExtractionTitle}},
		},
	})
}

func TestWrapUp(t *testing.T) {
	fetchMsgs := &messages.FetchMessages{SessionID: parent, Check: 1}
	create := &messages.CreateChildSession{ParentID: parent, Title: ExtractionTitle}
	armedIdle := func(cmd string) []any { return []any{tool(parent, "c1"), command(cmd), idle(parent)} }
	runCases(t, []decideCase{
		{
			name:   "/thatch/compact arms with its token",
			msg:    command("thatch/compact"),
			events: []string{"wrapup_armed"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if s.WrapUp == nil || s.WrapUp.Kind != WrapUpCompact || s.WrapUp.Token != TokenCompact {
					t.Errorf("wrap-up %+v", s.WrapUp)
				}
			},
		},
		{
			name: "/thatch/exit arms with its token",
			msg:  command("/thatch/exit"),
			check: func(t *testing.T, d actors.Decision, s *State) {
				if s.WrapUp == nil || s.WrapUp.Kind != WrapUpExit || s.WrapUp.Token != TokenExit {
					t.Errorf("wrap-up %+v", s.WrapUp)
				}
			},
		},
		{name: "unknown commands do not arm", msg: command("review"), events: []string{}},
		{
			name:    "an armed idle fetches the messages first and does nothing else yet",
			setup:   []any{tool(parent, "c1"), command("thatch/exit")},
			msg:     idle(parent),
			events:  []string{"wrapup_check_started"},
			effects: []any{fetchMsgs},
		},
		{
			name:    "compact: the token on the last line compacts and stops",
			setup:   armedIdle("thatch/compact"),
			msg:     fetched("Checklist done.\n  THATCH_COMPACT_READY  \n"),
			events:  []string{"compaction_started", "wrapup_disarmed"},
			effects: []any{&messages.CompactSession{SessionID: parent}},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if !s.Compacting || s.WrapUp != nil || s.Extracting {
					t.Errorf("compacting %v wrap-up %+v extracting %v", s.Compacting, s.WrapUp, s.Extracting)
				}
			},
		},
		{
			name:   "exit: the host closes the session",
			setup:  armedIdle("thatch/exit"),
			msg:    fetched("All saved.\nTHATCH_EXIT_READY"),
			events: []string{"wrapup_disarmed", "exit_greenlit"},
			effects: []any{
				&messages.ExitSession{SessionID: parent},
				&actors.StartTimer{Name: exitTimer, After: 2 * time.Minute},
			},
		},
		{
			name:       "a token in the middle of the text does not count",
			anyEffects: true,
			setup:      armedIdle("thatch/exit"),
			msg:        fetched("I will print THATCH_EXIT_READY\nonce the blockers are gone."),
			check: func(t *testing.T, d actors.Decision, s *State) {
				toasts := effectsOf[messages.ShowToast](d.Effects)
				if len(toasts) != 1 || toasts[0].Variant != "warning" || !strings.Contains(toasts[0].Message, TokenExit) {
					t.Errorf("effects %s", show(d.Effects))
				}
				if len(effectsOf[messages.ExitSession](d.Effects)) != 0 {
					t.Errorf("exit triggered without the token")
				}
				// Falls through to normal idle handling, and stays armed.
				if !reflect.DeepEqual(effectsOf[messages.CreateChildSession](d.Effects), []*messages.CreateChildSession{create}) {
					t.Errorf("no extraction after a missing token: %s", show(d.Effects))
				}
				if s.WrapUp == nil || s.WrapUp.Checking {
					t.Errorf("wrap-up %+v", s.WrapUp)
				}
			},
		},
		{
			name:    "a failed fetch triggers no wrap-up, stays armed and continues the idle",
			setup:   armedIdle("thatch/compact"),
			msg:     &messages.MessagesFetched{SessionID: parent, Err: "503"},
			events:  []string{"wrapup_check_finished", "extraction_started"},
			effects: []any{create},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if s.WrapUp == nil || s.Compacting {
					t.Errorf("wrap-up %+v compacting %v", s.WrapUp, s.Compacting)
				}
			},
		},
		{
			name:    "the next idle checks again",
			setup:   append(armedIdle("thatch/exit"), fetched("not yet")),
			msg:     idle(parent),
			events:  []string{"wrapup_check_started"},
			effects: []any{&messages.FetchMessages{SessionID: parent, Check: 2}},
		},
		{
			name:   "a late answer for an earlier check does not end the running one",
			setup:  append(armedIdle("thatch/exit"), fetched("not yet"), idle(parent)),
			msg:    &messages.MessagesFetched{SessionID: parent, Check: 1, FinalAssistantText: "not yet"},
			events: []string{},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if !s.WrapUp.Checking {
					t.Error("the check ended on an earlier check's answer")
				}
			},
		},
		{
			name:       "the running check's answer ends it",
			setup:      append(armedIdle("thatch/exit"), fetched("not yet"), idle(parent)),
			msg:        &messages.MessagesFetched{SessionID: parent, Check: 2, FinalAssistantText: "done\nTHATCH_EXIT_READY"},
			events:     []string{"wrapup_disarmed", "exit_greenlit"},
			anyEffects: true,
		},
		{
			name:   "a repeated answer after the check ended is ignored",
			setup:  append(armedIdle("thatch/exit"), fetched("not yet")),
			msg:    fetched("THATCH_EXIT_READY"),
			events: []string{},
		},
		{
			name:       "the compact token does not greenlight an exit",
			anyEffects: true,
			setup:      armedIdle("thatch/exit"),
			msg:        fetched("THATCH_COMPACT_READY"),
			events:     []string{"wrapup_check_finished", "extraction_started"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if len(effectsOf[messages.ExitSession](d.Effects)) != 0 {
					t.Error("exited")
				}
			},
		},
		{
			name:       "compaction never unregisters",
			anyEffects: true,
			setup:      armedIdle("thatch/compact"),
			msg:        fetched("THATCH_COMPACT_READY"),
			events:     nil,
			check: func(t *testing.T, d actors.Decision, s *State) {
				if len(effectsOf[messages.ExitSession](d.Effects)) != 0 {
					t.Errorf("effects %s", show(d.Effects))
				}
			},
		},
		{
			name:    "deleting the session clears the arm",
			setup:   []any{command("thatch/exit")},
			msg:     deletedMsg(parent),
			events:  []string{"parent_deleted"},
			effects: []any{gone},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if s.WrapUp != nil {
					t.Errorf("still armed")
				}
			},
		},
	})
}

func TestHasToken(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"THATCH_EXIT_READY", true},
		{"done\nTHATCH_EXIT_READY", true},
		{"done\r\nTHATCH_EXIT_READY\r\n\n  ", true},
		{"done\n  THATCH_EXIT_READY\t", true},
		{"THATCH_EXIT_READY\nmore", false},
		{"say THATCH_EXIT_READY", false},
		{"done\nTHATCH_EXIT_READY.", false},
		{"done\n**THATCH_EXIT_READY**", false},
		{"", false},
	} {
		if got := hasToken(tc.text, TokenExit); got != tc.want {
			t.Errorf("hasToken(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

// TestTokensSurviveRedaction checks that the final assistant text, which
// the front end redacts before the family reads it, still greenlights a
// wrap-up: the tokens are no secret to the redactor, whatever precedes
// them, and a secret on the lines above is replaced, not the token.
func TestTokensSurviveRedaction(t *testing.T) {
	red, err := redact.New(redact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{TokenCompact, TokenExit} {
		if kinds := red.Find(token); kinds != nil {
			t.Errorf("the redactor finds %v in %s", kinds, token)
		}
		for _, tc := range []struct {
			text    string
			secrets int
		}{
			{"done\n" + token, 0},
			{"export API_TOKEN=Zq8pL2mN4vX7bC1dF6gH9jK3lQ5rS0tU\n" + token, 1},
			{"password=hunter22\nsecret: sw0rdf1sh99\n\n  " + token + "  \n", 2},
			{"pushed with ghp_Zq8pL2mN4vX7bC1dF6gH9jK3lQ5rS0tU2wY4\n" + token, 1},
		} {
			clean, n := red.Redact(tc.text)
			if n != tc.secrets {
				t.Errorf("Redact(%q) = %q replaced %d secrets, want %d", tc.text, clean, n, tc.secrets)
			}
			if !hasToken(clean, token) {
				t.Errorf("redacted %q is %q, which no longer ends with %s", tc.text, clean, token)
			}
		}
	}
}

func TestRecovery(t *testing.T) {
	t.Run("a crash between journaling and the host call re-issues the create", func(t *testing.T) {
		f := newFam(t, Config{})
		f.sendAll(tool(parent, "c1"))
		d := f.send(idle(parent))
		if len(d.Effects) != 1 {
			t.Fatalf("effects %s", show(d.Effects))
		}
		// The effect never ran: the process died after the fsync.
		d = f.crash()
		wantEffects(t, d.Effects, &messages.CreateChildSession{ParentID: parent, Title: ExtractionTitle})
		if len(d.Events) != 0 || !f.s.Extracting {
			t.Errorf("events %v extracting %v", eventNames(d.Events), f.s.Extracting)
		}
		// The executor found the child it had made; the extraction goes on.
		d = f.send(childOK(ext))
		if len(effectsOf[messages.PromptSession](d.Effects)) != 1 {
			t.Errorf("effects %s", show(d.Effects))
		}
		if d := f.crash(); len(d.Effects) != 0 {
			t.Errorf("nothing to re-issue once the child exists, got %s", show(d.Effects))
		}
	})
	t.Run("a crash during a wrap-up check fetches the messages again", func(t *testing.T) {
		f := newFam(t, Config{})
		f.sendAll(command("thatch/exit"), idle(parent))
		d := f.crash()
		wantEffects(t, d.Effects, &messages.FetchMessages{SessionID: parent, Check: 1})
		d = f.send(fetched("THATCH_EXIT_READY"))
		if len(effectsOf[messages.ExitSession](d.Effects)) != 1 {
			t.Errorf("effects %s", show(d.Effects))
		}
	})
	t.Run("after a process restart the create waits for the host's reconcile", func(t *testing.T) {
		f := newFam(t, Config{})
		f.sendAll(tool(parent, "c1"), idle(parent))
		// The host is not connected yet: a create now could only fail.
		if d := f.restart(); len(d.Effects)+len(d.Events) != 0 {
			t.Fatalf("on Recovered: events %v effects %s", eventNames(d.Events), show(d.Effects))
		}
		d := f.send(reconciled(true))
		wantEffects(t, d.Effects, &messages.CreateChildSession{ParentID: parent, Title: ExtractionTitle})
		f.send(childOK(ext))
		if d := f.send(reconciled(true, hs(ext, ExtractionTitle, true))); len(d.Effects) != 0 {
			t.Errorf("a reconcile after the child exists re-issued %s", show(d.Effects))
		}
	})
	t.Run("after a process restart a wrap-up check resumes on the host's reconcile", func(t *testing.T) {
		f := newFam(t, Config{})
		f.sendAll(command("thatch/exit"), idle(parent))
		if d := f.restart(); len(d.Effects) != 0 {
			t.Fatalf("on Recovered: %s", show(d.Effects))
		}
		// The check starts over: its stale window runs from now.
		d := f.send(reconciled(true))
		wantEffects(t, d.Effects, &messages.FetchMessages{SessionID: parent, Check: 2})
		if !f.s.WrapUp.CheckingSince.Equal(f.now) {
			t.Errorf("check since %v, want now", f.s.WrapUp.CheckingSince)
		}
		d = f.send(&messages.MessagesFetched{SessionID: parent, Check: 2, FinalAssistantText: "THATCH_EXIT_READY"})
		if len(effectsOf[messages.ExitSession](d.Effects)) != 1 {
			t.Errorf("the greenlit exit did not close the session: %s", show(d.Effects))
		}
	})
	t.Run("a family whose opencode came back on another host resumes its lost calls there", func(t *testing.T) {
		f := newFam(t, Config{})
		f.sendAll(tool(parent, "c1"), idle(parent))
		f.restart() // the old host never comes back
		// A plugin call naming another server name re-issues nothing.
		byPlugin := tool(parent, "c2")
		byPlugin.Host = "h2"
		if d := f.send(byPlugin); len(d.Effects) != 0 {
			t.Fatalf("a plugin call re-issued %s", show(d.Effects))
		}
		// The registry reconciles the family with the host its stream
		// events now come from (and records that host: the family does
		// not).
		d := f.send(&messages.FamilyReconciled{Host: "h2", Present: true, Parent: messages.HostSession{SessionID: parent}})
		// The create is asked again now: its stale window restarts.
		if names := eventNames(d.Events); !reflect.DeepEqual(names, []string{"extraction_started"}) {
			t.Errorf("events %v", names)
		}
		wantEffects(t, d.Effects, &messages.CreateChildSession{ParentID: parent, Title: ExtractionTitle})
	})
	exitEffects := []any{
		&messages.ExitSession{SessionID: parent},
	}
	greenlit := func(t *testing.T) *fam {
		f := newFam(t, Config{})
		f.sendAll(command("thatch/exit"), idle(parent), fetched("THATCH_EXIT_READY"))
		if f.s.ExitingSince.IsZero() || !f.k.Active(f.s) {
			t.Fatalf("greenlit exit not recorded: exiting since %v, active %v", f.s.ExitingSince, f.k.Active(f.s))
		}
		return f
	}
	t.Run("a crash between an exit's greenlight and its close closes it once the host is back", func(t *testing.T) {
		f := greenlit(t)
		f.now = f.now.Add(30 * time.Second)
		// After a restart the host is not connected yet: only the window
		// timer, for what is left of the window.
		d := f.crash()
		wantEffects(t, d.Effects, &actors.StartTimer{Name: exitTimer, After: 90 * time.Second})
		// The close failed meanwhile (host not connected): still waiting.
		if d := f.send(&messages.SessionExitIssued{SessionID: parent, Err: `host "h" is not connected`}); len(d.Events)+len(d.Effects) != 0 || f.s.ExitingSince.IsZero() {
			t.Errorf("a failed close within the window ended the exit: %v %s", eventNames(d.Events), show(d.Effects))
		}
		// The host reconnects: the exit effects again, in order.
		d = f.send(reconciled(true))
		wantEffects(t, d.Effects, exitEffects...)
		d = f.send(&messages.SessionExitIssued{SessionID: parent})
		if names := eventNames(d.Events); !reflect.DeepEqual(names, []string{"exit_finished"}) {
			t.Errorf("events after the close: %v", names)
		}
		wantEffects(t, d.Effects, &actors.CancelTimer{Name: exitTimer})
		if !f.s.ExitingSince.IsZero() || f.k.Active(f.s) {
			t.Errorf("exit still pending after its close: %v", f.s.ExitingSince)
		}
		if d := f.crash(); len(d.Effects) != 0 {
			t.Errorf("a finished exit was issued again: %s", show(d.Effects))
		}
		if d := f.send(reconciled(true)); len(effectsOf[messages.ExitSession](d.Effects)) != 0 {
			t.Errorf("a finished exit was issued again on reconcile: %s", show(d.Effects))
		}
		if d := f.send(&messages.SessionExitIssued{SessionID: parent}); len(d.Events) != 0 {
			t.Errorf("a repeated close report journaled %v", eventNames(d.Events))
		}
	})
	t.Run("a host back long after an exit's greenlight finds the session left open, and the user told", func(t *testing.T) {
		f := greenlit(t)
		f.now = f.now.Add(time.Hour)
		d := f.crash()
		wantEffects(t, d.Effects, &actors.StartTimer{Name: exitTimer, After: 10 * time.Second})
		d = f.send(reconciled(true))
		if len(effectsOf[messages.ExitSession](d.Effects)) != 0 {
			t.Errorf("closed a session an hour after its greenlight: %s", show(d.Effects))
		}
		toasts := effectsOf[messages.ShowToast](d.Effects)
		if len(toasts) != 1 || !strings.Contains(toasts[0].Message, "/thatch/exit again") {
			t.Errorf("effects %s", show(d.Effects))
		}
		if names := eventNames(d.Events); !reflect.DeepEqual(names, []string{"exit_finished"}) || !f.s.ExitingSince.IsZero() {
			t.Errorf("events %v, exiting since %v", names, f.s.ExitingSince)
		}
	})
	t.Run("an exit whose host never comes back ends with its window", func(t *testing.T) {
		f := greenlit(t)
		f.send(&messages.SessionExitIssued{SessionID: parent, Err: "connection refused"})
		f.now = f.now.Add(2 * time.Minute)
		d := f.send(&actors.Tick{Name: exitTimer})
		if names := eventNames(d.Events); !reflect.DeepEqual(names, []string{"exit_finished"}) || !f.s.ExitingSince.IsZero() || f.k.Active(f.s) {
			t.Errorf("events %v, exiting since %v", names, f.s.ExitingSince)
		}
		if toasts := effectsOf[messages.ShowToast](d.Effects); len(toasts) != 1 {
			t.Errorf("effects %s", show(d.Effects))
		}
		if d := f.send(&actors.Tick{Name: exitTimer}); len(d.Events) != 0 {
			t.Errorf("a late tick journaled %v", eventNames(d.Events))
		}
	})
	t.Run("state survives a snapshot", func(t *testing.T) {
		f := newFam(t, Config{})
		f.sendAll(append(startExtraction(ext), tool(parent, "c1"), fetch(ext, ""), tool(parent, "c2"), command("thatch/compact"), remember(ext, messages.MemoryCreated))...)
		b := encode(t, f.s)
		got, err := messages.DecodeAs[State](b)
		if err != nil {
			t.Fatal(err)
		}
		if string(encode(t, got)) != string(b) {
			t.Errorf("snapshot round trip differs")
		}
		f.s = got
		d := f.send(idle(ext))
		if len(effectsOf[messages.ShowToast](d.Effects)) != 1 || len(effectsOf[messages.DeleteSession](d.Effects)) != 1 {
			t.Errorf("effects after a snapshot %s", show(d.Effects))
		}
	})
}

func reconciled(present bool, children ...messages.HostSession) *messages.FamilyReconciled {
	return &messages.FamilyReconciled{Host: host, Present: present, Parent: messages.HostSession{SessionID: parent}, Children: children}
}

func hs(id, title string, busy bool) messages.HostSession {
	return messages.HostSession{SessionID: id, ParentID: parent, Title: title, Busy: busy}
}

func TestReconciled(t *testing.T) {
	finish := &actors.StartTimer{Name: "finish:" + ext, After: 10 * time.Second}
	runCases(t, []decideCase{
		{
			name:   "an extraction child that is gone is handled as deleted",
			setup:  append(startExtraction(ext), tool(parent, "c1"), fetch(ext, "")),
			msg:    reconciled(true),
			events: []string{"entries_requeued", "extraction_stopped", "child_cleared"},
			check:  func(t *testing.T, d actors.Decision, s *State) { wantIDs(t, "pending", callIDs(s.Pending), "c0", "c1") },
		},
		{
			name:    "an extraction child found idle is finished after a grace period",
			setup:   append(startExtraction(ext), tool(parent, "c1"), fetch(ext, "")),
			msg:     reconciled(true, hs(ext, ExtractionTitle, false)),
			events:  []string{"finish_scheduled"},
			effects: []any{finish},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if !New(Config{}).Active(s) || !s.Children[ext].Finishing {
					t.Error("a pending finish must keep the family active")
				}
			},
		},
		{
			name:    "when the timer fires, the child is finished as if it went idle",
			setup:   append(startExtraction(ext), tool(parent, "c1"), fetch(ext, ""), reconciled(true, hs(ext, ExtractionTitle, false))),
			msg:     &actors.Tick{Name: "finish:" + ext},
			events:  []string{"claim_completed", "extraction_stopped", "child_cleared"},
			effects: []any{&messages.DeleteSession{SessionID: ext}},
		},
		{
			name:   "a tick for a child that is no longer recorded does nothing",
			setup:  append(startExtraction(ext), reconciled(true, hs(ext, ExtractionTitle, false)), idle(ext)),
			msg:    &actors.Tick{Name: "finish:" + ext},
			events: []string{},
		},
		{
			name:   "a tick after the finish was cancelled does nothing",
			setup:  append(startExtraction(ext), reconciled(true, hs(ext, ExtractionTitle, false)), reconciled(true, hs(ext, ExtractionTitle, true))),
			msg:    &actors.Tick{Name: "finish:" + ext},
			events: []string{},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if s.Children[ext] == nil || s.Children[ext].Finishing {
					t.Errorf("child %+v", s.Children[ext])
				}
			},
		},
		{
			name:   "a compaction still running after a reconnect keeps the flag",
			setup:  []any{command("thatch/compact"), idle(parent), fetched("THATCH_COMPACT_READY")},
			msg:    &messages.FamilyReconciled{Host: host, Present: true, Parent: messages.HostSession{SessionID: parent, Busy: true}},
			events: []string{},
		},
		{
			name:   "a compaction that ended while thatch was away clears the flag",
			setup:  []any{command("thatch/compact"), idle(parent), fetched("THATCH_COMPACT_READY")},
			msg:    &messages.FamilyReconciled{Host: host, Present: true, Parent: messages.HostSession{SessionID: parent}},
			events: []string{"compaction_finished"},
		},
		{
			name:    "a busy extraction child is left to finish",
			setup:   startExtraction(ext),
			msg:     reconciled(true, hs(ext, ExtractionTitle, true)),
			events:  []string{},
			effects: nil,
		},
		{
			name:    "a restart re-arms the finish timer",
			setup:   append(startExtraction(ext), reconciled(true, hs(ext, ExtractionTitle, false))),
			msg:     &actors.Recovered{Restarted: true},
			effects: []any{finish},
		},
		{
			name:   "task children restore without extraction flags",
			setup:  []any{tool(parent, "c1"), taskChild(task), fetch(task, "")},
			msg:    reconciled(true, hs(task, "explore", false), hs("ses_task2", "build", false)),
			events: []string{"child_recorded"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				if s.Extracting || s.Children[task].Finishing || s.Children["ses_task2"].Kind != ChildTask {
					t.Errorf("state %+v", s)
				}
				wantIDs(t, "task claim", claimIDs(s, task), "c1")
			},
		},
		{
			name:   "a task child that is gone hands back only its claim",
			setup:  append(startExtraction(ext), tool(parent, "c1"), fetch(ext, ""), taskChild(task)),
			msg:    reconciled(true, hs(ext, ExtractionTitle, true)),
			events: []string{"child_cleared"},
			check: func(t *testing.T, d actors.Decision, s *State) {
				wantIDs(t, "extractor claim", claimIDs(s, ext), "c0", "c1")
			},
		},
		{
			name:    "a parent that is gone is handled as deleted",
			setup:   []any{tool(parent, "c1")},
			msg:     reconciled(false),
			events:  []string{"parent_deleted"},
			effects: []any{gone},
		},
		{
			name:    "a tombstone rehydrated before its note was stored asks for it again, and journals nothing",
			setup:   []any{tool(parent, "c1"), deletedMsg(parent)},
			msg:     &actors.Recovered{},
			events:  []string{},
			effects: []any{gone},
		},
		{
			name:   "a stored note is journaled once",
			setup:  []any{tool(parent, "c1"), deletedMsg(parent)},
			msg:    noted,
			events: []string{"deletion_noted"},
		},
		{
			name:   "a noted tombstone woken again asks for nothing",
			setup:  []any{tool(parent, "c1"), deletedMsg(parent), noted},
			msg:    &actors.Recovered{},
			events: []string{},
		},
	})
}

func TestUnknownMessage(t *testing.T) {
	f := newFam(t, Config{})
	d := f.send(&struct{ X int }{1})
	if !d.Unhandled || len(d.Events)+len(d.Effects) != 0 || d.Reply != nil {
		t.Errorf("decision %+v, want Unhandled and nothing else", d)
	}
	// A deleted family ignores its sessions' late events, and still tells
	// a type it does not know from one it does.
	f.send(&messages.SessionDeleted{SessionID: parent})
	if d := f.send(&struct{ X int }{1}); !d.Unhandled {
		t.Errorf("deleted family: unknown message decided %+v", d)
	}
	if d := f.send(tool(parent, "late")); d.Unhandled || len(d.Events)+len(d.Effects) != 0 {
		t.Errorf("deleted family: a late tool call decided %+v, want nothing, handled", d)
	}
}

func TestActive(t *testing.T) {
	k := New(Config{})
	for _, tc := range []struct {
		name  string
		setup []any
		want  bool
	}{
		{"a fresh family", nil, false},
		{"pending only", []any{tool(parent, "c1")}, false},
		{"extracting", []any{tool(parent, "c1"), idle(parent)}, true},
		{"armed, waiting for the next idle", []any{command("thatch/exit")}, false},
		{"checking a wrap-up", []any{command("thatch/exit"), idle(parent)}, true},
		{"exit greenlit, close not yet issued", []any{command("thatch/exit"), idle(parent), fetched("THATCH_EXIT_READY")}, true},
		{"exit closed", []any{command("thatch/exit"), idle(parent), fetched("THATCH_EXIT_READY"), &messages.SessionExitIssued{SessionID: parent}}, false},
		{"a claim outstanding", []any{tool(parent, "c1"), fetch(parent, "")}, true},
		{"claim completed", []any{tool(parent, "c1"), fetch(parent, ""), doneAck(parent)}, false},
		{"deleted, note not stored", []any{tool(parent, "c1"), deletedMsg(parent)}, true},
		{"deleted and noted", []any{tool(parent, "c1"), deletedMsg(parent), noted}, false},
	} {
		f := newFam(t, Config{})
		f.sendAll(tc.setup...)
		if got := k.Active(f.s); got != tc.want {
			t.Errorf("%s: Active = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestStatus(t *testing.T) {
	f := newFam(t, Config{})
	f.sendAll(append(startExtraction(ext), tool(parent, "c1"), tool(parent, "c2"), fetch(ext, ""),
		tool(parent, "c3"), taskChild(task), tool(task, "t1"), command("thatch/compact"))...)
	got := f.s.Status()
	want := StatusView{
		SessionID:       parent,
		Pending:         1,
		Accepted:        3,
		Claims:          map[string]int{ext: 3},
		Extracting:      true,
		ExtractionChild: ext,
		Children: []ChildView{
			{SessionID: ext, Kind: ChildExtraction, Claimed: 3, PayloadTokens: 289 / 4},
			{SessionID: task, Kind: ChildTask, Buffered: 1},
		},
		WrapUp:        &WrapUpView{Kind: WrapUpCompact, Token: TokenCompact},
		PayloadBytes:  289,
		PayloadTokens: 289 / 4,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("status\n got %+v\nwant %+v", got, want)
	}
	if _, err := json.Marshal(got); err != nil {
		t.Error(err)
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int
		want  string
	}{
		{"hello", 5, "hello"},
		{"hello!", 5, "hell…"},
		{"héllo wörld", 4, "hél…"},
		{"abc", 0, "abc"},
	} {
		if got := cut(tc.in, tc.limit); got != tc.want {
			t.Errorf("cut(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
		}
	}
	// Args that are not JSON still make an encodable event.
	in := forJournal(messages.Interaction{ID: "x", Args: json.RawMessage(`{broken`)}, 2000)
	if !json.Valid(in.Args) {
		t.Errorf("args %s", in.Args)
	}
}

func TestStaleSweepRequeuesWithoutIdle(t *testing.T) {
	f := New(Config{})
	t0 := time.Unix(1_700_000_000, 0)
	s := f.Initial("ses_p")
	apply := func(d actors.Decision) {
		for _, ev := range d.Events {
			s = f.Apply(s, ev)
		}
	}
	apply(f.Decide(s, &messages.ToolExecuted{Interaction: messages.Interaction{ID: "c1", SessionID: "ses_p", Tool: "bash"}}, t0))
	apply(f.Decide(s, &messages.FetchPayload{CallerID: "ses_p"}, t0))
	if v := s.Status(); v.Accepted != 1 || v.Pending != 0 {
		t.Fatalf("after fetch: %+v", v)
	}
	apply(f.Decide(s, &messages.StaleSweep{}, t0.Add(14*time.Minute)))
	if v := s.Status(); v.Accepted != 1 {
		t.Fatalf("requeued before the stale window: %+v", v)
	}
	d := f.Decide(s, &messages.StaleSweep{}, t0.Add(15*time.Minute))
	if len(d.Effects) != 0 {
		t.Fatalf("a sweep must not start an extraction: %+v", d.Effects)
	}
	apply(d)
	if v := s.Status(); v.Accepted != 0 || v.Pending != 1 {
		t.Fatalf("after sweep: %+v", v)
	}
	if _, ok := f.View(s).(StatusView); !ok {
		t.Fatal("View does not return a StatusView")
	}
}

// TestStaleSweepGivesUpLostHostCalls: after a restart whose host never
// comes back (no reconcile, no idle), the stale reaper ends what waits for
// an answer from it, once the stale window has passed, so the family does
// not stay busy for ever.
func TestStaleSweepGivesUpLostHostCalls(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   []any
		events  []string
		effects []any
		after   func(t *testing.T, f *fam)
	}{
		{
			name: "a child create", setup: []any{tool(parent, "c1"), idle(parent)}, events: []string{"extraction_stopped", "incident_recorded"},
			effects: []any{warning("extraction could not start: no child within the stale window (host gone?); 1 interactions kept for the next extraction")},
			after: func(t *testing.T, f *fam) {
				if f.s.Extracting {
					t.Error("still extracting")
				}
			},
		},
		{
			name: "a hung extractor", setup: append(startExtraction(ext), fetch(ext, "")),
			events: []string{"entries_requeued", "extraction_stopped", "child_cleared", "incident_recorded"},
			effects: []any{warning("extraction child ses_ext given up on: idle for the stale window; 1 interactions kept for the next extraction"),
				&messages.DeleteSession{SessionID: ext}},
			after: func(t *testing.T, f *fam) {
				wantIDs(t, "pending", callIDs(f.s.Pending), "c0")
			},
		},
		{
			name: "a wrap-up check", setup: []any{command("thatch/exit"), idle(parent)}, events: []string{"wrapup_check_finished"},
			after: func(t *testing.T, f *fam) {
				if f.s.WrapUp == nil || f.s.WrapUp.Checking {
					t.Fatalf("wrap-up %+v: want armed, not checking", f.s.WrapUp)
				}
				// The next idle checks again, as a new check.
				d := f.send(idle(parent))
				wantEffects(t, d.Effects, &messages.FetchMessages{SessionID: parent, Check: 2})
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFam(t, Config{})
			f.sendAll(tc.setup...)
			f.restart()
			f.now = f.now.Add(14 * time.Minute)
			if d := f.send(&messages.StaleSweep{}); len(d.Events) != 0 {
				t.Fatalf("gave up within the stale window: %v", eventNames(d.Events))
			}
			f.now = f.now.Add(time.Minute)
			d := f.send(&messages.StaleSweep{})
			if names := eventNames(d.Events); !reflect.DeepEqual(names, tc.events) {
				t.Fatalf("events %v, want %v", names, tc.events)
			}
			wantEffects(t, d.Effects, tc.effects...)
			if f.k.Active(f.s) {
				t.Error("the family stays busy")
			}
			tc.after(t, f)
		})
	}
}

func TestNewFillsDefaultsAndKeepsNoGrace(t *testing.T) {
	if got, want := New(Config{}).Config(), DefaultConfig(); got != want {
		t.Errorf("New(Config{}).Config() = %+v, want the defaults %+v", got, want)
	}
	cfg := New(Config{BufferLimit: 5, FinishGrace: NoGrace}).Config()
	if cfg.BufferLimit != 5 || cfg.FinishGrace != 0 || cfg.StaleAfter != DefaultConfig().StaleAfter {
		t.Errorf("New kept %+v", cfg)
	}
}

func TestFetchRecordsItsCost(t *testing.T) {
	f := newFam(t, Config{})
	f.sendAll(append(startExtraction(ext), tool(parent, "c1"))...)
	d := f.send(fetch(ext, ""))
	r := d.Reply.(*messages.PayloadFetched)
	b, err := json.Marshal(r.Interactions)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(b))
	wantEffects(t, d.Effects, &RecordExtractionCost{FetcherID: ext, Bytes: n, At: f.now})
	if v := f.s.Status(); v.PayloadBytes != n || v.PayloadTokens != n/4 || v.Children[0].PayloadTokens != n/4 {
		t.Errorf("status %+v: want %d bytes, %d tokens", v, n, n/4)
	}
	// A child that fetches nothing costs nothing.
	f.sendAll(extChild(ext2))
	wantEffects(t, f.send(fetch(ext2, "")).Effects)
}

func TestPausedCreateKeepsEverythingAndRecordsNoIncident(t *testing.T) {
	f := newFam(t, Config{})
	f.sendAll(tool(parent, "c1"), tool(parent, "c2"), idle(parent))
	d := f.send(&messages.ChildSessionCreated{ParentID: parent, Err: "budget reached", Reason: messages.FailPaused})
	wantIDs(t, "events", eventNames(d.Events), "extraction_stopped")
	wantEffects(t, d.Effects)
	if f.s.Extracting || len(f.s.Pending) != 2 || len(f.s.Incidents) != 0 {
		t.Errorf("extracting %v pending %d incidents %+v", f.s.Extracting, len(f.s.Pending), f.s.Incidents)
	}
	// The next idle asks again: the front end decides whether the pause
	// still holds.
	wantEffects(t, f.send(idle(parent)).Effects, &messages.CreateChildSession{ParentID: parent, Title: ExtractionTitle})
}
