package imnotice

import (
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/chatout"
	"github.com/thatch-run/thatch/actors/kindtest"
	"github.com/thatch-run/thatch/messages"
)

// step decides msg on s as the runtime would and returns the new state
// and the effects.
func step(t *testing.T, s *State, msg any) (*State, []any) {
	t.Helper()
	s, d := kindtest.Step(t, Kind{}, s, msg, time.Unix(0, 0))
	return s, d.Effects
}

func sends(effects []any) []string {
	var out []string
	for _, e := range effects {
		if sc, ok := e.(*messages.IMSendChat); ok {
			out = append(out, sc.Text)
		}
	}
	return out
}

// Notices go out one at a time, in the order told; one the chat failed
// to take is sent again when the retry's timer fires, and after a
// restart; one the chat took is gone, and the next follows.
func TestNoticesGoOutInOrderAndAFailedOneIsSentAgain(t *testing.T) {
	s := Kind{}.Initial("tg:-100:5")
	s, eff := step(t, s, &messages.IMNotice{Text: "one"})
	if got := sends(eff); len(got) != 1 || got[0] != "one" {
		t.Fatalf("first notice released %q", got)
	}
	s, eff = step(t, s, &messages.IMNotice{Text: "two"})
	if len(eff) != 0 || !(Kind{}).Active(s) {
		t.Fatalf("a second notice while the first is in flight released %v (active %v)", eff, Kind{}.Active(s))
	}
	s, eff = step(t, s, &messages.IMChatSent{Seq: 0, Err: "500"})
	if len(eff) != 1 || eff[0].(*actors.StartTimer).Name != chatout.Timer {
		t.Fatalf("a failed send: %v, want the retry's timer", eff)
	}
	_, eff = step(t, s, &actors.Tick{Name: chatout.Timer})
	if got := sends(eff); len(got) != 1 || got[0] != "one" {
		t.Fatalf("the retry sent %q", got)
	}
	s, eff = step(t, s, &actors.Recovered{Restarted: true})
	if got := sends(eff); len(got) != 1 || got[0] != "one" {
		t.Fatalf("a restart sent %q", got)
	}
	s, eff = step(t, s, &messages.IMChatSent{Seq: 0, MessageID: "7"})
	if got := sends(eff); len(got) != 1 || got[0] != "two" {
		t.Fatalf("after the first was taken: %q", got)
	}
	s, _ = step(t, s, &messages.IMChatSent{Seq: 1, Err: "blocked", Permanent: true})
	if (Kind{}).Active(s) || s.Refused != "blocked" {
		t.Fatalf("after the last was refused: %+v", s)
	}
}
