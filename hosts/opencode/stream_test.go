package opencode

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/internal/testwait"
	"github.com/thatch-run/thatch/messages"
)

// openSSE starts an event-stream response.
func openSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	http.NewResponseController(w).Flush()
}

func writeFrame(w http.ResponseWriter, data string) error {
	if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
		return err
	}
	return http.NewResponseController(w).Flush()
}

// serveCapture writes a capture file in small flushed pieces, so that
// frames straddle reads, and then ends the response.
func serveCapture(t *testing.T, w http.ResponseWriter, name string) {
	b, err := os.ReadFile(filepath.Join("testdata", name+".sse"))
	if err != nil {
		t.Error(err)
		return
	}
	openSSE(w)
	for len(b) > 0 {
		n := min(len(b), 1000)
		if _, err := w.Write(b[:n]); err != nil {
			return
		}
		http.NewResponseController(w).Flush()
		b = b[n:]
	}
}

const (
	connectedFrame = `{"id":"evt_1","type":"server.connected","properties":{}}`
	heartbeatFrame = `{"type":"server.heartbeat","properties":{}}`
)

func TestSubscribeReplaysCaptures(t *testing.T) {
	for _, name := range captures {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) { serveCapture(t, w, name) })
			c := newTestClient(t, f, func(o *Options) { o.Host, o.Password, o.Directory = testHost, "pw", "/home/user/proj" })
			var got []any
			err := c.Subscribe(context.Background(), func(m any) { got = append(got, m) })
			if !errors.Is(err, ErrStreamEnded) {
				t.Fatalf("Subscribe ended with %v, want ErrStreamEnded", err)
			}
			want, _ := decodeCapture(t, name)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("handler got:\n%s\nwant:\n%s", dump(got), dump(want))
			}
			r := f.requests()[0]
			if r.Method != "GET" || r.Path != "/event" || r.Query != "directory=%2Fhome%2Fuser%2Fproj" ||
				r.Accept != "text/event-stream" || r.User != "opencode" || r.Pass != "pw" {
				t.Fatalf("request %+v", r)
			}
		})
	}
}

func TestSubscribeErrors(t *testing.T) {
	tests := []struct {
		name string
		h    func(int, http.ResponseWriter, *http.Request)
		edit func(*Options)
		want error
	}{
		{"unauthorized", reply(401, `{"_tag":"UnauthorizedError","message":"no"}`), nil, ErrUnauthorized},
		{"HTML instead of events", func(_ int, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html></html>"))
		}, nil, ErrNotEventStream},
		{"malformed frame", func(_ int, w http.ResponseWriter, _ *http.Request) {
			openSSE(w)
			_ = writeFrame(w, connectedFrame)
			_ = writeFrame(w, `{"type":"session.idle","properties":{}}`)
		}, nil, ErrMalformedEvent},
		{"line too long", func(_ int, w http.ResponseWriter, _ *http.Request) {
			openSSE(w)
			_ = writeFrame(w, `{"type":"message.part.updated","properties":{"text":"`+strings.Repeat("x", 500)+`"}}`)
		}, func(o *Options) { o.MaxLine = 200 }, ErrLineTooLong},
		{"no headers within the timeout", func(_ int, w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}, func(o *Options) { o.Timeout = 30 * time.Millisecond }, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.h)
			c := newTestClient(t, f, tt.edit)
			err := c.Subscribe(context.Background(), func(any) {})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestSubscribeEndsWithContext(t *testing.T) {
	f := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		openSSE(w)
		_ = writeFrame(w, connectedFrame)
		<-r.Context().Done()
	})
	c := newTestClient(t, f, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- c.Subscribe(ctx, func(m any) {
			if _, ok := m.(*Connected); ok {
				cancel()
			}
		})
	}()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// recorder collects what a Stream hands out, in order.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, s)
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func (r *recorder) count(s string) int {
	n := 0
	for _, e := range r.list() {
		if e == s {
			n++
		}
	}
	return n
}

func describe(m any) string {
	switch m := m.(type) {
	case *Connected:
		return "connected"
	case *Heartbeat:
		return "heartbeat"
	case *messages.SessionCreated:
		return "created " + m.SessionID
	case *messages.SessionDeleted:
		return "deleted " + m.SessionID
	case *messages.SessionIdle:
		return "idle " + m.SessionID
	default:
		return fmt.Sprintf("%T", m)
	}
}

func newTestStream(t *testing.T, c *Client, rec *recorder, edit func(*StreamOptions)) *Stream {
	t.Helper()
	o := StreamOptions{
		Client:      c,
		Handler:     func(m any) { rec.add(describe(m)) },
		OnConnect:   func(ctx context.Context) { rec.add("onconnect") },
		BackoffBase: time.Millisecond,
		BackoffMax:  5 * time.Millisecond,
		Logger:      testLogger(t),
	}
	if edit != nil {
		edit(&o)
	}
	s, err := NewStream(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop) // runs before the server's Close
	return s
}

// TestStreamReconnectsAfterServerCloses: the first connection replays the
// parent/child capture and ends; the Stream reconnects and reconciles
// again, because events in between are lost for good.
func TestStreamReconnectsAfterServerCloses(t *testing.T) {
	var served atomic.Int32
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		if n == 1 {
			serveCapture(t, w, "events-parent-child-noreply-delete")
			return
		}
		openSSE(w)
		_ = writeFrame(w, connectedFrame)
		<-r.Context().Done()
	})
	rec := &recorder{}
	s := newTestStream(t, newTestClient(t, f, nil), rec, nil)
	s.Start()
	testwait.Until(t, "a second OnConnect", func() bool { return rec.count("onconnect") == 2 && len(rec.list()) == 8 })
	const parent, child = "ses_dd4cbcb89ffe8wCqMHvjmcEs5Y", "ses_dd4cbcae4ffeNSBZkoFo4ol5Xh"
	want := []string{
		"onconnect", "connected", "created " + parent, "created " + child, "deleted " + child, "deleted " + parent,
		"onconnect", "connected",
	}
	if got := rec.list(); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if s.Connects() != 2 {
		t.Errorf("Connects() = %d", s.Connects())
	}
	if !s.Up() {
		t.Error("Up() is false on a running subscription")
	}
	s.Stop()
	if s.Up() {
		t.Error("Up() is true after Stop")
	}
	n := len(rec.list())
	if served.Load() != 2 {
		t.Errorf("server saw %d connections, want 2", served.Load())
	}
	s.Stop() // a second Stop is harmless
	if len(rec.list()) != n {
		t.Errorf("handler ran after Stop")
	}
}

