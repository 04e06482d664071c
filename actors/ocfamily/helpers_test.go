package ocfamily

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

const (
	host   = "h1"
	parent = "ses_parent"
	ext    = "ses_ext"  // an extraction child
	ext2   = "ses_ext2" // a second extraction child
	task   = "ses_task" // a task sub-agent
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// advance is a setup step that moves the test clock.
type advance time.Duration

// fam drives a Family the way the runtime does: Decide, journal (through
// the codec), Apply.
type fam struct {
	t       testing.TB
	k       *Family
	s       *State
	now     time.Time
	journal [][]byte
}

func newFam(t testing.TB, cfg Config) *fam {
	k := New(cfg)
	return &fam{t: t, k: k, s: k.Initial(parent), now: t0}
}

// send delivers msg (or moves the clock for an advance) and returns the
// decision after applying its events.
func (f *fam) send(msg any) actors.Decision {
	f.t.Helper()
	if a, ok := msg.(advance); ok {
		f.now = f.now.Add(time.Duration(a))
		return actors.Decision{}
	}
	before := encode(f.t, f.s)
	d := f.k.Decide(f.s, msg, f.now)
	if after := encode(f.t, f.s); !bytes.Equal(before, after) {
		f.t.Fatalf("Decide(%T) changed its input state:\n%s\n%s", msg, before, after)
	}
	for _, ev := range d.Events {
		b, err := messages.Encode(ev)
		if err != nil {
			f.t.Fatalf("encode %T: %v", ev, err)
		}
		f.journal = append(f.journal, b)
		f.s = f.k.Apply(f.s, ev)
	}
	return d
}

func (f *fam) sendAll(msgs ...any) {
	f.t.Helper()
	for _, m := range msgs {
		f.send(m)
	}
}

// replay folds the journal into a fresh state, as a restart does.
func (f *fam) replay() *State {
	f.t.Helper()
	s := f.k.Initial(parent)
	for _, b := range f.journal {
		ev, err := messages.Decode(b)
		if err != nil {
			f.t.Fatalf("decode: %v", err)
		}
		s = f.k.Apply(s, ev)
	}
	return s
}

// crash replaces the live state with the replayed one and delivers
// Recovered, returning its decision.
func (f *fam) crash() actors.Decision {
	f.t.Helper()
	f.s = f.replay()
	return f.send(&actors.Recovered{Restarted: true, Events: len(f.journal)})
}

// restart rebuilds the state from the journal as a process start does: the
// actor is spawned fresh, not restarted, and no host is connected yet.
func (f *fam) restart() actors.Decision {
	f.t.Helper()
	f.s = f.replay()
	return f.send(&actors.Recovered{Events: len(f.journal)})
}

// tb is what both *testing.T and *rapid.T offer.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

func encode(t tb, s *State) []byte {
	t.Helper()
	b, err := messages.Encode(s)
	if err != nil {
		t.Fatalf("encode state: %v", err)
	}
	return b
}

// Message builders.

func tool(session, id string) *messages.ToolExecuted {
	return &messages.ToolExecuted{Host: host, Interaction: messages.Interaction{
		ID: id, SessionID: session, Tool: "bash", Args: json.RawMessage(`{"command":"ls ` + id + `"}`), Output: "out " + id,
	}}
}

func toolNamed(session, id, name string) *messages.ToolExecuted {
	m := tool(session, id)
	m.Interaction.Tool = name
	return m
}

func idle(id string) *messages.SessionIdle { return &messages.SessionIdle{Host: host, SessionID: id} }

func created(id, parentID, title string) *messages.SessionCreated {
	return &messages.SessionCreated{Host: host, SessionID: id, ParentID: parentID, Title: title, Directory: "/repo"}
}

// gone is the effect that notes a deleted family for the sweep.
var gone = &messages.RecordFamilyDeleted{SessionID: parent}

// noted is the executor's answer to gone.
var noted = &messages.DeletionNoted{SessionID: parent}

func taskChild(id string) *messages.SessionCreated { return created(id, parent, "explore the repo") }
func extChild(id string) *messages.SessionCreated  { return created(id, parent, ExtractionTitle) }

func fetch(caller, target string) *messages.FetchPayload {
	return &messages.FetchPayload{CallerID: caller, TargetID: target}
}

func doneAck(caller string) *messages.ExtractionDone {
	return &messages.ExtractionDone{CallerID: caller}
}

func remember(caller string, op messages.MemoryOp) *messages.MemoryWritten {
	return &messages.MemoryWritten{CallerID: caller, Op: op}
}

// warning is the toast an incident shows.
func warning(msg string) *messages.ShowToast {
	return &messages.ShowToast{Title: "thatch", Message: msg, Variant: "warning"}
}

func errored(id string) *messages.SessionErrored {
	return &messages.SessionErrored{Host: host, SessionID: id, Error: "boom"}
}

func deletedMsg(id string) *messages.SessionDeleted {
	return &messages.SessionDeleted{Host: host, SessionID: id}
}

func command(name string) *messages.CommandExecuting {
	return &messages.CommandExecuting{Host: host, SessionID: parent, Command: name}
}

func fetched(text string) *messages.MessagesFetched {
	return &messages.MessagesFetched{SessionID: parent, FinalAssistantText: text}
}

func childOK(id string) *messages.ChildSessionCreated {
	return &messages.ChildSessionCreated{ParentID: parent, ChildID: id}
}

// startExtraction buffers c0 and runs a parent idle and the child's
// creation, leaving child attached as the running extraction (c0 still
// pending).
func startExtraction(child string) []any {
	return []any{tool(parent, "c0"), idle(parent), childOK(child), extChild(child)}
}

// callIDs lists the interaction ids of entries.
func callIDs(entries []Entry) []string {
	out := []string{}
	for _, e := range entries {
		out = append(out, e.Interaction.ID)
	}
	return out
}

func claimIDs(s *State, fetcher string) []string {
	if c := s.Claims[fetcher]; c != nil {
		return callIDs(c.Entries)
	}
	return []string{}
}

func payloadIDs(r any) []string {
	out := []string{}
	p, ok := r.(*messages.PayloadFetched)
	if !ok {
		return nil
	}
	for _, in := range p.Interactions {
		out = append(out, in.ID)
	}
	return out
}

func eventNames(evs []any) []string {
	out := []string{}
	for _, ev := range evs {
		n, ok := messages.TypeName(ev)
		if !ok {
			n = fmt.Sprintf("unregistered %T", ev)
		}
		out = append(out, strings.TrimPrefix(n, "session."))
	}
	return out
}

func effectsOf[T any](effects []any) []*T {
	var out []*T
	for _, e := range effects {
		if v, ok := e.(*T); ok {
			out = append(out, v)
		}
	}
	return out
}

// effectHost is the host a host effect names. The family names none: the
// front end sends an effect to the host the registry records for the
// family. The start reminder alone names the host of the session.created
// it answers, for when the registry could not record one.
func effectHost(e any) string {
	switch e := e.(type) {
	case *messages.CreateChildSession:
		return e.Host
	case *messages.PromptSession:
		return e.Host
	case *messages.DeleteSession:
		return e.Host
	case *messages.ShowToast:
		return e.Host
	case *messages.FetchMessages:
		return e.Host
	case *messages.CompactSession:
		return e.Host
	case *messages.ExitSession:
		return e.Host
	}
	return ""
}

func wantIDs(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func wantEffects(t *testing.T, got []any, want ...any) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("effects:\n got %s\nwant %s", show(got), show(want))
	}
}

func show(vs []any) string {
	var b strings.Builder
	for _, v := range vs {
		j, _ := json.Marshal(v)
		fmt.Fprintf(&b, "\n  %T %s", v, j)
	}
	return b.String()
}

// eventOf returns the single event of type T.
func eventOf[T any](t *testing.T, evs []any) *T {
	t.Helper()
	var out *T
	for _, ev := range evs {
		if v, ok := ev.(*T); ok {
			if out != nil {
				t.Fatalf("two %T events", v)
			}
			out = v
		}
	}
	if out == nil {
		t.Fatalf("no %T among %v", out, eventNames(evs))
	}
	return out
}
