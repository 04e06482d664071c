package e2e

import (
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Threads that end and come back, windows replaced and windows adopted.
var _ = Describe("IM thread and window lifecycle", Label("im", "lifecycle"), func() {
	var iw *IMWorld
	var d *Daemon

	start := func(extra ...string) {
		iw = NewIMWorld(extra...)
		d = StartDaemon(iw.World)
	}

	It("ends a closed topic's binding keeping its window, types nothing sent meanwhile, and binds the reopened topic to the same session", func() {
		start()
		thread := iw.Setup("lidded", "claude", "api", "first")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: first"))
		session := iw.BindingSession(d, thread)
		iw.TG.CloseTopic(imChat, thread)
		Eventually(iw.StatusTable).Should(MatchRegexp(`tg:-1001234:%d\s+lidded\s+claude\s+@\d+\s+ended`, thread))
		Expect(iw.StatusTable()).To(ContainSubstring("ended: topic closed; window kept"))
		Expect(iw.Tagged()).To(HaveLen(1), "the window is kept")

		By("a message sent while the topic is closed is not typed")
		iw.TG.Message(imChat, thread, imUser, "while closed")
		iw.Settled(d, thread)
		Expect(iw.UserLines("claude")()).To(Equal([]string{"first"}))

		By("reopened, the topic is bound again to the same session")
		iw.TG.ReopenTopic(imChat, thread)
		Eventually(iw.Said(thread)).Should(ContainElement("Reopened: this thread is bound again to claude in lidded."))
		iw.TG.Message(imChat, thread, imUser, "after")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: after"))
		Expect(iw.UserLines("claude")()).To(Equal([]string{"first", "after"}))
		Expect(iw.BindingSession(d, thread)).To(Equal(session))
	})

	It("kills a closed topic's window with im.on_close = kill, and Recover resumes the same session once the topic is reopened", func() {
		start(`on_close = "kill"`)
		thread := iw.Setup("doomed", "claude", "api", "first")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: first"))
		session := iw.BindingSession(d, thread)
		iw.TG.CloseTopic(imChat, thread)
		Eventually(iw.Tagged).Should(BeEmpty(), "the window is killed")
		Expect(iw.StatusTable()).To(ContainSubstring("ended: topic closed; window killed"))

		iw.TG.ReopenTopic(imChat, thread)
		Eventually(iw.Said(thread)).Should(ContainElement(ContainSubstring("Reopened")))
		iw.TG.Message(imChat, thread, imUser, "back")
		iw.Press(thread, imUser, iw.Prompt(thread, "window of this session is gone"), "Recover")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: back"))
		Expect(iw.BindingSession(d, thread)).To(Equal(session), "the same session, resumed")
	})

	It("closes the window New Session replaces, and leaves no window that no binding owns", func() {
		start()
		thread := iw.Setup("renewed", "claude", "api", "hi")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: hi"))
		old, oldTag := iw.Tagged()[0].ID, iw.Tagged()[0].Tag
		_, err := iw.Tmux("respawn-pane", "-k", "-t", old, filepath.Join(iw.Root, "bin", "codex"))
		Expect(err).NotTo(HaveOccurred())
		iw.AgentPID(old, "codex")
		iw.TG.Message(imChat, thread, imUser, "who runs here")
		// Each question of the new setup was asked once already: the
		// second asking is the one to answer.
		second := func(text string) {
			GinkgoHelper()
			Eventually(func() int {
				n := 0
				for _, s := range iw.Said(thread)() {
					if s == text {
						n++
					}
				}
				return n
			}).Should(BeNumerically(">=", 2), "asked again: %q", text)
		}
		iw.Press(thread, imUser, iw.Prompt(thread, "but codex runs in its window"), "New Session")
		second("Which agent should run for renewed?")
		iw.Press(thread, imUser, iw.Prompt(thread, "Which agent"), "claude")
		second("Working directory: " + iw.Projects)
		iw.Press(thread, imUser, iw.Prompt(thread, "Working directory: "+iw.Projects), "web")
		iw.Press(thread, imUser, iw.Prompt(thread, "Working directory: "+filepath.Join(iw.Projects, "web")), "Use this directory")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: who runs here"))
		Eventually(iw.Windows).Should(HaveLen(1), "the replaced window is closed")
		Expect(iw.Windows()[0].Tag).NotTo(Equal(oldTag), "the one left is the new session's (tmux may give it the old id)")
		Expect(iw.StatusTable()).NotTo(ContainSubstring("no binding owns"))
	})

	It("adopts an agent started by hand in a window of thatch's tmux server and relays its replies", func() {
		start()
		dir := filepath.Join(iw.Projects, "docs")
		agent := filepath.Join(iw.Root, "bin", "claude")
		if _, err := iw.Tmux("new-window", "-d", "-t", "thatch:", "-n", "by hand", "-c", dir, agent); err != nil {
			_, err = iw.Tmux("new-session", "-d", "-s", "thatch", "-n", "by hand", "-c", dir, agent)
			Expect(err).NotTo(HaveOccurred())
		}
		Eventually(func() string {
			out, _ := iw.Tmux("capture-pane", "-p", "-t", "thatch:by hand")
			return out
		}).Should(ContainSubstring("session:"), "the hand-started agent runs")
		Eventually(iw.StatusTable).Should(ContainSubstring("windows on thatch's tmux server that no binding owns: 1"))

		thread := iw.TG.CreateTopic(imChat, "adopter")
		iw.TG.Message(imChat, thread, imUser, "hello")
		iw.Press(thread, imUser, iw.Prompt(thread, "Which agent"), "Existing window")
		p := iw.Prompt(thread, "Which window should adopter bind?")
		Expect(p.Text).To(ContainSubstring("by hand: claude in " + dir))
		iw.Press(thread, imUser, p, "by hand")
		Eventually(iw.Said(thread)).Should(ContainElement("Session ready!"))
		Eventually(iw.Said(thread)).Should(ContainElement("echo: hello"))
		Expect(iw.Tagged()).To(HaveLen(1))
		Expect(iw.Tagged()[0].Name).To(Equal("adopter"))
		Expect(strings.Contains(iw.StatusTable(), "no binding owns")).To(BeFalse())
	})
})
