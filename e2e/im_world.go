package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/fakeanthropic"
	"github.com/thatch-run/thatch/e2e/fakeresponses"
	"github.com/thatch-run/thatch/e2e/faketelegram"
)

// The IM specs' chat: a forum supergroup, and the one user on the
// allow-list.
const (
	imChat  int64 = -1001234
	imUser  int64 = 42
	imToken       = "123456:e2e-token"
)

var imSockets atomic.Int64

// IMWorld is a World with what the IM front end talks to: a fake Bot API
// server, a private tmux socket, and the fake agent CLIs on PATH (named
// claude, codex, copilot, mimo) writing their transcripts under HOME.
type IMWorld struct {
	*World
	TG     *faketelegram.Server
	Socket string
	// Projects is the directory the browser starts in (im.roots).
	Projects string
	// Claude and Codex are the fake model APIs of a real claude or codex
	// (NewRealIMWorld); nil otherwise.
	Claude *fakeanthropic.Server
	Codex  *fakeresponses.Server
}

// NewIMWorld makes the world; extra lines go into the [im] section.
func NewIMWorld(extra ...string) *IMWorld {
	return newIMWorld("", true, extra)
}

// NewRealIMWorld makes a world in which agent ("claude" or "codex") is
// the real CLI (installed by install-agents.sh), its model a scripted
// local fake (Anthropic for claude, Responses for codex: an echo by
// default); the other agents stay fakes.
func NewRealIMWorld(agent string, extra ...string) *IMWorld {
	return newIMWorld(agent, true, extra)
}

// newIMWorld makes the world; without telegram the config has no
// [im.telegram] section (the Telegram adapter does not run, and a world
// adds another platform's section: FeishuWorld).
func newIMWorld(real string, telegram bool, extra []string) *IMWorld {
	Expect(bins.FakeAgent).NotTo(BeEmpty(), "the suite did not build the fake agent")
	w := NewWorld()
	iw := &IMWorld{World: w, TG: faketelegram.New(imToken),
		Socket:   fmt.Sprintf("thatch-e2e-%d-%d", os.Getpid(), imSockets.Add(1)),
		Projects: filepath.Join(w.Home, "projects")}
	DeferCleanup(iw.TG.Close)
	// The allowed user makes and renames the topics, as in a group of
	// their own: thatch takes nothing from anyone else.
	iw.TG.ServiceFrom(imUser)
	DeferCleanup(func() {
		// The agents in the panes end with the server, and a real one
		// writes its files in HOME as it exits: they are waited for
		// (killed after a while), so that the world's folder is removed
		// only once nothing writes in it. So is the server itself: once
		// (1 run in about 10, a SIGKILL spec under a loaded e2e run) it
		// was still running 20 s after kill-server, cause not found.
		procs := iw.paneProcesses()
		if out, err := iw.Tmux("display-message", "-p", "#{pid}"); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(out)); err == nil {
				procs = append(procs, pid)
			}
		}
		_, _ = iw.Tmux("kill-server")
		_ = os.Remove(filepath.Join(os.TempDir(), fmt.Sprintf("tmux-%d", os.Getuid()), iw.Socket))
		waitGone(procs, 10*time.Second)
	})
	bin := filepath.Join(w.Root, "bin")
	Expect(os.MkdirAll(bin, 0o755)).To(Succeed())
	for _, name := range []string{"claude", "codex", "copilot", "mimo"} {
		Expect(os.Symlink(bins.FakeAgent, filepath.Join(bin, name))).To(Succeed())
	}
	for _, d := range []string{"api", "web", "docs"} {
		Expect(os.MkdirAll(filepath.Join(iw.Projects, d, "src"), 0o755)).To(Succeed())
	}
	for i, kv := range w.Env {
		if strings.HasPrefix(kv, "PATH=") {
			w.Env[i] = "PATH=" + bin + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
	}
	w.Env = append(w.Env, "SHELL=/bin/sh", "_ZO_DATA_DIR="+filepath.Join(w.Root, "zoxide"))
	lines := append([]string{
		"[im]",
		"allowed_users = [\"42\"]",
		"roots = [" + quote(iw.Projects) + "]",
	}, extra...)
	if telegram {
		lines = append(lines,
			"[im.telegram]",
			"token = "+quote(imToken),
			"api_url = "+quote(iw.TG.URL()),
			// The fake Bot API has no per-chat limit: a world sends at a
			// tenth of Telegram's pace (PaceAsTelegram restores it), so
			// that a spec waits for what it checks, not for pacing that
			// im/telegram's tests and the 429 storm spec cover.
			fastPacing)
	}
	lines = append(lines,
		"[im.tmux]",
		"socket = "+quote(iw.Socket))
	// tmux starts login shells, which set PATH afresh from /etc/profile:
	// the fake agents are named by their full paths, as a user would for
	// an agent outside the system's PATH.
	for _, a := range []struct{ name, resume string }{
		{"claude", " -r {session_id}"}, {"codex", " resume {session_id}"}, {"copilot", " --resume {session_id}"}, {"mimo", ""},
	} {
		exe := filepath.Join(bin, a.name)
		resume := ""
		if a.resume != "" {
			resume = exe + a.resume
		}
		launch := exe
		if a.name == "claude" {
			// A launch command is a shell command line; one that runs
			// something first must still hand the agent what thatch sets.
			launch = "true && " + exe
		}
		if a.name == real {
			launch, resume = iw.realAgent(real)
		}
		lines = append(lines, "[im.agents."+a.name+"]", "launch = "+quote(launch), "resume = "+quote(resume))
	}
	cfg, err := os.ReadFile(w.ThatchConfig)
	Expect(err).NotTo(HaveOccurred())
	cfg = append(cfg, []byte(strings.Join(lines, "\n")+"\n")...)
	Expect(os.WriteFile(w.ThatchConfig, cfg, 0o644)).To(Succeed())
	return iw
}

