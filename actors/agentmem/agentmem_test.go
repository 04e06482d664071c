package agentmem_test

import (
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/agentmem"
	"github.com/thatch-run/thatch/actors/kindtest"
	"github.com/thatch-run/thatch/messages"
)

var t0 = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

func newKind() *agentmem.Kind {
	return agentmem.New(agentmem.Config{IdleAfter: time.Minute, ClaimTTL: 15 * time.Minute})
}

// turn is a transcript read of one tool call and its result; end says
// the turn ended with it.
func turn(path string, to int64, id string, end bool) *agentmem.ToolsRead {
	return &agentmem.ToolsRead{Thread: "tg:1:2", Agent: "claude", Dir: "/p", Path: path, To: to,
		Calls:   []agentmem.Call{{ID: id, Tool: "Bash", Input: `{"command":"make test"}`}},
		Results: []agentmem.Result{{ID: id, Output: "ok"}}, TurnEnded: end}
}

// idle runs the session into its first extraction child and returns it.
func idle(t *testing.T, k *agentmem.Kind, s *agentmem.State, at time.Time) (*agentmem.State, *agentmem.StartExtractor) {
	t.Helper()
	s, d := kindtest.Step(t, k, s, &actors.Tick{Name: "idle"}, at)
	return s, kindtest.Only[agentmem.StartExtractor](t, d.Effects)
}

func TestAnIdleSessionStartsAChildWhoseFetchClaimsAndWhoseDoneConsumes(t *testing.T) {
	k := newKind()
	s := k.Initial("claude:s1")
	s, _ = kindtest.Step(t, k, s, turn("/t.jsonl", 100, "a", false), t0)
	s, d := kindtest.Step(t, k, s, turn("/t.jsonl", 200, "b", true), t0)
	if kindtest.Only[actors.StartTimer](t, d.Effects).After != time.Minute {
		t.Fatal("the turn's end does not arm the idle timer")
	}
	s, d = kindtest.Step(t, k, s, turn("/t.jsonl", 200, "b", true), t0)
	if len(d.Events) != 0 || len(s.Pending) != 2 {
		t.Fatalf("a repeated read was folded in again: %d pending", len(s.Pending))
	}
	s, start := idle(t, k, s, t0.Add(time.Minute))
	if start.Agent != "claude" || start.Dir != "/p" || start.Child != "claude:s1#1" {
		t.Fatalf("start = %+v", start)
	}
	s, d = kindtest.Step(t, k, s, &agentmem.FetchPayload{Child: "claude:s1#9"}, t0)
	if p := d.Reply.(*agentmem.Payload); p.Err == "" || len(s.Pending) != 2 {
		t.Fatal("a fetch by another child claimed")
	}
	s, d = kindtest.Step(t, k, s, &agentmem.FetchPayload{Child: start.Child}, t0)
	if p := d.Reply.(*agentmem.Payload); len(p.Interactions) != 2 || p.Interactions[0].Output != "ok" || len(s.Pending) != 0 {
		t.Fatalf("fetch = %+v, pending %d", p, len(s.Pending))
	}
	s, d = kindtest.Step(t, k, s, &agentmem.Done{Child: start.Child, Wrote: 3}, t0)
	if d.Reply.(int) != 2 || s.Extracted != 2 || len(s.Claim) != 0 {
		t.Fatalf("done consumed %v; extracted %d", d.Reply, s.Extracted)
	}
	send := kindtest.Only[actors.Send](t, d.Effects)
	if n, ok := send.Msg.(*messages.IMNotice); !ok || send.To.ID != "tg:1:2" || !n.Silent || n.Text != "🧠 3 memories saved from this session's last 2 tool calls." {
		t.Fatalf("the thread is told %+v %+v; want one silent line", send.To, send.Msg)
	}
	s, d = kindtest.Step(t, k, s, &agentmem.Exited{Child: start.Child}, t0)
	if s.Child != "" || len(d.Effects) != 0 || k.Active(s) {
		t.Fatalf("after a completed child: child %q, effects %v, active %v", s.Child, d.Effects, k.Active(s))
	}
}

