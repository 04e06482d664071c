package tmux

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// errNotRun fails a command that tmux never read from a control-mode
// client that stopped: it was not written because the client had already
// stopped or was leaving, or the client left cleanly (%exit, after tmux
// had answered every command it read) before tmux read it. Unlike
// errConnLost alone, sending it again elsewhere cannot do it twice.
var errNotRun = fmt.Errorf("%w before tmux read the command", errConnLost)

// reply is the answer to one control-mode command.
type reply struct {
	out    string // the block's lines, joined by newlines
	failed bool   // the block ended with %error; out is tmux's message
	err    error  // errConnLost (or errNotRun): no block will come
}

// conn is one control-mode tmux client: the process, its stdin, and the
// goroutine (read) that owns its stdout. Answers come in the order the
// commands were written, so the writer that appends to pending is the one
// that writes, holding wsem.
type conn struct {
	log    hclog.Logger
	cmd    *exec.Cmd
	stdin  *os.File
	stderr *headBuffer

	// wsem (one slot) is held by the writer: a write and its places in
	// pending go together. A channel, so that a writer waiting for
	// another's blocked write gives up at its own deadline.
	wsem chan struct{}

	mu      sync.Mutex
	pending []chan reply // answers owed, oldest first
	err     error        // why the client stopped; nil while it runs
	leaving bool         // it said %exit, or its output lost its framing: write nothing more

	// notify, when set, is told of activity (activity.go); paused are
	// the panes tmux paused for this client, which resumePanes
	// continues when unpause is signalled.
	notify  func(id string)
	paused  map[string]bool
	unpause chan struct{}

	attached  chan error    // the answer to the attach-session it was started with
	done      chan struct{} // closed when read has returned and the process was reaped
	closeOnce sync.Once
}

// dial starts a control-mode client attached to the session and waits
// until tmux has answered its attach-session. The client must not resize
// the user's windows or be sent their output: ignore-size,no-output. Nor
// may it start a server (-N): attach-session would otherwise start one
// when there is none, load the tmux configuration into it (all of it,
// plugin managers included, before it answers), find no session there,
// and leave behind a server without sessions, which fails every command
// with "no current target" until it exits. Only newSession starts a
// server.
func dial(ctx context.Context, c *Client, notify func(id string)) (*conn, error) {
	flags := "ignore-size,no-output"
	if notify != nil {
		flags = activityFlags // it is sent the panes' output (activity.go)
	}
	args := append(append([]string{"-N"}, c.baseArgs()...), "-C", "attach-session", "-f", flags, "-t", "="+c.o.Session)
	cmd := exec.Command(c.o.Binary, args...)
	cmd.Env = c.env
	cmd.WaitDelay = time.Second
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("tmux: control-mode pipe: %w", err)
	}
	cmd.Stdin = r
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("tmux: control-mode pipe: %w", err)
	}
	cn := &conn{
		log: c.log, cmd: cmd, stdin: w, stderr: &headBuffer{max: 2048}, wsem: make(chan struct{}, 1),
		attached: make(chan error, 1), done: make(chan struct{}), notify: notify, unpause: make(chan struct{}, 1),
	}
	cmd.Stderr = cn.stderr
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("tmux: start control-mode client: %w", err)
	}
	go cn.read(stdout)
	select {
	case err := <-cn.attached:
		if err != nil {
			cn.close()
			return nil, err
		}
		if notify != nil {
			go cn.resumePanes(c.o.Timeout)
		}
		return cn, nil
	case <-cn.done:
		return nil, fmt.Errorf("%w before attaching: %s", errConnLost, strings.TrimSpace(cn.stderr.String()))
	case <-ctx.Done():
		cn.close()
		return nil, fmt.Errorf("tmux: control-mode attach: %w", ctx.Err())
	}
}