// fastPacing is the IM worlds' im.telegram pacing: a tenth of Telegram's
// spacing, and no limit a minute (a spec sends more than 20 messages a
// minute to its one group).
const fastPacing = "chat_interval = \"100ms\"\ngroup_per_minute = 0"

// PaceAsTelegram gives the world Telegram's own pace (the default
// im.telegram.chat_interval of a second); call it before the daemon
// starts.
func (iw *IMWorld) PaceAsTelegram() {
	GinkgoHelper()
	cfg, err := os.ReadFile(iw.ThatchConfig)
	Expect(err).NotTo(HaveOccurred())
	Expect(string(cfg)).To(ContainSubstring(fastPacing))
	Expect(os.WriteFile(iw.ThatchConfig, []byte(strings.Replace(string(cfg), fastPacing+"\n", "", 1)), 0o644)).To(Succeed())
}

// SetLaunch makes launch the command line that starts agent in a new
// window (its im.agents.<agent>.launch), as a user who runs it with
// flags of their own; call it before the daemon starts.
func (iw *IMWorld) SetLaunch(agent, launch string) {
	GinkgoHelper()
	cfg, err := os.ReadFile(iw.ThatchConfig)
	Expect(err).NotTo(HaveOccurred())
	lines := strings.Split(string(cfg), "\n")
	for i := 0; i+1 < len(lines); i++ {
		if lines[i] == "[im.agents."+agent+"]" && strings.HasPrefix(lines[i+1], "launch = ") {
			lines[i+1] = "launch = " + quote(launch)
			Expect(os.WriteFile(iw.ThatchConfig, []byte(strings.Join(lines, "\n")), 0o644)).To(Succeed())
			return
		}
	}
	Fail("the config has no launch line for " + agent)
}

// realAgent sets the world up for the real agent: its fake model API,
// its configuration under HOME, its environment. It returns its launch
// and resume command lines.
func (iw *IMWorld) realAgent(agent string) (launch, resume string) {
	GinkgoHelper()
	// A short TMPDIR of the world's own: claude makes sockets there
	// (their paths are limited to about 108 bytes).
	tmp := filepath.Join(iw.Root, "tmp")
	Expect(os.MkdirAll(tmp, 0o700)).To(Succeed())
	iw.Env = append(iw.Env, "TMPDIR="+tmp)
	switch agent {
	case "claude":
		Expect(bins.Claude).NotTo(BeEmpty(), "the real claude is not installed: %s", bins.AgentsErr)
		iw.Claude = fakeanthropic.New()
		DeferCleanup(iw.Claude.Close)
		Expect(fakeanthropic.PrepareHome(iw.Home, fakeanthropic.APIKey, iw.Projects)).To(Succeed())
		iw.Env = append(iw.Env, iw.Claude.Env("")...)
		return bins.Claude, bins.Claude + " -r {session_id}"
	case "codex":
		Expect(bins.Codex).NotTo(BeEmpty(), "the real codex is not installed: %s", bins.AgentsErr)
		iw.Codex = fakeresponses.New()
		DeferCleanup(iw.Codex.Close)
		Expect(fakeresponses.PrepareHome(iw.Home, iw.Codex.URL(), iw.Projects)).To(Succeed())
		iw.Env = append(iw.Env, fakeresponses.EnvKey+"=fake-key")
		DeferCleanup(iw.stopCodexDaemon)
		return bins.Codex, bins.Codex + " resume {session_id}"
	}
	Fail("no real agent " + agent)
	return "", ""
}

