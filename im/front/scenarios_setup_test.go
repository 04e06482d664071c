package front_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/thatch-run/thatch/actors/imbinding"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/im/front"
	"github.com/thatch-run/thatch/im/telegram"
	"github.com/thatch-run/thatch/internal/testwait"
)

// A new topic's first message starts the setup: the agent is chosen, then
// the directory, a window named after the topic is made there running the
// agent, the bot says "Session ready!", and the message that started it
// all is typed into the agent, whose reply comes back to the topic.
func TestScenarioANewTopicIsSetUpAndItsFirstMessageAnswered(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.topic("fix the build")
	w.send(thread, "hello there")

	agents := w.prompt(thread, "Which agent should run for fix the build?")
	if got := labels(agents); !slices.Equal(got, []string{"claude", "codex", "copilot", "mimo", "Existing window"}) {
		t.Fatalf("agents offered: %q", got)
	}
	w.press(thread, agents, "claude")
	top := w.prompt(thread, "Working directory: "+w.projects)
	if got := labels(top); !slices.Equal(got, []string{"📁 api", "📁 docs", "📁 web", "Use this directory"}) {
		t.Fatalf("the browser at the root offers %q: the root's directories, and no way up out of it", got)
	}
	w.press(thread, top, "api")
	dir := filepath.Join(w.projects, "api")
	w.press(thread, w.prompt(thread, "Working directory: "+dir), "Use this directory")

	w.waitSaid(thread, "echo: hello there")
	w.waitTyped("hello there")
	w.quiesce()
	want := []string{
		"Which agent should run for fix the build?",
		"Working directory: " + w.projects,
		"Working directory: " + dir,
		"Session ready!",
		"echo: hello there",
	}
	if got := w.said(thread); !slices.Equal(got, want) {
		t.Fatalf("the topic shows %q, want %q", got, want)
	}
	win := w.onlyWindow()
	wantTag := fmt.Sprintf("thatch:%s:1", telegram.ThreadKey(chat, thread))
	if win.Name != "fix the build" || win.Dir != dir || win.Tag != wantTag || win.Dead {
		t.Fatalf("window %+v, want one named after the topic, in %s, tagged %s, running", win, dir, wantTag)
	}
	v := w.binding(thread)
	if v.State != imbinding.PhaseBound || v.Agent != "claude" || v.Window != win.ID || v.Session == "" || v.Queued != 0 || v.Unsent != 0 {
		t.Fatalf("binding %+v, want claude bound to %s with its session, nothing waiting", v, win.ID)
	}
	if files := w.transcripts(); len(files) != 1 || filepath.Base(files[0]) != v.Session+".jsonl" {
		t.Fatalf("transcripts %q, want the one of session %s", files, v.Session)
	}
}

// Once bound, each message is typed into the agent once, and each reply
// the agent writes is relayed to the topic once, in order.
func TestScenarioMessagesAreTypedAndRepliesRelayedOnceInOrder(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("api", "api", "first")
	w.waitSaid(thread, "echo: first")
	w.send(thread, "second")
	w.send(thread, "a message with $(shell) and 'quotes' in it")
	w.send(thread, "third")
	w.waitSaid(thread, "echo: third")
	w.quiesce()

	want := []string{"first", "second", "a message with $(shell) and 'quotes' in it", "third"}
	if got := w.typed(); !slices.Equal(got, want) {
		t.Fatalf("the agent took %q, want %q: each message once, as typed, in order", got, want)
	}
	var echoes []string
	for _, m := range want {
		echoes = append(echoes, "echo: "+m)
	}
	if got := w.echoes(thread); !slices.Equal(got, echoes) {
		t.Fatalf("the topic got %q, want %q: each reply once, in order", got, echoes)
	}
	if n := w.count(thread, "Session ready!"); n != 1 {
		t.Fatalf("Session ready! said %d times", n)
	}
}

// A stranger (a user not on the allow-list) reaches nothing: their topic,
// message and button press make no binding and no window, the bot says
// nothing to them (only the press is answered, so that no spinner hangs),
// and the allowed user then finds the thread as new.
func TestScenarioAStrangersMessagesAreIgnoredAndMakeNoBinding(t *testing.T) {
	w := newWorld(t, nil)
	const stranger int64 = 7
	w.tg.ServiceFrom(stranger)
	thread := w.topic("let me in")
	w.tg.Message(chat, thread, stranger, "hello bot")
	last := w.tg.Press(chat, thread, stranger, 1, "1:a:0")
	testwait.Until(t, "the bot to have taken the stranger's updates", func() bool { return w.tg.Confirmed() >= last })
	w.quiesce()

	if views := w.bindings(); len(views) != 0 {
		t.Fatalf("bindings %+v: a stranger made one", views)
	}
	if ws := w.windows(); len(ws) != 0 {
		t.Fatalf("windows %+v: a stranger made one", ws)
	}
	if said := w.said(thread); len(said) != 0 {
		t.Fatalf("the bot said %q to a stranger", said)
	}
	answered := 0
	for _, s := range w.tg.Sent() {
		if s.Method == "answerCallbackQuery" {
			answered++
		}
	}
	if answered != 1 {
		t.Fatalf("%d presses answered, want the stranger's one", answered)
	}

	w.send(thread, "now me")
	w.prompt(thread, "Which agent should run for let me in?")
	w.quiesce()
	if said := w.said(thread); len(said) != 1 {
		t.Fatalf("the bot said %q, want only the agent prompt, to the allowed user", said)
	}
	if v := w.binding(thread); v.State != imbinding.PhaseSetup || v.Step != imbinding.StepAgent || v.Queued != 1 {
		t.Fatalf("binding %+v, want a setup at its first step with the allowed user's message waiting", v)
	}
}

