package tmux

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// errNotSent fails a command that was never written to a control-mode
// client because the client had already stopped; unlike errConnLost,
// sending it again elsewhere cannot do it twice.
var errNotSent = fmt.Errorf("%w before the command was sent", errConnLost)

// reply is the answer to one control-mode command.
type reply struct {
	out    string // the block's lines, joined by newlines
	failed bool   // the block ended with %error; out is tmux's message
	err    error  // errConnLost: no block will come
}

// conn is one control-mode tmux client: the process, its stdin, and the
// goroutine (read) that owns its stdout. Answers come in the order the
// commands were written, so the writer that appends to pending is the one
// that writes, under wmu.
type conn struct {
	log    hclog.Logger
	cmd    *exec.Cmd
	stdin  *os.File
	stderr *headBuffer

	wmu sync.Mutex // a write and its places in pending go together

	mu      sync.Mutex
	pending []chan reply // answers owed, oldest first
	err     error        // why the client stopped; nil while it runs

	attached  chan error    // the answer to the attach-session it was started with
	done      chan struct{} // closed when read has returned and the process was reaped
	closeOnce sync.Once
}

// dial starts a control-mode client attached to the session and waits
// until tmux has answered its attach-session. The client must not resize
// the user's windows or be sent their output: ignore-size,no-output.
func dial(ctx context.Context, c *Client) (*conn, error) {
	args := append(c.baseArgs(), "-C", "attach-session", "-f", "ignore-size,no-output", "-t", "="+c.o.Session)
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
		log: c.log, cmd: cmd, stdin: w, stderr: &headBuffer{max: 2048},
		attached: make(chan error, 1), done: make(chan struct{}),
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
		return cn, nil
	case <-cn.done:
		return nil, fmt.Errorf("%w before attaching: %s", errConnLost, strings.TrimSpace(cn.stderr.String()))
	case <-ctx.Done():
		cn.close()
		return nil, fmt.Errorf("tmux: control-mode attach: %w", ctx.Err())
	}
}

// read owns the client's stdout until it ends: it frames the %begin ...
// %end/%error blocks, hands each to the command it answers, and ignores
// notifications (which never come inside a block). Then it reaps the
// process and fails whatever is still owed.
func (cn *conn) read(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	var (
		guard string // "TIME NUMBER FLAGS" of the open block; "" outside one
		body  []string
	)
	for {
		line, err := readLine(br)
		if err != nil {
			break
		}
		if guard != "" {
			if rest, ok := strings.CutPrefix(line, "%end "); ok && rest == guard {
				cn.deliver(guard, body, false)
				guard, body = "", nil
			} else if rest, ok := strings.CutPrefix(line, "%error "); ok && rest == guard {
				cn.deliver(guard, body, true)
				guard, body = "", nil
			} else {
				body = append(body, line)
			}
			continue
		}
		if rest, ok := strings.CutPrefix(line, "%begin "); ok && rest != "" {
			guard = rest
		} else if strings.HasPrefix(line, "%exit") {
			cn.log.Debug("control-mode client exiting", "notice", line)
		}
	}
	werr := cn.cmd.Wait()
	cn.stop(werr)
}

// deliver hands a finished block to the oldest command owed an answer. A
// block whose flags are 0 answers the attach-session the client was
// started with, not a command of ours.
func (cn *conn) deliver(guard string, body []string, failed bool) {
	out := strings.Join(body, "\n")
	if !strings.HasSuffix(guard, " 1") {
		var err error
		if failed {
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
		cn.log.Warn("control-mode answer with no command waiting", "guard", guard)
		return
	}
	ch := cn.pending[0]
	cn.pending[0] = nil
	cn.pending = cn.pending[1:]
	cn.mu.Unlock()
	ch <- reply{out: out, failed: failed}
}

// stop records that the client has stopped, fails every command still
// owed an answer, and closes done.
func (cn *conn) stop(werr error) {
	cn.mu.Lock()
	cn.err = errConnLost
	owed := cn.pending
	cn.pending = nil
	cn.mu.Unlock()
	for _, ch := range owed {
		ch <- reply{err: errConnLost}
	}
	cn.log.Debug("control-mode client stopped", "wait", werr, "stderr", strings.TrimSpace(cn.stderr.String()))
	close(cn.done)
}

// alive reports whether the client still runs.
func (cn *conn) alive() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.err == nil
}

// send writes the commands as one write, one line each, and returns the
// channels their answers will come on, in order. errNotSent means nothing
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
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	cn.mu.Lock()
	if cn.err != nil {
		cn.mu.Unlock()
		return nil, errNotSent
	}
	cn.pending = append(cn.pending, chs...)
	cn.mu.Unlock()
	d, _ := ctx.Deadline() // zero: no deadline
	_ = cn.stdin.SetWriteDeadline(d)
	if _, err := io.WriteString(cn.stdin, b.String()); err != nil {
		_ = cn.cmd.Process.Kill()
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
