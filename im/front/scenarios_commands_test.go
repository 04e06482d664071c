package front_test

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/e2e/faketelegram"
	imchat "github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/im/screenshot"
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

// /screenshot of a bound window: a PNG of the pane goes to the chat,
// one cell per character (the pane is 80x24), its text drawn where the
// pane shows it, with Refresh, Esc, Enter and Ctrl-C under it; Refresh
// sends a new one.
func TestScenarioScreenshotShowsThePane(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("shot", "api", "first")
	w.waitSaid(thread, "echo: first")
	w.send(thread, "/screenshot")
	shot := w.photo(thread, 1)
	img, cw, ch := decodeShot(t, shot)
	if b := img.Bounds(); b.Dx() != 80*cw || b.Dy() != 24*ch {
		t.Fatalf("picture %v, want 80x24 cells of %dx%d", b, cw, ch)
	}
	screen := strings.Split(w.tmux("capture-pane", "-p", "-t", w.onlyWindow().ID), "\n")
	for row, line := range screen[:min(len(screen), 24)] {
		for col, r := range []rune(line) {
			if col >= 80 {
				break
			}
			if inked := hasInk(img, col*cw, row*ch, cw, ch); inked == unicode.IsSpace(r) {
				t.Fatalf("cell %d,%d shows %q but the picture has ink=%v there", col, row, r, inked)
			}
		}
	}
	if got := labels(faketelegram.Sent{Buttons: shot.Buttons}); !slices.Equal(got, []string{"Refresh", "Esc", "Enter", "Ctrl-C"}) {
		t.Fatalf("buttons under the picture: %q", got)
	}
	w.press(thread, shot, "Refresh")
	w.photo(thread, 2)
}

// photo waits for the thread's nth picture.
func (w *world) photo(thread int64, n int) faketelegram.Sent {
	w.t.Helper()
	var got []faketelegram.Sent
	testwait.UntilReason(w.t, fmt.Sprintf("picture %d in the thread", n), func() (bool, string) {
		got = got[:0]
		for _, s := range w.tg.Sent() {
			if s.Method == "sendPhoto" && s.ThreadID == thread {
				got = append(got, s)
			}
		}
		return len(got) >= n, fmt.Sprintf("%q", w.said(thread))
	})
	return got[n-1]
}

// hasInk reports whether any pixel of the cell differs from the
// background.
// decodeShot decodes a /screenshot picture, and gives the size of its
// cells.
func decodeShot(t *testing.T, shot faketelegram.Sent) (img image.Image, cw, ch int) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot.Photo))
	if err != nil {
		t.Fatalf("the picture does not decode: %v", err)
	}
	cw, ch = screenshot.CellSize(screenshot.Options{FontSize: 14})
	return img, cw, ch
}

func hasInk(img image.Image, x0, y0, w, h int) bool {
	bg := screenshot.DefaultBackground()
	for y := y0; y < y0+h; y++ {
		for x := x0; x < x0+w; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			br, bgc, bb, _ := bg.RGBA()
			if r != br || g != bgc || b != bb {
				return true
			}
		}
	}
	return false
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

// The agent stops on a permission dialog: the chat gets its question and
// one button per option; a press sends that option's keys (the digit,
// then Enter), the agent goes on with it, and the buttons go.
func TestScenarioAnAgentsPromptIsAnsweredFromTheChat(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("perm", "api", "first")
	w.waitSaid(thread, "echo: first")
	w.send(thread, "ask npm test")
	m := w.prompt(thread, "Do you want to proceed?")
	if got := labels(m); len(got) != 3 || got[0] != "1. Yes" || !strings.HasPrefix(got[1], "2. Yes, and don’t ask again") || got[2] != "3. No" {
		t.Fatalf("buttons %q", got)
	}
	if !strings.Contains(m.Text, "npm test") || !strings.Contains(m.Text, "2. Yes, and don’t ask again for: npm test *") {
		t.Fatalf("the question is not shown whole: %q", m.Text)
	}
	w.press(thread, m, "3. No")
	w.waitSaid(thread, "echo: answered 3 to npm test")
	testwait.UntilReason(t, "the prompt's buttons cleared", func() (bool, string) {
		for _, s := range w.tg.Sent() {
			if s.Method == "editMessageReplyMarkup" && s.MessageID == m.MessageID && len(s.Buttons) == 0 {
				return true, ""
			}
		}
		return false, "not cleared"
	})
	// A press of the answered prompt reaches nothing.
	w.press(thread, m, "1. Yes")
	w.quiesce()
	if got := w.typed(); slices.Contains(got, "answer 1") {
		t.Fatalf("an answered prompt's button reached the agent: %q", got)
	}
}

