package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thatch-run/thatch/internal/testwait"
)

// hangingAPI stands before a fake Bot API and holds every sendMessage to
// one topic (thread) without an answer until release is closed or the
// bot gives up on the request; everything else passes through.
type hangingAPI struct {
	srv     *httptest.Server
	thread  int64
	release chan struct{}
	hung    chan struct{} // gets a value as each held request arrives
	held    atomic.Int32  // held requests so far
	once    sync.Once
}

func newHangingAPI(t *testing.T, target string, thread int64) *hangingAPI {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	h := &hangingAPI{thread: thread, release: make(chan struct{}), hung: make(chan struct{}, 16)}
	proxy := httputil.NewSingleHostReverseProxy(u)
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/sendMessage") && h.threadOf(r) == h.thread {
			h.held.Add(1)
			h.hung <- struct{}{}
			select {
			case <-h.release:
			case <-r.Context().Done():
				return // the bot gave up: no answer
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(h.srv.Close)
	t.Cleanup(h.Release) // before the server closes: no handler left waiting
	return h
}

// Release lets the held requests (and all later ones) through.
func (h *hangingAPI) Release() { h.once.Do(func() { close(h.release) }) }

// threadOf reads message_thread_id from a request's body (multipart, as
// the library sends it, or JSON) and puts the body back for the proxy.
func (h *hangingAPI) threadOf(r *http.Request) int64 {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	ct, ps, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "multipart/form-data" {
		form, err := multipart.NewReader(bytes.NewReader(body), ps["boundary"]).ReadForm(1 << 20)
		if err != nil {
			return 0
		}
		if v := form.Value["message_thread_id"]; len(v) > 0 {
			n, _ := strconv.ParseInt(v[0], 10, 64)
			return n
		}
		return 0
	}
	if i := bytes.Index(body, []byte(`"message_thread_id":`)); i >= 0 {
		rest := body[i+len(`"message_thread_id":`):]
		end := bytes.IndexAny(rest, ",}")
		n, _ := strconv.ParseInt(string(bytes.TrimSpace(rest[:max(end, 0)])), 10, 64)
		return n
	}
	return 0
}

// A send that hangs in one topic holds up no other topic of the same chat:
// thread B's message goes out while thread A's request still has no
// answer (before, B waited on the chat's lock for as long as A's request
// ran, up to its timeout and each retry's). A's message goes out once its
// request is answered, and each shows once.
func TestASendThatHangsHoldsNoOtherThreadOfTheChat(t *testing.T) {
	w := newWorld(t, nil)
	a, b := w.srv.CreateTopic(forum, "a"), w.srv.CreateTopic(forum, "b")
	api := newHangingAPI(t, w.srv.URL(), a)
	// No bound of the bot's runs out during the test: B must go out while
	// A is held, not once A's request was given up on.
	bot := w.newBot(func(o *Options) {
		o.APIURL = api.srv.URL
		o.RequestTimeout, o.SendTimeout = time.Hour, time.Hour
		o.ChatInterval = 10 * time.Millisecond
	})

	errA := make(chan error, 1)
	go func() {
		_, err := bot.Send(context.Background(), Outbound{ChatID: forum, ThreadID: a, Topic: true, Text: "from A"})
		errA <- err
	}()
	<-api.hung // A's request is held

	// Generous: B takes milliseconds when nothing holds it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := bot.Send(ctx, Outbound{ChatID: forum, ThreadID: b, Topic: true, Text: "from B"}); err != nil {
		t.Fatalf("thread B's send while thread A's hangs: %v", err)
	}
	select {
	case err := <-errA:
		t.Fatalf("thread A's send returned (%v) before its request was answered", err)
	default:
	}
	if got := texts(w.srv.Messages(forum, b)); len(got) != 1 || got[0] != "from B" {
		t.Fatalf("thread B shows %q, want its message", got)
	}

	api.Release()
	if err := <-errA; err != nil {
		t.Fatalf("thread A's send once answered: %v", err)
	}
	if got := texts(w.srv.Messages(forum, a)); len(got) != 1 || got[0] != "from A" {
		t.Fatalf("thread A shows %q, want its message once", got)
	}
}

