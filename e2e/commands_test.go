package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/fakeanthropic"
	"github.com/thatch-run/thatch/e2e/faketelegram"
	"github.com/thatch-run/thatch/im/screenshot"
)

// Driving the agent from the chat: thatch's commands in a bound thread
// (/esc, /interrupt, /enter, /screenshot, /history, /kill), and the
// agent's own interactive prompts shown in the chat and answered with a
// button, in the built daemon against the fake Bot API and fake Feishu,
// the real tmux, the fake agents and the real claude.
var _ = Describe("Driving the agent from the chat", Label("im", "commands"), func() {
	var iw *IMWorld
	var d *Daemon

	start := func(extra ...string) {
		iw = NewIMWorld(extra...)
		d = StartDaemon(iw.World)
	}

	It("Telegram: offers thatch's commands, shows the agent working, and sends it Escape, Enter and Ctrl-C", func() {
		start()
		By("the bot registered its commands at start, so that the client offers them")
		Eventually(func() []string {
			var names []string
			for _, c := range iw.TG.Commands() {
				names = append(names, c.Command)
			}
			return names
		}).Should(Equal([]string{"esc", "interrupt", "enter", "screenshot", "history", "usage", "mode", "recall", "remember", "sessions", "board", "kill", "unbind"}))
		for _, c := range iw.TG.Commands() {
			Expect(c.Description).NotTo(BeEmpty(), "/%s has a description", c.Command)
		}

		thread := iw.Setup("keys", "claude", "api", "first")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: first"))

		By("while the agent works on a message, the thread shows it typing")
		iw.Settled(d, thread)
		before := len(actions(iw.TG, thread))
		iw.TG.Message(imChat, thread, imUser, "sleep 2")
		Eventually(func() []string { return actions(iw.TG, thread)[before:] }).Should(ContainElement("typing"))
		Eventually(iw.Said(thread)).Should(ContainElement("echo: sleep 2"))

		By("/esc and /enter reach the agent: it takes the Escape as a line, which Enter ends")
		iw.TG.Message(imChat, thread, imUser, "/esc")
		Eventually(iw.Said(thread)).Should(ContainElement("Escape sent."))
		iw.TG.Message(imChat, thread, imUser, "/enter@thatch_fake_bot")
		Eventually(iw.Said(thread)).Should(ContainElement("Enter sent."))
		Eventually(iw.UserLines("claude")).Should(Equal([]string{"first", "sleep 2", "\x1b"}), "no command was typed as text")

		By("/interrupt sends Ctrl-C: the fake agent, which does not catch it, exits; the next message is not typed into the shell left in the window, but offers Recover")
		iw.TG.Message(imChat, thread, imUser, "/interrupt")
		Eventually(iw.Said(thread)).Should(ContainElement("Ctrl-C sent."))
		win := iw.Tagged()[0].ID
		pane, err := iw.Tmux("display-message", "-p", "-t", win, "#{pane_pid}")
		Expect(err).NotTo(HaveOccurred())
		root, err := strconv.Atoi(strings.TrimSpace(pane))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { return findProc(root, "claude") }).Should(BeZero(), "the agent exited")
		iw.TG.Message(imChat, thread, imUser, "after")
		iw.Press(thread, imUser, iw.Prompt(thread, "The agent is no longer running in its window"), "Recover")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: after"))
		Expect(iw.UserLines("claude")()).To(Equal([]string{"first", "sleep 2", "\x1b", "after"}))
	})

	It("Telegram: /remember keeps a fact and /recall finds it with no agent asked, a button showing it whole, a secret refused", func() {
		start()
		thread := iw.Setup("memory", "claude", "api", "first")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: first"))
		iw.TG.Message(imChat, thread, imUser, "/remember Staging deploys with make ship; production needs a tag first")
		Eventually(iw.Said(thread)).Should(ContainElement("Kept in global as “Staging deploys with make ship; production needs a tag first”."))
		key := "ghp_" + strings.Repeat("Rm7", 12)
		iw.TG.Message(imChat, thread, imUser, "/remember the deploy token is "+key)
		Eventually(iw.Said(thread)).Should(ContainElement(HavePrefix("Not kept: ")))
		iw.TG.Message(imChat, thread, imUser, "/recall how do we deploy to staging")
		var answer faketelegram.Sent
		Eventually(func() string {
			for _, s := range iw.TG.Messages(imChat, thread) {
				if strings.HasPrefix(s.Text, "Memories for") {
					answer = s
				}
			}
			return answer.Text
		}).Should(ContainSubstring("1. Staging deploys with make ship; production needs a tag first (global)"))
		Expect(answer.Buttons).NotTo(BeEmpty())
		iw.TG.Press(imChat, thread, imUser, answer.MessageID, answer.Buttons[0][0].Data)
		Eventually(iw.Said(thread)).Should(ContainElement(HavePrefix("Staging deploys with make ship; production needs a tag first (global, confidence 5/10")))
		By("the memory is the daemon's, the agent got none of it, and no request to the Bot API held the key")
		Expect(MemoryListCLI(iw.World)).To(ContainSubstring("Staging deploys with make ship; production needs a tag first"))
		Expect(iw.UserLines("claude")()).To(Equal([]string{"first"}), "the agent was asked nothing")
		for _, r := range iw.TG.Requests() {
			Expect(r).NotTo(ContainSubstring(key))
		}
	})

	It("Telegram: /history shows the last exchanges, another bot's command does nothing, the agent's own is typed, and /kill kills the window after asking", func() {
		start()
		thread := iw.Setup("doomed", "claude", "api", "one")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: one"))
		iw.TG.Message(imChat, thread, imUser, "two")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: two"))

		By("a command for another bot is not thatch's; an agent's own command is typed to it as it is")
		iw.TG.Message(imChat, thread, imUser, "/kill@someotherbot")
		iw.TG.Message(imChat, thread, imUser, "/compact now")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: /compact now"))
		iw.Settled(d, thread)
		d.Quiesce()
		Expect(iw.UserLines("claude")()).To(Equal([]string{"one", "two", "/compact now"}))
		Expect(iw.Said(thread)()).NotTo(ContainElement(ContainSubstring("Kill window")), "another bot's /kill was not acted on")
		Expect(iw.Tagged()).To(HaveLen(1))

		By("/history 2 shows the last two exchanges")
		iw.TG.Message(imChat, thread, imUser, "/history 2")
		Eventually(iw.Said(thread)).Should(ContainElement("▶ two\necho: two\n\n▶ /compact now\necho: /compact now"))

		By("/kill asks; Kill kills the window and ends the binding")
		iw.TG.Message(imChat, thread, imUser, "/kill")
		ask := iw.Prompt(thread, "Kill window doomed")
		Expect(labels(ask)).To(Equal([]string{"Kill", "Cancel"}))
		Expect(iw.Tagged()).To(HaveLen(1), "nothing is killed before the user says so")
		iw.Press(thread, imUser, ask, "Kill")
		Eventually(iw.Said(thread)).Should(ContainElement("Window doomed is killed and this thread's binding ended. Send a message to set up a new one."))
		Eventually(iw.Tagged).Should(BeEmpty())
		Eventually(iw.StatusTable).Should(MatchRegexp(`tg:-1001234:%d\s+doomed\s+claude\s+\S+\s+ended`, thread))
		Expect(iw.StatusTable()).To(ContainSubstring("killed from the chat; window killed"))
	})

	It("Telegram: /screenshot sends a picture of the pane, its text where the pane shows it, with Refresh, Esc, Enter and Ctrl-C", func() {
		start()
		thread := iw.Setup("shot", "claude", "api", "first")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: first"))
		iw.TG.Message(imChat, thread, imUser, "md")
		Eventually(iw.Said(thread)).Should(ContainElement(ContainSubstring("Here is bold text")))
		iw.Settled(d, thread)
		win := iw.Tagged()[0].ID

		iw.TG.Message(imChat, thread, imUser, "/screenshot")
		shot := iw.photo(thread, 1)
		Expect(shot.Text).To(HavePrefix("shot at "), "the caption names the window")
		Expect(labels(shot)).To(Equal([]string{"Refresh", "Esc", "Enter", "Ctrl-C"}))
		cols, _ := iw.expectPicture(shot, win)
		Expect(cols).To(Equal(80))

		By("Refresh sends a new picture, of the pane as it is now: a wider pane in a smaller font, within Telegram's 1280 pixels")
		_, err := iw.Tmux("resize-window", "-t", win, "-x", "200", "-y", "30")
		Expect(err).NotTo(HaveOccurred())
		iw.Press(thread, imUser, shot, "Refresh")
		again := iw.photo(thread, 2)
		cols, width := iw.expectPicture(again, win)
		Expect(cols).To(Equal(200))
		Expect(shotFont(200)).To(BeNumerically("<", shotFont(80)), "the wide pane is drawn smaller")
		Expect(width).To(BeNumerically("<=", 1280))
	})

	It("Telegram: shows the agent's prompt with one button per option, answers it on a press, and reaches nothing with an old press", func() {
		start()
		thread := iw.Setup("perm", "claude", "api", "first")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: first"))

		iw.TG.Message(imChat, thread, imUser, "ask npm test")
		m := iw.Prompt(thread, "Do you want to proceed?")
		Expect(visible(m)).To(HavePrefix("perm · claude asks:\n"), "the alert names the thread and its agent")
		Expect(visible(m)).To(ContainSubstring("npm test"))
		Expect(visible(m)).To(ContainSubstring("2. Yes, and don’t ask again for: npm test *"), "the options are shown whole")
		got := labels(m)
		Expect(got).To(HaveLen(3))
		Expect(got[0]).To(Equal("1. Yes"))
		Expect(got[1]).To(HavePrefix("2. Yes, and don’t ask again"))
		Expect(got[2]).To(Equal("3. No"))

		By("3. No answers it: the agent goes on with that answer, and the buttons go")
		iw.Press(thread, imUser, m, "3. No")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: answered 3 to npm test"))
		Eventually(func() bool { return cleared(iw.TG, m.MessageID) }).Should(BeTrue(), "the prompt's buttons were cleared")

		By("a press of the answered prompt's button is told the prompt is closed, and types nothing")
		iw.Press(thread, imUser, m, "1. Yes")
		Eventually(func() []string { return toasts(iw.TG, thread) }).Should(ContainElement("That prompt is no longer open."))
		iw.expectTypedNext(d, thread, []string{"first", "answer 3"})
	})

	It("Feishu: the agent's prompt is answered with a card button, /screenshot sends an image and a card of buttons, and /esc reaches the agent", func() {
		fw := NewFeishuWorld()
		d = fw.Start()
		fw.Setup(fsChat, fsName, "claude", "api", "first")
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: first"))

		By("the agent's prompt comes as a card; its button answers it")
		fw.Message(fsChat, "ask npm test")
		ask := fw.Prompt(fsChat, "Do you want to proceed?")
		Expect(ask.Text).To(ContainSubstring(" · claude asks:"))
		Expect(cardLabels(ask)).To(HaveLen(3))
		Expect(cardLabels(ask)[0]).To(Equal("1. Yes"))
		Expect(cardLabels(ask)[2]).To(Equal("3. No"))
		fw.Press(fsChat, ask, "1. Yes")
		Eventually(fw.Said(fsChat)).Should(ContainElement("echo: answered 1 to npm test"))

		By("/screenshot: an image message of the pane, and a card with the four buttons")
		fw.Message(fsChat, "/screenshot")
		card := fw.Prompt(fsChat, fsName+" at ")
		Expect(cardLabels(card)).To(Equal([]string{"Refresh", "Esc", "Enter", "Ctrl-C"}))
		var images []string
		for _, s := range fw.FS.Sent() {
			if s.ChatID == fsChat && s.MsgType == "image" {
				images = append(images, s.Content)
			}
		}
		Expect(images).To(HaveLen(1))
		var key struct {
			ImageKey string `json:"image_key"`
		}
		Expect(json.Unmarshal([]byte(images[0]), &key)).To(Succeed())
		img, err := png.Decode(bytes.NewReader(fw.FS.Image(key.ImageKey)))
		Expect(err).NotTo(HaveOccurred(), "the uploaded image is a PNG")
		cw, ch := screenshot.CellSize(screenshot.Options{FontSize: shotFont(80)})
		Expect([]int{img.Bounds().Dx(), img.Bounds().Dy()}).To(Equal([]int{80 * cw, 24 * ch}), "80x24 cells of %dx%d pixels", cw, ch)

		By("/esc and /enter reach the agent")
		fw.Message(fsChat, "/esc")
		Eventually(fw.Said(fsChat)).Should(ContainElement("Escape sent."))
		fw.Message(fsChat, "/enter")
		Eventually(fw.Said(fsChat)).Should(ContainElement("Enter sent."))
		Eventually(fw.UserLines("claude")).Should(Equal([]string{"first", "answer 1", "\x1b"}))
	})

	It("the real claude: its permission dialog comes to the chat, and 1. Yes lets it run the command", Label("real-agents"), func() {
		iw = NewRealIMWorld("claude")
		// claude asks before a Bash command only in its manual mode.
		iw.SetLaunch("claude", bins.Claude+" --permission-mode manual")
		project := filepath.Join(iw.Projects, "api")
		Expect(os.WriteFile(filepath.Join(project, "package.json"),
			[]byte(`{"name":"api","version":"1.0.0","scripts":{"test":"echo thatch-tests-ran"}}`+"\n"), 0o644)).To(Succeed())
		iw.Claude.On(fakeanthropic.UserSays("run the tests"), fakeanthropic.Bash("npm test", "The tests passed."))
		d = StartDaemon(iw.World)
		thread := iw.Setup("real perm", "claude", "api", "run the tests please")

		By("the permission dialog comes to the chat with its options as buttons")
		m := iw.Prompt(thread, "Do you want to proceed?")
		Expect(visible(m)).To(HavePrefix("real perm · claude asks:\n"))
		Expect(visible(m)).To(ContainSubstring("npm test"))
		got := labels(m)
		Expect(len(got)).To(BeNumerically(">=", 3), "buttons %q", got)
		Expect(got[0]).To(Equal("1. Yes"))
		Expect(got[1]).To(HavePrefix("2. Yes, and don"))
		Expect(got[len(got)-1]).To(HavePrefix(fmt.Sprintf("%d. No", len(got))))
		Expect(iw.Claude.Requests()).NotTo(ContainElement(HaveField("Step", 1)), "nothing ran before the press")

		By("1. Yes: claude runs the command, the model gets its output, and the answer is relayed")
		iw.Press(thread, imUser, m, "1. Yes")
		Eventually(iw.Said(thread)).Should(ContainElement("The tests passed."))
		var results []string
		var bodies []string
		for _, r := range iw.Claude.Requests() {
			if r.Step == 1 {
				results = append(results, r.ToolResultText())
				bodies = append(bodies, lastMessage(r.Body))
			}
		}
		Expect(results).To(ContainElement(ContainSubstring("thatch-tests-ran")), "the tool ran and its output went to the model; the requests' last messages: %s", strings.Join(bodies, "\n---\n"))
		Eventually(func() bool { return cleared(iw.TG, m.MessageID) }).Should(BeTrue(), "the prompt's buttons were cleared")
	})
})