// read owns the client's stdout until it ends: it frames the %begin ...
// %end/%error blocks, hands each to the command it answers, and passes
// notifications (which never come inside a block) to notice when the
// client reports activity, ignoring them otherwise. Then it reaps the
// process and fails whatever is still owed.
//
// A block ends at the first line equal to its %end or %error guard, so
// output that holds such a line (a pane can print anything, and
// capture-pane and pane paths pass it on as it is) ends its block early;
// what follows is then read outside a block, where a stray %begin would
// open a block that never ends and swallow every later answer. Outside a
// block tmux writes nothing but notifications and the next %begin, whose
// number is greater than the last, so anything else that looks like a
// guard means the framing is lost: the client is killed at once, and the
// commands owed fail (errConnLost), rather than each waiting out its
// timeout behind a block that will not end.
func (cn *conn) read(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	var f framer
	lost := false
	for {
		line, err := readLine(br)
		if err != nil {
			break
		}
		if lost {
			continue // drained until the killed client's output ends
		}
		outside := f.guard == ""
		b, err := f.line(line)
		switch {
		case err != nil:
			lost = true
			cn.leave()
			cn.log.Warn("control-mode output lost its framing; restarting the control-mode client", "error", err)
			_ = cn.cmd.Process.Kill()
		case b != nil:
			cn.deliver(b)
		case strings.HasPrefix(line, "%exit"):
			cn.log.Debug("control-mode client exiting", "notice", line)
			cn.leave()
		case outside && f.guard == "" && cn.notify != nil:
			cn.notice(line)
		}
	}
	werr := cn.cmd.Wait()
	// A client that tmux let go wrote %exit last, after tmux had answered
	// every command it read and stopped reading: what is still owed was
	// never run.
	cn.stop(werr, f.exited && !lost)
}

// block is one finished %begin ... %end/%error block.
type block struct {
	guard   string // "TIME NUMBER FLAGS"
	body    []string
	failed  bool // it ended with %error
	control bool // flags 1: it answers a command read from the client's stdin
}

// framer splits control-mode output into blocks.
type framer struct {
	guard  string // "TIME NUMBER FLAGS" of the open block; "" outside one
	body   []string
	flags  int
	number uint32 // of the last block begun
	begun  bool   // a block has begun, so number is set
	exited bool   // the last line read was a %exit of a client that tmux let go
}

// errFraming means a line outside a block looked like a guard that tmux
// cannot have written there.
var errFraming = errors.New("tmux: control-mode output lost its framing")

// line reads one line of output and returns the block it ended, if any,
// or errFraming.
func (f *framer) line(s string) (*block, error) {
	if f.guard != "" {
		end := s == "%end "+f.guard
		failed := s == "%error "+f.guard
		if !end && !failed {
			f.body = append(f.body, s)
			return nil, nil
		}
		b := &block{guard: f.guard, body: f.body, failed: failed, control: f.flags == 1}
		f.guard, f.body = "", nil
		return b, nil
	}
	f.exited = false
	switch {
	case strings.HasPrefix(s, "%begin "):
		rest := s[len("%begin "):]
		n, flags, ok := parseGuard(rest)
		if !ok || (f.begun && int32(n-f.number) <= 0) {
			return nil, fmt.Errorf("%w: %q after block %d", errFraming, clip(s), f.number)
		}
		f.guard, f.flags, f.number, f.begun = rest, flags, n, true
	case strings.HasPrefix(s, "%end "), strings.HasPrefix(s, "%error "):
		_, rest, _ := strings.Cut(s, " ")
		if _, _, ok := parseGuard(rest); ok {
			return nil, fmt.Errorf("%w: %q outside a block", errFraming, clip(s))
		}
	case s == "%exit" || strings.HasPrefix(s, "%exit "):
		f.exited = letGo(strings.TrimPrefix(s[len("%exit"):], " "))
	}
	return nil, nil
}

// letGo reports whether a control-mode client that exited for reason
// (its %exit line) was let go by tmux: detached, its session gone, the
// server shut down. tmux then stops reading the client's commands once
// it has run and answered those it read. Other reasons ("server exited
// unexpectedly": it crashed or was killed; "terminated": the client was
// killed) leave commands that tmux may have run unanswered.
func letGo(reason string) bool {
	return reason == "" || reason == "detached" || strings.HasPrefix(reason, "detached (from session ") ||
		reason == "server exited"
}