// stopCodexDaemon ends the app-server daemon codex starts under the
// world's HOME, which outlives the TUI (and the tmux server).
func (iw *IMWorld) stopCodexDaemon() {
	for _, name := range []string{"daemon.pid", "daemon-updater.pid"} {
		b, err := os.ReadFile(filepath.Join(iw.Home, ".codex", "app-server-daemon", name))
		if err != nil {
			continue
		}
		var rec struct {
			PID int `json:"pid"`
		}
		if json.Unmarshal(b, &rec) != nil || rec.PID <= 0 {
			continue
		}
		// Only a process that runs from the world's HOME is ours.
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", rec.PID))
		if err == nil && strings.HasPrefix(exe, iw.Home+"/") {
			_ = syscall.Kill(rec.PID, syscall.SIGTERM)
		}
	}
}

// Tmux runs tmux on the world's socket.
func (iw *IMWorld) Tmux(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-L", iw.Socket}, args...)...)
	cmd.Env = iw.Env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Window is a tmux window of the world's server.
type Window struct{ ID, Name, Tag string }

// Windows lists the windows of every session on the world's server.
func (iw *IMWorld) Windows() []Window {
	out, err := iw.Tmux("list-windows", "-a", "-F", "#{window_id}\t#{window_name}\t#{@thatch_tag}")
	if err != nil {
		return nil // no server
	}
	var ws []Window
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Split(line, "\t"); len(f) == 3 {
			ws = append(ws, Window{f[0], f[1], f[2]})
		}
	}
	return ws
}

// Tagged lists the windows thatch made (they carry a tag).
func (iw *IMWorld) Tagged() []Window {
	var out []Window
	for _, w := range iw.Windows() {
		if w.Tag != "" {
			out = append(out, w)
		}
	}
	return out
}

// Said returns a poll of the texts the bot sent to a thread, as the user
// reads them (HTML tags dropped, entities decoded).
func (iw *IMWorld) Said(thread int64) func() []string {
	return func() []string {
		var out []string
		for _, s := range iw.TG.Messages(imChat, thread) {
			out = append(out, visible(s))
		}
		return out
	}
}

var htmlTag = regexp.MustCompile(`<[^>]*>`)

// visible is the text a Telegram client shows for a sent message.
func visible(s faketelegram.Sent) string {
	if s.ParseMode != "HTML" {
		return s.Text
	}
	return html.UnescapeString(htmlTag.ReplaceAllString(s.Text, ""))
}

// Prompt waits for the newest message of the thread whose text contains
// want and has buttons, and returns it.
func (iw *IMWorld) Prompt(thread int64, want string) faketelegram.Sent {
	GinkgoHelper()
	return iw.PromptFrom(thread, 0, want)
}

// PromptFrom is Prompt among the thread's messages from the from-th on.
func (iw *IMWorld) PromptFrom(thread int64, from int, want string) faketelegram.Sent {
	GinkgoHelper()
	var found faketelegram.Sent
	Eventually(func() bool {
		msgs := iw.TG.Messages(imChat, thread)
		for i := len(msgs) - 1; i >= from; i-- {
			if len(msgs[i].Buttons) > 0 && strings.Contains(msgs[i].Text, want) {
				found = msgs[i]
				return true
			}
		}
		return false
	}).Should(BeTrue(), func() string {
		return fmt.Sprintf("no prompt %q in thread %d; the bot said %q", want, thread, iw.Said(thread)())
	})
	return found
}

// Press presses the button of prompt m whose label contains label.
func (iw *IMWorld) Press(thread int64, user int64, m faketelegram.Sent, label string) {
	for _, row := range m.Buttons {
		for _, b := range row {
			if strings.Contains(b.Text, label) {
				iw.TG.Press(imChat, thread, user, m.MessageID, b.Data)
				return
			}
		}
	}
	Fail(fmt.Sprintf("prompt %q has no button %q: %v", m.Text, label, m.Buttons))
}

// BeginSetup makes a topic named name, sends first in it (which starts
// the setup) and picks agent; the directory browser comes next.
func (iw *IMWorld) BeginSetup(name, agent, first string) int64 {
	GinkgoHelper()
	thread := iw.TG.CreateTopic(imChat, name)
	iw.TG.Message(imChat, thread, imUser, first)
	iw.Press(thread, imUser, iw.Prompt(thread, "Which agent"), agent)
	return thread
}