// labels lists the labels of a message's buttons, row by row.
func labels(m faketelegram.Sent) []string {
	var out []string
	for _, row := range m.Buttons {
		for _, b := range row {
			out = append(out, b.Text)
		}
	}
	return out
}

// cardLabels lists the labels of a card's buttons.
func cardLabels(c Card) []string {
	var out []string
	for _, b := range c.Buttons {
		out = append(out, b.Label)
	}
	return out
}

// actions lists the chat actions (sendChatAction) the bot showed in a
// thread of the IM chat.
func actions(tg *faketelegram.Server, thread int64) []string {
	var out []string
	for _, a := range tg.Actions() {
		if a.ChatID == imChat && a.ThreadID == thread {
			out = append(out, a.Text)
		}
	}
	return out
}

// toasts lists the texts the bot answered presses in a thread with
// (answerCallbackQuery; "" for a press answered with no text).
func toasts(tg *faketelegram.Server, thread int64) []string {
	var out []string
	for _, s := range tg.Sent() {
		if s.Method == "answerCallbackQuery" && s.ChatID == imChat && s.ThreadID == thread {
			out = append(out, s.Text)
		}
	}
	return out
}

// cleared reports whether the bot took the buttons off message id.
func cleared(tg *faketelegram.Server, id int) bool {
	for _, s := range tg.Sent() {
		if s.Method == "editMessageReplyMarkup" && s.MessageID == id && len(s.Buttons) == 0 {
			return true
		}
	}
	return false
}

