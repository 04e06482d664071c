package front_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors/imbinding"
	"github.com/thatch-run/thatch/im/telegram"
	"github.com/thatch-run/thatch/internal/testwait"
)

// The bound window is killed: the next message is typed nowhere and kept,
// the user is asked (Recover or New Session), and Recover resumes the same
// agent session in a new window, where the kept message is typed and
// answered.
func TestScenarioAKilledWindowGetsTheRecoverPrompt(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("gone", "docs", "first")
	w.waitSaid(thread, "echo: first")
	old := w.onlyWindow()
	session := w.binding(thread).Session
	w.tmux("kill-window", "-t", old.ID)

	w.send(thread, "still there?")
	p := w.prompt(thread, "The window of this session is gone. Your message is kept.")
	if got := labels(p); !slices.Equal(got, []string{"Recover", "New Session"}) {
		t.Fatalf("the prompt offers %q", got)
	}
	w.quiesce()
	if got := w.typed(); !slices.Equal(got, []string{"first"}) {
		t.Fatalf("the agent took %q: a message for a killed window reached an agent", got)
	}
	if ws := w.windows(); len(ws) != 0 {
		t.Fatalf("windows %+v before the user chose", ws)
	}
	if v := w.binding(thread); v.State != imbinding.PhasePrompting || v.Queued != 1 {
		t.Fatalf("binding %+v, want it asking, the message kept", v)
	}

	w.press(thread, p, "Recover")
	w.waitSaid(thread, "echo: still there?")
	w.quiesce()
	if got := w.typed(); !slices.Equal(got, []string{"first", "still there?"}) {
		t.Fatalf("the agent took %q, want the kept message once, in the resumed session", got)
	}
	if files := w.transcripts(); len(files) != 1 {
		t.Fatalf("transcripts %q: Recover started a new session instead of resuming", files)
	}
	win := w.onlyWindow()
	// Its tag tells the new window from the old: killing the server's
	// only window ended the server, and a new server numbers its windows
	// from @0 again.
	if win.Name != "gone" || win.Tag != fmt.Sprintf("thatch:%s:2", telegram.ThreadKey(chat, thread)) || old.Tag == win.Tag {
		t.Fatalf("window %+v after Recover, want a new one named after the topic, of the binding's second generation", win)
	}
	if v := w.binding(thread); v.State != imbinding.PhaseBound || v.Window != win.ID || v.Session != session || v.Queued != 0 {
		t.Fatalf("binding %+v, want bound to %s with session %s", v, win.ID, session)
	}
	if got := w.echoes(thread); !slices.Equal(got, []string{"echo: first", "echo: still there?"}) {
		t.Fatalf("the topic got %q", got)
	}
}

// The user quits the agent in its window: the pane stays dead (no shell
// is left to type into), the next message is kept and the user asked, and
// Recover starts the agent again in the same window, resuming its session.
func TestScenarioAnAgentThatExitedIsStartedAgainInItsWindow(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("exits", "web", "hi")
	w.waitSaid(thread, "echo: hi")
	old := w.onlyWindow()

	w.tmux("send-keys", "-t", old.ID, "-l", "exit") // the fake ends on it, without writing it down
	w.tmux("send-keys", "-t", old.ID, "Enter")
	testwait.Until(t, "the agent's pane to be dead", func() bool {
		ws := w.windows()
		return len(ws) == 1 && ws[0].Dead
	})
	w.send(thread, "are you there")
	p := w.prompt(thread, "The agent is no longer running in its window. Your message is kept.")
	w.quiesce()
	if got := w.typed(); !slices.Equal(got, []string{"hi"}) {
		t.Fatalf("the agent took %q: a message for an agent that exited was typed", got)
	}
	if v := w.binding(thread); v.State != imbinding.PhasePrompting || v.Queued != 1 {
		t.Fatalf("binding %+v, want it asking, the message kept", v)
	}

	w.press(thread, p, "Recover")
	w.waitSaid(thread, "echo: are you there")
	w.quiesce()
	if got := w.typed(); !slices.Equal(got, []string{"hi", "are you there"}) {
		t.Fatalf("the agent took %q", got)
	}
	if files := w.transcripts(); len(files) != 1 {
		t.Fatalf("transcripts %q: Recover started a new session instead of resuming", files)
	}
	if win := w.onlyWindow(); win.ID != old.ID || win.Tag != old.Tag || win.Dead {
		t.Fatalf("window %+v after Recover, want %s running again", win, old.ID)
	}
	want := []string{"Session ready!", "echo: hi", "The agent is no longer running in its window. Your message is kept.",
		"Session ready!", "echo: are you there"}
	if got := w.said(thread); len(got) < 3 || !slices.Equal(got[3:], want) {
		t.Fatalf("the topic shows %q, want the setup's prompts, then %q", got, want)
	}
}

// The topic is renamed: the next message is held behind a question
// (Rename or New Session), and once im.rename_timeout passes without an
// answer the window takes the new name and the message is typed.
func TestScenarioARenameIsAcceptedWhenNobodyAnswers(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("web", "web", "hi")
	w.waitSaid(thread, "echo: hi")
	w.tg.EditTopic(chat, thread, "web v2")
	w.send(thread, "after the rename")
	w.prompt(thread, `This thread is now called "web v2"; its session is "web".`)
	// A message sent while the question is open waits behind the first.
	w.send(thread, "while asked")
	w.quiesce()
	if got := w.typed(); !slices.Equal(got, []string{"hi"}) {
		t.Fatalf("the agent took %q while the question was open", got)
	}
	if win := w.onlyWindow(); win.Name != "web" {
		t.Fatalf("window %+v renamed before the answer or the timeout", win)
	}
	w.clock.Advance(w.cfg.IM.RenameTimeout - time.Second)
	w.quiesce()
	if got := w.typed(); !slices.Equal(got, []string{"hi"}) {
		t.Fatalf("the agent took %q before the rename timeout", got)
	}

	w.clock.Advance(time.Second)
	w.waitSaid(thread, "echo: while asked")
	w.quiesce()
	if got := w.typed(); !slices.Equal(got, []string{"hi", "after the rename", "while asked"}) {
		t.Fatalf("the agent took %q; want both held messages, in order", got)
	}
	if win := w.onlyWindow(); win.Name != "web v2" {
		t.Fatalf("window %+v, want it renamed after the topic", win)
	}
}

// The user ends the agent from the chat ("exit"): the message was taken,
// and the user is not told otherwise (the dead pane still shows the line as
// it was typed); the next message finds the agent gone and asks.
func TestScenarioAMessageThatEndsTheAgentCountsAsTaken(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("quits", "web", "hi")
	w.waitSaid(thread, "echo: hi")

	w.send(thread, "exit")
	testwait.Until(t, "the agent's pane to be dead", func() bool {
		ws := w.windows()
		return len(ws) == 1 && ws[0].Dead
	})
	w.quiesce()
	for _, m := range w.said(thread) {
		if strings.Contains(m, "did not take it") {
			t.Fatalf("the topic was told %q for a message that ended the agent", m)
		}
	}
	w.send(thread, "are you there")
	w.prompt(thread, "The agent is no longer running in its window. Your message is kept.")
}