func TestStreamOnConnectBeforeEvents(t *testing.T) {
	// OnConnect may take its time (it lists sessions); frames wait for it.
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		openSSE(w)
		_ = writeFrame(w, connectedFrame)
		_ = writeFrame(w, `{"type":"session.idle","properties":{"sessionID":"ses_a"}}`)
		<-r.Context().Done()
	})
	rec := &recorder{}
	release := make(chan struct{})
	s := newTestStream(t, newTestClient(t, f, nil), rec, func(o *StreamOptions) {
		o.OnConnect = func(ctx context.Context) {
			rec.add("onconnect")
			<-release
			rec.add("reconciled")
		}
	})
	s.Start()
	testwait.Until(t, "OnConnect", func() bool { return rec.count("onconnect") == 1 })
	if got := rec.list(); len(got) != 1 {
		t.Fatalf("handler ran during OnConnect: %q", got)
	}
	close(release)
	testwait.Until(t, "the idle event", func() bool { return rec.count("idle ses_a") == 1 })
	want := []string{"onconnect", "reconciled", "connected", "idle ses_a"}
	if got := rec.list(); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestStreamWatchdog: a connection on which nothing arrives (a half-open
// TCP connection looks the same) is dropped after three heartbeat periods.
func TestStreamWatchdog(t *testing.T) {
	var served atomic.Int32
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		openSSE(w)
		_ = writeFrame(w, connectedFrame)
		<-r.Context().Done() // then silence
	})
	var logs syncBuffer
	rec := &recorder{}
	s := newTestStream(t, newTestClient(t, f, nil), rec, func(o *StreamOptions) {
		o.HeartbeatPeriod = 10 * time.Millisecond
		o.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Trace})
	})
	s.Start()
	testwait.Until(t, "three connections", func() bool { return served.Load() >= 3 && rec.count("onconnect") >= 3 })
	s.Stop()
	if !strings.Contains(logs.String(), ErrStreamStale.Error()) {
		t.Fatalf("the reconnect was not for silence:\n%s", logs.String())
	}
}

// TestStreamHeartbeatsKeepItAlive: frames reset the watchdog, so a server
// that keeps sending heartbeats is never dropped.
func TestStreamHeartbeatsKeepItAlive(t *testing.T) {
	const period = 150 * time.Millisecond
	var served atomic.Int32
	var sent atomic.Int32
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		openSSE(w)
		_ = writeFrame(w, connectedFrame)
		start := time.Now()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for time.Since(start) < 3*staleAfter*period {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
				if writeFrame(w, heartbeatFrame) != nil {
					return
				}
				sent.Add(1)
			}
		}
		_ = writeFrame(w, `{"type":"session.idle","properties":{"sessionID":"ses_done"}}`)
		<-r.Context().Done()
	})
	rec := &recorder{}
	s := newTestStream(t, newTestClient(t, f, nil), rec, func(o *StreamOptions) { o.HeartbeatPeriod = period })
	s.Start()
	testwait.Until(t, "the end of the heartbeats", func() bool { return rec.count("idle ses_done") == 1 })
	if served.Load() != 1 || rec.count("onconnect") != 1 {
		t.Fatalf("%d connections, %d OnConnect: the watchdog fired while heartbeats flowed", served.Load(), rec.count("onconnect"))
	}
	if got := rec.count("heartbeat"); got != int(sent.Load()) || got == 0 {
		t.Fatalf("handler saw %d heartbeats, server sent %d", got, sent.Load())
	}
}

