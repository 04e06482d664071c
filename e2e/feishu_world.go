package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/fakefeishu"
)

// The Feishu specs' app, its one allowed user, and the group chat the
// specs set up.
const (
	fsApp    = "cli_e2e"
	fsSecret = "e2e-app-secret"
	fsToken  = "e2e-verification-token"
	fsKey    = "e2e-encrypt-key"
	fsUser   = "ou_e2e_user"
	fsChat   = "oc_e2e_box"
	fsName   = "feishu box"
	fsPath   = "/feishu/events"
)

// FeishuWorld is an IMWorld whose daemon also runs a Feishu app in
// webhook mode against a fake Open API: the user's side is played by
// posting events to the daemon's webhook, signed and encrypted as Feishu
// posts them, and what the user sees is read back from the messages the
// bot made in the fake. The tmux server, the fake agents and their
// transcripts are the IMWorld's.
type FeishuWorld struct {
	*IMWorld
	FS *fakefeishu.Server
	// Webhook is the URL of the daemon's webhook: a loopback port picked
	// free when the world was made, the same across restarts, as the
	// address saved in Feishu's settings is.
	Webhook string

	// WS: the daemon receives over the long connection (mode "ws"), and
	// the user's side pushes events down it instead of posting them.
	WS bool

	events atomic.Int64
}

// NewFeishuWSWorld makes a world with the Feishu app alone, receiving
// over the long connection (mode "ws"): no webhook, no public address.
func NewFeishuWSWorld(extra ...string) *FeishuWorld {
	fw := newFeishuWorld(false, extra)
	fw.WS = true
	cfg, err := os.ReadFile(fw.ThatchConfig)
	Expect(err).NotTo(HaveOccurred())
	cfg = []byte(strings.Replace(string(cfg), `mode = "webhook"`, `mode = "ws"`, 1))
	Expect(os.WriteFile(fw.ThatchConfig, cfg, 0o644)).To(Succeed())
	return fw
}

// NewFeishuWorld makes a world with the Feishu app alone (no Telegram
// bot); extra lines go into the [im] section.
func NewFeishuWorld(extra ...string) *FeishuWorld {
	return newFeishuWorld(false, extra)
}

// NewFeishuTelegramWorld makes a world whose daemon runs both adapters:
// the IMWorld's Telegram bot and the Feishu app.
func NewFeishuTelegramWorld(extra ...string) *FeishuWorld {
	return newFeishuWorld(true, extra)
}

func newFeishuWorld(telegram bool, extra []string) *FeishuWorld {
	iw := newIMWorld("", telegram, extra)
	listen := fmt.Sprintf("127.0.0.1:%d", freePort())
	fw := &FeishuWorld{IMWorld: iw, FS: fakefeishu.New(fsApp, fsSecret), Webhook: "http://" + listen + fsPath}
	DeferCleanup(fw.FS.Close)
	fw.FS.AddChat(fakefeishu.Chat{ID: fsChat, Name: fsName})
	fw.appendConfig(
		"[im.feishu]",
		"app_id = "+quote(fsApp),
		"app_secret = "+quote(fsSecret),
		"verification_token = "+quote(fsToken),
		"encrypt_key = "+quote(fsKey),
		"base_url = "+quote(fw.FS.URL),
		`mode = "webhook"`,
		"listen = "+quote(listen),
		"path = "+quote(fsPath),
		"allowed_users = ["+quote(fsUser)+"]",
	)
	return fw
}

// appendConfig adds lines at the end of the daemon's config file.
func (fw *FeishuWorld) appendConfig(lines ...string) {
	GinkgoHelper()
	cfg, err := os.ReadFile(fw.ThatchConfig)
	Expect(err).NotTo(HaveOccurred())
	cfg = append(cfg, strings.Join(lines, "\n")+"\n"...)
	Expect(os.WriteFile(fw.ThatchConfig, cfg, 0o644)).To(Succeed())
}