// A request that gets no answer fails after SendTimeout with ErrTimeout,
// which is not permanent (the caller keeps the message and sends it
// again), and it is not tried again inside Send: Telegram may have shown
// it, and the caller's retry comes after a pause rather than at once. The
// chat is free for the next send right away.
func TestASendWithoutAnAnswerFailsAfterItsBound(t *testing.T) {
	w := newWorld(t, nil)
	a, b := w.srv.CreateTopic(forum, "a"), w.srv.CreateTopic(forum, "b")
	api := newHangingAPI(t, w.srv.URL(), a)
	bot := w.newBot(func(o *Options) {
		o.APIURL = api.srv.URL
		o.SendTimeout = 50 * time.Millisecond
	})
	ids, err := bot.Send(context.Background(), Outbound{ChatID: forum, ThreadID: a, Topic: true, Text: "from A"})
	if !errors.Is(err, ErrTimeout) || Permanent(err) || len(ids) != 0 {
		t.Fatalf("Send without an answer = %v, %v; want ErrTimeout, not permanent, nothing sent", ids, err)
	}
	if n := api.held.Load(); n != 1 {
		t.Errorf("the request without an answer was made %d times, want once", n)
	}
	if !strings.Contains(err.Error(), "sendMessage") {
		t.Errorf("the error does not say what timed out: %v", err)
	}
	if _, err := bot.Send(context.Background(), Outbound{ChatID: forum, ThreadID: b, Topic: true, Text: "from B"}); err != nil {
		t.Fatalf("the next send to the chat: %v", err)
	}
}

// A 429 holds the whole chat: every request to it waits out the
// retry_after, but no longer than SendTimeout. A longer wait fails the
// send at once with ErrRateLimited (not permanent; nothing is sent, not
// even early to be refused again), for the thread that got the 429 and
// for another thread of the chat alike; once the wait is over, sends go
// out again.
func TestA429LongerThanTheBoundFailsSendsToTheChatUntilItIsOver(t *testing.T) {
	w := newWorld(t, func(o *Options) { o.SendTimeout = 100 * time.Millisecond })
	a, b := w.srv.CreateTopic(forum, "a"), w.srv.CreateTopic(forum, "b")
	w.srv.Fail429(1, 1) // one 429, retry_after 1 s: over the bound
	_, err := w.bot.Send(context.Background(), Outbound{ChatID: forum, ThreadID: a, Topic: true, Text: "from A"})
	if !errors.Is(err, ErrRateLimited) || Permanent(err) {
		t.Fatalf("Send answered 429 for longer than the bound = %v; want ErrRateLimited, not permanent", err)
	}
	_, err = w.bot.Send(context.Background(), Outbound{ChatID: forum, ThreadID: b, Topic: true, Text: "from B"})
	if !errors.Is(err, ErrRateLimited) {
		t.Fatalf("another thread's send during the chat's wait = %v; want ErrRateLimited", err)
	}
	testwait.UntilReason(t, "a send once the chat's wait is over", func() (bool, string) {
		_, err = w.bot.Send(context.Background(), Outbound{ChatID: forum, ThreadID: b, Topic: true, Text: "from B"})
		return !errors.Is(err, ErrRateLimited), fmt.Sprint(err)
	})
	if err != nil {
		t.Fatalf("a send after the chat's wait: %v", err)
	}
	if n := w.srv.Early(); n != 0 {
		t.Errorf("%d requests came before retry_after was over", n)
	}
	if got := texts(w.srv.Sent()); len(got) != 1 || got[0] != "from B" {
		t.Errorf("the fake recorded %q, want B's message once", got)
	}
}
