package front_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	imchat "github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/internal/testwait"
)

// The commands of a bound thread: registered with Telegram at start,
// never typed to the agent, each doing what it says.

// At start the bot registers thatch's commands, so that clients offer
// them.
func TestScenarioTheBotsCommandsAreRegisteredAtStart(t *testing.T) {
	w := newWorld(t, nil)
	testwait.UntilReason(t, "setMyCommands", func() (bool, string) {
		got := w.tg.Commands()
		return len(got) == len(imchat.Commands), fmt.Sprintf("%+v", got)
	})
	if got := w.tg.Commands(); got[0].Command != "esc" || !strings.Contains(got[3].Description, "picture") {
		t.Fatalf("registered %+v", got)
	}
}

// /esc and /enter reach the agent's window (the fake agent takes the
// Escape byte as part of its line, which Enter ends); the chat is told
// each was sent; nothing is typed as text.
func TestScenarioEscAndEnterReachTheAgent(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("keys", "api", "first")
	w.waitSaid(thread, "echo: first")
	w.send(thread, "/esc")
	w.waitSaid(thread, "Escape sent.")
	w.send(thread, "/enter@thatch_fake_bot")
	w.waitSaid(thread, "Enter sent.")
	w.waitTyped("first", "\x1b")
	w.quiesce()
	if got := w.typed(); slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "/e") }) {
		t.Fatalf("a command was typed as text: %q", got)
	}
}

// /interrupt sends Ctrl-C: the fake agent, like a CLI that does not catch
// it, exits; the next message finds no agent in the window, and is not
// typed (into the shell that ran it) but offered Recover.
func TestScenarioInterruptSendsCtrlC(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("ctrl-c", "api", "first")
	w.waitSaid(thread, "echo: first")
	w.send(thread, "/interrupt")
	w.waitSaid(thread, "Ctrl-C sent.")
	w.send(thread, "after")
	m := w.prompt(thread, "The agent is no longer running in its window.")
	if !slices.Contains(labels(m), "Recover") {
		t.Fatalf("after Ctrl-C the thread offers %q", labels(m))
	}
	w.quiesce()
	if got := w.typed(); !slices.Equal(got, []string{"first"}) {
		t.Fatalf("the agent took %q", got)
	}
}

// A command for another bot is not ours: nothing is typed or said; an
// agent's own command (/compact) is typed to the agent as it is.
func TestScenarioOtherBotsCommandsAreIgnoredAndTheAgentsAreTyped(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("others", "api", "first")
	w.waitSaid(thread, "echo: first")
	testwait.UntilReason(t, "the bot's name from getMe", func() (bool, string) { return len(w.tg.Commands()) > 0, "" })
	w.send(thread, "/kill@someone_else_bot")
	w.send(thread, "/compact now")
	w.waitSaid(thread, "echo: /compact now")
	w.quiesce()
	if got := w.typed(); !slices.Equal(got, []string{"first", "/compact now"}) {
		t.Fatalf("the agent took %q", got)
	}
	if slices.ContainsFunc(w.said(thread), func(s string) bool { return strings.Contains(s, "Kill") }) {
		t.Fatalf("another bot's /kill was acted on: %q", w.said(thread))
	}
}

// /history N shows the last N exchanges from the transcript.
func TestScenarioHistoryShowsTheLastExchanges(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("hist", "api", "one")
	w.waitSaid(thread, "echo: one")
	w.send(thread, "two")
	w.waitSaid(thread, "echo: two")
	w.send(thread, "three")
	w.waitSaid(thread, "echo: three")
	w.send(thread, "/history 2")
	w.waitSaid(thread, "▶ two\necho: two\n\n▶ three\necho: three")
}

// /kill asks first; Kill kills the window and ends the binding; /sessions
// then shows the thread as ended.
func TestScenarioKillAsksThenKillsTheWindow(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("doomed", "api", "first")
	w.waitSaid(thread, "echo: first")
	w.send(thread, "/kill")
	w.press(thread, w.prompt(thread, "Kill window doomed"), "Kill")
	w.waitSaid(thread, "Window doomed is killed and this thread's binding ended. Send a message to set up a new one.")
	w.quiesce()
	if ws := w.windows(); len(ws) != 0 {
		t.Fatalf("windows %+v, want the thread's killed", ws)
	}
	if v := w.binding(thread); v.State != "ended" || v.Ended != "killed from the chat; window killed" {
		t.Fatalf("binding %+v", v)
	}
	w.send(thread, "/sessions")
	testwait.UntilReason(t, "the /sessions list", func() (bool, string) {
		said := w.said(thread)
		last := said[len(said)-1]
		return strings.HasPrefix(last, "Your threads (1):\n• doomed (this thread): claude in ") && strings.HasSuffix(last, ", ended") ||
			strings.Contains(last, ", ended, last message"), last
	})
}

// /screenshot of a bound window: the pane goes to the chat.
func TestScenarioScreenshotShowsThePane(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("shot", "api", "first")
	w.waitSaid(thread, "echo: first")
	w.send(thread, "/screenshot")
	testwait.UntilReason(t, "the pane in the chat", func() (bool, string) {
		for _, s := range w.tg.Sent() {
			if s.Method == "sendPhoto" && len(s.Photo) > 0 {
				return true, ""
			}
		}
		for _, s := range w.said(thread) {
			if strings.Contains(s, "echo: first") && strings.Contains(s, "session:") {
				return true, "" // the pane as text
			}
		}
		return false, fmt.Sprintf("%q", w.said(thread))
	})
}

// While the agent works on a message and has not replied, the chat shows
// it typing.
func TestScenarioTheChatShowsTheAgentWorking(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("busy", "api", "first")
	w.waitSaid(thread, "echo: first")
	w.send(thread, "sleep 9")
	testwait.UntilReason(t, "the typing sign in the thread", func() (bool, string) {
		for _, a := range w.tg.Actions() {
			if a.ThreadID == thread && a.Text == "typing" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", w.tg.Actions())
	})
	w.waitSaid(thread, "echo: sleep 9")
}