func TestStreamBacksOffWhileServerFails(t *testing.T) {
	var served atomic.Int32
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		http.Error(w, "starting", http.StatusServiceUnavailable)
	})
	rec := &recorder{}
	s := newTestStream(t, newTestClient(t, f, nil), rec, nil)
	s.Start()
	testwait.Until(t, "several attempts", func() bool { return served.Load() >= 4 })
	if s.Up() {
		t.Error("Up() is true without a subscription")
	}
	s.Stop()
	if got := rec.list(); len(got) != 0 {
		t.Fatalf("OnConnect or Handler ran without a stream: %q", got)
	}
}

// TestStreamStopBeforeStart: Stop before Start returns at once (it would
// hang waiting for a goroutine that never ran), and a Start after Stop
// starts nothing: once the second Stop, which waits for any goroutine
// Start recorded, has returned, the server has seen no request.
func TestStreamStopBeforeStart(t *testing.T) {
	f := newFake(t, reply(503, ""))
	rec := &recorder{}
	s := newTestStream(t, newTestClient(t, f, nil), rec, nil)
	s.Stop()
	s.Start()
	s.Stop()
	if n := len(f.requests()); n != 0 {
		t.Fatalf("Start after Stop connected (%d requests)", n)
	}
	if s.Up() || s.Connects() != 0 || len(rec.list()) != 0 {
		t.Fatalf("Start after Stop ran: Up %v, Connects %d, handler %q", s.Up(), s.Connects(), rec.list())
	}
}

// TestStreamStartTwice: a second Start while the stream runs starts no
// second goroutine and opens no second subscription. Right after the
// second Start, the goroutines Start created are counted: a goroutine
// exists from its go statement on, scheduled or not, so that count is
// final when Start returns. (The server's count alone could not fail: a
// second goroutine may not have dialled yet when Stop cancels it.) The
// fake server also counts /event connections, total and open at once;
// Stop returns only after the stream's goroutine has, so from then on
// nothing of the stream connects and those counts are final too.
func TestStreamStartTwice(t *testing.T) {
	var total, open, maxOpen atomic.Int32
	f := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/event" {
			http.NotFound(w, r)
			return
		}
		total.Add(1)
		n := open.Add(1)
		defer open.Add(-1)
		for m := maxOpen.Load(); n > m && !maxOpen.CompareAndSwap(m, n); m = maxOpen.Load() {
		}
		openSSE(w)
		_ = writeFrame(w, connectedFrame)
		<-r.Context().Done()
	})
	rec := &recorder{}
	s := newTestStream(t, newTestClient(t, f, nil), rec, nil)
	s.Start()
	testwait.Until(t, "the first subscription", func() bool { return s.Up() && rec.count("connected") == 1 })
	s.Start()
	if n := goroutinesStartedByStart(); n != 1 {
		t.Fatalf("%d goroutines started by Stream.Start run, want 1 (a second Start started another)", n)
	}
	s.Stop()
	if got := total.Load(); got != 1 {
		t.Fatalf("the server saw %d /event connections, want 1 (a second Start subscribed again)", got)
	}
	if got := maxOpen.Load(); got != 1 {
		t.Fatalf("%d /event connections were open at once, want 1", got)
	}
	if s.Connects() != 1 || rec.count("onconnect") != 1 {
		t.Fatalf("Connects() = %d, OnConnect ran %d times, want 1 each", s.Connects(), rec.count("onconnect"))
	}
	if s.Up() {
		t.Error("Up() is true after Stop")
	}
	testwait.Until(t, "the server to see the subscription closed", func() bool { return open.Load() == 0 })
	testwait.Until(t, "the stream's goroutine to end", func() bool { return goroutinesStartedByStart() == 0 })
	s.Stop() // a second Stop returns at once
	if n := len(f.requests()); n != 1 {
		t.Fatalf("the server saw %d requests, want the one subscription", n)
	}
}

// goroutinesStartedByStart counts the live goroutines that Stream.Start
// created, from their "created by" lines. No test of this package runs
// in parallel, and every other test's Stop has waited for its stream.
func goroutinesStartedByStart() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), "created by github.com/thatch-run/thatch/hosts/opencode.(*Stream).Start")
}

func TestNewStreamValidates(t *testing.T) {
	_, err := NewStream(StreamOptions{HeartbeatPeriod: -1, BackoffBase: time.Second, BackoffMax: time.Millisecond})
	if !errors.Is(err, ErrInvalidStreamOptions) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"Client", "Handler", "HeartbeatPeriod", "BackoffMax"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestBackoff(t *testing.T) {
	for attempt := 1; attempt <= 40; attempt++ {
		upper := min(100*time.Millisecond<<min(attempt-1, 20), 2*time.Second)
		for range 50 {
			d := backoff(100*time.Millisecond, 2*time.Second, attempt)
			if d < upper/2 || d > upper {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, d, upper/2, upper)
			}
		}
	}
}