// Start starts the daemon and waits until its webhook serves (the front
// end's health names it), as Feishu's first delivery would find it.
func (fw *FeishuWorld) Start() *Daemon {
	GinkgoHelper()
	d := StartDaemon(fw.World)
	Eventually(func() (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var st struct {
			FrontEnds struct {
				IM struct {
					Health *struct {
						State string `json:"state"`
					} `json:"health"`
				} `json:"im"`
			} `json:"frontEnds"`
		}
		if err := d.Client().Do(ctx, "GET", "/v1/status", nil, &st); err != nil {
			return "", err
		}
		if st.FrontEnds.IM.Health == nil {
			return "", nil
		}
		return st.FrontEnds.IM.Health.State, nil
	}).Should(ContainSubstring(fw.receiving()), "the Feishu adapter never came up")
	return d
}

// receiving is what the front end's health says once events can come.
func (fw *FeishuWorld) receiving() string {
	if fw.WS {
		return "receiving Feishu events over the long connection"
	}
	return "receiving Feishu events on " + fw.Webhook
}

// Poster posts to the daemon's webhook as Feishu does.
func (fw *FeishuWorld) Poster() *fakefeishu.Poster {
	return &fakefeishu.Poster{URL: fw.Webhook, Token: fsToken, EncryptKey: fsKey, AppID: fsApp,
		Client: &http.Client{Timeout: 60 * time.Second}}
}

// NextEventID is a new event id, as Feishu gives each event.
func (fw *FeishuWorld) NextEventID() string {
	return fmt.Sprintf("ev_e2e_%d", fw.events.Add(1))
}

// Event builds a new event (plain, not yet posted) of the given type.
func (fw *FeishuWorld) Event(eventType string, event any) []byte {
	return fw.Poster().Envelope(fw.NextEventID(), eventType, event)
}

// TextEvent builds the event of the user's text message to chatID,
// @-mentioning the bot as a group message must; the fake learns the
// message, so that the bot can reply to it.
func (fw *FeishuWorld) TextEvent(chatID, text string) []byte {
	id := fw.NextEventID()
	msg := "om_user_" + strings.TrimPrefix(id, "ev_e2e_")
	fw.FS.Received(chatID, msg)
	return fw.Poster().Envelope(id, "im.message.receive_v1",
		fakefeishu.TextMessage(msg, chatID, "group", "", fsUser, "@_user_1 "+text,
			fakefeishu.Mention{Key: "@_user_1", OpenID: fw.FS.BotOpenID, Name: "thatch"}))
}

// Deliver posts an event (again, when it was posted before) and expects
// the webhook's 200: the daemon took it.
func (fw *FeishuWorld) Deliver(plain []byte) {
	GinkgoHelper()
	a, err := fw.Post(plain)
	Expect(err).NotTo(HaveOccurred())
	Expect(a.Status).To(Equal(http.StatusOK), "the webhook answered %d %s", a.Status, a.Body)
}

// Post posts an event as Feishu does and returns the webhook's answer;
// in a WS world it pushes the event down the long connection (a card
// press as a "card" frame) and returns the frame's answer.
func (fw *FeishuWorld) Post(plain []byte) (fakefeishu.Answer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if !fw.WS {
		return fw.Poster().Post(ctx, plain)
	}
	var env struct {
		Header struct {
			EventType string `json:"event_type"`
		} `json:"header"`
	}
	if err := json.Unmarshal(plain, &env); err != nil {
		return fakefeishu.Answer{}, err
	}
	typ := "event"
	if env.Header.EventType == "card.action.trigger" {
		typ = "card"
	}
	a, err := fw.FS.PushFrame(ctx, typ, plain, 1)
	return fakefeishu.Answer{Status: a.Status, Body: string(a.Data)}, err
}

// Message posts the user's text message to chatID and returns the event,
// to be delivered again.
func (fw *FeishuWorld) Message(chatID, text string) []byte {
	GinkgoHelper()
	ev := fw.TextEvent(chatID, text)
	fw.Deliver(ev)
	return ev
}

// Rename posts the chat's rename (im.chat.updated_v1) by the user; the
// chat API answers the new name from now on.
func (fw *FeishuWorld) Rename(chatID, before, after string) {
	GinkgoHelper()
	fw.FS.AddChat(fakefeishu.Chat{ID: chatID, Name: after})
	fw.Deliver(fw.Event("im.chat.updated_v1", fakefeishu.ChatUpdated(chatID, fsUser, before, after)))
}

