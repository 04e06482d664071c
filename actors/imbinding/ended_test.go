package imbinding

import (
	"strings"
	"testing"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

func (h *harness) chatEnded(reason string) []any {
	h.nextUpd++
	return h.send(&messages.IMChatEnded{UpdateID: h.nextUpd, User: "42", Reason: reason})
}

func TestAChatThatEndsEndsTheBindingAndKeepsTheWindowByDefault(t *testing.T) {
	h := newHarness(t)
	h.bind()
	// A message waits for the agent and a reply waits for the chat: both
	// are dropped with the chat, since nobody can be answered.
	h.message("still queued")
	h.send(&messages.IMTranscriptRead{Path: h.s.Transcript, From: 0, To: 10, Replies: []string{"a reply"}})
	if len(h.s.Queue) == 0 || len(h.s.Outbox) == 0 {
		t.Fatalf("setup: queue %v outbox %v", h.s.Queue, h.s.Outbox)
	}
	eff := h.chatEnded("disbanded")
	if h.s.Phase != PhaseEnded || h.s.Ended == nil || h.s.Ended.Reason != "disbanded" || h.s.Ended.WindowClosed {
		t.Fatalf("after the end: phase %s ended %+v", h.s.Phase, h.s.Ended)
	}
	if len(h.s.Queue) != 0 || len(h.s.Outbox) != 0 || h.s.Transcript != "" {
		t.Fatalf("an ended binding holds work: queue %v outbox %v transcript %q", h.s.Queue, h.s.Outbox, h.s.Transcript)
	}
	none[messages.IMCloseWindow](t, eff)
	only[messages.IMStopFollowing](t, eff)
	if h.s.Window.WindowID != "@1" {
		t.Fatalf("the kept window is forgotten: %+v", h.s.Window)
	}
	if h.k.Active(h.s) {
		t.Fatal("an ended binding stays active: it would never be passivated")
	}
	if v := h.k.View(h.s).(View); v.State != PhaseEnded || v.Ended != "disbanded; window kept" {
		t.Fatalf("status shows %+v", v)
	}
	// What the binding had asked for before it ended changes nothing.
	for _, late := range []any{
		&messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "x", Agent: "codex"},
		&messages.IMChatSent{Seq: 0, Err: "timeout"},
		&actors.Tick{Name: timerOutbox},
		&actors.Recovered{},
	} {
		if eff := h.send(late); len(eff) != 0 || h.s.Phase != PhaseEnded {
			t.Fatalf("%T after the end: effects %s, phase %s", late, describe(eff), h.s.Phase)
		}
	}
	// The same word again is a no-op.
	if eff := h.chatEnded("bot removed"); len(eff) != 0 || h.s.Ended.Reason != "disbanded" {
		t.Fatalf("a second end: %s, %+v", describe(eff), h.s.Ended)
	}
}

func TestOnCloseKillClosesTheWindowAndAgainAfterARestart(t *testing.T) {
	h := newHarness(t)
	h.k = New(Config{Agents: []string{"claude", "codex"}, KillOnClose: true})
	h.bind()
	tag := h.s.Tag
	cw := only[messages.IMCloseWindow](t, h.chatEnded("bot removed"))
	if cw.WindowID != "@1" || cw.Tag != tag || tag == "" {
		t.Fatalf("close %+v, want @1 with tag %q", cw, tag)
	}
	if v := h.k.View(h.s).(View); v.Ended != "bot removed; window killed" {
		t.Fatalf("status shows %q", v.Ended)
	}
	// A crash may have cut the kill short: a restart asks for it again
	// (the tag makes it a no-op when the window is gone).
	if again := only[messages.IMCloseWindow](t, h.send(&actors.Recovered{})); *again != *cw {
		t.Fatalf("after a restart: %+v, want %+v", again, cw)
	}
}

func TestASendToAChatThatIsGoneEndsTheBindingInsteadOfRetrying(t *testing.T) {
	h := newHarness(t)
	h.bind()
	eff := h.send(&messages.IMTranscriptRead{Path: h.s.Transcript, From: 0, To: 10, Replies: []string{"a reply"}})
	sc := only[messages.IMSendChat](t, eff)
	eff = h.send(&messages.IMChatSent{Seq: sc.Seq, Err: "feishu: chat gone (230002)", Permanent: true, Gone: true})
	none[actors.StartTimer](t, eff)
	none[messages.IMSendChat](t, eff)
	if h.s.Phase != PhaseEnded || !strings.Contains(h.s.Ended.Reason, "230002") {
		t.Fatalf("phase %s ended %+v", h.s.Phase, h.s.Ended)
	}
}

