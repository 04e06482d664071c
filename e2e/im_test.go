package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/faketelegram"
)

// The IM front end against a fake Bot API, the real tmux on a private
// socket, and fake agent CLIs that write each agent's transcript format.
// These prove the protocol (routes, flows, delivery), not any agent.
var _ = Describe("IM front end", Label("im"), func() {
	var iw *IMWorld
	var d *Daemon

	start := func(extra ...string) {
		iw = NewIMWorld(extra...)
		d = StartDaemon(iw.World)
	}

	It("sets a topic up, types its first message into the agent, and relays the reply", func() {
		start()
		thread := iw.Setup("api work", "claude", "api", "hello there")

		By("one window, named after the topic, in the chosen directory")
		Eventually(iw.Tagged).Should(HaveLen(1))
		Expect(iw.Tagged()[0].Name).To(Equal("api work"))

		By("the message that started the setup reached the agent, and its reply came back")
		Eventually(iw.UserLines("claude")).Should(Equal([]string{"hello there"}))
		Eventually(iw.Said(thread)).Should(ContainElement("echo: hello there"))

		By("the next message goes straight through")
		iw.TG.Message(imChat, thread, imUser, "second")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: second"))
		Expect(iw.UserLines("claude")()).To(Equal([]string{"hello there", "second"}))

		By("thatch status lists the binding")
		Expect(iw.StatusTable()).To(MatchRegexp(`tg:-1001234:%d\s+api work\s+claude\s+@\d+\s+bound`, thread))

		By("the agent inherited the window's tag and the hook file from the window, for thatch hook claude")
		iw.TG.Message(imChat, thread, imUser, "env THATCH_IM_WINDOW")
		iw.TG.Message(imChat, thread, imUser, "env THATCH_IM_HOOK_FILE")
		Eventually(iw.Said(thread)).Should(ContainElement("env THATCH_IM_WINDOW=" + iw.Tagged()[0].Tag))
		Eventually(iw.Said(thread)).Should(ContainElement("env THATCH_IM_HOOK_FILE=" + filepath.Join(iw.DataDir, "im", "claude-sessions.json")))
	})

	It("types text into the agent literally: nothing reaches a shell", func() {
		start()
		marker := filepath.Join(iw.Root, "pwned")
		thread := iw.Setup("literal", "claude", "web", "hi")
		text := "$(touch " + marker + "); `touch " + marker + "` #{window_name} 'q' \"d\" \\"
		iw.TG.Message(imChat, thread, imUser, text)
		Eventually(iw.UserLines("claude")).Should(ContainElement(text), "the agent got the text as typed")
		Eventually(iw.Said(thread)).Should(ContainElement(ContainSubstring("#{window_name} 'q' \"d\" \\")))
		Expect(marker).NotTo(BeAnExistingFile())

		By("a multi-line message arrives as one message")
		iw.TG.Message(imChat, thread, imUser, "line one\nline two\nline three")
		Eventually(iw.UserLines("claude")).Should(ContainElement("line one\nline two\nline three"))
	})

	It("keeps control characters out of what is typed: a ^D or ^C reaches no agent and no shell", func() {
		start()
		marker := filepath.Join(iw.Root, "pwned")
		thread := iw.Setup("controls", "claude", "web", "hi")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: hi"))
		iw.TG.Message(imChat, thread, imUser, "\x04touch "+marker)
		iw.TG.Message(imChat, thread, imUser, "\x03still \x1b[31mhere\x7f")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: still [31mhere"), "the agent got both, without their control characters, and is still running")
		Expect(iw.UserLines("claude")()).To(Equal([]string{"hi", "touch " + marker, "still [31mhere"}))
		Expect(marker).NotTo(BeAnExistingFile())
	})

	It("types nothing to an agent that exited or was stopped, and Recover starts it again in its window", func() {
		start()
		thread := iw.Setup("exits", "claude", "web", "hi")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: hi"))
		win := iw.Tagged()[0].ID

		By("the agent exits: its pane stays, dead, with no shell to type into")
		iw.TG.Message(imChat, thread, imUser, "exit")
		Eventually(func() string { out, _ := iw.Tmux("display-message", "-p", "-t", win, "#{pane_dead}"); return out }).Should(Equal("1\n"))
		iw.TG.Message(imChat, thread, imUser, "are you there")
		iw.Press(thread, imUser, iw.Prompt(thread, "The agent is no longer running in its window"), "Recover")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: are you there"))
		Expect(iw.UserLines("claude")()).To(Equal([]string{"hi", "are you there"}), "the same session, resumed")
		Expect(iw.Tagged()).To(HaveLen(1))
		Expect(iw.Tagged()[0].ID).To(Equal(win), "in the same window")

		By("the agent is stopped (Ctrl-Z, SIGSTOP): it is not a target either")
		pid := iw.AgentPID(win, "claude")
		Expect(syscall.Kill(pid, syscall.SIGSTOP)).To(Succeed())
		DeferCleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
		iw.TG.Message(imChat, thread, imUser, "wake up")
		Eventually(iw.Said(thread)).Should(ContainElements(ContainSubstring("echo: are you there"), ContainSubstring("no longer running")))
		Eventually(func() int {
			n := 0
			for _, said := range iw.Said(thread)() {
				if strings.Contains(said, "The agent is no longer running in its window") {
					n++
				}
			}
			return n
		}).Should(Equal(2), "asked again, for the stopped agent")
		iw.Press(thread, imUser, iw.Prompt(thread, "The agent is no longer running in its window"), "Recover")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: wake up"))
		Expect(iw.UserLines("claude")()).To(Equal([]string{"hi", "are you there", "wake up"}))
	})

	It("keeps thatch's secrets out of the tmux server and the agents' environment", func() {
		iw = NewIMWorld()
		iw.Env = append(iw.Env, "THATCH_IM_TELEGRAM_TOKEN="+imToken, "MY_BOT_TOKEN="+imToken)
		d = StartDaemon(iw.World)
		thread := iw.Setup("secrets", "claude", "api", "hi")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: hi"))
		out, err := iw.Tmux("show-environment", "-g")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("HOME="), "the server has an environment")
		Expect(out).NotTo(ContainSubstring(imToken))
		iw.TG.Message(imChat, thread, imUser, "env THATCH_IM_TELEGRAM_TOKEN")
		iw.TG.Message(imChat, thread, imUser, "env MY_BOT_TOKEN")
		Eventually(iw.Said(thread)).Should(ContainElement("env MY_BOT_TOKEN="))
		Expect(iw.Said(thread)()).To(ContainElement("env THATCH_IM_TELEGRAM_TOKEN="))
	})

	It("keeps polling through a refused bot token, shows it in thatch status, and answers once the token works again", func() {
		start()
		thread := iw.Setup("token", "claude", "api", "hi")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: hi"))

		iw.TG.Revoke(true)
		status := func() (string, int) {
			cmd := exec.Command(bins.Thatch, "status", "--config", iw.ThatchConfig)
			cmd.Env = iw.Env
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			return string(out), code
		}
		Eventually(func() int { _, code := status(); return code }).Should(Equal(3), "thatch status exits non-zero while the bot is refused")
		out, _ := status()
		Expect(out).To(MatchRegexp(`im\s+DOWN\s+Telegram refuses the bot token.*401`))
		Expect(out).NotTo(ContainSubstring(imToken))

		By("the token works again: the message sent meanwhile is answered")
		iw.TG.Message(imChat, thread, imUser, "are you polling")
		iw.TG.Revoke(false)
		Eventually(iw.Said(thread)).Should(ContainElement("echo: are you polling"))
		Eventually(func() int { _, code := status(); return code }).Should(Equal(0))
	})

	It("makes no binding for a stranger's topics, messages or presses", func() {
		start()
		stranger := int64(7)
		iw.TG.ServiceFrom(stranger)
		var last int64
		for i := range 5 {
			thread := iw.TG.CreateTopic(imChat, fmt.Sprintf("stranger %d", i))
			iw.TG.Message(imChat, thread, stranger, "hello")
			last = iw.TG.Press(imChat, thread, stranger, 1, "1:a:0")
		}
		Eventually(iw.TG.Confirmed).Should(BeNumerically(">=", last), "every update was handled")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var st struct {
			FrontEnds struct {
				IM struct {
					Total int `json:"total"`
				} `json:"im"`
			} `json:"frontEnds"`
		}
		Expect(d.Client().Do(ctx, "GET", "/v1/status", nil, &st)).To(Succeed())
		Expect(st.FrontEnds.IM.Total).To(Equal(0), "no binding was made, none journaled")
		Expect(iw.TG.Messages(imChat, 0)).To(BeEmpty())
	})

	It("ignores users who are not on the allow-list, and their button presses", func() {
		start()
		stranger := int64(7)
		thread := iw.TG.CreateTopic(imChat, "mine")
		iw.TG.Message(imChat, thread, stranger, "let me in")
		iw.TG.Message(imChat, thread, imUser, "hello")
		p := iw.Prompt(thread, "Which agent")
		Expect(iw.Said(thread)()).To(HaveLen(1), "one prompt, for the allowed user only")

		By("a stranger's press only answers the callback")
		iw.Press(thread, stranger, p, "claude")
		iw.Press(thread, imUser, p, "codex")
		Eventually(iw.Said(thread)).Should(ContainElement(ContainSubstring("Working directory:")))
		Expect(iw.StatusTable()).To(MatchRegexp(`tg:-1001234:%d\s+mine\s+codex\s+setup \(dir\)`, thread),
			"the flow took the allowed user's choice, not the stranger's")
		answered := 0
		for _, s := range iw.TG.Sent() {
			if s.Method == "answerCallbackQuery" {
				answered++
			}
		}
		Expect(answered).To(Equal(2), "both presses were answered, so no spinner hangs")
	})

	It("splits a long reply in order, under Telegram's limit, and goes on after a failed part without repeating the parts before it", func() {
		start()
		thread := iw.Setup("long", "claude", "docs", "hi")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: hi"))
		By("the reply's second part fails once: it is sent again after the outbox's retry wait, and the first is not")
		iw.TG.FailAfter(1, 1)
		iw.TG.Message(imChat, thread, imUser, "long 10000")
		// The fake writes numbered lines of 55 bytes: 10,000 bytes end in
		// line 00182.
		parts := func() []string {
			var out []string
			for _, s := range iw.Said(thread)() {
				if strings.HasPrefix(s, "line 0") {
					out = append(out, s)
				}
			}
			return out
		}
		Eventually(func() string {
			p := parts()
			if len(p) == 0 {
				return ""
			}
			return p[len(p)-1]
		}).Should(ContainSubstring("line 00182"))
		got := parts()
		Expect(len(got)).To(BeNumerically(">=", 3))
		next := 1
		for _, part := range got {
			Expect(len([]rune(part))).To(BeNumerically("<=", 4096))
			for _, line := range strings.Split(strings.TrimSpace(part), "\n") {
				Expect(line).To(HavePrefix(fmt.Sprintf("line %05d ", next)), "lines whole and in order")
				next++
			}
		}
		Expect(next).To(Equal(183))
		Expect(iw.TG.Failed()).To(Equal(1), "the second part was refused once")
	})

	It("asks before renaming when the topic was renamed, and renames on Rename", func() {
		start()
		thread := iw.Setup("api", "claude", "api", "hi")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: hi"))
		iw.TG.EditTopic(imChat, thread, "api v2")
		iw.TG.Message(imChat, thread, imUser, "after the rename")
		p := iw.Prompt(thread, "is now called")
		iw.TG.Message(imChat, thread, imUser, "while asked")
		Eventually(iw.StatusTable).Should(MatchRegexp(`prompting, 2 queued`), "both held while the prompt is open")
		Expect(iw.UserLines("claude")()).To(Equal([]string{"hi"}))
		iw.Press(thread, imUser, p, "Rename")
		Eventually(iw.UserLines("claude")).Should(Equal([]string{"hi", "after the rename", "while asked"}))
		Eventually(iw.UserLines("claude")).Should(ContainElement("after the rename"))
		Eventually(func() string { return iw.Tagged()[0].Name }).Should(Equal("api v2"))
	})

	It("asks when another agent runs in the window, and Update Binding follows it", func() {
		start()
		thread := iw.Setup("mixed", "claude", "api", "hi")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: hi"))
		By("the user replaces claude by codex in the window, by hand")
		win := iw.Tagged()[0].ID
		_, err := iw.Tmux("respawn-pane", "-k", "-t", win, filepath.Join(iw.Root, "bin", "codex"))
		Expect(err).NotTo(HaveOccurred())
		iw.AgentPID(win, "codex")
		iw.TG.Message(imChat, thread, imUser, "who runs here")
		p := iw.Prompt(thread, "but codex runs in its window")
		iw.Press(thread, imUser, p, "Update Binding")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: who runs here"), "typed into codex, and codex's reply relayed")
	})

	It("offers Recover when the window is gone, and resumes the same session in a new one", func() {
		start()
		thread := iw.Setup("gone", "claude", "docs", "first")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: first"))
		_, err := iw.Tmux("kill-window", "-t", iw.Tagged()[0].ID)
		Expect(err).NotTo(HaveOccurred())
		iw.TG.Message(imChat, thread, imUser, "still there?")
		iw.Press(thread, imUser, iw.Prompt(thread, "window of this session is gone"), "Recover")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: still there?"))
		Expect(iw.UserLines("claude")()).To(Equal([]string{"first", "still there?"}), "one transcript: the session was resumed")
		Expect(iw.Tagged()).To(HaveLen(1))
	})

	It("recovers after the whole tmux server was killed", func() {
		start()
		thread := iw.Setup("server", "claude", "web", "first")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: first"))
		_, err := iw.Tmux("kill-server")
		Expect(err).NotTo(HaveOccurred())
		iw.TG.Message(imChat, thread, imUser, "after the crash")
		iw.Press(thread, imUser, iw.Prompt(thread, "window of this session is gone"), "Recover")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: after the crash"))
		Expect(iw.UserLines("claude")()).To(Equal([]string{"first", "after the crash"}))
	})

	It("offers the agent's earlier sessions in that directory and resumes the one picked", func() {
		start()
		dir := iw.EarlierSession("claude", "api", "an earlier task")
		thread := iw.BeginSetup("resume", "claude", "continue")
		iw.Press(thread, imUser, iw.Prompt(thread, "Working directory: "+iw.Projects), "api")
		iw.Press(thread, imUser, iw.Prompt(thread, "Working directory: "+dir), "Use this directory")
		iw.Press(thread, imUser, iw.Prompt(thread, "Resume one?"), "an earlier task")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: continue"))
		Expect(iw.UserLines("claude")()).To(Equal([]string{"an earlier task", "continue"}), "the picked session, not a new one")
	})

	It("does not offer a session that another thread is bound to", func() {
		start()
		dir := iw.EarlierSession("claude", "api", "an earlier task")
		first := iw.Setup("first", "claude", "api", "task one") // picks New: the earlier session stays free
		Eventually(iw.Said(first)).Should(ContainElement("echo: task one"))

		second := iw.BeginSetup("second", "claude", "hello")
		iw.Press(second, imUser, iw.Prompt(second, "Working directory: "+iw.Projects), "api")
		iw.Press(second, imUser, iw.Prompt(second, "Working directory: "+dir), "Use this directory")
		picker := iw.Prompt(second, "Resume one?")
		var labels []string
		for _, row := range picker.Buttons {
			for _, b := range row {
				labels = append(labels, b.Text)
			}
		}
		Expect(labels).To(ContainElement(ContainSubstring("an earlier task")))
		Expect(labels).NotTo(ContainElement(ContainSubstring("task one")), "the first thread's session is not offered")
	})

	It("offers zoxide's ranked directories first", func() {
		if _, err := exec.LookPath("zoxide"); err != nil {
			Fail("zoxide is not installed (.ci/run installs it): apt-get install zoxide")
		}
		start()
		add := exec.Command("zoxide", "add", filepath.Join(iw.Projects, "docs", "src"))
		add.Env = iw.Env
		Expect(add.Run()).To(Succeed())
		thread := iw.BeginSetup("jump", "claude", "hi")
		p := iw.Prompt(thread, "Working directory: "+iw.Projects)
		Expect(p.Buttons[0][0].Text).To(ContainSubstring(filepath.Join(iw.Projects, "docs", "src")))
	})

	It("resumes a setup after a SIGKILL and never makes two windows", func() {
		start()
		thread := iw.BeginSetup("crashy", "claude", "survive this")
		iw.Press(thread, imUser, iw.Prompt(thread, "Working directory: "+iw.Projects), "web")
		p := iw.Prompt(thread, "Working directory: "+filepath.Join(iw.Projects, "web"))
		d.Kill()
		d = StartDaemon(iw.World)
		iw.Press(thread, imUser, p, "Use this directory")
		By("killed again once its window exists, before the session is ready")
		Eventually(iw.Tagged).Should(HaveLen(1))
		d.Kill()
		d = StartDaemon(iw.World)
		Eventually(iw.Said(thread)).Should(ContainElement("Session ready!"))
		Eventually(iw.Said(thread)).Should(ContainElement("echo: survive this"))
		Expect(iw.Tagged()).To(HaveLen(1), "the window made before the kill was found by its tag, not made again")
	})

	It("handles no update twice and loses none across SIGKILLs", func() {
		start()
		thread := iw.Setup("steady", "claude", "docs", "m0")
		for i := 1; i <= 3; i++ {
			iw.TG.Message(imChat, thread, imUser, fmt.Sprintf("m%d", i))
		}
		Eventually(iw.Said(thread)).Should(ContainElement("echo: m3"))
		iw.Settled(d, thread) // a kill between a send and its journal repeats the send, by design
		d.Kill()
		for i := 4; i <= 6; i++ {
			iw.TG.Message(imChat, thread, imUser, fmt.Sprintf("m%d", i))
		}
		d = StartDaemon(iw.World)
		Eventually(iw.Said(thread)).Should(ContainElement("echo: m6"))
		Expect(iw.UserLines("claude")()).To(Equal([]string{"m0", "m1", "m2", "m3", "m4", "m5", "m6"}))
		echoes := iw.Echoes(thread)
		Expect(echoes).To(Equal([]string{"echo: m0", "echo: m1", "echo: m2", "echo: m3", "echo: m4", "echo: m5", "echo: m6"}),
			"each reply once, in order")
	})

	It("goes on with a turn shown live after a SIGKILL in the middle of it: its answer once, its live message ended as its summary", func() {
		start()
		thread := iw.Setup("midturn", "claude", "docs", "m0")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: m0"))
		live := func() []faketelegram.Sent {
			var out []faketelegram.Sent
			for _, s := range iw.TG.Sent() {
				if s.ThreadID == thread && (strings.HasPrefix(s.Text, "▸ Bash: ls") || strings.HasPrefix(s.Text, "✓ 1 tool call")) {
					out = append(out, s)
				}
			}
			return out
		}
		iw.TG.Message(imChat, thread, imUser, "slowtool")
		Eventually(func() int { return len(live()) }).Should(BeNumerically(">", 0), "the live message, while the tool runs")
		Expect(live()[0].Silent).To(BeTrue())
		d.Kill()
		d = StartDaemon(iw.World)
		Eventually(iw.Said(thread)).Should(ContainElement("echo: slowtool"))
		Eventually(func() string { l := live(); return l[len(l)-1].Text }).Should(HavePrefix("✓ 1 tool call"),
			"the live message ends as the turn's summary")
		iw.Settled(d, thread)
		Expect(iw.Echoes(thread)).To(Equal([]string{"echo: m0", "echo: slowtool"}), "the answer once")
	})

	It("pins one board of every thread on /board, and edits that same pinned message after a SIGKILL", func() {
		start()
		a := iw.Setup("alpha", "claude", "api", "a0")
		b := iw.Setup("beta", "codex", "web", "b0")
		Eventually(iw.Said(b)).Should(ContainElement("echo: b0"))

		By("/board sends the board, silently, and pins it")
		iw.TG.Message(imChat, a, imUser, "/board")
		Eventually(boardText(iw.TG)).Should(And(ContainSubstring("• alpha — claude"), ContainSubstring("• beta — codex")))
		sends := boardSends(iw.TG)
		Expect(sends).To(HaveLen(1))
		Expect(sends[0].Silent).To(BeTrue())
		Eventually(func() int { return iw.TG.Pinned(imChat) }).Should(Equal(sends[0].MessageID))

		By("after a SIGKILL, a new thread's row is edited into the same message")
		d.Kill()
		d = StartDaemon(iw.World)
		iw.Setup("gamma", "claude", "docs", "g0")
		Eventually(boardText(iw.TG)).Should(ContainSubstring("• gamma — claude"))
		Expect(boardSends(iw.TG)).To(HaveLen(1), "no second board")
		for _, r := range boardRequests(iw.TG) {
			Expect(r.MessageID).To(Equal(sends[0].MessageID))
		}
		Expect(iw.TG.Pinned(imChat)).To(Equal(sends[0].MessageID))
	})

	It("loses and reorders nothing in a 429 storm, and waits as told", func() {
		// At Telegram's own pace: the chat's turns and the 429 waits
		// together.
		iw = NewIMWorld()
		iw.PaceAsTelegram()
		d = StartDaemon(iw.World)
		thread := iw.Setup("storm", "claude", "api", "m0")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: m0"))
		iw.TG.Fail429(6, 1)
		for i := 1; i <= 5; i++ {
			iw.TG.Message(imChat, thread, imUser, fmt.Sprintf("m%d", i))
		}
		Eventually(iw.Said(thread)).Should(ContainElement("echo: m5"))
		echoes := iw.Echoes(thread)
		Expect(echoes).To(Equal([]string{"echo: m0", "echo: m1", "echo: m2", "echo: m3", "echo: m4", "echo: m5"}))
		Expect(iw.TG.Early()).To(BeZero(), "no send came before retry_after had passed")
	})

	It("relays the replies of an agent without a transcript from its pane", func() {
		start()
		thread := iw.BeginSetup("no transcript", "mimo", "hello mimo")
		iw.Press(thread, imUser, iw.Prompt(thread, "Working directory: "+iw.Projects), "Use this directory")
		Eventually(iw.Said(thread)).Should(ContainElement("Session ready!"))
		Eventually(iw.Said(thread)).Should(ContainElement(ContainSubstring("echo: hello mimo")))
		Expect(iw.Said(thread)()).NotTo(ContainElement(ContainSubstring("(fake) session:")), "what the agent printed at start is not a reply")
	})

	AfterEach(func() {
		if CurrentSpecReport().Failed() && d != nil {
			GinkgoWriter.Println(d.Log())
			out, _ := iw.Tmux("list-windows", "-a")
			GinkgoWriter.Println("tmux windows:", out)
			if b, err := os.ReadFile(filepath.Join(iw.Root, "pwned")); err == nil {
				GinkgoWriter.Println(string(b))
			}
		}
	})
})
