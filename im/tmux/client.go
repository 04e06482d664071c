package tmux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Options configure a Client. Socket (or SocketPath) and Session are
// required; a Borrowed client needs no Session.
type Options struct {
	// Binary is the tmux executable. Default: "tmux".
	Binary string
	// Socket is the tmux server's socket name (tmux -L): thatch's windows
	// live on a server of their own, apart from the user's default one.
	Socket string
	// SocketPath is the tmux server's socket file (tmux -S), an absolute
	// path, in place of Socket.
	SocketPath string
	// Session is the tmux session that holds the windows. It may not hold
	// ':' or '.', which tmux reads as window and pane separators.
	Session string
	// Borrowed says the server is someone else's (the user's own tmux,
	// whose windows thatch may adopt): Windows lists the windows of every
	// session, and the client never starts a server or a session there
	// (NewWindow fails with ErrBorrowed), never kills it, and never
	// attaches a control-mode client, which the user would see among the
	// server's clients: each command forks a client, as with ExecOnly.
	Borrowed bool
	// Config is the configuration file a server started by this client
	// reads (tmux -f). Default: "" (tmux's own default, ~/.tmux.conf).
	Config string
	// Timeout bounds each command. Default: 5s.
	Timeout time.Duration
	// Logger receives debug records of the control-mode connection.
	// Default: hclog.NewNullLogger().
	Logger hclog.Logger
	// ExecOnly forks a tmux client for every command instead of using a
	// control-mode client (slower; for comparison and tests). Default: false.
	ExecOnly bool
	// Env is the environment of the tmux clients this Client starts. A
	// server one of them starts takes it as its global environment, which
	// every window's programs inherit: it must hold no secret of the
	// caller's. Default: os.Environ(). TMUX and TMUX_PANE are always
	// left out (a client inside tmux would talk to that server instead).
	Env []string
}

// Window is what tmux reports about a window and its active pane.
type Window struct {
	ID      string // "@12"; reused by a new server after a restart
	Pane    string // #{pane_id} of its active pane, "%3" (what activity names)
	Name    string // #{window_name}, as tmux stores it (rename-window escapes a newline as \n)
	Dir     string // #{pane_current_path}, or the start directory while tmux cannot tell
	PanePID int    // #{pane_pid}
	Command string // #{pane_current_command}
	Tag     string // the window option @thatch_tag; "" if unset
	// Dead: the pane's program has exited and the pane stays, dead
	// (remain-on-exit, which thatch sets on the windows it makes).
	Dead bool
}

// Client runs tmux commands on one server and session. It is safe for
// concurrent use; commands are pipelined over one control-mode client.
type Client struct {
	o      Options
	log    hclog.Logger
	env    []string
	bufSeq atomic.Uint64

	mu       sync.Mutex         // guards the fields below; never held while waiting on tmux
	conn     *conn              // nil until dialed, and after it was dropped
	dialing  chan struct{}      // closed when the dial under way ends; nil while none is
	stopDial context.CancelFunc // cancels the dial under way
	dialGen  uint64             // counts redialNow calls
	retryAt  time.Time          // no dial before then, after one failed
	closed   bool
	reaping  sync.WaitGroup  // control-mode clients being closed in the background
	retiring *conn           // the last client dropped; the next dial waits until it is gone
	activity func(id string) // told of activity (activity.go); nil: none asked for
	feedGen  uint64          // control-mode clients attached that report activity
}

// redialDelay is how long a Client forks tmux per command after a failed
// control-mode dial (no server, no session) before it tries again.
const redialDelay = time.Second

