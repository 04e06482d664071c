package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/fakeanthropic"
	"github.com/thatch-run/thatch/e2e/fakeresponses"
	"github.com/thatch-run/thatch/e2e/faketelegram"
	"github.com/thatch-run/thatch/im/screenshot"
)

// The IM front end with the real Claude Code and codex CLIs in its tmux
// windows, their models played by scripted local fakes that answer
// "echo: <what the user typed>". These prove that thatch drives the real
// agents (finds their sessions, types so that the text lands, follows
// them across restarts and session changes), not anything about a model.
var _ = Describe("IM front end with the real agents", Label("im", "real-agents"), func() {
	var iw *IMWorld
	var d *Daemon

	// count is how many times the thread was told text.
	count := func(thread int64, text string) func() int {
		return func() int {
			n := 0
			for _, s := range iw.Said(thread)() {
				if s == text {
					n++
				}
			}
			return n
		}
	}

	It("claude: sets up with no hook in the user's settings, relays replies, and keeps control characters and secrets away", func() {
		iw = NewRealIMWorld("claude")
		iw.Env = append(iw.Env, "THATCH_IM_TELEGRAM_TOKEN="+imToken)
		d = StartDaemon(iw.World)
		thread := iw.Setup("real claude", "claude", "api", "hello claude")

		By("the message that started the setup reached claude, and its answer came back")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: hello claude"))
		Expect(filepath.Join(iw.Home, ".claude", "settings.json")).NotTo(BeAnExistingFile(), "no hook was installed in the user's settings")
		Expect(iw.Said(thread)()).NotTo(ContainElement(ContainSubstring("has not found")))

		By("a second message")
		iw.TG.Message(imChat, thread, imUser, "and a second one")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: and a second one"))

		By("^D and ^C are not typed: claude gets the text and stays; no shell runs the rest")
		marker := filepath.Join(iw.Root, "pwned")
		iw.TG.Message(imChat, thread, imUser, "\x04\x04touch "+marker)
		iw.TG.Message(imChat, thread, imUser, "\x03\x03still here")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: still here"))
		Expect(iw.Said(thread)()).To(ContainElement("echo: touch " + marker))
		Expect(marker).NotTo(BeAnExistingFile())
		Expect(iw.Claude.UserTexts()).To(Equal([]string{"hello claude", "and a second one", "touch " + marker, "still here"}),
			"each message reached the model once, in order")

		By("the bot token is in neither the tmux server's environment nor claude's")
		out, err := iw.Tmux("show-environment", "-g")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).NotTo(ContainSubstring(imToken))
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", iw.AgentPID(iw.Tagged()[0].ID, "claude")))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(env)).To(ContainSubstring("ANTHROPIC_BASE_URL="), "claude's own environment was read")
		Expect(string(env)).NotTo(ContainSubstring(imToken))
	})

	It("claude: shows a turn of tools as one live message and its answer once, answers /usage as the model reported it, and sends no key to the chat", func() {
		iw = NewRealIMWorld("claude")
		d = StartDaemon(iw.World)
		key := "ghp_" + strings.Repeat("Ab1", 12)
		// Read needs no permission in the project (claude 2.1.328 has no
		// Glob in this session).
		web := filepath.Join(iw.Projects, "web")
		for name, text := range map[string]string{"README.md": "# web\n", "package.json": "{}\n"} {
			Expect(os.WriteFile(filepath.Join(web, name), []byte(text), 0o644)).To(Succeed())
		}
		read := func(name string) *fakeanthropic.ToolUse {
			return &fakeanthropic.ToolUse{Name: "Read", Input: map[string]any{"file_path": filepath.Join(web, name)}}
		}
		iw.Claude.On(fakeanthropic.UserSays("LOOKAROUND"), fakeanthropic.Reply{Text: "Looking around.", Tool: read("README.md"),
			Then: &fakeanthropic.Reply{Tool: read("package.json"),
				Then: &fakeanthropic.Reply{Text: "Found them. The deploy key is " + key, Delay: 2 * time.Second}}})
		thread := iw.Setup("live", "claude", "web", "hello")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: hello"))

		iw.TG.Message(imChat, thread, imUser, "LOOKAROUND please")
		answer := "Found them. The deploy key is [redacted:github_token]"
		Eventually(iw.Said(thread)).Should(ContainElement(answer))
		live := iw.liveTurn(thread, "✓ 2 tool calls")
		Expect(live[0].Text).To(HavePrefix("▸ Read: " + filepath.Join(web, "README.md")))
		Expect(count(thread, answer)()).To(Equal(1), "the answer is sent once")
		Expect(len(live)).To(BeNumerically(">=", 2))
		drawTurn(artifacts("live-turn"), "LOOKAROUND please", live[len(live)-2].Text, answer, live[len(live)-1].Text)

		By("/usage says what the model reported for the session's messages")
		files := iw.sessionFiles("web")
		Expect(files).To(HaveLen(1))
		ids := map[string]bool{}
		raw, err := os.ReadFile(files[0])
		Expect(err).NotTo(HaveOccurred())
		for _, line := range strings.Split(string(raw), "\n") {
			var l struct {
				Type    string `json:"type"`
				Message *struct {
					ID string `json:"id"`
				} `json:"message"`
			}
			if json.Unmarshal([]byte(line), &l) == nil && l.Type == "assistant" && l.Message != nil {
				ids[l.Message.ID] = true
			}
		}
		in, out := 0, 0
		for id, u := range iw.Claude.Reported() {
			if ids[id] {
				in, out = in+u.Input, out+u.Output
			}
		}
		Expect(ids).To(HaveLen(4), "hello's answer, two tool calls and the answer")
		iw.TG.Message(imChat, thread, imUser, "/usage")
		Eventually(iw.Said(thread)).Should(ContainElement(HavePrefix(fmt.Sprintf("claude's session (%s), from its transcript:\ntokens in %s · out %s ·",
			iw.Claude.Requests()[len(iw.Claude.Requests())-1].Model, thousands(in), thousands(out)))))

		By("no request to the Bot API held the key")
		for _, r := range iw.TG.Requests() {
			Expect(r).NotTo(ContainSubstring(key))
		}
	})

	It("claude: /mode switches its permission mode until its footer shows it, and offers its modes as buttons", func() {
		iw = NewRealIMWorld("claude")
		d = StartDaemon(iw.World)
		thread := iw.Setup("modes", "claude", "docs", "hello")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: hello"))
		footer := func() string {
			out, _ := iw.Tmux("capture-pane", "-p", "-t", iw.Tagged()[0].ID)
			return out
		}

		iw.TG.Message(imChat, thread, imUser, "/mode plan")
		Eventually(iw.Said(thread)).Should(ContainElement("claude is in plan mode now."))
		Expect(footer()).To(ContainSubstring("plan mode on"))

		iw.TG.Message(imChat, thread, imUser, "/mode")
		m := iw.Prompt(thread, "Which permission mode should claude run in?")
		iw.Press(thread, imUser, m, "accept-edits")
		Eventually(iw.Said(thread)).Should(ContainElement("claude is in accept-edits mode now."))
		Expect(footer()).To(ContainSubstring("accept edits on"))

		iw.TG.Message(imChat, thread, imUser, "/mode yolo")
		Eventually(iw.Said(thread)).Should(ContainElement(HavePrefix("claude's modes are manual, accept-edits, plan, auto")))
		Expect(iw.Claude.UserTexts()).To(Equal([]string{"hello"}), "nothing of /mode was typed as a message")

		By("/usage offers claude's own dialog, whose picture comes to the chat; the dialog is closed again")
		iw.TG.Message(imChat, thread, imUser, "/usage")
		usage := iw.Prompt(thread, "claude's session (")
		Expect(labels(usage)).To(Equal([]string{"Claude's plan limits"}))
		iw.Press(thread, imUser, usage, "Claude's plan limits")
		shot := iw.photo(thread, 1)
		Expect(shot.Text).To(HavePrefix("claude's /usage at "), "the caption")
		_, err := png.Decode(bytes.NewReader(shot.Photo))
		Expect(err).NotTo(HaveOccurred(), "the picture decodes as a PNG")
		Expect(os.WriteFile(filepath.Join(artifacts("usage"), "usage.png"), shot.Photo, 0o644)).To(Succeed())
		iw.TG.Message(imChat, thread, imUser, "after usage")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: after usage"), "claude is back at its input line")
		Expect(iw.Claude.UserTexts()).To(Equal([]string{"hello", "after usage"}), "/usage ran as claude's command, not as a message")
	})

	It("claude: survives a SIGKILL of the daemon, and Recover after its window was killed types the queued message so that it is sent", func() {
		iw = NewRealIMWorld("claude")
		d = StartDaemon(iw.World)
		thread := iw.Setup("kill me", "claude", "web", "first")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: first"))
		iw.Settled(d, thread)

		By("a SIGKILL of the daemon and a restart")
		d.Kill()
		d = StartDaemon(iw.World)
		iw.TG.Message(imChat, thread, imUser, "after the restart")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: after the restart"))

		By("the window is killed; Recover resumes the session in a new one and the queued message is sent, not left in the input box")
		_, err := iw.Tmux("kill-window", "-t", iw.Tagged()[0].ID)
		Expect(err).NotTo(HaveOccurred())
		iw.TG.Message(imChat, thread, imUser, "are you back")
		iw.Press(thread, imUser, iw.Prompt(thread, "window of this session is gone"), "Recover")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: are you back"))
		Expect(iw.Claude.UserTexts()).To(Equal([]string{"first", "after the restart", "are you back"}))
		sessions := map[string]bool{}
		for _, r := range iw.Claude.UserTurns() {
			sessions[r.SessionID] = true
		}
		Expect(sessions).To(HaveLen(1), "one session throughout: the recovered window resumed it")
		Expect(count(thread, "echo: first")()).To(Equal(1), "nothing relayed twice")
		Expect(count(thread, "echo: after the restart")()).To(Equal(1))
	})

	It("claude: follows the new session after /clear, across a SIGKILL too", func() {
		iw = NewRealIMWorld("claude")
		d = StartDaemon(iw.World)
		thread := iw.Setup("clear", "claude", "docs", "before")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: before"))

		By("/clear starts a new session; the next reply comes from its transcript")
		iw.TG.Message(imChat, thread, imUser, "/clear")
		iw.TG.Message(imChat, thread, imUser, "after clear")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: after clear"))
		turns := iw.Claude.UserTurns()
		Expect(turns).To(HaveLen(2))
		Expect(turns[1].SessionID).NotTo(Equal(turns[0].SessionID), "claude runs a new session")
		iw.Settled(d, thread)
		Expect(iw.BindingSession(d, thread)).To(Equal(turns[1].SessionID), "the binding follows the new session")

		By("a SIGKILL right after another /clear: the restarted daemon follows the newest session")
		iw.TG.Message(imChat, thread, imUser, "/clear")
		Eventually(func() int { return len(iw.sessionFiles("docs")) }).Should(Equal(3))
		d.Kill()
		d = StartDaemon(iw.World)
		iw.TG.Message(imChat, thread, imUser, "after the second clear")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: after the second clear"))
		Expect(count(thread, "echo: after clear")()).To(Equal(1), "no reply relayed twice")
		Expect(count(thread, "echo: before")()).To(Equal(1))
	})

	It("codex: sets up, relays replies, and resumes its session after the window was killed", func() {
		iw = NewRealIMWorld("codex")
		d = StartDaemon(iw.World)
		thread := iw.Setup("real codex", "codex", "api", "hello codex")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: hello codex"))
		iw.TG.Message(imChat, thread, imUser, "second")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: second"))

		_, err := iw.Tmux("kill-window", "-t", iw.Tagged()[0].ID)
		Expect(err).NotTo(HaveOccurred())
		iw.TG.Message(imChat, thread, imUser, "still there")
		iw.Press(thread, imUser, iw.Prompt(thread, "window of this session is gone"), "Recover")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: still there"))
		Expect(iw.Codex.UserTurns()).To(Equal([]string{"hello codex", "second", "still there"}))
		sessions := map[string]bool{}
		for _, r := range iw.Codex.Requests() {
			if r.Kind == fakeresponses.KindTurn && r.SessionID != "" {
				sessions[r.SessionID] = true
			}
		}
		Expect(sessions).To(HaveLen(1), "the recovered window resumed the same session")
		Expect(count(thread, "echo: hello codex")()).To(Equal(1))
	})

	It("codex: shows a turn of shell calls as one live message and its answer once, answers /usage as the model reported it, and sends no key to the chat", func() {
		iw = NewRealIMWorld("codex")
		d = StartDaemon(iw.World)
		key := "ghp_" + strings.Repeat("Cd2", 12)
		web := filepath.Join(iw.Projects, "web")
		for name, text := range map[string]string{"README.md": "# web\n", "package.json": "{}\n"} {
			Expect(os.WriteFile(filepath.Join(web, name), []byte(text), 0o644)).To(Succeed())
		}
		// cat is a command codex knows to be safe: it runs it unasked.
		iw.Codex.On(fakeresponses.Rule{Name: "look", Match: fakeresponses.UserContains("LOOKAROUND"), Steps: []fakeresponses.Step{
			{Text: "Looking around.", Calls: []fakeresponses.Call{fakeresponses.Shell("cat " + filepath.Join(web, "README.md"))}},
			{Calls: []fakeresponses.Call{fakeresponses.Shell("cat " + filepath.Join(web, "package.json"))}},
			{Text: "Found them. The deploy key is " + key, Delay: 2 * time.Second},
		}})
		thread := iw.Setup("live codex", "codex", "web", "hello")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: hello"))

		iw.TG.Message(imChat, thread, imUser, "LOOKAROUND please")
		answer := "Found them. The deploy key is [redacted:github_token]"
		Eventually(iw.Said(thread)).Should(ContainElement(answer))
		live := iw.liveTurn(thread, "✓ 2 tool calls")
		Expect(live[0].Text).To(ContainSubstring("cat " + filepath.Join(web, "README.md")))
		Expect(count(thread, answer)()).To(Equal(1), "the answer is sent once")

		By("/usage says what the model reported: 10 tokens in and 5 out for each of the session's requests")
		turns := 0
		for _, r := range iw.Codex.Requests() {
			if r.Kind == fakeresponses.KindTurn {
				turns++
			}
		}
		Expect(turns).To(Equal(4), "hello's answer, two shell calls and the answer")
		iw.TG.Message(imChat, thread, imUser, "/usage")
		Eventually(iw.Said(thread)).Should(ContainElement(HavePrefix(fmt.Sprintf("codex's session (%s), from its transcript:\ntokens in %d · out %d ·",
			fakeresponses.Model, 10*turns, 5*turns))))

		By("no request to the Bot API held the key")
		for _, r := range iw.TG.Requests() {
			Expect(r).NotTo(ContainSubstring(key))
		}
	})

	It("codex: Update Binding follows the real codex a user started in a claude thread's window", func() {
		iw = NewRealIMWorld("codex")
		d = StartDaemon(iw.World)
		thread := iw.Setup("switch", "claude", "web", "hi") // the fake claude
		Eventually(iw.Said(thread)).Should(ContainElement("echo: hi"))

		By("the user replaces claude by codex in the window, by hand")
		win := iw.Tagged()[0].ID
		_, err := iw.Tmux("respawn-pane", "-k", "-t", win, bins.Codex)
		Expect(err).NotTo(HaveOccurred())
		iw.AgentPID(win, "codex")
		iw.TG.Message(imChat, thread, imUser, "who runs here")
		iw.Press(thread, imUser, iw.Prompt(thread, "but codex runs in its window"), "Update Binding")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: who runs here"), "typed into codex, and codex's reply relayed")
		Expect(iw.Codex.UserTurns()).To(Equal([]string{"who runs here"}))
	})
})

