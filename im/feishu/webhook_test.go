package feishu_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/thatch-run/thatch/e2e/fakefeishu"
	"github.com/thatch-run/thatch/im/feishu"
)

const (
	vtoken = "v-token"
	ekey   = "e-key"
)

type got struct {
	id      string
	ev      feishu.Event
	created time.Time
}

// hook starts a webhook on 127.0.0.1 that records what its handler got;
// fail makes the handler answer an error.
type hook struct {
	url  string
	mu   sync.Mutex
	got  []got
	fail error
}

func (h *hook) events() []got {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]got(nil), h.got...)
}

func startHook(t *testing.T, encryptKey string) *hook {
	t.Helper()
	h := &hook{}
	w, err := feishu.NewWebhook(feishu.Options{VerificationToken: vtoken, EncryptKey: encryptKey}, "ou_bot",
		func(_ context.Context, hd feishu.EventHeader, ev feishu.Event) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.fail != nil {
				return h.fail
			}
			h.got = append(h.got, got{hd.ID, ev, hd.Created})
			return nil
		}, hclog.New(&hclog.LoggerOptions{Output: testWriter{t}}), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(w) // httptest binds 127.0.0.1
	t.Cleanup(srv.Close)
	h.url = srv.URL + "/feishu/events"
	return h
}

