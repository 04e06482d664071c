package feishu

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	lark "github.com/larksuite/oapi-sdk-go/v3"
	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
)

// Feishu's answer codes the adapter acts on.
const (
	codeRateLimit = 99991400 // the app's frequency limit; HTTP 429, x-ogw-ratelimit-reset
	codeChatLimit = 230020   // the per-chat limit; no wait named
	codeChatGone  = 230002   // the chat is gone or the bot is not in it
)

// ErrChatGone is returned (wrapped) when Feishu answers 230002: the chat
// was disbanded or the bot is no longer in it. It is permanent: the
// caller ends the binding instead of trying again.
var ErrChatGone = errors.New("feishu: chat gone or bot not in it (230002)")

// APIError is an answer of the Open API with a code the adapter does not
// act on. Its Code says what Feishu refused.
type APIError struct {
	Op   string
	Code int
	Msg  string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("feishu: %s: code %d: %s", e.Op, e.Code, e.Msg)
}

// Client makes the Open API calls of the adapter: sends, edits, deletes
// and names. It is safe for concurrent use; calls for one chat are made
// one at a time, in the order they took their turn.
type Client struct {
	opts   Options
	lark   *lark.Client
	logger hclog.Logger
	turns  turns
}

// NewClient builds a client on the SDK's. The SDK fetches the tenant
// access token and refreshes it; each client has a token cache of its own.
func NewClient(opts Options, logger hclog.Logger) (*Client, error) {
	opts = opts.WithDefaults()
	if opts.AppID == "" || opts.AppSecret == "" {
		return nil, errors.New("feishu: app_id and app_secret are required")
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	lc := lark.NewClient(opts.AppID, opts.AppSecret,
		lark.WithOpenBaseUrl(strings.TrimRight(opts.BaseURL, "/")),
		lark.WithReqTimeout(opts.SendTimeout),
		lark.WithTokenCache(newTokenCache()),
		lark.WithLogger(sdkLogger{logger.Named("sdk")}),
		lark.WithLogLevel(larkcore.LogLevelWarn),
	)
	return &Client{opts: opts, lark: lc, logger: logger, turns: turns{m: map[string]*turn{}}}, nil
}

// result is what one Open API call answered: a Go error (the request did
// not complete), or Feishu's code with the HTTP answer's header.
type result struct {
	code   int
	msg    string
	header http.Header
}

// call makes one request for a chat in the chat's turn, and makes it again
// after the wait while Feishu answers a rate limit, so that nothing is
// dropped or reordered. Each attempt is bounded by the send timeout; the
// waits by ctx.
func (c *Client) call(ctx context.Context, chatID, op string, do func(ctx context.Context) (result, error)) error {
	release, err := c.turns.take(ctx, chatID)
	if err != nil {
		return fmt.Errorf("feishu: %s in chat %s: waiting for the chat's turn: %w", op, chatID, err)
	}
	defer release()
	for {
		actx, cancel := context.WithTimeout(ctx, c.opts.SendTimeout)
		r, err := do(actx)
		cancel()
		if err != nil {
			return fmt.Errorf("feishu: %s in chat %s: %w", op, chatID, err)
		}
		var wait time.Duration
		switch r.code {
		case 0:
			return nil
		case codeChatGone:
			return fmt.Errorf("%w (%s in chat %s: %s)", ErrChatGone, op, chatID, r.msg)
		case codeRateLimit:
			wait = resetWait(r.header)
		case codeChatLimit:
			wait = c.opts.ChatLimitWait
		default:
			return &APIError{Op: op + " in chat " + chatID, Code: r.code, Msg: r.msg}
		}
		c.logger.Debug("rate limited, waiting", "op", op, "chat", chatID, "code", r.code, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("feishu: %s in chat %s: waiting out a rate limit (code %d): %w", op, chatID, r.code, ctx.Err())
		case <-t.C:
		}
	}
}

// resetWait reads x-ogw-ratelimit-reset (seconds until the limit resets).
// Without one it waits a second.
func resetWait(h http.Header) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(h.Get("x-ogw-ratelimit-reset"))); err == nil && s >= 0 {
		if s == 0 {
			return 50 * time.Millisecond
		}
		return time.Duration(s) * time.Second
	}
	return time.Second
}

// turns hands out one turn per chat at a time, in the order asked (a
// channel of one, so that a wait for a turn is bounded by its context).
type turns struct {
	mu sync.Mutex
	m  map[string]*turn
}

type turn struct {
	ch      chan struct{}
	waiters int
}

func (t *turns) take(ctx context.Context, key string) (func(), error) {
	t.mu.Lock()
	tu, found := t.m[key]
	if !found {
		tu = &turn{ch: make(chan struct{}, 1)}
		t.m[key] = tu
	}
	tu.waiters++
	t.mu.Unlock()
	leave := func() {
		t.mu.Lock()
		tu.waiters--
		if tu.waiters == 0 {
			delete(t.m, key)
		}
		t.mu.Unlock()
	}
	select {
	case tu.ch <- struct{}{}:
		return func() { <-tu.ch; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}

// tokenCache is the SDK's token cache for one client (the SDK's default is
// shared by every client of the process).
type tokenCache struct {
	mu sync.Mutex
	m  map[string]cached
}

type cached struct {
	value string
	until time.Time
}

func newTokenCache() *tokenCache { return &tokenCache{m: map[string]cached{}} }

func (c *tokenCache) Set(_ context.Context, key, value string, ttl time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key] = cached{value: value, until: time.Now().Add(ttl)}
	return nil
}

func (c *tokenCache) Get(_ context.Context, key string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, found := c.m[key]
	if !found || time.Now().After(v.until) {
		return "", nil
	}
	return v.value, nil
}

// sdkLogger passes the SDK's log lines to hclog.
type sdkLogger struct{ l hclog.Logger }

func (s sdkLogger) Debug(_ context.Context, args ...any) { s.l.Debug(fmt.Sprint(args...)) }
func (s sdkLogger) Info(_ context.Context, args ...any)  { s.l.Info(fmt.Sprint(args...)) }
func (s sdkLogger) Warn(_ context.Context, args ...any)  { s.l.Warn(fmt.Sprint(args...)) }
func (s sdkLogger) Error(_ context.Context, args ...any) { s.l.Error(fmt.Sprint(args...)) }