// sessionFiles lists claude's transcripts for a project under Projects.
func (iw *IMWorld) sessionFiles(project string) []string {
	dir := strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, filepath.Join(iw.Projects, project))
	files, _ := filepath.Glob(filepath.Join(iw.Home, ".claude", "projects", dir, "*.jsonl"))
	return files
}

// liveTurn waits for the thread's live message to end as summary, checks
// that it was one message, sent silently and then only edited, and
// returns its requests in order.
func (iw *IMWorld) liveTurn(thread int64, summary string) []faketelegram.Sent {
	GinkgoHelper()
	var live []faketelegram.Sent
	Eventually(func() string {
		live = live[:0]
		for _, s := range iw.TG.Sent() {
			if s.ThreadID == thread && (strings.Contains(s.Text, "▸ ") || strings.HasPrefix(s.Text, summary)) {
				live = append(live, s)
			}
		}
		if len(live) == 0 {
			return ""
		}
		return live[len(live)-1].Text
	}).Should(HavePrefix(summary), "the live message ends as the turn's summary")
	Expect(live[0].Method).To(Equal("sendMessage"))
	Expect(live[0].Silent).To(BeTrue(), "the live message does not notify")
	for _, s := range live[1:] {
		Expect(s.Method).To(Equal("editMessageText"), "the turn is one message, edited")
		Expect(s.MessageID).To(Equal(live[0].MessageID))
	}
	return live
}