func TestAChildKilledAfterItsFetchHandsItBackAndTheNextOneExtractsIt(t *testing.T) {
	k := newKind()
	s := k.Initial("claude:s1")
	s, _ = kindtest.Step(t, k, s, turn("/t.jsonl", 100, "a", true), t0)
	s, first := idle(t, k, s, t0.Add(time.Minute))
	s, _ = kindtest.Step(t, k, s, &agentmem.FetchPayload{Child: first.Child}, t0)
	s, d := kindtest.Step(t, k, s, &agentmem.Exited{Child: first.Child, Err: "signal: killed"}, t0.Add(2*time.Minute))
	if len(s.Pending) != 1 || s.Failures != 1 {
		t.Fatalf("pending %d, failures %d after a killed child", len(s.Pending), s.Failures)
	}
	if kindtest.Only[actors.StartTimer](t, d.Effects).After != 2*time.Minute {
		t.Fatal("the next child is not tried after a doubled wait")
	}
	s, second := idle(t, k, s, t0.Add(4*time.Minute))
	s, d = kindtest.Step(t, k, s, &agentmem.Done{Child: first.Child}, t0)
	if d.Reply.(int) != 0 {
		t.Fatal("the dead child's late completion consumed")
	}
	s, d = kindtest.Step(t, k, s, &agentmem.FetchPayload{Child: second.Child}, t0)
	if len(d.Reply.(*agentmem.Payload).Interactions) != 1 {
		t.Fatal("the second child did not get what the first held")
	}
	s, _ = kindtest.Step(t, k, s, &agentmem.Done{Child: second.Child}, t0)
	if s.Extracted != 1 || s.Failures != 0 {
		t.Fatalf("extracted %d, failures %d", s.Extracted, s.Failures)
	}
}

func TestAClaimOlderThanItsTTLReturnsToPendingAndARestartHandsBackTheChildsClaim(t *testing.T) {
	k := newKind()
	s := k.Initial("claude:s1")
	s, _ = kindtest.Step(t, k, s, turn("/t.jsonl", 100, "a", true), t0)
	s, c := idle(t, k, s, t0.Add(time.Minute))
	s, _ = kindtest.Step(t, k, s, &agentmem.FetchPayload{Child: c.Child}, t0.Add(time.Minute))
	s2, _ := kindtest.Step(t, k, s, &actors.Tick{Name: "claim"}, t0.Add(16*time.Minute))
	if len(s2.Pending) != 1 || len(s2.Claim) != 0 {
		t.Fatalf("after the claim's TTL: pending %d, claim %d", len(s2.Pending), len(s2.Claim))
	}
	s3, _ := kindtest.Step(t, k, s, &actors.Recovered{}, t0.Add(2*time.Minute))
	if len(s3.Pending) != 1 || s3.Child != "" {
		t.Fatalf("after a daemon restart: pending %d, child %q", len(s3.Pending), s3.Child)
	}
	s4, _ := kindtest.Step(t, k, s, &actors.Recovered{Restarted: true}, t0.Add(2*time.Minute))
	if len(s4.Claim) != 1 || s4.Child != c.Child {
		t.Fatal("a restart of the entity alone took the claim from a child that still runs")
	}
}

func TestNewWorkDisarmsIdleAndAChildThatNeverFetchesCountsAsAFailure(t *testing.T) {
	k := newKind()
	s := k.Initial("claude:s1")
	s, _ = kindtest.Step(t, k, s, turn("/t.jsonl", 100, "a", true), t0)
	s, _ = kindtest.Step(t, k, s, turn("/t.jsonl", 200, "b", false), t0.Add(30*time.Second))
	s, d := kindtest.Step(t, k, s, &actors.Tick{Name: "idle"}, t0.Add(time.Minute))
	if len(d.Effects) != 0 {
		t.Fatal("a session that works again was taken for idle")
	}
	s, _ = kindtest.Step(t, k, s, turn("/t.jsonl", 300, "c", true), t0.Add(time.Minute))
	s, c := idle(t, k, s, t0.Add(2*time.Minute))
	s, _ = kindtest.Step(t, k, s, &agentmem.Exited{Child: c.Child}, t0.Add(3*time.Minute))
	if s.Failures != 1 || len(s.Pending) != 3 {
		t.Fatalf("failures %d, pending %d after a child that fetched nothing", s.Failures, len(s.Pending))
	}
}