// Card is an interactive card the bot made: its text and its buttons.
type Card struct {
	ID      string
	Text    string
	Buttons []CardButton
}

// CardButton is a card's button: its label and the value a press sends
// back.
type CardButton struct {
	Label string
	Value map[string]any
}

// readCard reads an interactive message's card (ok is false for another
// type).
func readCard(s fakefeishu.Sent) (Card, bool) {
	if s.MsgType != "interactive" {
		return Card{}, false
	}
	var c struct {
		Elements []struct {
			Text struct {
				Content string `json:"content"`
			} `json:"text"`
			Actions []struct {
				Text struct {
					Content string `json:"content"`
				} `json:"text"`
				Value map[string]any `json:"value"`
			} `json:"actions"`
		} `json:"elements"`
	}
	if json.Unmarshal([]byte(s.Content), &c) != nil {
		return Card{}, false
	}
	card := Card{ID: s.MessageID}
	for _, e := range c.Elements {
		card.Text += e.Text.Content
		for _, a := range e.Actions {
			card.Buttons = append(card.Buttons, CardButton{a.Text.Content, a.Value})
		}
	}
	return card, true
}

// Said returns a poll of what the chat shows from the bot, in order: the
// text of each message and card it made (patches and deletes are not new
// messages).
func (fw *FeishuWorld) Said(chatID string) func() []string {
	return func() []string {
		var out []string
		for _, s := range fw.FS.Sent() {
			if s.ChatID != chatID || (s.Op != "create" && s.Op != "reply") {
				continue
			}
			if c, ok := readCard(s); ok {
				out = append(out, c.Text)
			} else {
				out = append(out, s.Text())
			}
		}
		return out
	}
}

// Echoes returns the fake agents' replies ("echo: ...") the chat got, in
// order.
func (fw *FeishuWorld) Echoes(chatID string) []string { return echoes(fw.Said(chatID)()) }

// Prompt waits for the newest card with buttons in the chat whose text
// contains want, and returns it.
func (fw *FeishuWorld) Prompt(chatID, want string) Card {
	GinkgoHelper()
	var found Card
	Eventually(func() bool {
		sent := fw.FS.Sent()
		for i := len(sent) - 1; i >= 0; i-- {
			s := sent[i]
			if s.ChatID != chatID || (s.Op != "create" && s.Op != "reply") {
				continue
			}
			if c, ok := readCard(s); ok && len(c.Buttons) > 0 && strings.Contains(c.Text, want) {
				found = c
				return true
			}
		}
		return false
	}).Should(BeTrue(), func() string {
		return fmt.Sprintf("no card %q in chat %s; the bot said %q", want, chatID, fw.Said(chatID)())
	})
	return found
}

// Press presses the card's button whose label contains label, as the
// user (card.action.trigger), and returns the event, to be delivered
// again.
func (fw *FeishuWorld) Press(chatID string, c Card, label string) []byte {
	GinkgoHelper()
	for _, b := range c.Buttons {
		if strings.Contains(b.Label, label) {
			ev := fw.Event("card.action.trigger", fakefeishu.CardAction(chatID, c.ID, fsUser, b.Value))
			fw.Deliver(ev)
			return ev
		}
	}
	Fail(fmt.Sprintf("card %q has no button %q: %v", c.Text, label, c.Buttons))
	return nil
}

// Setup sets up the chat (named name in the fake) with agent in project
// (a directory under Projects), its first message first, through the
// card buttons, up to "Session ready!".
func (fw *FeishuWorld) Setup(chatID, name, agent, project, first string) {
	GinkgoHelper()
	fw.Message(chatID, first)
	fw.Press(chatID, fw.Prompt(chatID, "Which agent should run for "+name), agent)
	fw.Press(chatID, fw.Prompt(chatID, "Working directory: "+fw.Projects), project)
	fw.Press(chatID, fw.Prompt(chatID, "Working directory: "+filepath.Join(fw.Projects, project)), "Use this directory")
	Eventually(fw.Said(chatID)).Should(ContainElement("Session ready!"))
}

// Settled is IMWorld.Settled for a Feishu chat's binding.
func (fw *FeishuWorld) Settled(d *Daemon, chatID string) {
	GinkgoHelper()
	SettledKey(d, "fs:"+chatID)
}