// thousands writes n as /usage does: a comma between groups of three.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// drawTurn draws a turn as the thread showed it (the user's message, the
// live message's last state before the turn ended, the answer, and the
// summary the live message shrank to) with thatch's pane renderer, into
// dir/live-turn.png: the picture in the README comes from here.
func drawTurn(dir, typed, working, answer, summary string) {
	GinkgoHelper()
	const (
		who   = "\x1b[1;36m"
		bot   = "\x1b[1;33m"
		dim   = "\x1b[2m"
		plain = "\x1b[0m"
	)
	lines := []string{who + "you" + plain + "  " + typed, "", bot + "thatch" + plain + dim + "  one message, edited silently while claude works:" + plain}
	for _, l := range strings.Split(working, "\n") {
		lines = append(lines, "  "+l)
	}
	lines = append(lines, "", bot+"thatch"+plain+dim+"  the answer, the turn's one notification:"+plain, "  "+answer, "",
		dim+"and the live message once the turn ended:"+plain, "  "+summary)
	cols := 0
	for _, l := range strings.Split(working+"\n"+answer, "\n") {
		cols = max(cols, len([]rune(l))+4)
	}
	png, err := screenshot.PNG([]byte(strings.Join(lines, "\r\n")), screenshot.Options{Cols: max(cols, 60), Rows: len(lines) + 1})
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, "live-turn.png"), png, 0o644)).To(Succeed())
}