// A thread adopts an agent someone started by hand in a window of
// thatch's tmux server: "Existing window" lists it with its directory and
// agent, the window takes the thread's name, the agent's session is found,
// and the message that started it all is typed there and answered.
func TestScenarioAThreadAdoptsAnAgentAlreadyRunning(t *testing.T) {
	w := newWorld(t, nil)
	dir := filepath.Join(w.projects, "web")
	if _, err := w.tryTmux("new-window", "-d", "-t", "thatch:", "-n", "by hand", "-c", dir, w.claude); err != nil {
		w.tmux("new-session", "-d", "-s", "thatch", "-n", "by hand", "-c", dir, w.claude)
	}
	testwait.UntilReason(t, "the hand-started agent's transcript", func() (bool, string) {
		return len(w.transcripts()) == 1, fmt.Sprint(w.transcripts())
	})
	if got := w.untracked(); len(got) != 1 || got[0].Name != "by hand" || got[0].Agent != "claude" || got[0].Dir != dir {
		t.Fatalf("status lists %+v as the windows no binding owns", got)
	}
	thread := w.topic("adopter")
	w.send(thread, "hello")
	w.press(thread, w.prompt(thread, "Which agent should run for adopter?"), "Existing window")
	m := w.prompt(thread, "Which window should adopter bind?")
	if got := labels(m); len(got) != 2 || got[0] != "1. by hand · claude · web" || got[1] != "Back" || !strings.Contains(m.Text, "1. by hand: claude in "+dir) {
		t.Fatalf("windows offered %q: %q", m.Text, got)
	}
	w.press(thread, m, "by hand")
	w.waitSaid(thread, "Session ready!")
	w.waitSaid(thread, "echo: hello")
	w.quiesce()
	if win := w.onlyWindow(); win.Name != "adopter" || win.Dir != dir {
		t.Fatalf("window %+v, want the adopted one renamed after the thread", win)
	}
	if got := w.typed(); !slices.Equal(got, []string{"hello"}) {
		t.Fatalf("the agent took %q", got)
	}
	if got := w.untracked(); len(got) != 0 {
		t.Fatalf("status lists %+v as untracked once the window is bound", got)
	}
}

// untracked is the status report's list of windows no binding owns.
func (w *world) untracked() []front.UntrackedWindow {
	w.t.Helper()
	st, err := w.rt.StatusReport()
	if err != nil {
		w.t.Fatalf("status: %v", err)
	}
	raw, err := json.Marshal(st.FrontEnds[front.Name].Details[front.DetailUntracked])
	if err != nil {
		w.t.Fatal(err)
	}
	var ws []front.UntrackedWindow
	if err := json.Unmarshal(raw, &ws); err != nil {
		w.t.Fatalf("untracked windows %s: %v", raw, err)
	}
	return ws
}

// usersTmux is a tmux server of the user's own, on a socket file; run
// runs a tmux command on it.
type usersTmux struct{ sock string }

func newUsersTmux(t *testing.T) usersTmux {
	dir, err := os.MkdirTemp("", "tmx") // a socket's path is short
	if err != nil {
		t.Fatal(err)
	}
	u := usersTmux{sock: filepath.Join(dir, "mine")}
	t.Cleanup(func() {
		_, _ = u.run("kill-server")
		os.RemoveAll(dir)
	})
	return u
}