// New checks the options and returns a Client. It starts nothing: the
// control-mode client is started by the first command that needs it.
func New(o Options) (*Client, error) {
	if o.Binary == "" {
		o.Binary = "tmux"
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	var probs []string
	switch {
	case o.SocketPath != "" && o.Socket != "":
		probs = append(probs, "set a socket name or a socket path, not both")
	case o.SocketPath != "":
		if !filepath.IsAbs(o.SocketPath) || hasControl(o.SocketPath) {
			probs = append(probs, fmt.Sprintf("socket path %q must be absolute and hold no control characters", o.SocketPath))
		}
	case o.Socket == "" || strings.ContainsAny(o.Socket, "/\x00"):
		probs = append(probs, fmt.Sprintf("socket name %q must be non-empty and hold no '/'", o.Socket))
	}
	if (o.Session == "" && !o.Borrowed) || strings.ContainsAny(o.Session, ":.") || hasControl(o.Session) {
		probs = append(probs, fmt.Sprintf("session name %q must be non-empty and hold no ':', '.' or control characters", o.Session))
	}
	if o.Timeout < 0 {
		probs = append(probs, fmt.Sprintf("timeout %v is negative", o.Timeout))
	}
	if _, err := exec.LookPath(o.Binary); err != nil {
		probs = append(probs, fmt.Sprintf("binary: %v", err))
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("tmux: invalid options: %s", strings.Join(probs, "; "))
	}
	c := &Client{o: o, log: o.Logger}
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	for _, kv := range env {
		// A tmux client inside tmux would talk to that server instead.
		if !strings.HasPrefix(kv, "TMUX=") && !strings.HasPrefix(kv, "TMUX_PANE=") {
			c.env = append(c.env, kv)
		}
	}
	return c, nil
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// Close stops the control-mode client. Windows and the server stay.
func (c *Client) Close() error {
	c.mu.Lock()
	cn := c.conn
	c.conn, c.closed = nil, true
	dialing, stop := c.dialing, c.stopDial
	c.mu.Unlock()
	if stop != nil {
		stop()
		<-dialing // the dial closes what it made, seeing c.closed
	}
	if cn != nil {
		cn.close()
	}
	c.reaping.Wait()
	return nil
}

// getConn returns the control-mode client, dialing one when there is
// none, or nil when commands must be forked instead. The dial runs on
// its own (bounded by Options.Timeout, not by ctx) and holds no lock:
// callers that find one under way wait for it only as long as ctx lets
// them, so a slow tmux never holds up a command past its deadline.
func (c *Client) getConn(ctx context.Context) (*conn, error) {
	for dials := 0; ; dials++ {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if c.o.ExecOnly || c.o.Borrowed {
			c.mu.Unlock()
			return nil, nil
		}
		if cn := c.conn; cn != nil {
			if cn.alive() {
				c.mu.Unlock()
				return cn, nil
			}
			c.conn = nil
			c.reapLocked(cn) // it stopped, or is on its way out
		}
		if dialing := c.dialing; dialing != nil {
			c.mu.Unlock()
			select {
			case <-dialing:
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("tmux: waiting for the control-mode client: %w", ctx.Err())
			}
		}
		if time.Now().Before(c.retryAt) || dials == 2 {
			// No server, no session, or clients that leave as soon as
			// they come: fork for now.
			c.mu.Unlock()
			return nil, nil
		}
		c.startDialLocked()
		c.mu.Unlock()
	}
}

// startDialLocked starts dialing a control-mode client in the
// background; c.mu is held.
func (c *Client) startDialLocked() {
	dialing := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), c.o.Timeout)
	c.dialing, c.stopDial = dialing, cancel
	gen := c.dialGen
	retiring := c.retiring
	c.retiring = nil
	notify := c.activity
	go func() {
		defer close(dialing)
		if retiring != nil {
			// tmux (3.6 and before) crashes when it notifies a control
			// client that is still identifying itself (tmux GitHub issue
			// 4980); the client being closed is notified of as it goes
			// (client-detached), so it goes first.
			select {
			case <-retiring.done:
			case <-ctx.Done():
			}
		}
		cn, err := dial(ctx, c, notify)
		cancel()
		c.mu.Lock()
		c.dialing, c.stopDial = nil, nil
		closed := c.closed
		switch {
		case err != nil:
			// A dial that began before a server or session was made
			// (redialNow) says nothing about the next one.
			if gen == c.dialGen {
				c.retryAt = time.Now().Add(redialDelay)
			}
		case !closed:
			c.conn = cn
			if notify != nil {
				c.feedGen++
			}
		}
		c.mu.Unlock()
		switch {
		case err != nil:
			c.log.Debug("no control-mode client; forking tmux per command", "error", err)
		case closed:
			cn.close()
		default:
			c.log.Debug("control-mode client attached", "session", c.o.Session)
		}
	}()
}

