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

// texts is what each effect of type E says (its text, or the message
// it is about), in order.
func texts[E any](effects []any, of func(*E) string) []string {
	var out []string
	for _, e := range effects {
		if x, ok := e.(*E); ok {
			out = append(out, of(x))
		}
	}
	return out
}

func sends(effects []any) []string {
	return texts(effects, func(sc *messages.IMSendChat) string { return sc.Text })
}

func clears(effects []any) []string {
	return texts(effects, func(c *messages.IMClearButtons) string { return c.MessageID })
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

// The machine question's buttons are cleared once the machine is picked:
// at once when the question went out, or as soon as it does when the pick
// came first.
func TestTheMachineQuestionLosesItsButtonsOnceClosed(t *testing.T) {
	q := &messages.IMNotice{Text: "Which machine?", Question: true, Buttons: [][]messages.IMButton{{{Text: "n1", Data: "m:n1"}}}}
	s := Kind{}.Initial("tg:-100:5")
	s, _ = step(t, s, q)
	s, _ = step(t, s, &messages.IMChatSent{Seq: 0, MessageID: "41"})
	s, eff := step(t, s, &messages.IMCloseQuestion{})
	if got := clears(eff); len(got) != 1 || got[0] != "41" {
		t.Fatalf("closed after it was sent: cleared %q", got)
	}
	if _, eff = step(t, s, &messages.IMCloseQuestion{}); len(eff) != 0 {
		t.Fatalf("closed twice: %v", eff)
	}

	s = Kind{}.Initial("tg:-100:6")
	s, _ = step(t, s, q)
	s, eff = step(t, s, &messages.IMCloseQuestion{})
	if len(clears(eff)) != 0 || !s.CloseQuestion {
		t.Fatalf("closed before it was sent: %v, pending %v", eff, s.CloseQuestion)
	}
	s, eff = step(t, s, &messages.IMChatSent{Seq: 0, MessageID: "42"})
	if got := clears(eff); len(got) != 1 || got[0] != "42" || s.CloseQuestion {
		t.Fatalf("sent after it was closed: cleared %q, pending %v", got, s.CloseQuestion)
	}
}
