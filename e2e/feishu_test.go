package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/fakefeishu"
)

// The Feishu adapter in webhook mode, in the built daemon: events posted
// to its webhook as Feishu posts them (signed, encrypted), the fake Open
// API recording what the bot made, the real tmux on a private socket and
// the fake agents. They mirror the Telegram specs (im_test.go): the
// setup, the routes of a message in a bound chat, delivery, and what a
// user of both platforms sees.
var _ = Describe("Feishu front end", Label("im", "feishu"), func() {
	var fw *FeishuWorld
	var d *Daemon

	start := func(extra ...string) {
		fw = NewFeishuWorld(extra...)
		d = fw.Start()
	}

	It("sets a chat up through card buttons, types its first message into the agent, and relays the reply", func() {
		start()
		fw.Message(fsChat, "hello there")
		agents := fw.Prompt(fsChat, "Which agent should run for "+fsName)
		var labels []string
		for _, b := range agents.Buttons {
			labels = append(labels, b.Label)
		}
		Expect(labels).To(Equal([]string{"claude", "codex", "copilot", "mimo", "Existing window"}))
		fw.Press(fsChat, agents, "claude")
		fw.Press(fsChat, fw.Prompt(fsChat, "Working directory: "+fw.Projects), "api")
		dir := filepath.Join(fw.Projects, "api")
		fw.Press(fsChat, fw.Prompt(fsChat, "Working directory: "+dir), "Use this directory")
		Eventually(fw.Said(fsChat)).Should(ContainElement("Session ready!"))

		By("one window, named after the chat, in the chosen directory")
		Eventually(fw.Tagged).Should(HaveLen(1))
		Expect(fw.Tagged()[0].Name).To(Equal(fsName))
		out, err := fw.Tmux("display-message", "-p", "-t", fw.Tagged()[0].ID, "#{pane_current_path}")
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.TrimSpace(out)).To(Equal(dir))

		By("the message that started the setup reached the agent, and its reply came back to the chat")
		Eventually(fw.UserLines("claude")).Should(Equal([]string{"hello there"}))
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: hello there"))

		By("the next message goes straight into the live window")
		fw.Message(fsChat, "second")
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: second"))
		Expect(fw.UserLines("claude")()).To(Equal([]string{"hello there", "second"}))

		By("thatch status lists the binding")
		Expect(fw.StatusTable()).To(MatchRegexp(`fs:%s\s+%s\s+claude\s+@\d+\s+bound`, fsChat, fsName))
	})

	It("ends the binding of a disbanded chat, keeps its window, sends nothing more there, and says why in thatch status", func() {
		start()
		fw.Setup(fsChat, fsName, "claude", "api", "first")
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: first"))
		fw.Settled(d, fsChat)
		sent := len(fw.FS.Sent())
		fw.Deliver(fw.Event("im.chat.disbanded_v1", fakefeishu.ChatEvent(fsChat, "ou_the_owner")))
		Eventually(fw.StatusTable).Should(MatchRegexp(`feishu\s+fs:%s\s+%s\s+claude\s+@\d+\s+ended`, fsChat, fsName))
		Expect(fw.StatusTable()).To(ContainSubstring("ended: disbanded; window kept"))
		Expect(fw.Tagged()).To(HaveLen(1), "the window is kept (im.on_close's default)")
		fw.Settled(d, fsChat)
		Expect(fw.FS.Sent()).To(HaveLen(sent), "nothing is sent to a disbanded chat")
	})

	It("receives over the long connection: setup through card frames, an event pushed twice typed once, and a dropped connection taken up again", func() {
		fw = NewFeishuWSWorld()
		d = fw.Start()
		fw.Setup(fsChat, fsName, "claude", "api", "first")
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: first"))
		second := fw.Message(fsChat, "second")
		fw.Deliver(second)
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: second"))

		By("the connection drops; the daemon connects again and the next event is typed")
		before := fw.FS.WSConnections()
		fw.FS.DropConnections()
		Eventually(fw.FS.WSConnections, 2*time.Minute).Should(BeNumerically(">", before))
		fw.Message(fsChat, "third")
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: third"))
		fw.Settled(d, fsChat)
		Expect(fw.UserLines("claude")()).To(Equal([]string{"first", "second", "third"}))
	})

	It("offers Recover when the window is gone, and resumes the same session in a new one", func() {
		start()
		fw.Setup(fsChat, fsName, "claude", "docs", "first")
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: first"))
		_, err := fw.Tmux("kill-window", "-t", fw.Tagged()[0].ID)
		Expect(err).NotTo(HaveOccurred())
		fw.Message(fsChat, "still there?")
		fw.Press(fsChat, fw.Prompt(fsChat, "window of this session is gone"), "Recover")
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: still there?"))
		Expect(fw.UserLines("claude")()).To(Equal([]string{"first", "still there?"}), "one transcript: the session was resumed")
		Expect(fw.Tagged()).To(HaveLen(1))
	})

	It("asks before renaming when the chat was renamed, and renames the window on Rename", func() {
		start()
		fw.Setup(fsChat, fsName, "claude", "api", "hi")
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: hi"))
		fw.Rename(fsChat, fsName, fsName+" v2")
		fw.Message(fsChat, "after the rename")
		p := fw.Prompt(fsChat, `This thread is now called "`+fsName+` v2"`)
		fw.Message(fsChat, "while asked")
		Eventually(fw.StatusTable).Should(MatchRegexp(`prompting, 2 queued`), "both held while the prompt is open")
		Expect(fw.UserLines("claude")()).To(Equal([]string{"hi"}))
		fw.Press(fsChat, p, "Rename")
		Eventually(fw.UserLines("claude")).Should(Equal([]string{"hi", "after the rename", "while asked"}))
		Eventually(func() string { return fw.Tagged()[0].Name }).Should(Equal(fsName + " v2"))
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: while asked"))
	})

	It("asks when another agent runs in the window, and Update Binding follows it", func() {
		start()
		fw.Setup(fsChat, fsName, "claude", "api", "hi")
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: hi"))
		By("the user replaces claude by codex in the window, by hand")
		win := fw.Tagged()[0].ID
		_, err := fw.Tmux("respawn-pane", "-k", "-t", win, filepath.Join(fw.Root, "bin", "codex"))
		Expect(err).NotTo(HaveOccurred())
		fw.AgentPID(win, "codex")
		fw.Message(fsChat, "who runs here")
		fw.Press(fsChat, fw.Prompt(fsChat, "but codex runs in its window"), "Update Binding")
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: who runs here"), "typed into codex, and codex's reply relayed")
		Expect(fw.UserLines("claude")()).To(Equal([]string{"hi"}), "nothing more typed into claude's session")
	})

	It("types an event delivered twice once, also when the daemon was SIGKILLed before the redelivery", func() {
		start()
		fw.Message(fsChat, "m0")
		fw.Press(fsChat, fw.Prompt(fsChat, "Which agent should run for "+fsName), "claude")
		fw.Press(fsChat, fw.Prompt(fsChat, "Working directory: "+fw.Projects), "docs")
		use := fw.Press(fsChat, fw.Prompt(fsChat, "Working directory: "+filepath.Join(fw.Projects, "docs")), "Use this directory")
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: m0"))

		By("Feishu delivers m1 twice (its first 200 was lost), and the last press again: each is answered 200")
		m1 := fw.Message(fsChat, "m1")
		fw.Deliver(m1)
		fw.Deliver(use)
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: m1"))
		fw.Settled(d, fsChat) // a kill between a send and its journal repeats the send, by design

		By("the daemon is killed; m2, posted meanwhile, finds no webhook")
		d.Kill()
		m2 := fw.TextEvent(fsChat, "m2")
		_, err := fw.Post(m2)
		Expect(err).To(HaveOccurred(), "nothing listens while the daemon is down")

		By("after the restart Feishu delivers m1, the press and m2 again, then m3")
		d = fw.Start()
		fw.Deliver(m1)
		fw.Deliver(use)
		fw.Deliver(m2)
		fw.Message(fsChat, "m3")
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: m3"))
		fw.Settled(d, fsChat)
		d.Quiesce()
		Expect(fw.UserLines("claude")()).To(Equal([]string{"m0", "m1", "m2", "m3"}), "each typed once, none lost")
		Expect(fw.Echoes(fsChat)).To(Equal([]string{"echo: m0", "echo: m1", "echo: m2", "echo: m3"}), "each reply once, in order")
		ready := 0
		for _, s := range fw.Said(fsChat)() {
			if s == "Session ready!" {
				ready++
			}
		}
		Expect(ready).To(Equal(1), "the press delivered again set nothing up again")
		Expect(fw.Tagged()).To(HaveLen(1))
	})

	It("answers Feishu 500 for a chat it cannot look up yet, and handles the redelivery once, across a SIGKILL", func() {
		start()
		const late = "oc_e2e_late"
		ev := fw.TextEvent(late, "hello late")
		a, err := fw.Post(ev)
		Expect(err).NotTo(HaveOccurred())
		Expect(a.Status).To(Equal(http.StatusInternalServerError), "the chat API does not know the chat: Feishu is asked to deliver again")
		d.Quiesce()
		Expect(fw.FS.Sent()).To(BeEmpty())

		By("the daemon is killed; once the chat can be looked up, Feishu's redeliveries are handled once")
		d.Kill()
		d = fw.Start()
		fw.FS.AddChat(fakefeishu.Chat{ID: late, Name: "late box"})
		fw.Deliver(ev)
		agents := fw.Prompt(late, "Which agent should run for late box")
		fw.Deliver(ev)
		d.Quiesce()
		Expect(fw.Said(late)()).To(Equal([]string{agents.Text}), "one question, for the one message")
		fw.Press(late, agents, "claude")
		fw.Press(late, fw.Prompt(late, "Working directory: "+fw.Projects), "Use this directory")
		Eventually(fw.Said(late)).Should(ContainElement("echo: hello late"))
		Expect(fw.UserLines("claude")()).To(Equal([]string{"hello late"}))
	})

	It("refuses a wrong verification token, a bad signature and an undecryptable body, and records nothing of them", func() {
		start()
		fw.Setup(fsChat, fsName, "claude", "web", "hi")
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: hi"))
		fw.Settled(d, fsChat)
		d.Quiesce()
		sent := len(fw.FS.Sent())

		ev := fw.TextEvent(fsChat, "let me in")
		post := func(body []byte, header http.Header) int {
			GinkgoHelper()
			a, err := fw.Poster().PostRaw(ctxFor(60*time.Second), body, header)
			Expect(err).NotTo(HaveOccurred())
			return a.Status
		}
		encrypted := func(key string, plain []byte) []byte {
			b, err := json.Marshal(map[string]string{"encrypt": fakefeishu.Encrypt(key, plain)})
			Expect(err).NotTo(HaveOccurred())
			return b
		}

		By("the same event with another verification token in its header")
		var env map[string]any
		Expect(json.Unmarshal(ev, &env)).To(Succeed())
		env["header"].(map[string]any)["token"] = "not-the-verification-token"
		forged, err := json.Marshal(env)
		Expect(err).NotTo(HaveOccurred())
		a, err := fw.Post(forged)
		Expect(err).NotTo(HaveOccurred())
		Expect(a.Status).To(Equal(http.StatusUnauthorized))

		By("the event encrypted right, with a signature made with another key")
		body := encrypted(fsKey, ev)
		h := fw.Poster().SignHeaders(body)
		h.Set("X-Lark-Signature", fakefeishu.Sign(h.Get("X-Lark-Request-Timestamp"), h.Get("X-Lark-Request-Nonce"), "another-key", body))
		Expect(post(body, h)).To(Equal(http.StatusUnauthorized))

		By("the event encrypted with another key, signed right")
		body = encrypted("another-key", ev)
		Expect(post(body, fw.Poster().SignHeaders(body))).To(Equal(http.StatusUnauthorized))

		By("the event in plain, while an encrypt key is set")
		Expect(post(ev, nil)).To(Equal(http.StatusUnauthorized))

		By("nothing was typed, nothing was sent")
		d.Quiesce()
		Expect(fw.UserLines("claude")()).To(Equal([]string{"hi"}))
		Expect(fw.FS.Sent()).To(HaveLen(sent))

		By("the same event, posted as Feishu posts it, is handled: its id was not recorded")
		fw.Deliver(ev)
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: let me in"))
		Expect(fw.UserLines("claude")()).To(Equal([]string{"hi", "let me in"}))
	})

	It("loses and reorders nothing of a long reply in a rate-limit storm, and waits as told", func() {
		start()
		fw.Setup(fsChat, fsName, "claude", "api", "m0")
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: m0"))
		fw.Settled(d, fsChat)
		before := len(fw.Said(fsChat)())

		By("the app's limit (HTTP 429) and the chat's limit (230020), on the long reply's first part, with a message behind it")
		fw.FS.RateLimitApp(2, time.Second)
		fw.FS.RateLimitChat(2, time.Second)
		fw.FS.RateLimitApp(1, time.Second)
		fw.Message(fsChat, "long 60000")
		fw.Message(fsChat, "m1")
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: m1"))
		Eventually(func() int { return d.CountLog("rate limited, waiting") }).Should(Equal(5), "the daemon met each limit of the storm, once")

		got := fw.Said(fsChat)()[before:]
		Expect(len(got)).To(BeNumerically(">=", 4), "the reply's parts, then m1's echo: %q", got)
		Expect(got[len(got)-1]).To(Equal("echo: m1"))
		parts := got[:len(got)-1]
		Expect(len(parts)).To(BeNumerically(">=", 3), "60,000 bytes go out in several messages")
		// The fake writes numbered lines of 55 bytes: 60,000 bytes end in
		// line 01091, cut short.
		next := 1
		for _, part := range parts {
			Expect(len(part)).To(BeNumerically("<=", 24*1024))
			for _, line := range strings.Split(strings.TrimSpace(part), "\n") {
				Expect(line).To(HavePrefix(fmt.Sprintf("line %05d ", next)), "lines whole and in order, none twice")
				next++
			}
		}
		Expect(next).To(Equal(1092))
		Expect(fw.FS.Early()).To(BeZero(), "no call came before its rate limit's wait had passed")
		Expect(fw.UserLines("claude")()).To(Equal([]string{"m0", "long 60000", "m1"}))
	})

	It("runs beside the Telegram bot: a topic and a chat bound at once, each relaying to its own", func() {
		fw = NewFeishuTelegramWorld()
		d = fw.Start()
		tg := fw.IMWorld
		thread := tg.Setup("tg work", "claude", "api", "from telegram")
		fw.Setup(fsChat, fsName, "claude", "web", "from feishu")
		Eventually(tg.Said(thread)).Should(ContainElement("echo: from telegram"))
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: from feishu"))
		Eventually(fw.Tagged).Should(HaveLen(2))

		By("a message on each platform reaches its own window, and its reply only its own chat")
		tg.TG.Message(imChat, thread, imUser, "telegram again")
		fw.Message(fsChat, "feishu again")
		Eventually(tg.Said(thread)).Should(ContainElement("echo: telegram again"))
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: feishu again"))
		tg.Settled(d, thread)
		fw.Settled(d, fsChat)
		d.Quiesce()
		Expect(tg.Echoes(thread)).To(Equal([]string{"echo: from telegram", "echo: telegram again"}))
		Expect(fw.Echoes(fsChat)).To(Equal([]string{"echo: from feishu", "echo: feishu again"}))
		Expect(fw.UserLines("claude")()).To(ConsistOf("from telegram", "telegram again", "from feishu", "feishu again"))
		names := map[string]bool{}
		for _, w := range fw.Tagged() {
			names[w.Name] = true
		}
		Expect(names).To(Equal(map[string]bool{"tg work": true, fsName: true}))

		By("thatch status shows both adapters, and each binding with its platform")
		table := fw.StatusTable()
		Expect(table).To(MatchRegexp(`im\s+ok\s+telegram: .*; feishu: receiving Feishu events on %s`, regexp.QuoteMeta(fw.Webhook)))
		Expect(table).To(MatchRegexp(`PLATFORM\s+THREAD\s+NAME`))
		Expect(table).To(MatchRegexp(`telegram\s+tg:-1001234:%d\s+tg work\s+claude\s+@\d+\s+bound`, thread))
		Expect(table).To(MatchRegexp(`feishu\s+fs:%s\s+%s\s+claude\s+@\d+\s+bound`, fsChat, fsName))
	})

	AfterEach(func() {
		if CurrentSpecReport().Failed() && d != nil {
			GinkgoWriter.Println(d.Log())
			out, _ := fw.Tmux("list-windows", "-a")
			GinkgoWriter.Println("tmux windows:", out)
			for _, s := range fw.FS.Sent() {
				GinkgoWriter.Printf("feishu sent: %s %s %s %s %.200s\n", s.Op, s.ChatID, s.MessageID, s.MsgType, s.Content)
			}
		}
	})
})

// ctxFor is a context that ends after d, cancelled at the spec's end.
func ctxFor(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	DeferCleanup(cancel)
	return ctx
}
