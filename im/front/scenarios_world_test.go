package front_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch"
	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/imbinding"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/e2e/faketelegram"
	"github.com/thatch-run/thatch/im/front"
	"github.com/thatch-run/thatch/im/telegram"
	"github.com/thatch-run/thatch/internal/testwait"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// The IM scenarios run the IM front end in the real runtime (a Pebble
// store in the scenario's directory, the supervision tree, a fake clock)
// against the e2e suite's fake Bot API, a tmux server of the scenario's
// own, and the e2e suite's fake agent as claude: it draws claude's input
// line, takes a line on Enter and writes claude's transcript format under
// the scenario's HOME. The user's side is played through the fake Bot API
// only, as a person in the chat would; what they would notice is read
// back from it, from tmux and from the agent's transcript. A negative
// ("nothing more was sent") is read after Runtime.Quiesce, never after a
// pause.

// The scenarios' chat: a forum supergroup, the one user on the
// allow-list, and the bot's token.
const (
	chat  int64 = -1001234
	user  int64 = 42
	token       = "123456:scenario-token"
)

// sockets numbers the scenarios' tmux servers.
var sockets atomic.Int64

// world is one scenario: its directory (HOME, the data directory, the
// fake agent), the fake Bot API and the tmux server (both outlive a
// restart, as Telegram and tmux outlive thatch), and the runtime running
// now with its fake clock.
type world struct {
	t *testing.T
	// home is the HOME of thatch and of every agent it starts; projects
	// (under it) is im.roots, with api, web and docs in it.
	home, projects string
	data           string // the data directory (journal, hook map)
	claude         string // the fake agent, built as claude
	socket         string // the tmux server's socket name (tmux -L)
	tg             *faketelegram.Server
	tune           func(*config.Config)
	logs           *logBuffer

	clock    *actors.FakeClock
	cfg      *config.Config
	rt       *thatch.Runtime
	runtimes []*thatch.Runtime
}