// Setup runs the setup flow of a new topic named name: agent, directory
// (a project under Projects), a new session. It returns the topic's thread.
func (iw *IMWorld) Setup(name, agent, project, first string) int64 {
	thread := iw.BeginSetup(name, agent, first)
	iw.Press(thread, imUser, iw.Prompt(thread, "Working directory: "+iw.Projects), project)
	iw.Press(thread, imUser, iw.Prompt(thread, "Working directory: "+filepath.Join(iw.Projects, project)), "Use this directory")
	if agent == "claude" || agent == "codex" || agent == "copilot" {
		// Offered only when the agent has sessions there already. The
		// failure's text is a func, so that it tells what the bot had said
		// when the wait gave up, not when it began.
		Eventually(func() bool {
			said := iw.Said(thread)()
			return len(said) > 0 && (said[len(said)-1] == "Session ready!" || strings.Contains(said[len(said)-1], "Resume one?"))
		}).Should(BeTrue(), func() string { return fmt.Sprintf("the bot said %q", iw.Said(thread)()) })
		if said := iw.Said(thread)(); strings.Contains(said[len(said)-1], "Resume one?") {
			iw.Press(thread, imUser, iw.Prompt(thread, "Resume one?"), "New")
		}
	}
	Eventually(iw.Said(thread)).Should(ContainElement("Session ready!"))
	return thread
}

// UserLines returns a poll of the user messages agent's transcripts under
// HOME hold, in order, over every session (the fake agents write one JSON
// object per line; user lines carry the text under a known key).
func (iw *IMWorld) UserLines(agent string) func() []string {
	return func() []string {
		var files []string
		switch agent {
		case "claude":
			files, _ = filepath.Glob(filepath.Join(iw.Home, ".claude", "projects", "*", "*.jsonl"))
		case "codex":
			files, _ = filepath.Glob(filepath.Join(iw.Home, ".codex", "sessions", "*", "*", "*", "*.jsonl"))
		case "copilot":
			files, _ = filepath.Glob(filepath.Join(iw.Home, ".copilot", "session-state", "*", "events.jsonl"))
		}
		var out []string
		for _, f := range files {
			out = append(out, userTexts(f)...)
		}
		return out
	}
}

// userTexts reads the user messages of one fake transcript.
func userTexts(file string) []string {
	fh, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer fh.Close()
	var out []string
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var line struct {
			Type    string `json:"type"`
			Message struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
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

// EarlierSession runs the fake agent once in project with prompt, as a
// session the user had before thatch, and returns the project's path.
func (iw *IMWorld) EarlierSession(agent, project, prompt string) string {
	GinkgoHelper()
	dir := filepath.Join(iw.Projects, project)
	cmd := exec.Command(filepath.Join(iw.Root, "bin", agent))
	cmd.Dir, cmd.Env, cmd.Stdin = dir, iw.Env, strings.NewReader(prompt+"\n")
	Expect(cmd.Run()).To(Succeed())
	return dir
}

// Settled polls until the daemon's status shows the thread's binding
// with nothing queued for the agent and nothing unsent to the chat.
// Status inspects a binding only once what it handled is journaled, so a
// kill after this cannot make the daemon send or type anything again
// (what a crash between a send and its journal does, by design).
func (iw *IMWorld) Settled(d *Daemon, thread int64) {
	GinkgoHelper()
	SettledKey(d, fmt.Sprintf("tg:%d:%d", imChat, thread))
}

// SettledKey is Settled for the binding of any thread key ("tg:...",
// "fs:...").
func SettledKey(d *Daemon, key string) {
	GinkgoHelper()
	Eventually(func() (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var st struct {
			FrontEnds struct {
				IM struct {
					Entities []struct {
						Thread string `json:"thread"`
						Queued int    `json:"queued"`
						Unsent int    `json:"unsent"`
					} `json:"entities"`
				} `json:"im"`
			} `json:"frontEnds"`
		}
		if err := d.Client().Do(ctx, "GET", "/v1/status", nil, &st); err != nil {
			return "", err
		}
		for _, b := range st.FrontEnds.IM.Entities {
			if b.Thread == key {
				return fmt.Sprintf("queued %d unsent %d", b.Queued, b.Unsent), nil
			}
		}
		return "no binding " + key, nil
	}).Should(Equal("queued 0 unsent 0"))
}

// BindingSession returns the agent session the daemon's status shows for
// the thread's binding.
func (iw *IMWorld) BindingSession(d *Daemon, thread int64) string {
	GinkgoHelper()
	key := fmt.Sprintf("tg:%d:%d", imChat, thread)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var st struct {
		FrontEnds struct {
			IM struct {
				Entities []struct {
					Thread  string `json:"thread"`
					Session string `json:"session"`
				} `json:"entities"`
			} `json:"im"`
		} `json:"frontEnds"`
	}
	Expect(d.Client().Do(ctx, "GET", "/v1/status", nil, &st)).To(Succeed())
	for _, b := range st.FrontEnds.IM.Entities {
		if b.Thread == key {
			return b.Session
		}
	}
	return ""
}

// StatusTable runs `thatch status` (the table a person reads) and returns it.
func (iw *IMWorld) StatusTable() string {
	cmd := exec.Command(bins.Thatch, "status", "--config", iw.ThatchConfig)
	cmd.Env = iw.Env
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "thatch status: %s", out)
	return string(out)
}

// Echoes returns the fake agents' replies ("echo: ...") the thread got, in
// order.
func (iw *IMWorld) Echoes(thread int64) []string { return echoes(iw.Said(thread)()) }

// echoes keeps the fake agents' replies ("echo: ...") of what a chat
// shows, in order.
func echoes(said []string) []string {
	var out []string
	for _, s := range said {
		if strings.HasPrefix(s, "echo: ") {
			out = append(out, s)
		}
	}
	return out
}

// AgentPID returns the pid of the process named name (its kernel name)
// that runs in window win: the pane's program or one of its descendants.
func (iw *IMWorld) AgentPID(win, name string) int {
	GinkgoHelper()
	var pid int
	Eventually(func() bool {
		out, err := iw.Tmux("display-message", "-p", "-t", win, "#{pane_pid}")
		if err != nil {
			return false
		}
		root, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			return false
		}
		pid = findProc(root, name)
		return pid != 0
	}).Should(BeTrue(), "no %s in window %s", name, win)
	return pid
}

