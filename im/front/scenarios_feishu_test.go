package front_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/e2e/fakefeishu"
	"github.com/thatch-run/thatch/internal/testwait"
)

// The Feishu scenarios run the same world (the runtime, tmux, the fake
// agent; the Telegram adapter runs too, so both adapters share one
// daemon) with a Feishu app in webhook mode against e2e/fakefeishu. The
// user's side is played through the fake: events posted to the webhook,
// signed and encrypted, as Feishu posts them; what the user would see is
// read back from the messages the bot made there.

const (
	fsApp   = "cli_scenario"
	fsChat  = "oc_scenario"
	fsUser  = "ou_alice"
	fsToken = "scenario-verification-token"
	fsKey   = "scenario-encrypt-key"
)

// feishuWorld is a world with a Feishu app.
type feishuWorld struct {
	*world
	fs     *fakefeishu.Server
	events int
	// ws: events come over the long connection (mode "ws"), not the
	// webhook.
	ws bool
}

func newFeishuWorld(t *testing.T, tunes ...func(*config.Config)) *feishuWorld {
	fs := fakefeishu.New(fsApp, "scenario-secret")
	t.Cleanup(fs.Close) // after the world's cleanups: the runtime stops first
	fs.AddChat(fakefeishu.Chat{ID: fsChat, Name: "feishu box"})
	w := newWorld(t, func(c *config.Config) {
		c.IM.Feishu = config.Feishu{AppID: fsApp, AppSecret: "scenario-secret", VerificationToken: fsToken,
			EncryptKey: fsKey, BaseURL: fs.URL, Mode: "webhook", Listen: "127.0.0.1:0", Path: "/feishu/events",
			AllowedUsers: []string{fsUser}}
		for _, tune := range tunes {
			tune(c)
		}
	})
	return &feishuWorld{world: w, fs: fs, ws: w.cfg.IM.Feishu.Mode == "ws"}
}

// overTheLongConnection sets the app to mode "ws".
func overTheLongConnection(c *config.Config) { c.IM.Feishu.Mode = "ws" }