// With im.live = "off" and im.show_tools, each tool call the agent's
// transcript records shows as one line before the reply; without
// show_tools, none does.
func TestScenarioToolCallsShowAsOneLineWhenAskedFor(t *testing.T) {
	w := newWorld(t, func(c *config.Config) { c.IM.ShowTools, c.IM.Live = true, config.LiveOff })
	thread := w.setup("tools", "api", "first")
	w.waitSaid(thread, "echo: first")
	w.send(thread, "tool")
	w.waitSaid(thread, "echo: tool")
	said := w.said(thread)
	if i := slices.Index(said, "▸ Bash: ls"); i < 0 || i > slices.Index(said, "echo: tool") {
		t.Fatalf("said %q, want the tool line before the reply", said)
	}

	quiet := newWorld(t, func(c *config.Config) { c.IM.Live = config.LiveOff })
	thread = quiet.setup("tools", "api", "tool")
	quiet.waitSaid(thread, "echo: tool")
	quiet.quiesce()
	if slices.Contains(quiet.said(thread), "▸ Bash: ls") {
		t.Fatalf("a tool line was shown by default: %q", quiet.said(thread))
	}
}

// A prompt answered in the terminal loses its buttons, although the
// agent's reply comes at once; the same dialog shown again is a new
// prompt with buttons of its own, and the old ones reach nothing.
func TestScenarioAPromptAnsweredInTheTerminalLosesItsButtons(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("term", "api", "first")
	w.waitSaid(thread, "echo: first")
	w.send(thread, "ask make deploy")
	old := w.prompt(thread, "Do you want to proceed?")
	win := w.onlyWindow().ID
	w.tmux("send-keys", "-t", win, "-l", "3")
	w.tmux("send-keys", "-t", win, "Enter")
	w.waitSaid(thread, "echo: answered 3 to make deploy")
	testwait.UntilReason(t, "the answered prompt's buttons cleared", func() (bool, string) {
		for _, s := range w.tg.Sent() {
			if s.Method == "editMessageReplyMarkup" && s.MessageID == old.MessageID && len(s.Buttons) == 0 {
				return true, ""
			}
		}
		return false, "not cleared"
	})
	// A press from a client that still shows the buttons reaches
	// nothing, and the one who pressed is told why.
	w.press(thread, old, "1. Yes")
	testwait.UntilReason(t, "the stale press answered", func() (bool, string) {
		told := w.said(thread)
		for _, s := range w.tg.Sent() {
			if s.Method == "answerCallbackQuery" && s.ThreadID == thread {
				told = append(told, s.Text)
			}
		}
		return slices.Contains(told, "That prompt is no longer open."), fmt.Sprintf("%q", told)
	})
	// Nor does it answer the same dialog asked again.
	w.send(thread, "ask make deploy")
	testwait.UntilReason(t, "the same dialog asked again", func() (bool, string) {
		n := 0
		for _, s := range w.said(thread) {
			if strings.Contains(s, "Do you want to proceed?") {
				n++
			}
		}
		return n == 2, fmt.Sprintf("%q", w.said(thread))
	})
	w.press(thread, old, "1. Yes")
	w.quiesce()
	if got := w.typed(); slices.Contains(got, "1") || slices.Contains(got, "answer 1") {
		t.Fatalf("the old prompt's button answered the new dialog: %q", got)
	}
}

// A key the agent printed never leaves for the chat: the reply, /history
// and the /screenshot picture show the marker instead, no request the Bot
// API received holds the key, and thatch's status counts it.
func TestScenarioNoSecretLeavesForTheChat(t *testing.T) {
	w := newWorld(t, nil)
	const key = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
	const marker = "[redacted:github_token]"
	thread := w.setup("secrets", "api", "use "+key)
	w.waitSaid(thread, "echo: use "+marker)
	w.send(thread, "/history 1")
	w.waitSaid(thread, "▶ use "+marker+"\necho: use "+marker)
	w.send(thread, "/screenshot")
	img, cw, ch := decodeShot(t, w.photo(thread, 1))
	screen := strings.Split(w.tmux("capture-pane", "-p", "-t", w.onlyWindow().ID), "\n")
	drawn := 0
	for row, line := range screen[:min(len(screen), 24)] {
		if !strings.Contains(line, key) {
			continue
		}
		drawn++
		for col, r := range []rune(strings.ReplaceAll(line, key, marker)) {
			if col >= 80 {
				break
			}
			if inked := hasInk(img, col*cw, row*ch, cw, ch); inked == unicode.IsSpace(r) {
				t.Fatalf("row %d, cell %d: the picture does not show %q there (ink=%v): the key was drawn", row, col, r, inked)
			}
		}
	}
	if drawn == 0 {
		t.Fatalf("the pane shows no key to mask:\n%s", strings.Join(screen, "\n"))
	}
	w.quiesce()
	for _, r := range w.tg.Requests() {
		if strings.Contains(r, key) || strings.Contains(r, key[4:]) {
			t.Fatalf("the key reached the Bot API: %s", r)
		}
	}
	st, err := w.rt.StatusReport()
	if err != nil {
		t.Fatal(err)
	}
	masked, _ := st.FrontEnds["im"].Details["maskedSecrets"].(map[string]uint64)
	if masked["github_token"] < 3 {
		t.Fatalf("status counts %v masked, want the reply's, the history's and the picture's github_token", masked)
	}
}

