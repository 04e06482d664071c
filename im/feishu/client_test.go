package feishu_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/thatch-run/thatch/e2e/fakefeishu"
	"github.com/thatch-run/thatch/im/feishu"
)

const (
	appID     = "cli_test"
	appSecret = "s3cret"
)

func newClient(t *testing.T, s *fakefeishu.Server, tweak func(*feishu.Options)) *feishu.Client {
	t.Helper()
	opts := feishu.Options{AppID: appID, AppSecret: appSecret, BaseURL: s.URL, SendTimeout: 5 * time.Second,
		ChatLimitWait: 250 * time.Millisecond}
	if tweak != nil {
		tweak(&opts)
	}
	c, err := feishu.NewClient(opts, hclog.New(&hclog.LoggerOptions{Output: testWriter{t}, Level: hclog.Debug}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func newServer(t *testing.T) *fakefeishu.Server {
	s := fakefeishu.New(appID, appSecret)
	t.Cleanup(s.Close)
	s.AddChat(fakefeishu.Chat{ID: "oc_1", Name: "build box"})
	return s
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestSendSplitsLongTextIntoPartsFeishuTakesInOrder(t *testing.T) {
	s := newServer(t)
	c := newClient(t, s, nil)
	// Escaped, a quote doubles: 3 parts of MaxTextBytes would be over
	// 150 KB each were the limit counted on the raw text alone.
	line := strings.Repeat(`"`, 99) + "\n"
	text := strings.Repeat(line, 3*feishu.MaxTextBytes/len(line)+5)
	ids, err := c.Send(ctxFor(t, 10*time.Second), feishu.Target{ChatID: "oc_1"}, text)
	if err != nil {
		t.Fatal(err)
	}
	sent := s.Sent()
	if len(ids) != len(sent) || len(sent) < 4 {
		t.Fatalf("ids %v for %d sent; want one id per part, at least 4 parts", ids, len(sent))
	}
	var got strings.Builder
	for i, m := range sent {
		if m.MessageID != ids[i] || m.MsgType != "text" {
			t.Fatalf("part %d: %+v, id %s", i, m, ids[i])
		}
		if i < len(sent)-1 && !strings.HasSuffix(m.Text(), "\n") {
			t.Errorf("part %d does not end at a line break", i)
		}
		got.WriteString(m.Text())
	}
	if got.String() != text {
		t.Fatal("the parts put together are not the text")
	}
	if s.TokensIssued() != 1 {
		t.Fatalf("%d tokens fetched; the SDK should reuse its cached token", s.TokensIssued())
	}
}

func TestSplitNeverCutsARune(t *testing.T) {
	text := strings.Repeat("界", feishu.MaxTextBytes) // 3 bytes each, no line breaks
	parts := feishu.Split(text)
	if strings.Join(parts, "") != text {
		t.Fatal("parts lost text")
	}
	for i, p := range parts {
		if len(p) > feishu.MaxTextBytes || !strings.HasPrefix(p, "界") || !strings.HasSuffix(p, "界") {
			t.Fatalf("part %d: %d bytes, cut inside a rune or over the limit", i, len(p))
		}
	}
	if len(feishu.Split("")) != 0 {
		t.Fatal("empty text made a part")
	}
}

func TestReplyGoesToTheThreadOfTheMessage(t *testing.T) {
	s := newServer(t)
	c := newClient(t, s, nil)
	ctx := ctxFor(t, 10*time.Second)
	root, err := c.Send(ctx, feishu.Target{ChatID: "oc_1"}, "topic")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, feishu.Target{ChatID: "oc_1", ReplyTo: root[0], InThread: true}, "in the topic"); err != nil {
		t.Fatal(err)
	}
	sent := s.Sent()
	if last := sent[len(sent)-1]; last.Op != "reply" || last.ReplyTo != root[0] || !last.InThread || last.Text() != "in the topic" {
		t.Fatalf("reply sent as %+v", last)
	}
}

func TestRateLimitsAreWaitedOutWithNothingLostOrReordered(t *testing.T) {
	s := newServer(t)
	s.AddChat(fakefeishu.Chat{ID: "oc_2", Name: "other"})
	c := newClient(t, s, nil)
	ctx := ctxFor(t, 20*time.Second)
	// One app limit with a reset of a second, then per-chat limits.
	s.RateLimitApp(1, time.Second)
	s.RateLimitChat(3, 200*time.Millisecond)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for _, chat := range []string{"oc_1", "oc_2"} {
		wg.Go(func() {
			for i := range 5 {
				if _, err := c.Send(ctx, feishu.Target{ChatID: chat}, fmt.Sprintf("%s %d", chat, i)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	next := map[string]int{}
	for _, m := range s.Sent() {
		if want := fmt.Sprintf("%s %d", m.ChatID, next[m.ChatID]); m.Text() != want {
			t.Fatalf("got %q, want %q: lost or reordered", m.Text(), want)
		}
		next[m.ChatID]++
	}
	if next["oc_1"] != 5 || next["oc_2"] != 5 {
		t.Fatalf("sent %v, want 5 each", next)
	}
	if s.Early() != 0 {
		t.Fatalf("%d calls made before the limit's wait had passed", s.Early())
	}
}

func TestAChatThatIsGoneIsAPermanentError(t *testing.T) {
	s := newServer(t)
	c := newClient(t, s, nil)
	s.EndChat("oc_1")
	_, err := c.Send(ctxFor(t, 5*time.Second), feishu.Target{ChatID: "oc_1"}, "hello")
	if !errors.Is(err, feishu.ErrChatGone) {
		t.Fatalf("err = %v, want ErrChatGone", err)
	}
	_, err = c.Send(ctxFor(t, 5*time.Second), feishu.Target{ChatID: "oc_nope"}, "hello")
	if !errors.Is(err, feishu.ErrChatGone) {
		t.Fatalf("a chat the bot is not in: err = %v, want ErrChatGone", err)
	}
}

func TestARateLimitWaitIsBoundedByTheContext(t *testing.T) {
	s := newServer(t)
	c := newClient(t, s, func(o *feishu.Options) { o.ChatLimitWait = time.Minute })
	s.RateLimitChat(1, time.Minute)
	start := time.Now()
	_, err := c.Send(ctxFor(t, 300*time.Millisecond), feishu.Target{ChatID: "oc_1"}, "hello")
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Fatalf("err = %v after %v, want the context's deadline", err, time.Since(start))
	}
	if len(s.Sent()) != 0 {
		t.Fatal("sent while rate limited")
	}
}

func TestCardsCarryObjectValuesAndCanBePatchedAndDeleted(t *testing.T) {
	s := newServer(t)
	c := newClient(t, s, nil)
	ctx := ctxFor(t, 10*time.Second)
	card := feishu.Card{Text: "Which agent?", Rows: [][]feishu.Button{{
		{Label: "claude", Value: map[string]string{"p": "agent", "v": "claude"}},
		{Label: "codex", Value: map[string]string{"p": "agent", "v": "codex"}},
	}}}
	id, err := c.SendCard(ctx, feishu.Target{ChatID: "oc_1"}, card)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PatchCard(ctx, "oc_1", id, feishu.Card{Text: "Agent: claude"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "oc_1", id); err != nil {
		t.Fatal(err)
	}
	sent := s.Sent()
	if len(sent) != 3 || sent[0].Op != "create" || sent[1].Op != "patch" || sent[2].Op != "delete" || sent[2].MessageID != id {
		t.Fatalf("sent %+v", sent)
	}
	var content struct {
		Elements []struct {
			Tag     string `json:"tag"`
			Actions []struct {
				Text  struct{ Content string } `json:"text"`
				Value map[string]string        `json:"value"`
			} `json:"actions"`
		} `json:"elements"`
	}
	if err := json.Unmarshal([]byte(sent[0].Content), &content); err != nil {
		t.Fatal(err)
	}
	acts := content.Elements[len(content.Elements)-1].Actions
	if len(acts) != 2 || acts[0].Text.Content != "claude" || acts[1].Value["v"] != "codex" {
		t.Fatalf("buttons %+v", acts)
	}
	if strings.Contains(sent[1].Content, `"action"`) {
		t.Fatal("the patch kept the buttons")
	}
	// A deleted message cannot be patched: Feishu's code comes back.
	var apiErr *feishu.APIError
	if err := c.PatchCard(ctx, "oc_1", id, card); !errors.As(err, &apiErr) || apiErr.Code != fakefeishu.CodeNotFound {
		t.Fatalf("patch of a deleted card: %v", err)
	}
}

func TestNamesComeFromTheChatAndContactAPIs(t *testing.T) {
	s := newServer(t)
	s.AddChat(fakefeishu.Chat{ID: "oc_p2p", Mode: "p2p", Peer: "ou_ann"})
	s.AddUser("ou_ann", "Ann")
	c := newClient(t, s, nil)
	ctx := ctxFor(t, 10*time.Second)
	info, err := c.Chat(ctx, "oc_1")
	if err != nil || info.Name != "build box" || info.Mode != "group" {
		t.Fatalf("group: %+v, %v", info, err)
	}
	info, err = c.Chat(ctx, "oc_p2p")
	if err != nil || info.Mode != "p2p" {
		t.Fatalf("p2p: %+v, %v", info, err)
	}
	if name, err := c.UserName(ctx, "ou_ann"); err != nil || name != "Ann" {
		t.Fatalf("user: %q, %v", name, err)
	}
	if id, err := c.BotOpenID(ctx); err != nil || id != s.BotOpenID {
		t.Fatalf("bot: %q, %v", id, err)
	}
}

func TestOptionsValidateAndRedact(t *testing.T) {
	err := feishu.Options{Mode: "webhook"}.Validate()
	for _, want := range []string{"app_id", "app_secret", "verification_token"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to name %s", err, want)
		}
	}
	o := feishu.Options{AppID: "cli_x", AppSecret: "topsecret", VerificationToken: "vtok", EncryptKey: "ekey"}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if s := o.String(); strings.Contains(s, "topsecret") || strings.Contains(s, "vtok") || strings.Contains(s, "ekey") {
		t.Fatalf("String() shows a secret: %s", s)
	}
}
