package imboard

import (
	"strings"
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/kindtest"
	"github.com/thatch-run/thatch/messages"
)

var t0 = time.Date(2026, 12, 7, 10, 42, 0, 0, time.UTC)

func step(t *testing.T, s *State, msg any) (*State, []any) {
	t.Helper()
	k := Kind{Every: 10 * time.Second, Zone: time.UTC}
	s, d := kindtest.Step(t, k, s, msg, t0)
	return s, d.Effects
}

// Rows are kept before the board is asked for; asked, it is sent with
// every thread; changes while it is in flight or within the interval go
// out as one edit of the newest state; after a restart the same message
// is edited.
func TestTheBoardIsOneMessageEditedAtMostOncePerInterval(t *testing.T) {
	s := Kind{}.Initial("tg:-100")
	s, eff := step(t, s, &messages.IMBoardRow{Thread: "tg:-100:5", Name: "proj-a", Agent: "claude", State: messages.BoardWorking, Since: t0.UnixMilli()})
	if len(eff) != 0 {
		t.Fatalf("a board not asked for sent %v", eff)
	}
	s, eff = step(t, s, &Show{Thread: "tg:-100:-100"})
	send := kindtest.Only[messages.IMBoardSend](t, eff)
	if send.Thread != "tg:-100:-100" || send.Text != "📋 Sessions of this chat\n\n• proj-a — claude: working since 10:42" {
		t.Fatalf("send %+v", send)
	}
	s, eff = step(t, s, &messages.IMBoardRow{Thread: "tg:-100:7", Name: "docs", Agent: "codex", State: messages.BoardWaiting})
	if len(eff) != 0 {
		t.Fatalf("an edit while the send is in flight: %v", eff)
	}
	s, eff = step(t, s, &messages.IMBoardSent{Rev: send.Rev, MessageID: "9"})
	if st := kindtest.Only[actors.StartTimer](t, eff); st.After != 10*time.Second {
		t.Fatalf("timer %+v", st)
	}
	s, eff = step(t, s, &actors.Tick{Name: Timer})
	edit := kindtest.Only[messages.IMBoardEdit](t, eff)
	if edit.MessageID != "9" || !strings.Contains(edit.Text, "• docs — codex: waiting for you\n• proj-a") {
		t.Fatalf("edit %+v", edit)
	}
	// The daemon dies with the edit in flight: the same message is edited.
	s, eff = step(t, s, &actors.Recovered{})
	if again := kindtest.Only[messages.IMBoardEdit](t, eff); again.MessageID != "9" || again.Text != edit.Text {
		t.Fatalf("after a restart: %+v", again)
	}
	_, eff = step(t, s, &Show{Thread: "tg:-100:-100"})
	if len(eff) != 0 {
		t.Fatalf("/board again sent %v", eff)
	}
}

// A row tells its machine (in a cluster) and the share of the context
// window its session uses, when they are known.
func TestARowTellsItsMachineAndContext(t *testing.T) {
	s := Kind{}.Initial("tg:-100")
	s, _ = step(t, s, &messages.IMBoardRow{Thread: "tg:-100:5", Name: "proj-a", Agent: "claude", Machine: "laptop", State: messages.BoardIdle,
		Since: t0.UnixMilli(), Context: "34%"})
	s, _ = step(t, s, &messages.IMBoardRow{Thread: "tg:-100:6", Name: "proj-b", Agent: "mimo", State: messages.BoardWaiting})
	_, eff := step(t, s, &Show{Thread: "tg:-100:-100"})
	want := "📋 Sessions of this chat\n\n• proj-a — claude on laptop: idle since 10:42 · context 34%\n• proj-b — mimo: waiting for you"
	if send := kindtest.Only[messages.IMBoardSend](t, eff); send.Text != want {
		t.Fatalf("board %q, want %q", send.Text, want)
	}
}

// A board that another node of a cluster sent before is adopted: the new
// writer edits that message instead of sending one; the cluster's word of
// the board asked for where it is shown keeps the message, and its own
// message told back changes nothing.
func TestAnAdoptedBoardIsEditedNotSentAgain(t *testing.T) {
	s := Kind{}.Initial("tg:-100")
	s, eff := step(t, s, &Adopt{Thread: "tg:-100:-100", MessageID: "41"})
	edit := kindtest.Only[messages.IMBoardEdit](t, eff)
	if edit.MessageID != "41" || edit.Thread != "tg:-100:-100" {
		t.Fatalf("edit %+v", edit)
	}
	s, _ = step(t, s, &messages.IMBoardSent{Rev: edit.Rev, MessageID: "41"})
	for _, again := range []*Adopt{{Thread: "tg:-100:-100"}, {Thread: "tg:-100:-100", MessageID: "41"}} {
		if s, eff = step(t, s, again); len(eff) != 0 || s.MessageID != "41" {
			t.Fatalf("after %+v: %v, message %q", again, eff, s.MessageID)
		}
	}
	s, eff = step(t, s, &Adopt{Thread: "tg:-100:3"})
	if send := kindtest.Only[messages.IMBoardSend](t, eff); send.Thread != "tg:-100:3" || s.MessageID != "" {
		t.Fatalf("asked elsewhere: %+v", send)
	}
}

// In a cluster a restart alone shows nothing (this node may have lost the
// boards lease meanwhile); the writer's Adopt goes on in the message.
func TestAClusterBoardWaitsForItsWriterAfterARestart(t *testing.T) {
	k := Kind{Every: 10 * time.Second, Zone: time.UTC, Cluster: true}
	s := k.Initial("tg:-100")
	s, d := kindtest.Step(t, k, s, &Adopt{Thread: "tg:-100:-100", MessageID: "41"}, t0)
	edit := kindtest.Only[messages.IMBoardEdit](t, d.Effects)
	s, d = kindtest.Step(t, k, s, &actors.Recovered{}, t0) // died with the edit in flight
	if len(d.Effects) != 0 || s.Flight != 0 {
		t.Fatalf("a restart showed %v (flight %d)", d.Effects, s.Flight)
	}
	_, d = kindtest.Step(t, k, s, &Adopt{Thread: "tg:-100:-100", MessageID: "41"}, t0)
	if again := kindtest.Only[messages.IMBoardEdit](t, d.Effects); again.MessageID != "41" || again.Text != edit.Text {
		t.Fatalf("the writer's adopt: %+v", again)
	}
}
