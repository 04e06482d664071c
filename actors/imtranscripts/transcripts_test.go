package imtranscripts

import (
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors/kindtest"
)

var t0 = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

func ask(t *testing.T, s *State, msg any, at time.Time) (*State, any) {
	t.Helper()
	s, d := kindtest.Step(t, Kind{}, s, msg, at)
	return s, d.Reply
}

// Two new threads in one directory search at once for the one new
// transcript there: the first claim takes it, the second is told who
// holds it, and the picker does not offer it to the second thread.
func TestOneNewTranscriptGoesToOneOfTwoSearchingThreads(t *testing.T) {
	s := Kind{}.Initial(ID)
	s, r := ask(t, s, &Claim{Path: "/p/a.jsonl", Binding: "tg:1:1"}, t0)
	if a := r.(*Answer); !a.OK {
		t.Fatalf("the first claim was refused: %+v", a)
	}
	s, r = ask(t, s, &Claim{Path: "/p/a.jsonl", Binding: "tg:1:2"}, t0.Add(time.Second))
	if a := r.(*Answer); a.OK || a.By != "tg:1:1" {
		t.Fatalf("the second claim: %+v, want refused by tg:1:1", a)
	}
	_, r = ask(t, s, &Holders{Paths: []string{"/p/a.jsonl", "/p/b.jsonl"}}, t0.Add(time.Second))
	if h := r.(map[string]Holder); len(h) != 1 || h["/p/a.jsonl"].Binding != "tg:1:1" {
		t.Fatalf("holders: %+v", h)
	}
}

// A claim no follow confirmed (the setup was cancelled after the search)
// lapses, and the transcript can be taken again; a followed one holds
// until its binding stops following it, and only that binding's release
// frees it.
func TestAClaimLapsesButAFollowHoldsUntilReleased(t *testing.T) {
	s := Kind{}.Initial(ID)
	s, _ = ask(t, s, &Claim{Path: "/p/a.jsonl", Binding: "tg:1:1"}, t0)
	s, r := ask(t, s, &Claim{Path: "/p/a.jsonl", Binding: "tg:1:2"}, t0.Add(ClaimLapse))
	if a := r.(*Answer); !a.OK {
		t.Fatalf("a lapsed claim still held the transcript: %+v", a)
	}
	s, _ = ask(t, s, &Follow{Path: "/p/a.jsonl", Binding: "tg:1:2"}, t0.Add(ClaimLapse))
	later := t0.Add(10 * ClaimLapse)
	s, r = ask(t, s, &Claim{Path: "/p/a.jsonl", Binding: "tg:1:3"}, later)
	if a := r.(*Answer); a.OK {
		t.Fatal("a followed transcript was claimed by another thread")
	}
	s, _ = ask(t, s, &Release{Path: "/p/a.jsonl", Binding: "tg:1:3"}, later)
	s, r = ask(t, s, &Holders{Paths: []string{"/p/a.jsonl"}}, later)
	if h := r.(map[string]Holder); h["/p/a.jsonl"].Binding != "tg:1:2" {
		t.Fatalf("another thread's release freed the transcript: %+v", h)
	}
	s, _ = ask(t, s, &Release{Path: "/p/a.jsonl", Binding: "tg:1:2"}, later)
	_, r = ask(t, s, &Claim{Path: "/p/a.jsonl", Binding: "tg:1:3"}, later)
	if a := r.(*Answer); !a.OK {
		t.Fatalf("a released transcript could not be claimed: %+v", a)
	}
}

// A binding's follow wins over a claim (it journaled its choice before
// it asked), and says who held the transcript before; claims that lapsed
// are forgotten as new ones come, so the registry does not grow.
func TestAFollowTakesOverAndLapsedClaimsAreForgotten(t *testing.T) {
	s := Kind{}.Initial(ID)
	s, _ = ask(t, s, &Claim{Path: "/p/a.jsonl", Binding: "tg:1:1"}, t0)
	s, r := ask(t, s, &Follow{Path: "/p/a.jsonl", Binding: "tg:1:2"}, t0)
	if a := r.(*Answer); a.OK || a.By != "tg:1:1" {
		t.Fatalf("follow over a claim: %+v", a)
	}
	for i, p := range []string{"/p/b", "/p/c", "/p/d"} {
		s, _ = ask(t, s, &Claim{Path: p, Binding: "tg:1:9"}, t0.Add(time.Duration(i)*ClaimLapse))
	}
	if len(s.Paths) != 2 { // a.jsonl (followed) and d (the newest claim)
		t.Fatalf("paths kept: %v", s.Paths)
	}
}
