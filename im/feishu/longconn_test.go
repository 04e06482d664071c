package feishu_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/thatch-run/thatch/e2e/fakefeishu"
	"github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/im/feishu"
	"github.com/thatch-run/thatch/internal/testwait"
)

// checkLeaks makes the test end with every goroutine it started ended.
// Call it first: its cleanup then runs last, after the adapter stopped
// and the fake closed.
func checkLeaks(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}

// startWS opens an adapter in mode "ws" on the fake and runs it until the
// test ends (or stop); it does not wait for the connection.
func startWS(t *testing.T, s *fakefeishu.Server, store feishu.EventStore, secret string) *running {
	t.Helper()
	a, err := feishu.Open(feishu.Options{AppID: appID, AppSecret: secret, BaseURL: s.URL, Mode: feishu.ModeWS,
		AllowedUsers: []string{"ou_alice"}, SendTimeout: 5 * time.Second},
		store, hclog.New(&hclog.LoggerOptions{Output: testWriter{t}, Level: hclog.Debug}))
	if err != nil {
		t.Fatal(err)
	}
	return runAdapter(t, a, nil)
}

func waitUp(t *testing.T, r *running) {
	t.Helper()
	testwait.UntilReason(t, "the long connection to come up", func() (bool, string) {
		h := r.a.Health()
		return h.Up && strings.Contains(h.State, "long connection"), h.State + " " + h.LastError
	})
}

func wsMessage(eventID, messageID, text string) map[string]any {
	return fakefeishu.TextMessage(messageID, "oc_1", "group", "", "ou_alice", "@_user_1 "+text,
		fakefeishu.Mention{Key: "@_user_1", OpenID: "ou_bot", Name: "thatch"})
}