var webhookURL = regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+/feishu/events)`)

// poster posts to the webhook of the runtime running now (its address is
// the one its log names last).
func (w *feishuWorld) poster() *fakefeishu.Poster {
	w.t.Helper()
	m := webhookURL.FindAllStringSubmatch(w.logs.String(), -1)
	if len(m) == 0 {
		w.t.Fatal("the log names no Feishu webhook")
	}
	return &fakefeishu.Poster{URL: m[len(m)-1][1], Token: fsToken, EncryptKey: fsKey, AppID: fsApp}
}

// post posts a new event and returns it (plain), to be posted again.
func (w *feishuWorld) post(eventType string, event any) []byte {
	w.t.Helper()
	w.events++
	if w.ws {
		w.push(fmt.Sprintf("ev-%d", w.events), eventType, event)
		return nil
	}
	body := w.poster().Envelope(fmt.Sprintf("ev-%d", w.events), eventType, event)
	w.postAgain(body)
	return body
}

// postAgain posts an event as Feishu delivers it (again): it must be
// answered 200.
func (w *feishuWorld) postAgain(body []byte) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := w.poster().Post(ctx, body)
	if err != nil || a.Status != http.StatusOK {
		w.t.Fatalf("the webhook answered %d %s (%v)", a.Status, a.Body, err)
	}
}

// push sends an event over the long connection, as a card frame for a
// card press, and waits for its answer: 200.
func (w *feishuWorld) push(id, eventType string, event any) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var a fakefeishu.WSAnswer
	var err error
	if eventType == "card.action.trigger" {
		a, err = w.fs.PushCard(ctx, id, event, 1)
	} else {
		a, err = w.fs.PushEvent(ctx, id, eventType, event, 1)
	}
	if err != nil || a.Status != http.StatusOK {
		w.t.Fatalf("the long connection answered %+v (%v)", a, err)
	}
}

// send posts a text message of the user to the chat, @-mentioning the
// bot, and returns the event.
func (w *feishuWorld) send(text string) []byte {
	w.t.Helper()
	w.events++
	id := fmt.Sprintf("om_user_%d", w.events)
	w.fs.Received(fsChat, id)
	return w.post("im.message.receive_v1", fakefeishu.TextMessage(id, fsChat, "group", "", fsUser, "@_user_1 "+text,
		fakefeishu.Mention{Key: "@_user_1", OpenID: w.fs.BotOpenID, Name: "thatch"}))
}

// fsCard is a card the bot sent: its text and buttons.
type fsCard struct {
	id      string
	text    string
	buttons []fsButton
}

type fsButton struct {
	label string
	value map[string]any
}

func readCard(s fakefeishu.Sent) (fsCard, bool) {
	if s.MsgType != "interactive" {
		return fsCard{}, false
	}
	var c struct {
		Elements []struct {
			Text    struct{ Content string }
			Actions []struct {
				Text  struct{ Content string }
				Value map[string]any
			}
		}
	}
	if json.Unmarshal([]byte(s.Content), &c) != nil {
		return fsCard{}, false
	}
	card := fsCard{id: s.MessageID}
	for _, e := range c.Elements {
		card.text += e.Text.Content
		for _, a := range e.Actions {
			card.buttons = append(card.buttons, fsButton{a.Text.Content, a.Value})
		}
	}
	return card, true
}

// said is what the chat shows from the bot, in order: the text of each
// message and card made (not patched, not deleted later).
func (w *feishuWorld) said() []string {
	var out []string
	for _, s := range w.fs.Sent() {
		if s.ChatID != fsChat || (s.Op != "create" && s.Op != "reply") {
			continue
		}
		if c, ok := readCard(s); ok {
			out = append(out, c.text)
		} else {
			out = append(out, s.Text())
		}
	}
	return out
}

func (w *feishuWorld) waitSaid(text string) {
	w.t.Helper()
	testwait.UntilReason(w.t, fmt.Sprintf("the bot to say %q on Feishu", text), func() (bool, string) {
		said := w.said()
		return slices.Contains(said, text), fmt.Sprintf("%q", said)
	})
}

// prompt waits for the newest card with buttons whose text contains want.
func (w *feishuWorld) prompt(want string) fsCard {
	w.t.Helper()
	var found fsCard
	testwait.UntilReason(w.t, fmt.Sprintf("a card %q", want), func() (bool, string) {
		sent := w.fs.Sent()
		for i := len(sent) - 1; i >= 0; i-- {
			if c, ok := readCard(sent[i]); ok && sent[i].Op != "patch" && len(c.buttons) > 0 && strings.Contains(c.text, want) {
				found = c
				return true, ""
			}
		}
		return false, fmt.Sprintf("%q", w.said())
	})
	return found
}

// press presses the card's button whose label contains label.
func (w *feishuWorld) press(c fsCard, label string) {
	w.t.Helper()
	for _, b := range c.buttons {
		if strings.Contains(b.label, label) {
			w.post("card.action.trigger", fakefeishu.CardAction(fsChat, c.id, fsUser, b.value))
			return
		}
	}
	w.t.Fatalf("card %q has no button %q", c.text, label)
}

// setup sets the group up with claude in projects/api, first starting it.
func (w *feishuWorld) setup(first string) {
	w.t.Helper()
	w.send(first)
	w.press(w.prompt("Which agent should run for feishu box?"), "claude")
	w.press(w.prompt("Working directory: "+w.projects), "api")
	w.press(w.prompt("Working directory: "+filepath.Join(w.projects, "api")), "Use this directory")
	w.waitSaid("Session ready!")
}

func (c fsCard) labels() []string {
	var out []string
	for _, b := range c.buttons {
		out = append(out, b.label)
	}
	return out
}

// A Feishu group's first message starts the setup through card buttons,
// with Telegram's labels: the agent, the directory, a window named after
// the group, "Session ready!", and the first message typed into the
// agent, whose reply comes back to the group.
func TestScenarioAFeishuChatIsSetUpThroughCardButtons(t *testing.T) {
	w := newFeishuWorld(t)
	w.send("hello there")

	agents := w.prompt("Which agent should run for feishu box?")
	if got := agents.labels(); !slices.Equal(got, []string{"claude", "codex", "copilot", "mimo", "Existing window"}) {
		t.Fatalf("agents offered: %q", got)
	}
	w.press(agents, "claude")
	top := w.prompt("Working directory: " + w.projects)
	if got := top.labels(); !slices.Equal(got, []string{"📁 api", "📁 docs", "📁 web", "Use this directory"}) {
		t.Fatalf("the browser at the root offers %q", got)
	}
	w.press(top, "api")
	dir := filepath.Join(w.projects, "api")
	w.press(w.prompt("Working directory: "+dir), "Use this directory")

	w.waitSaid("Session ready!")
	w.waitTyped("hello there")
	w.waitSaid("echo: hello there")
	w.quiesce()
	win := w.onlyWindow()
	if win.Name != "feishu box" || win.Dir != dir || win.Dead {
		t.Fatalf("window %+v, want one named after the group, in %s, running", win, dir)
	}
}

// Feishu delivers a message again (after its 200 was lost, and after
// thatch restarted): it is answered 200 each time and typed once.
func TestScenarioAFeishuEventDeliveredAgainIsTypedOnce(t *testing.T) {
	w := newFeishuWorld(t)
	w.setup("first")
	w.waitSaid("echo: first")
	second := w.send("second")
	w.postAgain(second)
	w.waitSaid("echo: second")
	// Quiesced as the Telegram restart scenario is: a stop while the
	// typing effect's result is on its way types the message again after
	// the restart, on either platform (a binding matter, not Feishu's).
	w.quiesce()
	w.stop()
	w.restart()
	w.postAgain(second)
	w.send("third")
	w.waitSaid("echo: third")
	w.quiesce()
	if got := w.typed(); !slices.Equal(got, []string{"first", "second", "third"}) {
		t.Fatalf("the agent took %q, want each message once", got)
	}
}

// The group is renamed (im.chat.updated_v1): the next message waits behind
// the Rename question, and once im.rename_timeout passes the window takes
// the new name and the message is typed.
func TestScenarioAFeishuGroupRenamedAsksAboutTheRename(t *testing.T) {
	w := newFeishuWorld(t)
	w.setup("hi")
	w.waitSaid("echo: hi")
	w.post("im.chat.updated_v1", fakefeishu.ChatUpdated(fsChat, fsUser, "feishu box", "feishu box v2"))
	w.send("after the rename")
	w.prompt(`This thread is now called "feishu box v2"; its session is "feishu box".`)
	w.quiesce()
	if got := w.typed(); !slices.Equal(got, []string{"hi"}) {
		t.Fatalf("the agent took %q while the question was open", got)
	}
	w.clock.Advance(w.cfg.IM.RenameTimeout)
	w.waitSaid("echo: after the rename")
	w.quiesce()
	if win := w.onlyWindow(); win.Name != "feishu box v2" {
		t.Fatalf("window %+v, want it renamed after the group", win)
	}
}

// The group is disbanded: the binding ends, `thatch status` says why and
// that the window was kept (im.on_close's default), and nothing more is
// sent to the chat.
func TestScenarioAFeishuGroupDisbandedEndsItsBindingAndKeepsTheWindow(t *testing.T) {
	w := newFeishuWorld(t)
	w.setup("hi")
	w.waitSaid("echo: hi")
	w.quiesce()
	before := len(w.fs.Sent())
	w.post("im.chat.disbanded_v1", fakefeishu.ChatEvent(fsChat, "ou_owner_not_allowed"))
	w.quiesce()
	views := w.bindings()
	if len(views) != 1 || views[0].State != "ended" || views[0].Ended != "disbanded; window kept" {
		t.Fatalf("bindings %+v, want the group's ended, its window kept", views)
	}
	if win := w.onlyWindow(); win.Dead {
		t.Fatalf("window %+v, want it kept running", win)
	}
	if n := len(w.fs.Sent()); n != before {
		t.Fatalf("%d messages sent to a disbanded group", n-before)
	}
}

// With im.on_close = "kill", a chat whose sends are answered 230002 (the
// bot is not in it any more) ends its binding and its window is killed;
// the reply that could not go out is not tried again.
func TestScenarioAFeishuChatGoneOnSendEndsTheBindingAndKillsTheWindow(t *testing.T) {
	w := newFeishuWorld(t, func(c *config.Config) { c.IM.OnClose = config.OnCloseKill })
	w.setup("hi")
	w.waitSaid("echo: hi")
	w.quiesce()
	w.fs.EndChat(fsChat)
	w.send("are you there")
	testwait.UntilReason(t, "the binding to end", func() (bool, string) {
		views := w.bindings()
		return len(views) == 1 && views[0].State == "ended", fmt.Sprintf("%+v", views)
	})
	w.quiesce()
	if v := w.bindings()[0]; !strings.Contains(v.Ended, "230002") || !strings.HasSuffix(v.Ended, "; window killed") {
		t.Fatalf("status says %q, want the 230002 and the window killed", v.Ended)
	}
	if wins := w.windows(); len(wins) != 0 {
		t.Fatalf("windows %+v, want the bound one killed", wins)
	}
	w.clock.Advance(time.Minute) // past the outbox's retry: nothing is tried again
	w.quiesce()
	if n := w.fs.GoneAnswers(fsChat); n != 1 {
		t.Fatalf("%d sends to the gone chat, want the one that found it gone", n)
	}
}

// Over the long connection (mode "ws", no public address): the setup's
// card presses arrive as card frames, the first message is typed, the
// reply comes back, and an event Feishu pushes again is typed once.
func TestScenarioOverTheLongConnectionAFeishuChatIsSetUpAndTypedOnce(t *testing.T) {
	w := newFeishuWorld(t, overTheLongConnection)
	w.setup("over ws")
	w.waitSaid("echo: over ws")
	w.fs.Received(fsChat, "om_again")
	again := fakefeishu.TextMessage("om_again", fsChat, "group", "", fsUser, "once only")
	w.push("ev-again", "im.message.receive_v1", again)
	w.push("ev-again", "im.message.receive_v1", again)
	w.waitSaid("echo: once only")
	w.quiesce()
	if got := w.typed(); !slices.Equal(got, []string{"over ws", "once only"}) {
		t.Fatalf("the agent took %q, want each message once", got)
	}
}

// On Feishu a turn shows live as a card, patched to its summary at the
// end; and no key the agent printed is in anything sent to Feishu.
func TestScenarioAFeishuTurnShowsLiveAsACardAndNoKeyIsSent(t *testing.T) {
	w := newFeishuWorld(t)
	const key = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
	w.setup("use " + key)
	w.waitSaid("echo: use [redacted:github_token]")
	w.send("slowtool")
	w.waitSaid("echo: slowtool")
	testwait.UntilReason(t, "the live card patched to its summary", func() (bool, string) {
		for _, s := range w.fs.Sent() {
			if s.Op == "patch" && strings.Contains(s.Content, "✓ 1 tool call") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", w.fs.Sent())
	})
	w.quiesce()
	for _, s := range w.fs.Sent() {
		if strings.Contains(s.Content, key) || strings.Contains(s.Content, key[4:]) {
			t.Fatalf("the key reached Feishu: %+v", s)
		}
	}
}
