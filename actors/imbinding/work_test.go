package imbinding

import (
	"strings"
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// watchOf is the one IMWatchPane among effects.
func watchOf(t *testing.T, effects []any) messages.IMWatchPane {
	t.Helper()
	return *only[messages.IMWatchPane](t, effects)
}

// typeOne sends a message and answers its check and its typing as a
// healthy window would; it returns the typing's effects.
func (h *harness) typeOne(text string) []any {
	h.t.Helper()
	h.message(text)
	eff := h.send(&messages.IMWindowChecked{WindowID: h.s.Window.WindowID, Alive: true, Name: h.s.windowName(), Agent: h.s.Info.AgentType})
	st := only[messages.IMSendToWindow](h.t, eff)
	return h.send(&messages.IMSentToWindow{UpdateID: st.UpdateID})
}

// The watcher is told what to watch by the binding alone: a message typed
// and taken starts a watch of its window; the prompt the chat shows, and
// its going, move with the binding's own Asked; the agent seen idle ends
// the watch; a report about work that is no longer the binding's changes
// nothing but tells the watcher the current work again.
func TestTheWatchFollowsTheBindingsWork(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.now = h.now.Add(time.Minute)
	w := watchOf(t, h.typeOne("run the tests"))
	want := messages.IMWatchPane{WindowID: "@1", Agent: "claude", Since: h.now.UnixMilli()}
	if w != want || h.s.Work != want.Since {
		t.Fatalf("watch %+v, work %d; want %+v", w, h.s.Work, want)
	}

	eff := h.send(bashPrompt)
	h.deliverChat(eff)
	if w := watchOf(t, eff); w.Shown != bashPrompt.Fingerprint || w.Since != want.Since {
		t.Fatalf("after the prompt was shown the watch is %+v", w)
	}
	if eff := h.send(bashPrompt); len(eff) != 0 {
		t.Fatalf("the shown prompt told again: %s", describe(eff))
	}
	eff = h.send(&messages.IMAgentPromptGone{Fingerprint: bashPrompt.Fingerprint})
	if w := watchOf(t, eff); w != want {
		t.Fatalf("after the prompt went the watch is %+v, want %+v", w, want)
	}

	eff = h.send(&messages.IMAgentIdle{Since: want.Since - 1, Why: messages.AgentIdleQuiet})
	if w := watchOf(t, eff); w != want || h.s.Work != want.Since {
		t.Fatalf("a stale idle report: watch %+v, work %d", w, h.s.Work)
	}
	eff = h.send(&messages.IMAgentIdle{Since: want.Since, Why: messages.AgentIdleQuiet})
	if w := watchOf(t, eff); w != (messages.IMWatchPane{}) || h.s.Work != 0 {
		t.Fatalf("the agent idle: watch %+v, work %d; want the watch ended", w, h.s.Work)
	}
}

// A prompt answered from the chat sets the agent to work again (it goes
// on, and may ask again); its window gone closes the prompt still shown
// and ends the work.
func TestAnAnsweredPromptIsWatchedOnAndAGoneWindowEndsIt(t *testing.T) {
	h := newHarness(t)
	h.bind()
	eff := h.send(bashPrompt)
	h.deliverChat(eff)
	sc := only[messages.IMSendChat](t, eff)
	ans := only[messages.IMAnswerAgentPrompt](t, h.pressAsked(sc.Buttons[0][0].Data, "42"))
	h.now = h.now.Add(time.Minute)
	eff = h.send(&messages.IMAgentPromptAnswered{Nonce: ans.Nonce, Outcome: messages.AgentPromptAnswered})
	if w := watchOf(t, eff); w.Since != h.now.UnixMilli() || w.Shown != "" {
		t.Fatalf("after the answer the watch is %+v, want new work from now", w)
	}

	eff = h.send(bashPrompt)
	h.deliverChat(eff)
	eff = h.send(&messages.IMAgentIdle{Since: h.s.Work, Why: messages.AgentIdleGone})
	if h.s.Asked != nil || h.s.Work != 0 {
		t.Fatalf("window gone: asked %+v, work %d", h.s.Asked, h.s.Work)
	}
	only[messages.IMClearButtons](t, eff)
	if w := watchOf(t, eff); w != (messages.IMWatchPane{}) {
		t.Fatalf("window gone: watch %+v", w)
	}
}

// Work is watched across a restart (its timer re-armed for what is left)
// and for workMax at most.
func TestARestartResumesTheWatchAndWorkMaxEndsIt(t *testing.T) {
	h := newHarness(t)
	h.bind()
	since := h.s.Work
	if since == 0 || !h.k.Active(h.s) {
		t.Fatalf("work %d, active %v after a message typed", since, h.k.Active(h.s))
	}
	h.now = h.now.Add(10 * time.Minute)
	eff := h.send(&actors.Recovered{Restarted: true})
	if w := watchOf(t, eff); w.Since != since || w.WindowID != "@1" {
		t.Fatalf("after a restart the watch is %+v", w)
	}
	if tm := only[actors.StartTimer](t, eff); tm.Name != timerWork || tm.After != workMax-10*time.Minute {
		t.Fatalf("timer %+v, want the %v left", tm, workMax-10*time.Minute)
	}
	h.now = h.now.Add(workMax - 10*time.Minute)
	eff = h.send(&actors.Tick{Name: timerWork})
	if w := watchOf(t, eff); w != (messages.IMWatchPane{}) || h.s.Work != 0 {
		t.Fatalf("after workMax: watch %+v, work %d", w, h.s.Work)
	}
	h.now = h.now.Add(time.Hour)
	eff = h.send(&actors.Recovered{})
	none[messages.IMWatchPane](t, eff)
	none[actors.StartTimer](t, eff)
}

// An ended thread is watched no more.
func TestAnEndedThreadIsNotWatched(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.nextUpd++
	eff := h.send(&messages.IMChatEnded{UpdateID: h.nextUpd, Reason: "the topic was deleted"})
	if w := watchOf(t, eff); w != (messages.IMWatchPane{}) || h.s.Work != 0 {
		t.Fatalf("ended: watch %+v, work %d", w, h.s.Work)
	}
}

// A thread whose machine lost its binding (its data was replaced) starts
// over with a word of why, once; its messages wait for the setup.
func TestAForgottenThreadSaysWhyItIsSetUpAgain(t *testing.T) {
	h := newHarness(t)
	h.nextUpd++
	eff := h.send(&messages.IMUpdate{UpdateID: h.nextUpd, User: "42", Text: "still there?", Forgotten: "n1"})
	var said []string
	for _, e := range eff {
		if sc, ok := e.(*messages.IMSendChat); ok {
			said = append(said, sc.Text)
		}
	}
	for _, o := range h.s.Outbox {
		said = append(said, o.Text)
	}
	if len(said) < 2 || !strings.HasPrefix(said[0], "n1 no longer has a record of this thread") || h.s.Phase != PhaseSetup {
		t.Fatalf("said %q, phase %s; want why, then the setup", said, h.s.Phase)
	}
	before := len(h.s.Outbox)
	h.nextUpd++
	h.send(&messages.IMUpdate{UpdateID: h.nextUpd, User: "42", Text: "hello?", Forgotten: "n1"})
	for _, o := range h.s.Outbox[before:] {
		if strings.Contains(o.Text, "no longer has a record") {
			t.Fatalf("told twice: %q", o.Text)
		}
	}
	if len(h.s.Queue)+len(h.s.Waiting) != 2 {
		t.Fatalf("queue %+v waiting %+v: want both messages kept for after the setup", h.s.Queue, h.s.Waiting)
	}
}