// reapLocked closes cn in the background, for Close to wait on; c.mu is
// held. Once the Client is closed nothing may join c.reaping, so the
// caller closes cn itself: reapLocked reports false.
func (c *Client) reapLocked(cn *conn) bool {
	if c.closed {
		return false
	}
	c.retiring = cn
	c.reaping.Add(1)
	go func() {
		defer c.reaping.Done()
		cn.close()
	}()
	return true
}

// dropConn forgets cn, if it is still the current client, and closes it
// without waiting for it to exit: the command that found it broken
// returns at once.
func (c *Client) dropConn(cn *conn) {
	c.mu.Lock()
	if c.conn == cn {
		c.conn = nil
	}
	reaped := c.reapLocked(cn)
	c.mu.Unlock()
	if !reaped {
		cn.close()
	}
}

// redialNow lets the next command dial at once: a server or session was
// just created.
func (c *Client) redialNow() {
	c.mu.Lock()
	c.retryAt = time.Time{}
	c.dialGen++
	c.mu.Unlock()
}

// run runs one command and returns its output.
func (c *Client) run(ctx context.Context, idempotent bool, args ...string) (string, error) {
	outs, err := c.batch(ctx, idempotent, args)
	if err != nil {
		return "", err
	}
	return outs[0], nil
}

// batch runs commands in order under one timeout, over the control-mode
// client when there is one (written at once, so they cost one round
// trip), and returns their outputs or the first error. Commands a lost
// client may or may not have run are sent again only when idempotent.
func (c *Client) batch(ctx context.Context, idempotent bool, cmds ...[]string) ([]string, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		cn, err := c.getConn(ctx)
		if err != nil {
			return nil, err
		}
		if cn == nil {
			return c.execBatch(ctx, cmds)
		}
		outs, err := controlBatch(ctx, cn, cmds)
		switch {
		case errors.Is(err, errConnLost):
			c.dropConn(cn)
			if attempt == 0 && (idempotent || errors.Is(err, errNotRun)) {
				continue
			}
		case errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil:
			// tmux did not answer in Timeout: do not wait on it again.
			c.log.Warn("tmux did not answer in time; restarting the control-mode client", "timeout", c.o.Timeout)
			c.dropConn(cn)
		}
		return outs, err
	}
}

func controlBatch(ctx context.Context, cn *conn, cmds [][]string) ([]string, error) {
	chs, err := cn.send(ctx, cmds)
	if err != nil {
		return nil, err
	}
	outs := make([]string, len(cmds))
	var first error
	for i, ch := range chs {
		select {
		case r := <-ch:
			if r.err != nil {
				if i > 0 && errors.Is(r.err, errNotRun) {
					// The commands before it ran: sending the batch again
					// would run them twice.
					return nil, fmt.Errorf("%w after %d of %d commands", errConnLost, i, len(cmds))
				}
				return nil, r.err
			}
			if r.failed && first == nil {
				first = &CommandError{Command: cmds[i][0], Message: r.out}
			}
			outs[i] = r.out
		case <-ctx.Done():
			return nil, fmt.Errorf("tmux: %s: %w", cmds[i][0], ctx.Err())
		}
	}
	return outs, first
}

// execBatch forks one tmux client per command and stops at the first
// failure.
func (c *Client) execBatch(ctx context.Context, cmds [][]string) ([]string, error) {
	outs := make([]string, len(cmds))
	for i, a := range cmds {
		out, err := c.execRun(ctx, a)
		if err != nil {
			return nil, err
		}
		outs[i] = out
	}
	return outs, nil
}
