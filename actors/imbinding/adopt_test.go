package imbinding

import (
	"strings"
	"testing"

	"github.com/thatch-run/thatch/messages"
)

// A thread with no binding adopts an agent already running in a free
// window: the window is tagged and renamed after the thread, its session
// looked for, and the thread bound; the message that started it is kept.
func TestAThreadAdoptsAWindowWhereAnAgentRuns(t *testing.T) {
	h := newHarness(t)
	h.deliverChat(h.message("hello"))
	only[messages.IMListFreeWindows](t, h.deliverChat(h.press("Existing window")))
	eff := h.send(&messages.IMFreeWindowsListed{Windows: []messages.IMFreeWindow{
		{ID: "@7", Name: "zsh", Dir: "/home/u/old", Agent: "codex"},
		{ID: "@9", Name: "vim", Dir: "/home/u/x"},
	}})
	sc := only[messages.IMSendChat](t, eff)
	if sc.Buttons[0][0].Text != "1. zsh · codex · old" || !strings.Contains(sc.Buttons[1][0].Text, "no agent") ||
		!strings.Contains(sc.Text, "1. zsh: codex in /home/u/old") {
		t.Fatalf("windows offered %q %+v", sc.Text, sc.Buttons)
	}
	h.deliverChat(eff)
	ad := only[messages.IMAdoptWindow](t, h.deliverChat(h.press("zsh")))
	if ad.WindowID != "@7" || ad.Name != h.s.Name() || ad.Tag == "" {
		t.Fatalf("adopt %+v", ad)
	}
	find := only[messages.IMFindAgentSession](t, h.send(&messages.IMWindowAdopted{WindowID: "@7", Tag: ad.Tag, Name: ad.Name, Dir: "/home/u/old", Agent: "codex"}))
	if find.Agent != "codex" || find.Dir != "/home/u/old" || find.WindowID != "@7" {
		t.Fatalf("find %+v", find)
	}
	h.deliverChat(h.send(&messages.IMAgentSessionFound{WindowID: "@7", SessionID: "c-1", Transcript: "/t/c-1.jsonl"}))
	if h.s.Phase != PhaseBound || h.s.Info.AgentType != "codex" || h.s.Window.WindowID != "@7" || h.s.Tag != ad.Tag {
		t.Fatalf("bound %s %+v %+v", h.s.Phase, h.s.Info, h.s.Window)
	}
	if len(h.s.Queue) != 1 || h.s.Queue[0].Text != "hello" {
		t.Fatalf("queue %v, want the first message kept for the adopted agent", h.s.Queue)
	}
}

// No free window, or one where no agent runs: the user is told, and the
// agent choice comes back.
func TestAdoptingWithNothingToAdoptAsksForTheAgentAgain(t *testing.T) {
	h := newHarness(t)
	h.deliverChat(h.message("hello"))
	h.deliverChat(h.press("Existing window"))
	eff := h.send(&messages.IMFreeWindowsListed{})
	if got := said(eff); len(got) == 0 || !strings.Contains(got[0], "No tmux window is free to adopt") {
		t.Fatalf("said %q", got)
	}
	h.deliverChat(eff)
	if h.s.Prompt == nil || h.s.Prompt.Kind != PromptAgent {
		t.Fatalf("prompt %+v, want the agent choice again", h.s.Prompt)
	}
}