func TestAMessageInAnEndedChatStartsANewSetupAndKeepsTheMessage(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.chatEnded("bot removed")
	eff := h.message("back again")
	var said []string
	for _, e := range eff {
		if sc, ok := e.(*messages.IMSendChat); ok {
			said = append(said, sc.Text)
		}
	}
	if h.s.Phase != PhaseSetup || h.s.Ended != nil {
		t.Fatalf("phase %s ended %+v, want a new setup", h.s.Phase, h.s.Ended)
	}
	if len(said) == 0 || !strings.Contains(said[0], "ended (bot removed)") {
		t.Fatalf("said %q, want the end explained first", said)
	}
	if len(h.s.Queue) != 1 || h.s.Queue[0].Text != "back again" {
		t.Fatalf("queue %v, want the message kept for the new agent", h.s.Queue)
	}
}

// A topic closed ends its binding (its window kept); a message meanwhile
// gets one note and is never typed; reopened, the thread is bound again to
// the same window and session, its transcript followed from where it was.
func TestAClosedTopicEndsItsBindingAndAReopenedOneBindsTheSameSession(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.send(&messages.IMTranscriptRead{Path: h.s.Transcript, From: 0, To: 10, Replies: []string{"r"}})
	h.deliverChat([]any{&messages.IMSendChat{Seq: h.s.Outbox[0].Seq}})
	offset := h.s.Offset
	h.nextUpd++
	eff := h.send(&messages.IMChatEnded{UpdateID: h.nextUpd, User: "42", Reason: "topic closed", Reopenable: true})
	none[messages.IMCloseWindow](t, eff)
	if h.s.Phase != PhaseEnded || !h.s.Ended.Reopenable || h.k.Active(h.s) {
		t.Fatalf("after the close: %s %+v active=%v", h.s.Phase, h.s.Ended, h.k.Active(h.s))
	}
	eff = h.message("are you there")
	if got := said(eff); len(got) != 1 || !strings.Contains(got[0], "This topic is closed") {
		t.Fatalf("a message to a closed topic: %q", got)
	}
	h.deliverChat(eff)
	if eff := h.message("again"); len(said(eff)) != 0 || len(h.s.Queue) != 0 {
		t.Fatalf("a second message: said %q, queue %v; want no second note and nothing queued", said(eff), h.s.Queue)
	}
	h.nextUpd++
	eff = h.send(&messages.IMChatReopened{UpdateID: h.nextUpd, User: "42"})
	if h.s.Phase != PhaseBound || h.s.Window.WindowID != "@1" || h.s.Info.SessionID != "s-1" {
		t.Fatalf("after the reopen: %s %+v %+v", h.s.Phase, h.s.Window, h.s.Info)
	}
	if ft := only[messages.IMFollowTranscript](t, eff); ft.Path != "/t/s-1.jsonl" || ft.Offset != offset {
		t.Fatalf("follows %+v, want the transcript from offset %d", ft, offset)
	}
	h.deliverChat(eff)
	h.message("back")
	if len(h.s.Queue) != 1 || h.s.Queue[0].Text != "back" {
		t.Fatalf("queue %v: the closed topic's messages came back", h.s.Queue)
	}
}

// New Session replaces the window's agent: the old window is closed (by
// its tag), never left running for nobody, and the setup starts afresh.
func TestNewSessionClosesTheOldWindow(t *testing.T) {
	h := newHarness(t)
	h.bind()
	tag := h.s.Tag
	h.message("hi")
	h.deliverChat(h.send(&messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: h.s.windowName(), Agent: "codex"}))
	eff := h.press("New Session")
	if cw := only[messages.IMCloseWindow](t, eff); cw.WindowID != "@1" || cw.Tag != tag {
		t.Fatalf("closes %+v, want @1 tagged %s", cw, tag)
	}
	if h.s.Phase != PhaseSetup {
		t.Fatalf("phase %s after New Session", h.s.Phase)
	}
}