func post(t *testing.T, p *fakefeishu.Poster, body []byte) fakefeishu.Answer {
	t.Helper()
	a, err := p.Post(ctxFor(t, 10*time.Second), body)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestTheChallengeIsAnsweredOnlyWithTheToken(t *testing.T) {
	for _, key := range []string{"", ekey} {
		h := startHook(t, key)
		p := &fakefeishu.Poster{URL: h.url, Token: vtoken, EncryptKey: key}
		a := post(t, p, p.Challenge("ch-1"))
		var body struct{ Challenge string }
		if a.Status != http.StatusOK || json.Unmarshal([]byte(a.Body), &body) != nil || body.Challenge != "ch-1" {
			t.Fatalf("key %q: challenge answered %d %s", key, a.Status, a.Body)
		}
		p.Token = "wrong"
		if a := post(t, p, p.Challenge("ch-2")); a.Status != http.StatusUnauthorized {
			t.Fatalf("key %q: challenge with a wrong token answered %d", key, a.Status)
		}
	}
}

func TestEventsAreDecodedAndAnsweredAfterTheHandler(t *testing.T) {
	h := startHook(t, ekey)
	made := time.UnixMilli(time.Now().UnixMilli() - 1500)
	p := &fakefeishu.Poster{URL: h.url, Token: vtoken, EncryptKey: ekey, Now: func() time.Time { return made }}
	posts := []struct {
		id, typ string
		event   any
	}{
		{"ev1", "im.message.receive_v1", fakefeishu.TextMessage("om_1", "oc_1", "group", "omt_7", "ou_ann",
			"@_user_1 run the tests, ask @_user_10", fakefeishu.Mention{Key: "@_user_1", OpenID: "ou_bot", Name: "thatch"},
			fakefeishu.Mention{Key: "@_user_10", OpenID: "ou_bob", Name: "Bob"})},
		{"ev2", "im.chat.updated_v1", fakefeishu.ChatUpdated("oc_1", "ou_ann", "build box", "release box")},
		{"ev3", "im.chat.disbanded_v1", fakefeishu.ChatEvent("oc_1", "ou_ann")},
		{"ev4", "im.chat.member.bot.deleted_v1", fakefeishu.ChatEvent("oc_2", "ou_ann")},
		{"ev5", "card.action.trigger", fakefeishu.CardAction("oc_1", "om_card", "ou_ann", map[string]any{"p": "agent", "v": "claude", "n": 3})},
		{"ev6", "im.message.message_read_v1", map[string]any{}},
	}
	for _, e := range posts {
		if a := post(t, p, p.Envelope(e.id, e.typ, e.event)); a.Status != http.StatusOK {
			t.Fatalf("%s answered %d %s", e.typ, a.Status, a.Body)
		}
	}
	evs := h.events()
	if len(evs) != 5 {
		t.Fatalf("handler got %d events, want 5 (the read receipt is not taken): %+v", len(evs), evs)
	}
	msg, _ := evs[0].ev.(*feishu.MessageReceived)
	if evs[0].id != "ev1" || msg == nil || msg.ChatID != "oc_1" || msg.ThreadID != "omt_7" || msg.SenderOpenID != "ou_ann" ||
		msg.Text != "run the tests, ask @Bob" || msg.MessageID != "om_1" {
		t.Fatalf("message: %+v", evs[0].ev)
	}
	if !evs[0].created.Equal(made) {
		t.Fatalf("the event's creation time is %v, want header.create_time's %v", evs[0].created, made)
	}
	if r, _ := evs[1].ev.(*feishu.ChatRenamed); r == nil || r.ChatID != "oc_1" || r.Name != "release box" {
		t.Fatalf("rename: %+v", evs[1].ev)
	}
	if e, _ := evs[2].ev.(*feishu.ChatEnded); e == nil || e.Reason != feishu.ChatDisbanded {
		t.Fatalf("disbanded: %+v", evs[2].ev)
	}
	if e, _ := evs[3].ev.(*feishu.ChatEnded); e == nil || e.Reason != feishu.BotRemoved || e.ChatID != "oc_2" {
		t.Fatalf("bot removed: %+v", evs[3].ev)
	}
	press, _ := evs[4].ev.(*feishu.CardPressed)
	if press == nil || press.ChatID != "oc_1" || press.MessageID != "om_card" || press.UserOpenID != "ou_ann" ||
		press.Value["v"] != "claude" || press.Value["n"] != "3" {
		t.Fatalf("press: %+v", evs[4].ev)
	}
}

func TestAHandlerErrorAnswers500SoFeishuRedelivers(t *testing.T) {
	h := startHook(t, "")
	h.fail = errors.New("journal down")
	p := &fakefeishu.Poster{URL: h.url, Token: vtoken}
	body := p.Envelope("ev1", "im.message.receive_v1", fakefeishu.TextMessage("om_1", "oc_1", "p2p", "", "ou_ann", "hi"))
	if a := post(t, p, body); a.Status != http.StatusInternalServerError {
		t.Fatalf("answered %d, want 500", a.Status)
	}
	h.mu.Lock()
	h.fail = nil
	h.mu.Unlock()
	if a := post(t, p, body); a.Status != http.StatusOK {
		t.Fatalf("the redelivery answered %d", a.Status)
	}
	if evs := h.events(); len(evs) != 1 || evs[0].id != "ev1" {
		t.Fatalf("got %+v", evs)
	}
}

func TestRequestsThatDoNotAuthenticateAreRefusedAndNotHandled(t *testing.T) {
	h := startHook(t, ekey)
	good := &fakefeishu.Poster{URL: h.url, Token: vtoken, EncryptKey: ekey}
	event := good.Envelope("ev1", "im.message.receive_v1", fakefeishu.TextMessage("om_1", "oc_1", "p2p", "", "ou_ann", "hi"))
	ctx := ctxFor(t, 10*time.Second)
	encrypted := func(key string, plain []byte) []byte {
		b, _ := json.Marshal(map[string]string{"encrypt": fakefeishu.Encrypt(key, plain)})
		return b
	}
	body := encrypted(ekey, event)
	cases := []struct {
		name   string
		body   []byte
		header http.Header
	}{
		{"wrong verification token", encrypted(ekey, (&fakefeishu.Poster{Token: "wrong"}).Envelope("ev1", "im.message.receive_v1", map[string]any{})), nil},
		{"plain body", event, good.SignHeaders(event)},
		{"no signature", body, nil},
		{"bad signature", body, func() http.Header {
			hd := good.SignHeaders(body)
			hd.Set("X-Lark-Signature", strings.Repeat("0", 64))
			return hd
		}()},
		{"signature of another body", body, good.SignHeaders(encrypted(ekey, event))},
		{"timestamp two hours old", body, (&fakefeishu.Poster{EncryptKey: ekey, Now: func() time.Time { return time.Now().Add(-2 * time.Hour) }}).SignHeaders(body)},
		{"undecryptable body", encrypted("other-key", event), nil},
		{"not base64", []byte(`{"encrypt":"%%%"}`), nil},
	}
	for _, c := range cases {
		hd := c.header
		if hd == nil && c.name != "no signature" {
			hd = good.SignHeaders(c.body)
		}
		a, err := good.PostRaw(ctx, c.body, hd)
		if err != nil {
			t.Fatal(err)
		}
		if a.Status != http.StatusUnauthorized {
			t.Errorf("%s: answered %d %s, want 401", c.name, a.Status, a.Body)
		}
	}
	if evs := h.events(); len(evs) != 0 {
		t.Fatalf("a refused request reached the handler: %+v", evs)
	}
	// The same event, as Feishu sends it, is taken.
	if a, err := good.PostRaw(ctx, body, good.SignHeaders(body)); err != nil || a.Status != http.StatusOK {
		t.Fatalf("the good request: %+v %v", a, err)
	}
}

func TestWithoutAnEncryptKeyTheTokenIsCheckedOnEveryEvent(t *testing.T) {
	h := startHook(t, "")
	bad := &fakefeishu.Poster{URL: h.url, Token: "wrong"}
	msg := fakefeishu.TextMessage("om_1", "oc_1", "p2p", "", "ou_ann", "hi")
	if a := post(t, bad, bad.Envelope("ev1", "im.message.receive_v1", msg)); a.Status != http.StatusUnauthorized {
		t.Fatalf("wrong token answered %d", a.Status)
	}
	enc := &fakefeishu.Poster{URL: h.url, Token: vtoken, EncryptKey: ekey}
	if a := post(t, enc, enc.Envelope("ev2", "im.message.receive_v1", msg)); a.Status != http.StatusUnauthorized {
		t.Fatalf("an encrypted body without a key configured answered %d", a.Status)
	}
	if evs := h.events(); len(evs) != 0 {
		t.Fatalf("handler got %+v", evs)
	}
}
