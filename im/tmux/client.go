package tmux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Options configure a Client. Socket and Session are required.
type Options struct {
	// Binary is the tmux executable. Default: "tmux".
	Binary string
	// Socket is the tmux server's socket name (tmux -L): thatch's windows
	// live on a server of their own, apart from the user's default one.
	Socket string
	// Session is the tmux session that holds the windows. It may not hold
	// ':' or '.', which tmux reads as window and pane separators.
	Session string
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
}

// Window is what tmux reports about a window and its active pane.
type Window struct {
	ID      string // "@12"; reused by a new server after a restart
	Name    string // #{window_name}, as tmux stores it (rename-window escapes a newline as \n)
	Dir     string // #{pane_current_path}, or the start directory while tmux cannot tell
	PanePID int    // #{pane_pid}
	Command string // #{pane_current_command}
	Tag     string // the window option @thatch_tag; "" if unset
}

// Client runs tmux commands on one server and session. It is safe for
// concurrent use; commands are pipelined over one control-mode client.
type Client struct {
	o      Options
	log    hclog.Logger
	env    []string
	bufSeq atomic.Uint64

	mu      sync.Mutex // guards the fields below; held while dialing
	conn    *conn      // nil until dialed, and after it was dropped
	retryAt time.Time  // no dial before then, after one failed
	closed  bool
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
	if o.Socket == "" || strings.ContainsAny(o.Socket, "/\x00") {
		probs = append(probs, fmt.Sprintf("socket name %q must be non-empty and hold no '/'", o.Socket))
	}
	if o.Session == "" || strings.ContainsAny(o.Session, ":.") || hasControl(o.Session) {
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
	for _, kv := range os.Environ() {
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
	c.mu.Unlock()
	if cn != nil {
		cn.close()
	}
	return nil
}

// getConn returns the control-mode client, dialing one when there is
// none, or nil when commands must be forked instead.
func (c *Client) getConn(ctx context.Context) (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.o.ExecOnly {
		return nil, nil
	}
	if c.conn != nil {
		if c.conn.alive() {
			return c.conn, nil
		}
		c.conn.close() // it has stopped: this only reaps it
		c.conn = nil
	}
	if time.Now().Before(c.retryAt) {
		return nil, nil
	}
	cn, err := dial(ctx, c)
	if err != nil {
		c.retryAt = time.Now().Add(redialDelay)
		c.log.Debug("no control-mode client; forking tmux per command", "error", err)
		return nil, nil
	}
	c.log.Debug("control-mode client attached", "session", c.o.Session)
	return c.setConn(cn), nil
}

func (c *Client) setConn(cn *conn) *conn {
	c.conn = cn
	return cn
}

// dropConn forgets cn, if it is still the current client, and closes it.
func (c *Client) dropConn(cn *conn) {
	c.mu.Lock()
	if c.conn == cn {
		c.conn = nil
	}
	c.mu.Unlock()
	cn.close()
}

// redialNow lets the next command dial at once: a server or session was
// just created.
func (c *Client) redialNow() {
	c.mu.Lock()
	c.retryAt = time.Time{}
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
			if attempt == 0 && (idempotent || errors.Is(err, errNotSent)) {
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