func (u usersTmux) run(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-S", u.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// adoptFromUsersTmux starts the fake claude by hand in the user's tmux,
// next to a window with no agent, and has a new thread adopt it with the
// message "hello"; it returns the thread.
func (w *world) adoptFromUsersTmux(u usersTmux) int64 {
	t := w.t
	t.Helper()
	web := filepath.Join(w.projects, "web")
	if out, err := u.run("new-session", "-d", "-s", "work", "-n", "editor", "-c", web, "sleep 600"); err != nil {
		t.Fatalf("the user's tmux: %v: %s", err, out)
	}
	if out, err := u.run("new-window", "-d", "-t", "work:", "-n", "by hand", "-c", web, w.claude); err != nil {
		t.Fatalf("the user's tmux: %v: %s", err, out)
	}
	testwait.UntilReason(t, "the hand-started agent's transcript", func() (bool, string) {
		return len(w.transcripts()) == 1, fmt.Sprint(w.transcripts())
	})
	thread := w.topic("adopter")
	w.send(thread, "hello")
	w.press(thread, w.prompt(thread, "Which agent should run for adopter?"), "Existing window")
	m := w.prompt(thread, "Which window should adopter bind?")
	if !strings.Contains(m.Text, "by hand (tmux "+u.sock+"): claude in "+web) || !strings.Contains(m.Text, "editor (tmux "+u.sock+"): no agent") {
		t.Fatalf("windows offered: %q", m.Text)
	}
	w.press(thread, m, "by hand")
	w.waitSaid(thread, "Session ready!")
	w.waitSaid(thread, "echo: hello")
	return thread
}

// With im.tmux.adopt_sockets, a thread adopts an agent running on the
// user's own tmux server (named by its socket path): it is offered with
// its server, bound, typed to and answered there; thatch makes no window
// of its own; and the topic closed under on_close = "kill" closes the
// adopted window on the user's server, and nothing else there.
func TestScenarioAThreadAdoptsAWindowOfTheUsersOwnTmux(t *testing.T) {
	u := newUsersTmux(t)
	w := newWorld(t, func(c *config.Config) {
		c.IM.Tmux.AdoptSockets = []string{u.sock}
		c.IM.OnClose = config.OnCloseKill
	})
	thread := w.adoptFromUsersTmux(u)
	w.send(thread, "again")
	w.waitSaid(thread, "echo: again")
	w.quiesce()
	if got := w.typed(); !slices.Equal(got, []string{"hello", "again"}) {
		t.Fatalf("the agent took %q", got)
	}
	if v := w.binding(thread); !strings.HasPrefix(v.Window, u.sock+":@") {
		t.Fatalf("binding %+v, want its window named with the user's socket", v)
	}
	if ws := w.windows(); len(ws) != 0 {
		t.Fatalf("thatch made windows %+v of its own", ws)
	}
	if got, _ := u.run("list-windows", "-a", "-F", "#{window_name}"); got != "editor\nadopter" {
		t.Fatalf("the user's windows: %q, want the adopted one renamed after the thread", got)
	}
	w.tg.CloseTopic(chat, thread)
	testwait.UntilReason(t, "the adopted window closed", func() (bool, string) {
		got, err := u.run("list-windows", "-a", "-F", "#{window_name}")
		return got == "editor", fmt.Sprintf("%q, %v", got, err)
	})
	w.quiesce()
	if v := w.binding(thread); v.State != "ended" {
		t.Fatalf("binding %+v, want it ended", v)
	}
}

// A window adopted from a socket that a restart's configuration no
// longer lists is not reached any more: the next message is kept and the
// usual Recover prompt comes; Recover resumes the same session in a
// window of thatch's own server, and the user's window is left alone.
func TestScenarioAWindowOnASocketNoLongerListedIsRecoveredInThatchsOwn(t *testing.T) {
	u := newUsersTmux(t)
	w := newWorld(t, func(c *config.Config) { c.IM.Tmux.AdoptSockets = []string{u.sock} })
	thread := w.adoptFromUsersTmux(u)
	session := w.binding(thread).Session
	w.quiesce()
	w.stop()
	w.tune = nil
	w.restart()
	w.send(thread, "still there?")
	p := w.prompt(thread, "The window of this session is gone. Your message is kept.")
	w.press(thread, p, "Recover")
	w.waitSaid(thread, "echo: still there?")
	w.quiesce()
	win := w.onlyWindow()
	if v := w.binding(thread); v.Window != win.ID || v.Session != session {
		t.Fatalf("binding %+v, want session %s resumed in thatch's window %s", v, session, win.ID)
	}
	if got, _ := u.run("list-windows", "-a", "-F", "#{window_name}"); got != "adopter\neditor" && got != "editor\nadopter" {
		t.Fatalf("the user's windows: %q, want both left where they were", got)
	}
}

// When tmux loses the window a setup made (its server stopped: tmux 3.3a
// can crash), the setup makes a new one by itself, says so, and goes on:
// here the server dies while the user picks a session.
func TestScenarioASetupWhoseTmuxServerDiedMakesANewWindow(t *testing.T) {
	w := newWorld(t, nil)
	// An earlier session of the agent there, for the picker to offer.
	earlier := exec.Command(w.claude)
	earlier.Dir, earlier.Stdin = filepath.Join(w.projects, "api"), strings.NewReader("an earlier task\n")
	if out, err := earlier.CombinedOutput(); err != nil {
		t.Fatalf("an earlier session: %v\n%s", err, out)
	}

	second := w.topic("second")
	w.send(second, "again")
	w.press(second, w.prompt(second, "Which agent should run for second?"), "claude")
	w.press(second, w.prompt(second, "Working directory: "+w.projects), "api")
	w.press(second, w.prompt(second, "Working directory: "+filepath.Join(w.projects, "api")), "Use this directory")
	pick := w.prompt(second, "Resume one?")
	w.tmux("kill-server")
	w.press(second, pick, "New")

	w.waitSaid(second, "echo: again")
	said := w.said(second)
	if !slices.Contains(said, "The tmux window for claude went away (did tmux stop?); making a new one.") || !slices.Contains(said, "Session ready!") {
		t.Fatalf("the thread shows %q", said)
	}
	if win := w.onlyWindow(); win.Name != "second" || win.Dead {
		t.Fatalf("window %+v, want second's, running", win)
	}
}
