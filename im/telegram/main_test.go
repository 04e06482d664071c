package telegram

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/thatch-run/thatch/e2e/faketelegram"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testToken = "424242:SECRET-token-AAA"

// syncBuffer is a log sink the test can read while the bot writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// world is a fake Telegram and a bot pointed at it, torn down in order:
// Run first, then the bot, then the server.
type world struct {
	t   *testing.T
	srv *faketelegram.Server
	bot *Bot
	log *syncBuffer
}

func newWorld(t *testing.T, tweak func(*Options)) *world {
	t.Helper()
	srv := faketelegram.New(testToken)
	t.Cleanup(srv.Close)
	w := &world{t: t, srv: srv, log: &syncBuffer{}}
	w.bot = w.newBot(tweak)
	return w
}

func (w *world) newBot(tweak func(*Options)) *Bot {
	w.t.Helper()
	o := Options{
		Token:          testToken,
		APIURL:         w.srv.URL(),
		PollTimeout:    time.Second,
		RequestTimeout: 10 * time.Second,
		ChatInterval:   -1,
		GroupPerMinute: -1,
		Logger:         hclog.New(&hclog.LoggerOptions{Output: w.log, Level: hclog.Debug}),
	}
	if tweak != nil {
		tweak(&o)
	}
	b, err := New(o)
	if err != nil {
		w.t.Fatalf("New: %v", err)
	}
	w.t.Cleanup(b.Close)
	return b
}

// recorder collects what a handler was called with.
type recorder struct {
	mu    sync.Mutex
	calls []Inbound
}

func (r *recorder) add(in Inbound) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, in)
}

func (r *recorder) get() []Inbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Inbound(nil), r.calls...)
}

// run starts b.Run and returns a stop func that cancels it and waits for
// it to return, returning Run's error; cleanup stops it too.
func run(t *testing.T, b *Bot, handle func(context.Context, Inbound) error) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, handle) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func assertNoToken(t *testing.T, where, text string) {
	t.Helper()
	if strings.Contains(text, testToken) || strings.Contains(text, "SECRET-token") {
		t.Errorf("%s holds the token: %s", where, text)
	}
}