// parseGuard reads "TIME NUMBER FLAGS" as tmux writes it (%ld %u %d,
// flags 0 or 1).
func parseGuard(g string) (number uint32, flags int, ok bool) {
	t, rest, ok1 := strings.Cut(g, " ")
	n, fl, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || !digits(t) || !digits(n) || (fl != "0" && fl != "1") {
		return 0, 0, false
	}
	v, err := strconv.ParseUint(n, 10, 32)
	if err != nil {
		return 0, 0, false
	}
	return uint32(v), int(fl[0] - '0'), true
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// deliver hands a finished block to the oldest command owed an answer. A
// block whose flags are 0 answers the attach-session the client was
// started with (or a hook), not a command of ours.
func (cn *conn) deliver(b *block) {
	out := strings.Join(b.body, "\n")
	if !b.control {
		var err error
		if b.failed {
			err = &CommandError{Command: "attach-session", Message: out}
		}
		select {
		case cn.attached <- err:
		default:
		}
		return
	}
	cn.mu.Lock()
	if len(cn.pending) == 0 {
		cn.mu.Unlock()
		cn.log.Warn("control-mode answer with no command waiting", "guard", b.guard)
		return
	}
	ch := cn.pending[0]
	cn.pending[0] = nil
	cn.pending = cn.pending[1:]
	cn.mu.Unlock()
	ch <- reply{out: out, failed: b.failed}
}

// leave stops new commands from being written to the client, which is
// on its way out.
func (cn *conn) leave() {
	cn.mu.Lock()
	cn.leaving = true
	cn.mu.Unlock()
}

// stop records that the client has stopped, fails every command still
// owed an answer (errNotRun when tmux cannot have read it), and closes
// done.
func (cn *conn) stop(werr error, notRun bool) {
	why := errConnLost
	if notRun {
		why = errNotRun
	}
	cn.mu.Lock()
	cn.err = errConnLost
	owed := cn.pending
	cn.pending = nil
	cn.mu.Unlock()
	for _, ch := range owed {
		ch <- reply{err: why}
	}
	cn.log.Debug("control-mode client stopped", "wait", werr, "stderr", strings.TrimSpace(cn.stderr.String()))
	close(cn.done)
}

// alive reports whether the client still runs and takes commands.
func (cn *conn) alive() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.err == nil && !cn.leaving
}

// send writes the commands as one write, one line each, and returns the
// channels their answers will come on, in order. errNotRun means nothing
// was written; a failed write stops the client, since what was cut short
// can no longer be matched with its answer.
func (cn *conn) send(ctx context.Context, cmds [][]string) ([]chan reply, error) {
	var b strings.Builder
	for _, a := range cmds {
		b.WriteString(controlLine(a))
		b.WriteByte('\n')
	}
	chs := make([]chan reply, len(cmds))
	for i := range chs {
		chs[i] = make(chan reply, 1)
	}
	select {
	case cn.wsem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("tmux: %s: waiting to write to the control-mode client: %w", cmds[0][0], ctx.Err())
	}
	defer func() { <-cn.wsem }()
	cn.mu.Lock()
	if cn.err != nil || cn.leaving {
		cn.mu.Unlock()
		return nil, errNotRun
	}
	cn.pending = append(cn.pending, chs...)
	cn.mu.Unlock()
	d, _ := ctx.Deadline() // zero: no deadline
	_ = cn.stdin.SetWriteDeadline(d)
	if n, err := io.WriteString(cn.stdin, b.String()); err != nil {
		_ = cn.cmd.Process.Kill()
		if n == 0 {
			// Not a byte went (tmux had closed its end, or read nothing
			// before the deadline): no command can have run.
			return nil, fmt.Errorf("%w: write: %v", errNotRun, err)
		}
		return nil, fmt.Errorf("%w: write: %v", errConnLost, err)
	}
	return chs, nil
}

// close ends the client (EOF on its stdin makes it exit; a kill after a
// grace period if it does not) and waits until read has returned.
func (cn *conn) close() {
	cn.closeOnce.Do(func() { cn.stdin.Close() })
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-cn.done:
	case <-t.C:
		_ = cn.cmd.Process.Kill()
		<-cn.done
	}
}

// readLine reads one line of any length without its newline.
func readLine(br *bufio.Reader) (string, error) {
	line, err := br.ReadSlice('\n')
	if err == nil {
		return string(line[:len(line)-1]), nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return "", err
	}
	long := append([]byte(nil), line...)
	for {
		line, err = br.ReadSlice('\n')
		long = append(long, line...)
		if err == nil {
			return string(long[:len(long)-1]), nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return "", err
		}
	}
}

// headBuffer keeps the first max bytes written to it: a child's stderr,
// for error messages.
type headBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *headBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - len(t.b); room > 0 {
		t.b = append(t.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (t *headBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
