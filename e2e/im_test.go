package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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
		Expect(strings.Join(iw.Said(thread)(), "|")).NotTo(ContainSubstring("claude has sessions"))
	})

	It("splits a long reply in order, under Telegram's limit", func() {
		start()
		thread := iw.Setup("long", "claude", "docs", "hi")
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
