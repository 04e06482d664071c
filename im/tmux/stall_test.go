package tmux

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/internal/testwait"
)

// stallLimit is the deadline of every call the stress test's workers
// make. tmux answers in milliseconds and starts a server in the time its
// configuration takes to load (4 s in the slow variant); the rest is
// slack for a loaded machine under -race. A call that fails with its
// deadline exceeded, or comes back later than its deadline and a grace
// (a killed tmux client is waited for up to a second), hung.
//
// checkLimit is the deadline of the window checks made alongside, as the
// IM front end checks the windows of other conversations: such a check
// may fail at its deadline while a server starts, but must not be held
// past it.
const (
	stallLimit = 8 * time.Second
	checkLimit = time.Second
	stallGrace = 2 * time.Second
)

// stallWatch runs calls with a deadline each and records those that hung.
type stallWatch struct {
	t      *testing.T
	calls  atomic.Int64
	stalls atomic.Int64
	mu     sync.Mutex
	errs   map[string]int // "call: error" (numbers left out) -> count
}

func (s *stallWatch) do(what string, f func(ctx context.Context) error) error {
	return s.within(what, stallLimit, true, f)
}

// within runs f with a deadline of limit; it is a stall when f comes
// back late, or (mustFinish) fails with its deadline exceeded.
func (s *stallWatch) within(what string, limit time.Duration, mustFinish bool, f func(ctx context.Context) error) error {
	s.calls.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	dump := time.AfterFunc(limit+stallGrace, func() {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		s.t.Logf("%s has not returned after %v; goroutines:\n%s", what, time.Since(start), buf[:n])
	})
	err := f(ctx)
	dump.Stop()
	if d := time.Since(start); d > limit+stallGrace || (mustFinish && errors.Is(err, context.DeadlineExceeded)) {
		s.stalls.Add(1)
		s.t.Errorf("STALL: %s took %v: %v", what, d.Round(time.Millisecond), err)
	}
	if err != nil {
		s.mu.Lock()
		s.errs[what+": "+numberless(err.Error())]++
		s.mu.Unlock()
	}
	return err
}