// After a restart the follower reads again from the binding's offset,
// which may be before what the memory folded in: the lines it holds
// already are dropped by where they end, the new ones kept.
func TestARereadFoldsInOnlyTheLinesNotSeenBefore(t *testing.T) {
	k := newKind()
	s := k.Initial("claude:s1")
	first := turn("/t.jsonl", 100, "a", false)
	first.Calls[0].End, first.Results[0].End = 50, 100
	s, _ = kindtest.Step(t, k, s, first, t0)
	again := &agentmem.ToolsRead{Agent: "claude", Dir: "/p", Path: "/t.jsonl", From: 0, To: 200,
		Calls:   []agentmem.Call{{ID: "a", Tool: "Bash", End: 50}, {ID: "b", Tool: "Read", End: 150}},
		Results: []agentmem.Result{{ID: "a", Output: "ok", End: 100}, {ID: "b", Output: "text", End: 200}}}
	s, _ = kindtest.Step(t, k, s, again, t0)
	if len(s.Pending) != 2 || s.Pending[1].Tool != "Read" {
		t.Fatalf("pending %+v; want the first call once and the new one", s.Pending)
	}
}

// Switched off after a session buffered, the memory starts no child for
// it (its timer re-armed at recovery fires into nothing).
func TestSwitchedOffNoChildStartsForWhatWasBuffered(t *testing.T) {
	s := newKind().Initial("claude:s1")
	s, _ = kindtest.Step(t, newKind(), s, turn("/t.jsonl", 100, "a", true), t0)
	off := agentmem.New(agentmem.Config{IdleAfter: time.Minute, Off: true})
	s, _ = kindtest.Step(t, off, s, &actors.Recovered{}, t0)
	_, d := kindtest.Step(t, off, s, &actors.Tick{Name: "idle"}, t0.Add(time.Minute))
	for _, e := range d.Effects {
		if _, ok := e.(*agentmem.StartExtractor); ok {
			t.Fatal("a child started with extraction off")
		}
	}
}

// A session started by hand is watched: Watch answers how far its
// transcript was read (where the following goes on, after a restart
// too), is journaled once, and shows in the status; its reads carry no
// thread, so no chat is told what a child wrote.
func TestAWatchedSessionGoesOnWhereItsTranscriptWasRead(t *testing.T) {
	k := newKind()
	s := k.Initial("claude:s2")
	s, d := kindtest.Step(t, k, s, &agentmem.Watch{Agent: "claude", Path: "/h.jsonl", Dir: "/p"}, t0)
	if d.Reply.(int64) != 0 || len(d.Events) != 1 || s.Watch != "/h.jsonl" || s.Dir != "/p" {
		t.Fatalf("watch: reply %v, state %+v", d.Reply, s)
	}
	read := turn("/h.jsonl", 300, "a", true)
	read.Thread = ""
	s, _ = kindtest.Step(t, k, s, read, t0)
	s, d = kindtest.Step(t, k, s, &agentmem.Watch{Agent: "claude", Path: "/h.jsonl", Dir: "/p"}, t0)
	if d.Reply.(int64) != 300 || len(d.Events) != 0 {
		t.Fatalf("watched again: reply %v, %d events", d.Reply, len(d.Events))
	}
	if st := k.View(s).(agentmem.Status); st.Watch != "/h.jsonl" || st.Read != 300 || st.Pending != 1 {
		t.Fatalf("status %+v", st)
	}
	s, start := idle(t, k, s, t0.Add(time.Minute))
	s, _ = kindtest.Step(t, k, s, &agentmem.FetchPayload{Child: start.Child}, t0)
	_, d = kindtest.Step(t, k, s, &agentmem.Done{Child: start.Child, Wrote: 1}, t0)
	if len(d.Effects) != 0 {
		t.Fatalf("a session of no chat told a chat: %v", d.Effects)
	}
}