// photo waits for the thread's nth picture and returns it.
func (iw *IMWorld) photo(thread int64, n int) faketelegram.Sent {
	GinkgoHelper()
	var got []faketelegram.Sent
	Eventually(func() int {
		got = got[:0]
		for _, s := range iw.TG.Sent() {
			if s.Method == "sendPhoto" && s.ChatID == imChat && s.ThreadID == thread {
				got = append(got, s)
			}
		}
		return len(got)
	}).Should(BeNumerically(">=", n), func() string { return fmt.Sprintf("picture %d; the bot said %q", n, iw.Said(thread)()) })
	return got[n-1]
}

// shotFont is the font size the daemon draws a pane of cols columns in:
// the largest, 14 at most and 9 at least, that keeps the picture within
// the 1280 pixels Telegram scales a photo down to (im/front's
// shotOptions).
func shotFont(cols int) float64 {
	size := 14.0
	for size > 9 {
		if w, _ := screenshot.CellSize(screenshot.Options{FontSize: size}); w*cols <= 1280 {
			break
		}
		size--
	}
	return size
}

// expectPicture checks a picture of window win against the pane as tmux
// shows it now: the PNG decodes, is the pane's cells times the cell size
// of the font picked for its width, and has ink in the cells that show
// text and none in the blank ones. It returns the pane's width in cells
// and the picture's in pixels.
func (iw *IMWorld) expectPicture(shot faketelegram.Sent, win string) (cols, width int) {
	GinkgoHelper()
	img, err := png.Decode(bytes.NewReader(shot.Photo))
	Expect(err).NotTo(HaveOccurred(), "the picture decodes as a PNG")
	out, err := iw.Tmux("display-message", "-p", "-t", win, "#{pane_width} #{pane_height}")
	Expect(err).NotTo(HaveOccurred())
	var rows int
	_, err = fmt.Sscan(out, &cols, &rows)
	Expect(err).NotTo(HaveOccurred(), "pane size %q", out)
	cw, ch := screenshot.CellSize(screenshot.Options{FontSize: shotFont(cols)})
	Expect(cw).To(BeNumerically(">", 0))
	b := img.Bounds()
	Expect([]int{b.Dx(), b.Dy()}).To(Equal([]int{cols * cw, rows * ch}), "%dx%d cells of %dx%d pixels", cols, rows, cw, ch)

	screen, err := iw.Tmux("capture-pane", "-p", "-t", win)
	Expect(err).NotTo(HaveOccurred())
	inked, blank := 0, 0
	for row, line := range strings.Split(screen, "\n") {
		if row >= rows {
			break
		}
		runes := []rune(line)
		for col := 0; col < cols; col++ {
			r := ' '
			if col < len(runes) {
				r = runes[col]
			}
			if r > unicode.MaxASCII && r != '\u00a0' {
				break // a wide or drawn character: the columns after it are not the runes'
			}
			if unicode.IsSpace(r) {
				Expect(hasInk(img, col*cw, row*ch, cw, ch)).To(BeFalse(), "blank cell %d,%d has ink; screen:\n%s", col, row, screen)
				blank++
			} else {
				Expect(hasInk(img, col*cw, row*ch, cw, ch)).To(BeTrue(), "cell %d,%d shows %q but has no ink; screen:\n%s", col, row, r, screen)
				inked++
			}
		}
	}
	Expect(inked).To(BeNumerically(">", 20), "the pane shows text; screen:\n%s", screen)
	Expect(blank).To(BeNumerically(">", 20))
	return cols, b.Dx()
}