// numberless replaces each run of digits with N, so that errors group
// by kind.
func numberless(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			if i == 0 || s[i-1] < '0' || s[i-1] > '9' {
				b.WriteByte('N')
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// guardProbe tells the time and command number tmux is at: the guard of
// a command of its own, sent over a control-mode client of its own. The
// client stays attached (connecting one is not free: tmux 3.6 and before
// crash when they notify a client that is still identifying itself).
type guardProbe struct {
	c   *Client
	mu  sync.Mutex
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func (p *guardProbe) now() (string, uint32, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range 2 {
		if p.cmd == nil && !p.start() {
			return "", 0, false
		}
		kill := time.AfterFunc(stallLimit, func() { _ = p.cmd.Process.Kill() })
		if _, err := io.WriteString(p.in, "display-message -p x\n"); err == nil {
			for p.out.Scan() {
				rest, ok := strings.CutPrefix(p.out.Text(), "%begin ")
				if n, flags, ok2 := parseGuard(rest); ok && ok2 && flags == 1 {
					kill.Stop()
					t, _, _ := strings.Cut(rest, " ")
					return t, n, true
				}
			}
		}
		kill.Stop()
		p.stop() // the server went away: try a new one
	}
	return "", 0, false
}

func (p *guardProbe) start() bool {
	cmd := exec.Command("tmux", "-N", "-L", p.c.o.Socket, "-C", "attach-session", "-f", "ignore-size,no-output", "-t", "="+p.c.o.Session)
	in, err := cmd.StdinPipe()
	if err != nil {
		return false
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return false
	}
	if err := cmd.Start(); err != nil {
		return false
	}
	p.cmd, p.in, p.out = cmd, in, bufio.NewScanner(out)
	p.out.Buffer(nil, 1<<20)
	return true
}

func (p *guardProbe) stop() {
	if p.cmd == nil {
		return
	}
	p.in.Close()
	kill := time.AfterFunc(stallLimit, func() { _ = p.cmd.Process.Kill() })
	_ = p.cmd.Wait()
	kill.Stop()
	p.cmd = nil
}

func (p *guardProbe) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stop()
}

// forgeLines are lines equal to the end guards of the next few hundred
// commands tmux will run (this second or the next), then a begin guard that no end will match: what
// a program in a pane, which can reach the server through $TMUX, can
// print so that a capture of its pane ends early and what follows is
// read as a block that never ends.
func forgeLines(t string, n uint32) string {
	sec, _ := strconv.ParseInt(t, 10, 64)
	var b strings.Builder
	for _, s := range []int64{sec, sec + 1} { // the second may turn
		for i := range uint32(400) {
			fmt.Fprintf(&b, "%%end %d %d 1\n", s, n+i)
		}
	}
	fmt.Fprintf(&b, "%%begin %d %d 1\n", sec, n+1_000_000)
	return b.String()
}

type stressOptions struct {
	workers, rounds int
	disruptEvery    int      // worker 0 disrupts the server every so many rounds,
	disruptions     []string // in these ways in turn: killServer, kill-server, kill-session, killWindows
	config          string   // the tmux configuration ("" for none)
	forge           bool     // some windows print forged guards
}

// TestStressNoStall makes, tags, reads, captures, types into and kills
// windows from several goroutines at once, with a deadline per call, on
// a server that is now and then killed or loses its session (so that the
// next window starts them with a forked client and the control-mode
// client is dialed again, while other calls are under way). No call may
// hang: each comes back within its deadline, with an answer or an error.
// A line typed into a shell by a SendText that succeeded must run.
//
// "plain" adds panes that flood output, print lines like control-mode
// notifications and guards, and print the guards tmux is about to use.
// "slow tmux.conf" starts every server with a configuration that takes
// seconds to load, as a plugin manager's does.
func TestStressNoStall(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test")
	}
	workers, rounds := 4, 40
	if v, err := strconv.Atoi(os.Getenv("STALL_WORKERS")); err == nil {
		workers = v
	}
	if v, err := strconv.Atoi(os.Getenv("STALL_ROUNDS")); err == nil {
		rounds = v
	}
	t.Run("plain", func(t *testing.T) {
		stress(t, stressOptions{workers: workers, rounds: rounds, disruptEvery: 8, forge: true,
			disruptions: []string{"killServer", "kill-server", "kill-session", "killWindows"}})
	})
	// A server killed while it loads its configuration stays until the
	// configuration's jobs end, failing every client that comes meanwhile:
	// here the session ends instead, and the server with it.
	t.Run("slow tmux.conf", func(t *testing.T) {
		stress(t, stressOptions{workers: workers, rounds: rounds / 3, disruptEvery: 4,
			disruptions: []string{"kill-session", "killWindows"}, config: "run-shell 'sleep 4'\n"})
	})
}

func stress(t *testing.T, so stressOptions) {
	cfg := "/dev/null"
	if so.config != "" {
		cfg = filepath.Join(t.TempDir(), "tmux.conf")
		if err := os.WriteFile(cfg, []byte(so.config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := newTestClient(t, func(o *Options) {
		o.Config = cfg
		if b := os.Getenv("STALL_TMUX"); b != "" {
			o.Binary = b // e.g. a script that runs tmux -vv, to read the server's log
		}
		o.Timeout = 2 * stallLimit // the calls' own deadlines are what is watched
		o.Logger = hclog.New(&hclog.LoggerOptions{Name: "tmux", Level: hclog.Warn, Output: testWriter{t}})
	})
	w := &stallWatch{t: t, errs: map[string]int{}}
	probe := &guardProbe{c: c}
	t.Cleanup(probe.close)
	dir := t.TempDir()
	kill := func(args ...string) {
		_ = exec.Command("tmux", append([]string{"-L", c.o.Socket}, args...)...).Run()
	}
	shell := []string{"sh"}
	programs := [][]string{
		shell,
		{"sh", "-c", `i=0; while [ $i -lt 3000 ]; do echo "flood $i $i $i $i $i $i $i $i"; i=$((i+1)); done; exec cat`},
		{"sh", "-c", `for i in 1 2 3 4 5 6 7 8 9; do printf '%%end %s 1 1\n%%error 1 1 1\n%%begin %s 9 1\n%%exit\n%%window-add @1\n' "$(date +%s)" "$(date +%s)"; done; exec cat`},
	}
	var (
		disruptions, launches, lost, forged atomic.Int64
		checks, wg                          sync.WaitGroup
		idsMu                               sync.Mutex
		ids                                 []string // every window made, killed ones too
	)
	stop := make(chan struct{})
	checks.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			idsMu.Lock()
			id := "@0"
			if len(ids) > 0 {
				id = ids[i%len(ids)]
			}
			idsMu.Unlock()
			_ = w.within("check Window", checkLimit, false, func(ctx context.Context) error { _, err := c.Window(ctx, id); return err })
		}
	})
	for g := range so.workers {
		wg.Go(func() {
			var mine []string
			for r := range so.rounds {
				if g == 0 && r%so.disruptEvery == so.disruptEvery-1 {
					disruptions.Add(1)
					switch so.disruptions[(r/so.disruptEvery)%len(so.disruptions)] {
					case "killServer":
						_ = w.do("KillServer", c.KillServer)
					case "kill-server":
						kill("kill-server")
					case "kill-session":
						kill("kill-session", "-t", "="+c.o.Session)
					case "killWindows":
						// The session ends with its last window, killed
						// through the control-mode client attached to it.
						ws, _ := c.Windows(context.Background())
						for _, x := range ws {
							_ = w.do("Kill all", func(ctx context.Context) error { return c.Kill(ctx, x.ID) })
						}
					}
					mine = nil
				}
				d0 := disruptions.Load()
				tag := fmt.Sprintf("tag-%d-%d", g, r)
				prog := programs[(g+r)%len(programs)]
				forging := so.forge && r%8 == 1
				file := filepath.Join(dir, tag+".forge")
				if forging {
					prog = []string{"sh", "-c", `while :; do [ -f "$0" ] && cat "$0" && rm -f "$0"; sleep 0.1; done`, file}
				}
				var win Window
				err := w.do("NewWindowEnv", func(ctx context.Context) error {
					var err error
					win, err = c.NewWindowEnv(ctx, fmt.Sprintf("w%d-%d", g, r), dir, tag, []string{"THATCH_IM_WINDOW=" + tag}, prog)
					return err
				})
				if err != nil {
					// As a caller would, try again a little later: a
					// server being killed takes the clients that come
					// meanwhile with it.
					time.Sleep(200 * time.Millisecond)
					continue
				}
				mine = append(mine, win.ID)
				idsMu.Lock()
				ids = append(ids, win.ID)
				idsMu.Unlock()
				_ = w.do("Window", func(ctx context.Context) error { _, err := c.Window(ctx, win.ID); return err })
				_ = w.do("FindTagged", func(ctx context.Context) error { _, _, err := c.FindTagged(ctx, tag); return err })
				if forging {
					if gt, n, ok := probe.now(); ok {
						forged.Add(1)
						_ = os.WriteFile(file+".tmp", []byte(forgeLines(gt, n)), 0o644)
						_ = os.Rename(file+".tmp", file)
						for range 20 {
							if _, err := os.Stat(file); err != nil {
								break // the pane has printed it
							}
							time.Sleep(50 * time.Millisecond)
						}
					}
				}
				lines := 200
				if forging {
					lines = 1000 // all the forged lines
				}
				_ = w.do("Capture", func(ctx context.Context) error { _, err := c.Capture(ctx, win.ID, lines); return err })
				if len(prog) == 1 && prog[0] == "sh" {
					marker := filepath.Join(dir, tag)
					if w.do("SendText", func(ctx context.Context) error { return c.SendText(ctx, win.ID, "echo launched > "+marker) }) == nil {
						launches.Add(1)
						checks.Go(func() {
							for range 100 {
								if _, err := os.Stat(marker); err == nil {
									return
								}
								time.Sleep(100 * time.Millisecond)
							}
							ctx, cancel := context.WithTimeout(context.Background(), stallLimit)
							defer cancel()
							if _, err := c.Window(ctx, win.ID); err == nil && disruptions.Load() == d0 {
								lost.Add(1)
								t.Errorf("LOST: SendText to %s (%s) succeeded, but its line never ran", win.ID, tag)
							}
						})
					}
				}
				_ = w.do("SendText multi", func(ctx context.Context) error { return c.SendText(ctx, win.ID, "echo a\necho b") })
				_ = w.do("SendKeys", func(ctx context.Context) error { return c.SendKeys(ctx, win.ID, "C-u") })
				_ = w.do("Capture screen", func(ctx context.Context) error { _, err := c.Capture(ctx, win.ID, 0); return err })
				if r%3 == 2 && len(mine) > 1 { // never the window just made
					id := mine[0]
					mine = mine[1:]
					_ = w.do("Kill", func(ctx context.Context) error { return c.Kill(ctx, id) })
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	checks.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	for e, n := range w.errs {
		t.Logf("%4d × %s", n, e)
	}
	t.Logf("%d calls, %d disruptions, %d forged captures, %d stalls, %d launches, %d lost",
		w.calls.Load(), disruptions.Load(), forged.Load(), w.stalls.Load(), launches.Load(), lost.Load())
}

// A block ends only at its own guard; outside a block, a guard that tmux
// cannot have written there (an end, a malformed or out-of-order begin)
// is reported instead of opening a block that would never end.
func TestFramerKeepsBlocksAndRefusesStrayGuards(t *testing.T) {
	var f framer
	feed := func(lines ...string) (blocks []*block, err error) {
		for _, l := range lines {
			b, err := f.line(l)
			if err != nil {
				return blocks, err
			}
			if b != nil {
				blocks = append(blocks, b)
			}
		}
		return blocks, nil
	}
	bs, err := feed(
		"%begin 100 7 0", "%end 100 7 0", // attach-session
		"%session-changed $0 thatch",
		"%begin 100 9 1", "%end 100 8 1", "%begin 1 1 1", "%error 100 9 0", "%exit", "", "%end 100 9 1",
		"%window-add @3", "%end nonsense", "%begin 101 12 1", "can't find window: @9", "%error 101 12 1",
	)
	if err != nil || len(bs) != 3 {
		t.Fatalf("blocks %v, %v", bs, err)
	}
	if bs[0].control || bs[0].failed || len(bs[0].body) != 0 {
		t.Errorf("attach block = %+v", bs[0])
	}
	if want := []string{"%end 100 8 1", "%begin 1 1 1", "%error 100 9 0", "%exit", ""}; !bs[1].control || bs[1].failed || strings.Join(bs[1].body, "|") != strings.Join(want, "|") {
		t.Errorf("block with guard-like lines = %+v", bs[1])
	}
	if !bs[2].failed || strings.Join(bs[2].body, "") != "can't find window: @9" {
		t.Errorf("failed block = %+v", bs[2])
	}
	for exit, letGo := range map[string]bool{
		"%exit": true, "%exit detached": true, "%exit detached (from session thatch)": true, "%exit server exited": true,
		"%exit server exited unexpectedly": false, "%exit terminated": false, "%exit lost tty": false,
	} {
		if _, err := feed(exit); err != nil || f.exited != letGo {
			t.Errorf("%q: %v, let go %v", exit, err, f.exited)
		}
	}
	if _, err := feed("%exit", "%window-close @1"); err != nil || f.exited {
		t.Errorf("%%exit not last: %v, let go %v", err, f.exited)
	}
	for _, stray := range [][]string{
		{"%end 102 13 1"},   // the real end of a block closed early
		{"%error 102 13 1"}, // likewise
		{"%begin 102 12 1"}, // a number already used
		{"%begin 102 11 1"}, // an older one
		{"%begin x 13 1"},   // not a guard
		{"%begin 102 13 2"}, // flags tmux never writes
		{"%begin 102 13 1", "%end 102 13 1", "%end 102 13 1"}, // an end twice
	} {
		f = framer{number: 12, begun: true}
		if _, err := feed(stray...); !errors.Is(err, errFraming) {
			t.Errorf("%q: %v, want errFraming", stray, err)
		}
	}
	// Numbers wrap around at 2^32.
	f = framer{number: 1<<32 - 1, begun: true}
	if _, err := feed("%begin 5 0 1", "%end 5 0 1"); err != nil {
		t.Errorf("wrapped number: %v", err)
	}
}

// A capture of a pane that prints the guards of the commands to come
// ends early, and what follows must not swallow the answers of the
// commands after it: the control-mode client is restarted at once, and
// the next calls get their own answers.
func TestForgedGuardsInAPaneDoNotWedgeTheClient(t *testing.T) {
	c := newTestClient(t, nil)
	ctx := testCtx(t)
	file := filepath.Join(t.TempDir(), "forge")
	w, err := c.NewWindow(ctx, "forge", "", "", []string{"sh", "-c", `while :; do [ -f "$0" ] && cat "$0" && rm -f "$0"; sleep 0.1; done`, file})
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.NewWindow(ctx, "other", "", "other-tag", []string{"sleep", "1000"})
	if err != nil {
		t.Fatal(err)
	}
	probe := &guardProbe{c: c}
	defer probe.close()
	gt, n, ok := probe.now()
	if !ok {
		t.Fatal("no guard from a control-mode client")
	}
	if err := os.WriteFile(file, []byte(forgeLines(gt, n)), 0o644); err != nil {
		t.Fatal(err)
	}
	testwait.UntilReason(t, "the pane printed the forged guards", func() (bool, string) {
		_, err := os.Stat(file)
		return err != nil, fmt.Sprint(err)
	})
	for i := range 5 {
		cctx, cancel := context.WithTimeout(ctx, stallLimit)
		_, cerr := c.Capture(cctx, w.ID, 1000)
		got, err := c.Window(cctx, other.ID)
		cancel()
		if errors.Is(cerr, context.DeadlineExceeded) || err != nil || got.Tag != "other-tag" {
			t.Fatalf("round %d: Capture: %v; Window(%s) = %+v, %v", i, cerr, other.ID, got, err)
		}
	}
}

// A window made just after the session ended (its last window was
// killed, so the control-mode client attached to it is leaving) is made:
// a command the leaving client was sent, but tmux never read, is sent
// again rather than failed as lost.
func TestNewWindowJustAfterTheSessionEnded(t *testing.T) {
	c := newTestClient(t, func(o *Options) { o.Logger = nil })
	ctx := testCtx(t)
	last := ""
	for i := range 40 {
		if last != "" {
			tmuxCmd(t, c, "kill-window", "-t", last) // the session's only window
		}
		w, err := c.NewWindow(ctx, fmt.Sprint("w", i), "", "", []string{"sleep", "1000"})
		if errors.Is(err, errConnLost) {
			t.Fatalf("round %d: %v", i, err)
		}
		last = ""
		if err == nil {
			last = w.ID
		}
	}
}