// A turn with a tool call shows live: one message, sent silently, lists
// the call with its outcome; the answer goes out once, as its own message
// (the one that notifies); the live message then shrinks to a summary. A
// turn that only answers is just its answer.
func TestScenarioATurnShowsLiveThenItsAnswerOnce(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("live", "api", "first")
	w.waitSaid(thread, "echo: first")
	w.send(thread, "slowtool")
	w.waitSaid(thread, "echo: slowtool")
	var live faketelegram.Sent
	testwait.UntilReason(t, "the live message's summary", func() (bool, string) {
		for _, s := range w.tg.Sent() {
			if s.Method == "editMessageText" && strings.HasPrefix(s.Text, "✓ 1 tool call") {
				live = s
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", w.tg.Sent())
	})
	w.quiesce()
	var first faketelegram.Sent
	for _, s := range w.tg.Messages(chat, thread) {
		if s.MessageID == live.MessageID {
			first = s
		}
	}
	if !first.Silent || !strings.HasPrefix(first.Text, "▸ Bash: ls\n") || !strings.Contains(first.Text, "⏳ working") {
		t.Fatalf("the live message was sent as %+v, want it silent with the running tool line", first)
	}
	said := w.said(thread)
	if got := w.count(thread, "echo: slowtool"); got != 1 {
		t.Fatalf("the answer was said %d times: %q", got, said)
	}
	for _, s := range w.tg.Messages(chat, thread) {
		if visible(s) == "echo: slowtool" && s.Silent {
			t.Fatal("the answer was sent silently: it is the one message of the turn that notifies")
		}
	}
	if slices.Contains(said, "▸ Bash: ls") {
		t.Fatalf("the tool call was said as a message of its own: %q", said)
	}
}

// /usage answers from the transcript: the fake agent records one token in
// and one out for each message (a tool turn's two lines are one message);
// the model it names has no price, so the cost is unknown, not $0.
func TestScenarioUsageAnswersFromTheTranscript(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("usage", "api", "first")
	w.waitSaid(thread, "echo: first")
	w.send(thread, "tool")
	w.waitSaid(thread, "echo: tool")
	w.send(thread, "/usage")
	w.waitSaid(thread, "claude's session (fakeagent), from its transcript:\n"+
		"tokens in 2 · out 2 · from cache 0\n"+
		"context in use: 1 of 200,000 (0%)\n"+
		"estimated cost: unknown (no price for this model)")
	if slices.Contains(w.typed(), "/usage") {
		t.Fatal("/usage was typed to the agent")
	}
}

// im.prices gives /usage a price for a model the built-in list does not
// know: the fake agent's two messages of one token in and one out each.
func TestScenarioUsageCostsAModelAtIMPrices(t *testing.T) {
	w := newWorld(t, func(c *config.Config) { c.IM.Prices = []string{"fakeagent=1000000/2000000"} })
	thread := w.setup("priced", "api", "first")
	w.waitSaid(thread, "echo: first")
	w.send(thread, "tool")
	w.waitSaid(thread, "echo: tool")
	w.send(thread, "/usage")
	w.waitSaid(thread, "claude's session (fakeagent), from its transcript:\n"+
		"tokens in 2 · out 2 · from cache 0\n"+
		"context in use: 1 of 200,000 (0%)\n"+
		"estimated cost: $6.00 (at list prices or im.prices: an estimate, not a bill)")
}

// /board pins one message in the group's General topic that lists every
// thread with its agent and state; it is edited as states change (a
// thread unbound shows as ended, and why), and after a restart the same
// pinned message is edited, not a new one sent.
func TestScenarioTheBoardListsEveryThreadAndSurvivesARestart(t *testing.T) {
	w := newWorld(t, nil)
	alpha := w.setup("alpha", "api", "one")
	w.waitSaid(alpha, "echo: one")
	beta := w.setup("beta", "web", "two")
	w.waitSaid(beta, "echo: two")
	w.send(alpha, "/board")
	var board faketelegram.Sent
	testwait.UntilReason(t, "the board pinned", func() (bool, string) {
		pinned := w.tg.Pinned(chat)
		for _, s := range w.tg.Sent() {
			if s.Method == "sendMessage" && s.MessageID == pinned && pinned != 0 {
				board = s
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", w.tg.Sent())
	})
	if board.ThreadID != 0 || !board.Silent || !strings.HasPrefix(board.Text, "📋 Sessions of this chat") ||
		!strings.Contains(board.Text, "• alpha — claude: ") || !strings.Contains(board.Text, "• beta — claude: ") {
		t.Fatalf("the board: %+v", board)
	}
	w.quiesce()
	w.stop()
	w.restart()
	w.send(alpha, "/board")
	w.send(beta, "/unbind")
	w.waitSaid(beta, "This thread's binding ended; window beta keeps running. Send a message to set up a new one.")
	w.clock.Advance(time.Minute)
	testwait.UntilReason(t, "the board edited", func() (bool, string) {
		for _, s := range w.tg.Sent() {
			if s.Method == "editMessageText" && s.MessageID == board.MessageID && strings.Contains(s.Text, "• alpha") && strings.Contains(s.Text, "• beta — claude: ended: unbound") {
				return true, s.Text
			}
		}
		return false, fmt.Sprintf("%+v", w.tg.Sent())
	})
	boards := 0
	for _, s := range w.tg.Sent() {
		if s.Method == "sendMessage" && strings.HasPrefix(s.Text, "📋") {
			boards++
		}
	}
	if boards != 1 {
		t.Fatalf("%d boards were sent, want the one, edited", boards)
	}
}

// /remember keeps a fact in the memory store and /recall finds it, with a
// button that shows it whole; neither is typed to the agent, and a fact
// holding a secret is refused with its kind, never echoed.
func TestScenarioRecallAndRememberAnswerFromTheMemoryWithoutTheAgent(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("memory", "api", "first")
	w.waitSaid(thread, "echo: first")
	w.send(thread, "/recall deploy")
	w.waitSaid(thread, "No memory matches “deploy” in global.")
	w.send(thread, "/remember Staging deploys with make ship; production needs a tag first")
	w.waitSaid(thread, "Kept in global as “Staging deploys with make ship; production needs a tag first”.")
	key := "ghp_" + strings.Repeat("Ab1", 12)
	w.send(thread, "/remember the deploy token is "+key)
	testwait.UntilReason(t, "the secret refused", func() (bool, string) {
		for _, s := range w.said(thread) {
			if strings.HasPrefix(s, "Not kept: ") {
				return !strings.Contains(s, key), s
			}
		}
		return false, fmt.Sprintf("%q", w.said(thread))
	})
	w.send(thread, "/recall how do we deploy to staging")
	m := w.prompt(thread, "Memories for “how do we deploy to staging”:")
	if !strings.Contains(m.Text, "1. Staging deploys with make ship; production needs a tag first (global)") {
		t.Fatalf("the recall did not list the memory: %q", m.Text)
	}
	w.press(thread, m, "1")
	w.waitSaid(thread, "Staging deploys with make ship; production needs a tag first (global, confidence 5/10, updated "+
		time.Now().UTC().Format("2006-01-02")+")\n\nStaging deploys with make ship; production needs a tag first")
	// A short slug fits the button's data as it is; the long one above
	// went by a hash of its store and slug.
	w.send(thread, "/remember Lint with make lint")
	w.waitSaid(thread, "Kept in global as “Lint with make lint”.")
	w.send(thread, "/recall lint")
	m = w.prompt(thread, "Memories for “lint”:")
	if b := m.Buttons[0][0].Data; !strings.Contains(b, "lint-with-make-lint") {
		t.Fatalf("the short memory's button is %q; want its slug", b)
	}
	w.press(thread, m, "1")
	w.waitSaid(thread, "Lint with make lint (global, confidence 5/10, updated "+time.Now().UTC().Format("2006-01-02")+")\n\nLint with make lint")
	for _, typed := range w.typed() {
		if strings.Contains(typed, "recall") || strings.Contains(typed, "remember") || strings.Contains(typed, "ghp_") {
			t.Fatalf("a memory command was typed to the agent: %q", w.typed())
		}
	}
}

// An agent whose im.agents.NAME.mode is a slash command gets it typed on
// /mode (codex's /approvals opens its dialog, which comes to the chat as
// buttons); one whose mode is off is told so, and nothing is typed.
func TestScenarioModeTypesTheAgentsConfiguredCommand(t *testing.T) {
	mode := "/permissions"
	w := newWorld(t, func(c *config.Config) { c.IM.Agents.Claude.Mode = mode })
	thread := w.setup("modes", "api", "hello")
	w.waitTyped("hello")
	w.send(thread, "/mode")
	w.waitTyped("hello", "/permissions")

	w.stop()
	mode = config.ModeOff
	w.start()
	w.send(thread, "/mode plan")
	w.waitSaid(thread, "claude has no permission modes thatch can switch (im.agents.claude.mode).")
	w.quiesce()
	if got := w.typed(); !slices.Equal(got, []string{"hello", "/permissions"}) {
		t.Fatalf("the agent took %q after /mode with its mode off", got)
	}
}
