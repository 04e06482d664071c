package opencode

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Defaults for StreamOptions fields left zero.
const (
	// DefaultHeartbeatPeriod is how often opencode 1.18 sends
	// server.heartbeat. The watchdog gives up after three periods.
	DefaultHeartbeatPeriod = 10 * time.Second
	DefaultBackoffBase     = 500 * time.Millisecond
	DefaultBackoffMax      = 30 * time.Second
)

// staleAfter is how many heartbeat periods of silence the watchdog allows.
const staleAfter = 3

var (
	// ErrStreamStale is why a Stream drops a connection on which nothing
	// arrived for three heartbeat periods; a half-open TCP connection looks
	// exactly like a quiet server otherwise.
	ErrStreamStale = errors.New("opencode: event stream went silent")
	// ErrInvalidStreamOptions is returned by NewStream.
	ErrInvalidStreamOptions = errors.New("opencode: invalid stream options")
)

// StreamOptions configures a Stream. Client and Handler are required.
type StreamOptions struct {
	Client *Client
	// Handler receives every decoded message (*Connected and *Heartbeat
	// included) on the stream's goroutine, in stream order. It should hand
	// the message on (e.g. send it to an actor) and return quickly: while
	// it runs, nothing else is read.
	Handler func(msg any)
	// OnConnect runs on the stream's goroutine once per connection, after
	// the server has confirmed the subscription (its server.connected frame)
	// and before that frame or any later one reaches Handler. This stream
	// has no replay, so the owner reconciles here: list sessions and
	// statuses and compare them with what it holds. Its ctx ends when the
	// Stream stops. The watchdog is paused while it runs. Optional.
	OnConnect func(ctx context.Context)
	// HeartbeatPeriod is the server's heartbeat interval; if no frame of
	// any kind arrives for three periods, the connection is dropped and
	// made again. Default: DefaultHeartbeatPeriod.
	HeartbeatPeriod time.Duration
	// BackoffBase and BackoffMax shape the jittered exponential wait
	// between reconnects. The wait starts from BackoffBase again after a
	// connection that delivered at least one frame. Defaults: 500 ms, 30 s.
	BackoffBase, BackoffMax time.Duration
	// Logger receives connection losses. Default: the null logger.
	Logger hclog.Logger
}

// Stream keeps one subscription to a server's /event open: it owns one
// goroutine, started by Start and ended by Stop, which subscribes, hands
// messages to the Handler, and reconnects with backoff whenever the stream
// breaks or goes silent.
type Stream struct {
	o      StreamOptions
	log    hclog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	started bool

	connects atomic.Int64
	up       atomic.Bool // a subscription is confirmed and running
}

// NewStream validates o and returns a Stream that has not started.
func NewStream(o StreamOptions) (*Stream, error) {
	var problems []string
	if o.Client == nil {
		problems = append(problems, "Client is required")
	}
	if o.Handler == nil {
		problems = append(problems, "Handler is required")
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"HeartbeatPeriod", &o.HeartbeatPeriod, DefaultHeartbeatPeriod},
		{"BackoffBase", &o.BackoffBase, DefaultBackoffBase},
		{"BackoffMax", &o.BackoffMax, DefaultBackoffMax},
	} {
		switch {
		case *d.v < 0:
			problems = append(problems, d.name+" must not be negative")
		case *d.v == 0:
			*d.v = d.def
		}
	}
	if o.BackoffMax < o.BackoffBase {
		problems = append(problems, "BackoffMax must not be less than BackoffBase")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %v", ErrInvalidStreamOptions, problems)
	}
	log := o.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Stream{o: o, log: log, ctx: ctx, cancel: cancel, done: make(chan struct{})}, nil
}

// Start starts the stream's goroutine. Later calls, and calls after Stop,
// do nothing.
func (s *Stream) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.ctx.Err() != nil {
		return
	}
	s.started = true
	go s.run()
}

// Stop ends the current connection and waits until the goroutine has
// returned, so no Handler or OnConnect call runs after it. It may be
// called more than once, and before Start.
func (s *Stream) Stop() {
	s.mu.Lock()
	started := s.started
	s.cancel()
	s.mu.Unlock()
	if started {
		<-s.done
	}
}

// Connects counts the connections on which the server confirmed the
// subscription, for status reports.
func (s *Stream) Connects() int64 { return s.connects.Load() }

// Up reports whether a subscription is confirmed and running now: false
// before the first connect, while reconnecting, and after Stop.
func (s *Stream) Up() bool { return s.up.Load() }

func (s *Stream) run() {
	defer close(s.done)
	failures := 0
	for {
		delivered, err := s.connectOnce()
		if s.ctx.Err() != nil {
			return
		}
		if delivered {
			failures = 0
		}
		failures++
		delay := backoff(s.o.BackoffBase, s.o.BackoffMax, failures)
		s.log.Warn("opencode event stream lost; reconnecting", "host", s.o.Client.Host(), "error", err, "delay", delay)
		t := time.NewTimer(delay)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// connectOnce runs one subscription until it breaks. delivered reports
// whether any frame arrived on it.
func (s *Stream) connectOnce() (delivered bool, err error) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	defer s.up.Store(false)
	limit := staleAfter * s.o.HeartbeatPeriod
	var stale atomic.Bool
	watchdog := time.AfterFunc(limit, func() {
		stale.Store(true)
		cancel()
	})
	defer watchdog.Stop()

	confirmed := false
	onFrame := func() {
		delivered = true
		watchdog.Reset(limit)
	}
	handler := func(msg any) {
		if !confirmed {
			// The first frame is server.connected; should a server skip
			// it, the first message it does send stands in for it.
			confirmed = true
			s.connects.Add(1)
			s.up.Store(true)
			if s.o.OnConnect != nil {
				watchdog.Stop()
				s.o.OnConnect(ctx)
				watchdog.Reset(limit)
			}
		}
		if ctx.Err() != nil {
			return
		}
		s.o.Handler(msg)
	}
	err = s.o.Client.subscribe(ctx, onFrame, handler)
	if stale.Load() && s.ctx.Err() == nil {
		err = fmt.Errorf("%w: nothing for %v", ErrStreamStale, limit)
	}
	return delivered, err
}
