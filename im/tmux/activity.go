package tmux

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// Activity: a caller that watches panes for a change (an agent's prompt
// drawn on its screen) is told which panes wrote output as tmux reads it,
// instead of capturing every pane on a timer. A Client whose caller asked
// for it (OnActivity) attaches its control-mode client without the
// no-output flag: tmux then writes each pane's output to it as
// notifications, and the reader, which ignored notifications, hands the
// pane's id on (the output itself is not kept).
//
// tmux stops reading a pane while every client attached to it is a
// control-mode client that is behind with that pane's output: a daemon
// that stalls must not stall the agents. So the client also sets
// pause-after: tmux pauses the pane's output to it instead, once it is
// activityPause behind, and tells it (%pause); the Client continues the
// pane at once and reports it as active, so that a watcher looks again.

// activityPause is the client's pause-after, in seconds.
const activityPause = 2

// activityFlags are the client flags of a control-mode client that
// reports activity.
var activityFlags = "ignore-size,pause-after=" + strconv.Itoa(activityPause)

// OnActivity makes the Client report activity to fn: the id of each pane
// of its session that wrote output ("%3"), and of each window that closed
// ("@7"). fn is called from the control-mode client's reader, in the order
// tmux wrote, so it must return at once and must not call the Client. Set
// it before the Client's first command; a Borrowed or ExecOnly Client
// reports nothing (see ActivityFeed).
func (c *Client) OnActivity(fn func(id string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.activity = fn
}

// ActivityFeed reports whether activity is reported now (live: a
// control-mode client runs and reports it), and gen, which counts the
// control-mode clients attached so far: output written while none was
// attached was told to nobody, so a caller that sees gen change looks
// again at what it watches. While nothing is live a caller polls.
func (c *Client) ActivityFeed() (gen uint64, live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.feedGen, c.activity != nil && c.conn != nil && c.conn.alive()
}

// notice reads one notification line (one written outside a block) of a
// client that reports activity.
func (cn *conn) notice(line string) {
	name, rest, _ := strings.Cut(line, " ")
	id, _, _ := strings.Cut(rest, " ")
	switch name {
	case "%output", "%extended-output", "%window-close", "%unlinked-window-close":
	case "%pause":
		cn.pause(id)
	default:
		return
	}
	if validPane(id) || validID(id) {
		cn.notify(id)
	}
}

// validPane reports whether id is a pane id: '%' and digits.
func validPane(id string) bool {
	return len(id) > 1 && id[0] == '%' && digits(id[1:])
}

// pause records a pane whose output tmux paused for this client, for
// resumePanes to continue.
func (cn *conn) pause(pane string) {
	if !validPane(pane) {
		return
	}
	cn.mu.Lock()
	if cn.paused == nil {
		cn.paused = map[string]bool{}
	}
	cn.paused[pane] = true
	cn.mu.Unlock()
	select {
	case cn.unpause <- struct{}{}:
	default:
	}
}

// resumePanes continues the panes tmux paused for this client, until the
// client stops. It runs beside read, which cannot wait for an answer it
// is the one to read.
func (cn *conn) resumePanes(timeout time.Duration) {
	for {
		select {
		case <-cn.done:
			return
		case <-cn.unpause:
		}
		cn.mu.Lock()
		var cmds [][]string
		for p := range cn.paused {
			cmds = append(cmds, []string{"refresh-client", "-A", p + ":continue"})
		}
		cn.paused = nil
		cn.mu.Unlock()
		if len(cmds) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		if _, err := controlBatch(ctx, cn, cmds); err != nil {
			cn.log.Debug("cannot continue the panes tmux paused", "panes", len(cmds), "error", err)
		}
		cancel()
	}
}