// newWorld starts a scenario. tune, when not nil, changes the config of
// every runtime the scenario starts.
func newWorld(t *testing.T, tune func(*config.Config)) *world {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("no tmux binary")
	}
	root := t.TempDir()
	w := &world{t: t, home: filepath.Join(root, "home"), data: filepath.Join(root, "data"),
		claude: filepath.Join(root, "bin", "claude"), tune: tune, logs: &logBuffer{},
		socket: fmt.Sprintf("thatch-im-scenario-%d-%d", os.Getpid(), sockets.Add(1))}
	w.projects = filepath.Join(w.home, "projects")
	// Built before HOME moves: the go command finds its caches from HOME.
	// The build cache makes every build after the first a link.
	if out, err := exec.Command("go", "build", "-o", w.claude, "github.com/thatch-run/thatch/e2e/fakeagent").CombinedOutput(); err != nil {
		t.Fatalf("build the fake agent: %v\n%s", err, out)
	}
	for _, d := range []string{"api", "web", "docs"} {
		if err := os.MkdirAll(filepath.Join(w.projects, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The tmux server takes thatch's environment, and every agent takes
	// the server's: the agents write their transcripts under this HOME.
	// The launch line runs under $SHELL -ic.
	t.Setenv("HOME", w.home)
	t.Setenv("SHELL", "/bin/sh")

	w.tg = faketelegram.New(token)
	// The allowed user makes and renames the topics.
	w.tg.ServiceFrom(user)
	t.Cleanup(w.tg.Close)
	t.Cleanup(func() {
		_, _ = w.tryTmux("kill-server")
		_ = os.Remove(filepath.Join(os.TempDir(), fmt.Sprintf("tmux-%d", os.Getuid()), w.socket))
	})
	// One cleanup for every runtime the scenario starts; it runs first,
	// before tmux and the Bot API go away.
	t.Cleanup(func() {
		for _, rt := range w.runtimes {
			if err := rt.Stop(context.Background()); err != nil {
				t.Errorf("stop the runtime: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("thatch's log:\n%s", w.logs.String())
			if out, err := w.tryTmux("list-windows", "-a"); err == nil {
				t.Logf("tmux windows:\n%s", out)
			}
		}
		w.logs.close()
	})
	w.clock = actors.NewFakeClock(time.Now())
	w.start()
	return w
}

// start runs a new runtime on the scenario's data directory.
func (w *world) start() {
	w.t.Helper()
	cfg := config.Defaults()
	cfg.Data.Dir = w.data
	cfg.Control.TokenFile = filepath.Join(w.data, "control.token")
	cfg.Control.StateFile = filepath.Join(w.data, "control.json")
	cfg.Sweep.Strand = false
	cfg.IM.AllowedUsers = []string{strconv.FormatInt(user, 10)}
	cfg.IM.Roots = []string{w.projects}
	cfg.IM.Telegram.Token = token
	cfg.IM.Telegram.APIURL = w.tg.URL()
	cfg.IM.Tmux.Socket = w.socket
	cfg.IM.Agents.Claude.Launch = w.claude
	cfg.IM.Agents.Claude.Resume = w.claude + " -r {session_id}"
	// Scenarios move the fake clock by minutes: an answer's time is
	// tested where it is meant.
	cfg.IM.AlertAfter = 0
	if w.tune != nil {
		w.tune(cfg)
	}
	if err := cfg.Validate(); err != nil {
		w.t.Fatal(err)
	}
	w.cfg = cfg
	logger := hclog.New(&hclog.LoggerOptions{Name: "thatch", Level: hclog.Debug, Output: w.logs})
	// No spacing between sends (Telegram's is a second a chat), no
	// zoxide: the browser shows the roots only.
	ag := front.NewAgents(cfg, front.Options{Home: w.home})
	im := front.New(cfg, front.Options{Home: w.home, Zoxide: "-", ChatInterval: -1, Agents: ag})
	rt, err := thatch.New(cfg, thatch.Options{Clock: w.clock, Logger: logger, FrontEnds: []frontend.FrontEnd{ag, im}})
	if err != nil {
		w.t.Fatal(err)
	}
	w.runtimes = append(w.runtimes, rt)
	if err := rt.Start(context.Background()); err != nil {
		w.t.Fatalf("start the runtime: %v", err)
	}
	w.rt = rt
}

// stop stops the running runtime, as a daemon stops: everything it
// acknowledged is durable; tmux, its windows and their agents go on.
func (w *world) stop() {
	w.t.Helper()
	if err := w.rt.Stop(context.Background()); err != nil {
		w.t.Fatalf("stop the runtime: %v", err)
	}
}

// restart starts a new runtime on the same directory after stop, with a
// fresh clock that carries on from the old one's time (timers do not
// survive a restart).
func (w *world) restart() {
	w.t.Helper()
	w.clock = actors.NewFakeClock(w.clock.Now())
	w.start()
}

// quiesce waits until nothing more happens without new input: every
// effect released so far (typing, chat sends, window checks) has run and
// its result was handled. A timer the fake clock has not reached is input.
func (w *world) quiesce() {
	w.t.Helper()
	if err := w.rt.Quiesce(30 * time.Second); err != nil {
		w.t.Fatalf("quiesce: %v", err)
	}
}

// The user's side of the chat.

// topic makes a forum topic, as the allowed user, and returns its thread.
func (w *world) topic(name string) int64 { return w.tg.CreateTopic(chat, name) }

// send posts text to the thread as the allowed user; it returns the
// update id.
func (w *world) send(thread int64, text string) int64 { return w.tg.Message(chat, thread, user, text) }

// said returns the texts the bot sent to the thread, in order, as the
// user reads them (HTML tags dropped, entities decoded).
func (w *world) said(thread int64) []string {
	var out []string
	for _, s := range w.tg.Messages(chat, thread) {
		out = append(out, visible(s))
	}
	return out
}

var htmlTag = regexp.MustCompile(`<[^>]*>`)

// visible is the text a Telegram client shows for a sent message.
func visible(s faketelegram.Sent) string {
	if s.ParseMode != "HTML" {
		return s.Text
	}
	return html.UnescapeString(htmlTag.ReplaceAllString(s.Text, ""))
}

// count is how many times the bot said text in the thread.
func (w *world) count(thread int64, text string) int {
	n := 0
	for _, s := range w.said(thread) {
		if s == text {
			n++
		}
	}
	return n
}

// waitSaid waits until the bot said text in the thread.
func (w *world) waitSaid(thread int64, text string) {
	w.t.Helper()
	testwait.UntilReason(w.t, fmt.Sprintf("the bot to say %q", text), func() (bool, string) {
		said := w.said(thread)
		return slices.Contains(said, text), fmt.Sprintf("%q", said)
	})
}

// echoes are the agent's replies the thread got ("echo: ..."), in order.
func (w *world) echoes(thread int64) []string {
	var out []string
	for _, s := range w.said(thread) {
		if strings.HasPrefix(s, "echo: ") {
			out = append(out, s)
		}
	}
	return out
}

// sent returns the bot's sendMessage of text in the thread.
func (w *world) sent(thread int64, text string) faketelegram.Sent {
	w.t.Helper()
	for _, s := range w.tg.Messages(chat, thread) {
		if visible(s) == text {
			return s
		}
	}
	w.t.Fatalf("the bot did not say %q; it said %q", text, w.said(thread))
	return faketelegram.Sent{}
}

// prompt waits for the newest message of the thread that has buttons and
// whose text contains want, and returns it.
func (w *world) prompt(thread int64, want string) faketelegram.Sent {
	w.t.Helper()
	var found faketelegram.Sent
	testwait.UntilReason(w.t, fmt.Sprintf("a prompt %q", want), func() (bool, string) {
		msgs := w.tg.Messages(chat, thread)
		for i := len(msgs) - 1; i >= 0; i-- {
			if len(msgs[i].Buttons) > 0 && strings.Contains(msgs[i].Text, want) {
				found = msgs[i]
				return true, ""
			}
		}
		return false, fmt.Sprintf("%q", w.said(thread))
	})
	return found
}

// labels are a prompt's button labels, row after row.
func labels(m faketelegram.Sent) []string {
	var out []string
	for _, row := range m.Buttons {
		for _, b := range row {
			out = append(out, b.Text)
		}
	}
	return out
}

// press presses, as the allowed user, the button of prompt m whose label
// contains label; it returns the update id.
func (w *world) press(thread int64, m faketelegram.Sent, label string) int64 {
	w.t.Helper()
	for _, row := range m.Buttons {
		for _, b := range row {
			if strings.Contains(b.Text, label) {
				return w.tg.Press(chat, thread, user, m.MessageID, b.Data)
			}
		}
	}
	w.t.Fatalf("prompt %q has no button %q: %q", m.Text, label, labels(m))
	return 0
}

// setup sets a new topic named name up with claude in the project
// directory, first being the message that starts the setup; it returns
// the topic's thread once the bot said "Session ready!".
func (w *world) setup(name, project, first string) int64 {
	w.t.Helper()
	thread := w.topic(name)
	w.send(thread, first)
	w.press(thread, w.prompt(thread, "Which agent should run for "+name+"?"), "claude")
	w.press(thread, w.prompt(thread, "Working directory: "+w.projects), project)
	w.press(thread, w.prompt(thread, "Working directory: "+filepath.Join(w.projects, project)), "Use this directory")
	w.waitSaid(thread, "Session ready!")
	return thread
}

// The other side: tmux, the agent, and the bindings.

// tryTmux runs tmux on the scenario's server.
func (w *world) tryTmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", w.socket}, args...)...).CombinedOutput()
	return string(out), err
}

// tmux runs tmux on the scenario's server and fails the test if it fails.
func (w *world) tmux(args ...string) string {
	w.t.Helper()
	out, err := w.tryTmux(args...)
	if err != nil {
		w.t.Fatalf("tmux %q: %v: %s", args, err, out)
	}
	return out
}

// window is one of the windows thatch made (they carry a tag).
type window struct {
	ID, Name, Tag, Dir string
	Dead               bool
}

// windows lists the windows thatch made, on every session of the server.
func (w *world) windows() []window {
	out, err := w.tryTmux("list-windows", "-a", "-F", "#{window_id}\t#{window_name}\t#{@thatch_tag}\t#{pane_start_path}\t#{pane_dead}")
	if err != nil {
		return nil // no server
	}
	var ws []window
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Split(line, "\t"); len(f) == 5 && f[2] != "" {
			ws = append(ws, window{ID: f[0], Name: f[1], Tag: f[2], Dir: f[3], Dead: f[4] == "1"})
		}
	}
	return ws
}

// onlyWindow returns the one window thatch made, failing the test if
// there is not exactly one.
func (w *world) onlyWindow() window {
	w.t.Helper()
	ws := w.windows()
	if len(ws) != 1 {
		w.t.Fatalf("thatch's windows: %+v, want one", ws)
	}
	return ws[0]
}

// transcripts are the fake claude's transcripts under HOME.
func (w *world) transcripts() []string {
	files, _ := filepath.Glob(filepath.Join(w.home, ".claude", "projects", "*", "*.jsonl"))
	return files
}

// typed returns the messages the agent took, over every transcript, in
// the order it took them in each (the fake writes each as a user line).
func (w *world) typed() []string {
	var out []string
	for _, f := range w.transcripts() {
		out = append(out, userLines(f)...)
	}
	return out
}

// waitTyped waits until the agent took exactly want, in order.
func (w *world) waitTyped(want ...string) {
	w.t.Helper()
	testwait.UntilReason(w.t, fmt.Sprintf("the agent to have taken %q", want), func() (bool, string) {
		got := w.typed()
		return slices.Equal(got, want), fmt.Sprintf("%q", got)
	})
}

// userLines reads the user messages of one fake claude transcript.
func userLines(file string) []string {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var line struct {
			Type    string `json:"type"`
			Message struct {
				Content any `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Type != "user" {
			continue
		}
		if s, ok := line.Message.Content.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// bindings are the bindings' status views, as `thatch status` shows them.
func (w *world) bindings() []imbinding.View {
	w.t.Helper()
	st, err := w.rt.StatusReport()
	if err != nil {
		w.t.Fatalf("status: %v", err)
	}
	raw, err := json.Marshal(st.FrontEnds[front.Name].Entities)
	if err != nil {
		w.t.Fatal(err)
	}
	var views []imbinding.View
	if err := json.Unmarshal(raw, &views); err != nil {
		w.t.Fatalf("the bindings' views %s: %v", raw, err)
	}
	return views
}

// binding returns the view of the thread's binding, failing the test if
// it is not the only one.
func (w *world) binding(thread int64) imbinding.View {
	w.t.Helper()
	views := w.bindings()
	if len(views) != 1 || views[0].Thread != telegram.ThreadKey(chat, thread) {
		w.t.Fatalf("bindings %+v, want the one of thread %d", views, thread)
	}
	return views[0]
}

// logBuffer keeps thatch's log for a failed scenario. Writes after close
// (a goroutine that logs as the runtime ends) are dropped.
type logBuffer struct {
	mu     sync.Mutex
	b      strings.Builder
	closed bool
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
}