// paneProcesses lists the processes running in the world's panes, each
// pane's program and everything under it.
func (iw *IMWorld) paneProcesses() []int {
	out, err := iw.Tmux("list-panes", "-a", "-F", "#{pane_pid}")
	if err != nil {
		return nil
	}
	var all []int
	for _, f := range strings.Fields(out) {
		if root, err := strconv.Atoi(f); err == nil {
			all = append(all, descendants(root)...)
		}
	}
	return all
}

// descendants is root and every process under it, breadth first.
func descendants(root int) []int {
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		out = append(out, pid)
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		for _, t := range tasks {
			b, _ := os.ReadFile(t)
			for _, f := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(f); err == nil {
					queue = append(queue, n)
				}
			}
		}
	}
	return out
}

// procStat is a process's state letter and start time (in clock ticks
// since boot, which tells it from a later process given the same pid); ok
// is false when it does not run.
func procStat(pid int) (state byte, start string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", false
	}
	// The fields after the command's closing parenthesis: state is the
	// first (field 3), starttime the twentieth (field 22).
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, "", false
	}
	return f[0][0], f[19], true
}

// waitGone waits until none of pids runs (a zombie has ended), SIGKILLs
// those that still do after limit (they are the world's own agents and
// tmux server: a pid that a new process took meanwhile is left alone), and
// gives up limit later still.
func waitGone(pids []int, limit time.Duration) {
	starts := map[int]string{}
	for _, pid := range pids {
		if _, start, ok := procStat(pid); ok {
			starts[pid] = start
		}
	}
	alive := func() []int {
		var left []int
		for pid, was := range starts {
			if state, start, ok := procStat(pid); ok && start == was && state != 'Z' {
				left = append(left, pid)
			}
		}
		return left
	}
	killed := false
	deadline := time.Now().Add(limit)
	for left := alive(); len(left) > 0; left = alive() {
		if time.Now().After(deadline) {
			if killed {
				GinkgoWriter.Printf("processes %v outlived the world's tmux server and a SIGKILL\n", left)
				return
			}
			GinkgoWriter.Printf("processes %v still run %v after kill-server; killed\n", left, limit)
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			killed, deadline = true, time.Now().Add(limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// findProc finds, breadth first from root, a process whose kernel name is
// name (0 when none).
func findProc(root int, name string) int {
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(comm)) == name {
			return pid
		}
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		for _, t := range tasks {
			b, _ := os.ReadFile(t)
			for _, f := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(f); err == nil {
					queue = append(queue, n)
				}
			}
		}
	}
	return 0
}