// hasInk reports whether any pixel of the cell differs from the
// background.
func hasInk(img image.Image, x0, y0, w, h int) bool {
	br, bg, bb, _ := screenshot.DefaultBackground().RGBA()
	for y := y0; y < y0+h; y++ {
		for x := x0; x < x0+w; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if r != br || g != bg || b != bb {
				return true
			}
		}
	}
	return false
}

// expectTypedNext proves that nothing was typed to the thread's fake
// claude since its transcript held want: once the daemon is at rest, one
// more message is sent, and the transcript must hold want and that
// message right after it (the agent takes lines in order, so anything
// typed before would come between).
func (iw *IMWorld) expectTypedNext(d *Daemon, thread int64, want []string) {
	GinkgoHelper()
	iw.Settled(d, thread)
	d.Quiesce()
	iw.TG.Message(imChat, thread, imUser, "and now")
	Eventually(iw.Said(thread)).Should(ContainElement("echo: and now"))
	Expect(iw.UserLines("claude")()).To(Equal(append(want, "and now")))
}

// lastMessage is the JSON of the last message of a Messages API request
// body, for a failure's description.
func lastMessage(body []byte) string {
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		return fmt.Sprintf("(no messages: %v)", err)
	}
	return string(req.Messages[len(req.Messages)-1])
}