func push(t *testing.T, s *fakefeishu.Server, eventID, messageID, text string, parts int) fakefeishu.WSAnswer {
	t.Helper()
	a, err := s.PushEvent(context.Background(), eventID, "im.message.receive_v1", wsMessage(eventID, messageID, text), parts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestOverTheLongConnectionAMessageIsAnsweredOnlyOnceHandled(t *testing.T) {
	checkLeaks(t)
	s := newFake(t)
	r := startWS(t, s, newMemStore(), appSecret)
	if r.a.Addr() != nil || r.a.URL() != "" {
		t.Fatalf("mode ws has an address %v, URL %q; want none", r.a.Addr(), r.a.URL())
	}
	waitUp(t, r)
	release := make(chan struct{})
	inHandler := make(chan chat.Update, 1)
	r.setHandle(func(u chat.Update) error {
		inHandler <- u
		<-release
		return nil
	})
	answered := make(chan fakefeishu.WSAnswer, 1)
	go func() {
		a, err := s.PushEvent(context.Background(), "ev-1", "im.message.receive_v1", wsMessage("ev-1", "om_in1", "ls -la"), 1)
		if err != nil {
			t.Error(err)
		}
		answered <- a
	}()
	u := <-inHandler
	select {
	case a := <-answered:
		t.Fatalf("the frame was answered (%d) before the handler returned", a.Status)
	default:
	}
	close(release)
	if a := <-answered; a.Status != 200 || a.BizRT == "" {
		t.Fatalf("answer %+v, want 200 with biz_rt", a)
	}
	if u.Thread != "fs:oc_1" || u.User != "ou_alice" || u.Text != "ls -la" || u.ID <= 0 || u.Name != "build box" {
		t.Fatalf("update %+v", u)
	}
}

func TestOverTheLongConnectionAFailedHandlerAnswers500AndTheRedeliveryIsHandledOnce(t *testing.T) {
	checkLeaks(t)
	s := newFake(t)
	store := newMemStore()
	r := startWS(t, s, store, appSecret)
	waitUp(t, r)
	r.setHandle(func(chat.Update) error { return errors.New("not journaled") })
	if a := push(t, s, "ev-1", "om_1", "first", 1); a.Status != 500 {
		t.Fatalf("a failed handler answered %d, want 500", a.Status)
	}
	r.setHandle(nil)
	for i := range 2 {
		if a := push(t, s, "ev-1", "om_1", "first", 1); a.Status != 200 {
			t.Fatalf("delivery %d answered %d, want 200", i+2, a.Status)
		}
	}
	if got := r.got(); len(got) != 1 || got[0].Text != "first" {
		t.Fatalf("handled %+v, want the event once", got)
	}
	if !store.has("ev-1") {
		t.Fatal("the event id was not recorded")
	}
}

func TestOverTheLongConnectionACardPressIsAPress(t *testing.T) {
	checkLeaks(t)
	s := newFake(t)
	r := startWS(t, s, newMemStore(), appSecret)
	waitUp(t, r)
	a, err := s.PushCard(context.Background(), "ev-p",
		fakefeishu.CardAction("oc_1", "om_card", "ou_alice", map[string]any{"data": "a:codex", "thread": "fs:oc_1"}), 1)
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != 200 || string(a.Data) != "{}" {
		t.Fatalf("the card frame answered %d %q, want 200 and an empty object", a.Status, a.Data)
	}
	got := r.got()
	if len(got) != 1 || got[0].Press == nil {
		t.Fatalf("got %+v, want one press", got)
	}
	if p := got[0].Press; got[0].Thread != "fs:oc_1" || got[0].User != "ou_alice" || p.Data != "a:codex" || p.ID != "ev-p" || p.Message != "om_card" {
		t.Fatalf("press %+v %+v", got[0], *p)
	}
}

func TestOverTheLongConnectionASplitPayloadIsPutTogether(t *testing.T) {
	checkLeaks(t)
	s := newFake(t)
	r := startWS(t, s, newMemStore(), appSecret)
	waitUp(t, r)
	text := strings.Repeat("split in three ", 20)
	if a := push(t, s, "ev-s", "om_s", text, 3); a.Status != 200 {
		t.Fatalf("answer %d", a.Status)
	}
	if got := r.got(); len(got) != 1 || got[0].Text != strings.TrimSpace(text) {
		t.Fatalf("handled %+v, want the whole text", got)
	}
}

func TestTheLongConnectionConnectsAgainAfterADrop(t *testing.T) {
	checkLeaks(t)
	s := newFake(t)
	r := startWS(t, s, newMemStore(), appSecret)
	waitUp(t, r)
	if a := push(t, s, "ev-1", "om_1", "before", 1); a.Status != 200 {
		t.Fatalf("answer %d", a.Status)
	}
	s.DropConnections()
	// The push waits for the client's next connection.
	if a := push(t, s, "ev-2", "om_2", "after", 1); a.Status != 200 {
		t.Fatalf("answer %d", a.Status)
	}
	if n := s.WSConnections(); n != 2 {
		t.Fatalf("%d connections, want 2 (one again after the drop)", n)
	}
	if got := r.got(); len(got) != 2 || got[1].Text != "after" {
		t.Fatalf("handled %+v", got)
	}
	waitUp(t, r)
}

func TestAWrongAppSecretShowsInHealthAndIsNotRetriedAtOnce(t *testing.T) {
	checkLeaks(t)
	s := newFake(t)
	r := startWS(t, s, newMemStore(), "wrong")
	testwait.UntilReason(t, "Health to show Feishu's refusal", func() (bool, string) {
		h := r.a.Health()
		return !h.Up && strings.Contains(h.LastError, "refused") && strings.Contains(h.LastError, "app_secret"), h.State + ": " + h.LastError
	})
	if h := r.a.Health(); !strings.Contains(h.LastError, "10014") {
		t.Fatalf("LastError %q does not carry Feishu's code", h.LastError)
	}
	// The refusal's retry waits a minute or more: one call so far.
	if n, c := s.WSEndpointCalls(), s.WSConnections(); n != 1 || c != 0 {
		t.Fatalf("%d endpoint calls and %d connections after a refusal, want 1 and 0", n, c)
	}
	r.stop()
	if h := r.a.Health(); h.Up || h.State != "stopped" {
		t.Fatalf("Health after Run ended: %+v", h)
	}
}

func TestEndingRunClosesTheLongConnection(t *testing.T) {
	checkLeaks(t)
	s := newFake(t)
	s.SetPingInterval(1)
	r := startWS(t, s, newMemStore(), appSecret)
	waitUp(t, r)
	// The pong's client config sets pings a second apart.
	testwait.Until(t, "three pings", func() bool { return s.WSPings() >= 3 })
	if a := push(t, s, "ev-1", "om_1", "hello", 1); a.Status != 200 {
		t.Fatalf("answer %d", a.Status)
	}
	r.stop()
	testwait.Until(t, "the fake to see the connection closed", func() bool { return s.WSOpen() == 0 })
	if h := r.a.Health(); h.Up || h.State != "stopped" {
		t.Fatalf("Health after Run ended: %+v", h)
	}
}

func TestOptionsInWSModeNeedTheAppButNoToken(t *testing.T) {
	err := feishu.Options{Mode: feishu.ModeWS}.Validate()
	for _, want := range []string{"app_id", "app_secret"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to name %s", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "verification_token") {
		t.Errorf("Validate() = %v: mode ws needs no verification token", err)
	}
	if err := (feishu.Options{AppID: "cli_x", AppSecret: "s", Mode: feishu.ModeWS}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestAThreadWhoseHandlerHangsHoldsUpNoOther, in both modes: the handler
// of one chat hangs on its first message. Another chat's message is
// handled and answered meanwhile; the hanging chat's second message waits
// for its first, and both are handled in order once it is released.
func TestAThreadWhoseHandlerHangsHoldsUpNoOther(t *testing.T) {
	for _, mode := range []string{feishu.ModeWebhook, feishu.ModeWS} {
		t.Run(mode, func(t *testing.T) {
			checkLeaks(t)
			s := newFake(t)
			s.AddChat(fakefeishu.Chat{ID: "oc_2", Name: "other box"})
			var r *running
			var send func(eventID, chat, text string) int
			if mode == feishu.ModeWS {
				r = startWS(t, s, newMemStore(), appSecret)
				waitUp(t, r)
				send = func(eventID, chat, text string) int {
					a, err := s.PushEvent(context.Background(), eventID, "im.message.receive_v1",
						fakefeishu.TextMessage("om_"+eventID, chat, "group", "", "ou_alice", text), 1)
					if err != nil {
						t.Error(err)
					}
					return a.Status
				}
			} else {
				r = startAdapter(t, s, newMemStore())
				send = func(eventID, chat, text string) int {
					a, err := r.poster.Post(context.Background(), r.poster.Envelope(eventID, "im.message.receive_v1",
						fakefeishu.TextMessage("om_"+eventID, chat, "group", "", "ou_alice", text)))
					if err != nil {
						t.Error(err)
					}
					return a.Status
				}
			}
			release := make(chan struct{})
			hanging := make(chan struct{})
			r.setHandle(func(u chat.Update) error {
				if u.Text == "slow one" {
					close(hanging)
					<-release
				}
				return nil
			})
			answers := make(chan int, 2)
			go func() { answers <- send("ev-1", "oc_1", "slow one") }()
			<-hanging
			go func() { answers <- send("ev-2", "oc_1", "slow two") }()
			if st := send("ev-3", "oc_2", "other"); st != 200 {
				t.Fatalf("the other chat's message was answered %d while the first chat's hangs", st)
			}
			texts := func() []string {
				var out []string
				for _, u := range r.got() {
					out = append(out, u.Text)
				}
				return out
			}
			if got := texts(); len(got) != 1 || got[0] != "other" {
				t.Fatalf("while the first chat hangs, handled %q", got)
			}
			close(release)
			for range 2 {
				if st := <-answers; st != 200 {
					t.Fatalf("the hanging chat's message answered %d once released", st)
				}
			}
			if got := texts(); len(got) != 3 || got[1] != "slow one" || got[2] != "slow two" {
				t.Fatalf("handled %q, want the hanging chat's in order after the other", got)
			}
		})
	}
}
