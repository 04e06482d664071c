package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/thatch-run/thatch/actors/imbinding"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/e2e/faketelegram"
	imfront "github.com/thatch-run/thatch/im/front"
	"github.com/thatch-run/thatch/im/tmux"
)

// Driving the agent from the chat: what /screenshot costs, how soon a
// permission dialog on the agent's screen reaches the chat as buttons,
// and what watching the screens costs a daemon whose threads are idle.
// Each runs against a real tmux server on a private socket; the last two
// in the IM world of im.go (the runtime with the IM front end and the
// fake Bot API).
const (
	// cmdFixture is the claude-like screen /screenshot is timed on, from
	// the module's root: a real `tmux capture-pane -e -p` of a 200x50
	// pane (im/screenshot/testdata/README.md).
	cmdFixture      = "im/screenshot/testdata/claude-200x50.ansi"
	cmdShotCols     = 200
	cmdShotRows     = 50
	cmdShotLimit    = 50 * time.Millisecond  // /screenshot render of a 200x50 pane, p99
	cmdButtonsLimit = 300 * time.Millisecond // prompt on screen to buttons sent, p99
	cmdWatchLimit   = 2.0                    // % of one core with cmdWatchFull idle bindings
	cmdPromptFull   = 20                     // threads the prompt_to_buttons target is set for
	cmdWatchFull    = 500                    // idle bindings the watch_cost target is set for
	cmdAskPrefix    = " asks:\n"             // in the first line of the binding's message of a prompt
	cmdUserHz       = 100                    // clock ticks per second of /proc/<pid>/stat (USER_HZ)
	cmdShotSession  = "shot"
)

func init() {
	register(Bench{
		Name: "commands",
		Doc: "driving the agent from the chat: /screenshot of a 200x50 pane rendered vs 50 ms and a bare capture-pane; " +
			"permission dialog on screen to buttons sent (20 threads) vs 300 ms; CPU of the screen watch with 500 idle bindings vs 2% of a core",
		Order: 92,
		Run:   benchCommands,
	})
}

func benchCommands(c *Config) ([]Record, error) {
	return runSteps(c, benchScreenshot, benchPromptButtons, benchWatchCost)
}

// thatchModule matches the go.mod of this module.
var thatchModule = regexp.MustCompile(`(?m)^module github\.com/thatch-run/thatch\s*$`)

// moduleRoot is the folder of thatch's go.mod: the one this file was
// compiled from, or the first above the working directory.
func moduleRoot() (string, error) {
	var tries []string
	if _, file, _, ok := runtime.Caller(0); ok {
		tries = append(tries, filepath.Dir(filepath.Dir(file)))
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			tries = append(tries, d)
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	for _, d := range tries {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && thatchModule.Match(b) {
			return d, nil
		}
	}
	return "", fmt.Errorf("bench: commands: thatch's module root is not above %v", tries)
}

// tmuxOn runs one forked tmux command on the private server socket and
// returns its stdout.
func tmuxOn(socket string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "tmux", append([]string{"-L", socket, "-f", os.DevNull}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("bench: tmux %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// shotSamples are the times of one /screenshot benchmark.
type shotSamples struct {
	bare, capture, render, both []time.Duration
	png                         int // the picture's size in bytes
	width, height               int // and in pixels
}

// benchScreenshot shows the claude-like fixture in a 200x50 window on a
// private tmux server and times, in turns: a forked `tmux capture-pane
// -e -p` (the bare baseline), the control-mode capture /screenshot makes
// (tmux.Client.CapturePane) and the PNG im/front draws of it.
func benchScreenshot(c *Config) ([]Record, error) {
	runs := c.Count(200, 60)
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	fixture, err := os.ReadFile(filepath.Join(root, cmdFixture))
	if err != nil {
		return nil, fmt.Errorf("bench: commands: %w", err)
	}
	dir, remove, err := c.TempDir("commands-shot")
	if err != nil {
		return nil, err
	}
	defer remove()
	// Without its last newline, the 50th line does not scroll the first
	// away; the tty's onlcr turns each newline into CR LF.
	screen := filepath.Join(dir, "screen.ansi")
	if err := os.WriteFile(screen, bytes.TrimSuffix(fixture, []byte("\n")), 0o600); err != nil {
		return nil, fmt.Errorf("bench: commands: %w", err)
	}
	socket := fmt.Sprintf("thatch-bench-%d-%d", os.Getpid(), imSockets.Add(1))
	defer killTmuxServer(socket)
	out, err := tmuxOn(socket, "new-session", "-d", "-s", cmdShotSession, "-x", strconv.Itoa(cmdShotCols),
		"-y", strconv.Itoa(cmdShotRows), "-P", "-F", "#{window_id}", "--", "sh", "-c", `cat "$0"; exec cat`, screen)
	if err != nil {
		return nil, err
	}
	id := strings.TrimSpace(out)
	// The pane shows the screen when its capture is the fixture again.
	err = imWaitFor(10*time.Second, "the fixture drawn in the pane", func() (bool, error) {
		got, err := tmuxOn(socket, "capture-pane", "-e", "-p", "-t", id)
		return got == string(fixture), err
	})
	if err != nil {
		return nil, err
	}
	cl, err := tmux.New(tmux.Options{Socket: socket, Session: cmdShotSession, Config: os.DevNull})
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	c.Logf("commands: %d captures and renders of a %dx%d pane on socket %s", runs, cmdShotCols, cmdShotRows, socket)
	// The control-mode client's capture has no final newline.
	s, err := shoot(cl, socket, id, strings.TrimSuffix(string(fixture), "\n"), runs)
	if err != nil {
		return nil, err
	}
	return s.records(runs), nil
}

// shoot takes runs samples of each step, one of each in turn, after a
// warm-up (the first render loads the fonts and fills the glyph cache,
// as the daemon's first /screenshot does).
func shoot(cl *tmux.Client, socket, id, fixture string, runs int) (*shotSamples, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := &shotSamples{}
	for i := -3; i < runs; i++ {
		start := time.Now()
		if _, err := tmuxOn(socket, "capture-pane", "-e", "-p", "-t", id); err != nil {
			return nil, err
		}
		bare := time.Since(start)
		start = time.Now()
		pane, err := cl.CapturePane(ctx, id)
		if err != nil {
			return nil, err
		}
		captured := time.Now()
		png, err := imfront.RenderPane(pane)
		if err != nil {
			return nil, fmt.Errorf("bench: commands: render: %w", err)
		}
		end := time.Now()
		if pane.Cols != cmdShotCols || pane.Rows != cmdShotRows || pane.Text != fixture {
			return nil, fmt.Errorf("bench: commands: the pane captured is %dx%d and shows %d bytes, want %dx%d showing the %d of the fixture",
				pane.Cols, pane.Rows, len(pane.Text), cmdShotCols, cmdShotRows, len(fixture))
		}
		if i < 0 {
			continue
		}
		s.bare = append(s.bare, bare)
		s.capture = append(s.capture, captured.Sub(start))
		s.render = append(s.render, end.Sub(captured))
		s.both = append(s.both, end.Sub(start))
		s.png = len(png)
	}
	for _, d := range [][]time.Duration{s.bare, s.capture, s.render, s.both} {
		slices.Sort(d)
	}
	// The picture's size, from its IHDR chunk.
	if last, err := cl.CapturePane(ctx, id); err == nil {
		if png, err := imfront.RenderPane(last); err == nil && len(png) >= 24 {
			s.width = int(png[16])<<24 | int(png[17])<<16 | int(png[18])<<8 | int(png[19])
			s.height = int(png[20])<<24 | int(png[21])<<16 | int(png[22])<<8 | int(png[23])
		}
	}
	return s, nil
}

func (s *shotSamples) records(runs int) []Record {
	render := ms(percentile(s.render, 99))
	bare := ms(percentile(s.bare, 99))
	both := ms(percentile(s.both, 99))
	setup := fmt.Sprintf("a %dx%d tmux window (private server, session made with new-session -x %d -y %d) showing %s (a claude-like "+
		"screen: truecolor, bold, italic, reverse, coloured diff backgrounds, block elements, boxes), cat into the pane and checked "+
		"byte for byte against every capture; %d samples after 3 warm-up ones, each step in turn",
		cmdShotCols, cmdShotRows, cmdShotCols, cmdShotRows, cmdFixture, runs)
	return []Record{
		newRecord("commands.screenshot_render", render, "ms",
			fmt.Sprintf("p99 of im/front.RenderPane (what /screenshot sends: im/screenshot.PNG with the front end's options, a %dx%d "+
				"picture of %d B) on the pane as tmux.Client.CapturePane captured it; %s; render: %s; baseline is the 50 ms limit, not a "+
				"measurement", s.width, s.height, s.png, setup, imLatencies(s.render))).
			withBaseline(ms(cmdShotLimit)).atMost(ms(cmdShotLimit)),
		newRecord("commands.screenshot_capture", bare, "ms",
			fmt.Sprintf("p99 of a bare forked `tmux -L <socket> capture-pane -e -p -t @id` of the same pane (fork+exec of a tmux client): "+
				"%s; the daemon's own capture, tmux.Client.CapturePane over its control-mode client (display-message for the size and "+
				"capture-pane -e -p, pipelined): %s", imLatencies(s.bare), imLatencies(s.capture))),
		newRecord("commands.screenshot_render.vs_bare_capture", both, "ms",
			fmt.Sprintf("p99 of capture (control-mode client) plus render, the whole picture /screenshot makes of a pane, against the "+
				"p99 of commands.screenshot_capture (a bare forked capture-pane) measured in turn with it: %s", imLatencies(s.both))).
			withBaseline(bare),
	}
}

// buildFakeAgent builds e2e/fakeagent as dir/claude: it draws claude's
// input line and permission dialogs.
func buildFakeAgent(dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "claude")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/thatch-run/thatch/e2e/fakeagent")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("bench: commands: build the fake agent: %w\n%s", err, out)
	}
	return bin, nil
}

// promptRun is what the rounds of dialogs gave.
type promptRun struct {
	// To the sendMessage of the dialog's buttons: from the dialog drawn,
	// from its ask typed, from the ask pushed.
	fromDrawn, fromTyped, fromPush []time.Duration
	rounds                         int
	drawn                          *dialogTimes
}

// cmdDialogMark is the line of the fake's permission dialog that tells
// it is drawn.
const cmdDialogMark = "Do you want to proceed?"

// dialogTimes records when each window's program wrote a permission
// dialog: tmux copies every pane's output into a pipe (pipe-pane) as it
// reads it from the pane's terminal, the moment the dialog shows on its
// screen; a goroutine per window reads the pipe.
type dialogTimes struct {
	mu    sync.Mutex
	times map[string][]time.Time // window id: when each dialog was written
	files []*os.File
	done  sync.WaitGroup
}

// watchDialogs pipes the output of each binding's window into a FIFO of
// its own and reads them.
func watchDialogs(w *imWorld, bs []imBinding) (*dialogTimes, error) {
	d := &dialogTimes{times: map[string][]time.Time{}}
	for i, b := range bs {
		path := filepath.Join(w.dir, fmt.Sprintf("pane-%d.fifo", i))
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			d.close()
			return nil, fmt.Errorf("bench: commands: %w", err)
		}
		// Read and write: the open does not wait for a writer, and the
		// reads do not end when one goes.
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			d.close()
			return nil, fmt.Errorf("bench: commands: %w", err)
		}
		d.files = append(d.files, f)
		d.done.Add(1)
		go d.read(b.window, f)
		if _, err := tmuxOn(w.socket, "pipe-pane", "-O", "-t", b.window, "exec cat > '"+path+"'"); err != nil {
			d.close()
			return nil, err
		}
	}
	return d, nil
}

func (d *dialogTimes) read(window string, f *os.File) {
	defer d.done.Done()
	buf := make([]byte, 64<<10)
	var tail []byte // the end of the last read: a mark may span two
	for {
		n, err := f.Read(buf)
		if n > 0 {
			now := time.Now()
			text := append(tail, buf[:n]...)
			if c := bytes.Count(text, []byte(cmdDialogMark)); c > 0 {
				d.mu.Lock()
				for range c {
					d.times[window] = append(d.times[window], now)
				}
				d.mu.Unlock()
				text = text[bytes.LastIndex(text, []byte(cmdDialogMark))+len(cmdDialogMark):]
			}
			tail = append([]byte(nil), text[max(0, len(text)-len(cmdDialogMark)):]...)
		}
		if err != nil {
			return
		}
	}
}

// at is when window's dialog number i (from 0) was written.
func (d *dialogTimes) at(window string, i int) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ts := d.times[window]; i < len(ts) {
		return ts[i], true
	}
	return time.Time{}, false
}

// close stops the readers; the pipes' writers end with the tmux server.
func (d *dialogTimes) close() {
	for _, f := range d.files {
		_ = f.Close()
	}
	d.done.Wait()
}

// benchPromptButtons binds n threads to windows running the fake claude
// and, round after round, types "ask npm test <round>" into each (the
// fake draws claude's permission dialog for it), waits for the binding's
// message with the dialog's options as buttons, and answers it with a
// press, as a user would.
func benchPromptButtons(c *Config) ([]Record, error) {
	n, rounds := c.Count(cmdPromptFull, cmdPromptFull), c.Count(5, 2)
	w, err := newIMWorld(c, "prompts", 5*time.Minute)
	if err != nil {
		return nil, err
	}
	defer w.close()
	claude, err := buildFakeAgent(w.dir)
	if err != nil {
		return nil, err
	}
	// The fake claude is claude, as the daemon finds and drives it: its
	// input line is checked before and after typing.
	w.cfg.IM.Agents.Claude = config.Defaults().IM.Agents.Claude
	w.cfg.IM.Agents.Claude.Launch, w.cfg.IM.Agents.Claude.Resume = claude, claude+" -r {session_id}"
	w.winCmd, w.winEnv = []string{claude, "--as", "claude"}, []string{"HOME=" + w.dir}
	c.Logf("commands: %d tmux windows running the fake claude on socket %s", n, w.socket)
	bs, err := w.windows(n)
	if err != nil {
		return nil, err
	}
	drawn, err := watchDialogs(w, bs)
	if err != nil {
		return nil, err
	}
	defer drawn.close()
	if err := w.plant(bs); err != nil {
		return nil, err
	}
	if err := w.start(); err != nil {
		return nil, err
	}
	if err := w.rt.Quiesce(time.Minute); err != nil {
		return nil, err
	}
	run := &promptRun{rounds: rounds, drawn: drawn}
	seen := map[int]bool{}
	var asks []faketelegram.Sent
	for r := range rounds {
		c.Logf("commands: round %d of %d: a permission dialog in each of %d threads", r+1, rounds, n)
		if asks, err = w.askRound(bs, r, seen, run); err != nil {
			return nil, err
		}
		if r < rounds-1 {
			if err := w.answerAll(bs, asks); err != nil {
				return nil, err
			}
		}
	}
	slices.Sort(run.fromDrawn)
	slices.Sort(run.fromTyped)
	slices.Sort(run.fromPush)
	// The last round's dialogs stay open: every thread is watched.
	d := c.Duration(10*time.Second, 3*time.Second)
	c.Logf("commands: CPU over %v with %d threads watched (a dialog open in each)", d, n)
	watched := measureCPU(w.socket, d)
	// Each was watched to the end: answered in its terminal, its dialog
	// is seen gone and its buttons cleared.
	for _, b := range bs {
		if _, err := tmuxOn(w.socket, "send-keys", "-t", b.window, "3", "Enter"); err != nil {
			return nil, err
		}
	}
	if err := w.waitCleared(asks); err != nil {
		return nil, fmt.Errorf("%w: a thread was not watched to the end", err)
	}
	return run.records(n, watched), nil
}

// askRound types "ask npm test <r>" into each thread, paced over a
// second, and waits until each thread got its dialog's buttons; it
// returns those messages.
func (w *imWorld) askRound(bs []imBinding, r int, seen map[int]bool, run *promptRun) ([]faketelegram.Sent, error) {
	n := len(bs)
	ids := make([]int64, n)
	pushed := make([]time.Time, n)
	_, _ = imPace(n, time.Second, func(i int) error {
		pushed[i] = time.Now()
		ids[i] = w.tg.Message(imChat, bs[i].thread, imUser, fmt.Sprintf("ask npm test %d", r))
		return nil
	})
	want := fmt.Sprintf("npm test %d", r)
	asks := make([]faketelegram.Sent, n)
	found := 0
	err := imWaitFor(imDrainTimeout, fmt.Sprintf("%d dialogs shown with buttons", n), func() (bool, error) {
		for i, b := range bs {
			if asks[i].MessageID != 0 {
				continue
			}
			for _, s := range w.tg.Messages(imChat, b.thread) {
				if first, _, _ := strings.Cut(s.Text, "\n"); strings.Contains(first+"\n", cmdAskPrefix) && len(s.Buttons) > 0 && !seen[s.MessageID] {
					if !strings.Contains(s.Text, want) {
						return false, fmt.Errorf("bench: commands: round %d: thread %d was asked %q", r, b.thread, s.Text)
					}
					asks[i] = s
					seen[s.MessageID] = true
					found++
					break
				}
			}
		}
		return found == n, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w (%d of %d shown)", err, found, n)
	}
	// The thread is watched from its ask typed (and, from the second
	// round on, still from the press before): the dialog's buttons may
	// come before the typing's Trace("typed"), which waits to see the
	// Enter taken.
	err = imWaitFor(10*time.Second, "each ask traced as typed", func() (bool, error) { return w.tracer.typedAll(ids), nil })
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		_, typed, _ := w.tracer.stages(id)
		drawn, ok := run.drawn.at(bs[i].window, r)
		if !ok {
			return nil, fmt.Errorf("bench: commands: round %d: the dialog of thread %d was sent but never seen drawn", r, bs[i].thread)
		}
		run.fromDrawn = append(run.fromDrawn, asks[i].At.Sub(drawn))
		run.fromTyped = append(run.fromTyped, asks[i].At.Sub(typed))
		run.fromPush = append(run.fromPush, asks[i].At.Sub(pushed[i]))
	}
	return asks, nil
}

// answerAll presses "3. No" under each dialog and waits until each
// dialog's buttons were cleared: the daemon typed the answer and saw the
// dialog go.
func (w *imWorld) answerAll(bs []imBinding, asks []faketelegram.Sent) error {
	for i, s := range asks {
		data := ""
		for _, row := range s.Buttons {
			for _, b := range row {
				if strings.HasPrefix(b.Text, "3.") {
					data = b.Data
				}
			}
		}
		if data == "" {
			return fmt.Errorf("bench: commands: the dialog in thread %d has no button 3: %+v", bs[i].thread, s.Buttons)
		}
		w.tg.Press(imChat, bs[i].thread, imUser, s.MessageID, data)
	}
	return w.waitCleared(asks)
}

// waitCleared waits until the buttons of each of asks were cleared.
func (w *imWorld) waitCleared(asks []faketelegram.Sent) error {
	return imWaitFor(imDrainTimeout, fmt.Sprintf("%d dialogs answered", len(asks)), func() (bool, error) {
		cleared := map[int]bool{}
		for _, s := range w.tg.Sent() {
			if s.Method == "editMessageReplyMarkup" && len(s.Buttons) == 0 {
				cleared[s.MessageID] = true
			}
		}
		for _, s := range asks {
			if !cleared[s.MessageID] {
				return false, nil
			}
		}
		return true, nil
	})
}

func (r *promptRun) records(n int, watched cpuShare) []Record {
	rec := newRecord("commands.prompt_to_buttons", ms(percentile(r.fromDrawn, 99)), "ms",
		fmt.Sprintf("%d bound threads (planted), each a tmux window running e2e/fakeagent as claude (default claude config: "+
			"detected by its command line, input line checked); %d rounds, each pushing \"ask npm test <round>\" into every thread "+
			"over 1 s (the fake draws claude's permission dialog and no input line), then pressing \"3. No\" under each dialog and "+
			"waiting for its buttons to clear (the last round's stay); latency is the fake Bot API's Sent.At of the sendMessage "+
			"starting %q with the options as buttons minus the time the dialog was drawn (tmux pipe-pane copies each pane's output "+
			"into a FIFO the benchmark reads, as tmux reads it from the pane; the thread is watched from its ask typed or its last "+
			"answer: tmux reports its pane's output to the daemon's control-mode client, and the pane is captured and im/agents "+
			"FindPrompt run on it 30 ms after a change, at most every 150 ms): "+
			"%s; from Trace(\"typed\") of the ask (which waits to see the Enter taken, so it can come after the buttons): %s; from "+
			"the push into the fake server: %s; baseline is the 300 ms limit, not a measurement",
			n, r.rounds, cmdAskPrefix, imLatencies(r.fromDrawn), imLatencies(r.fromTyped), imLatencies(r.fromPush))).
		withBaseline(ms(cmdButtonsLimit))
	return []Record{
		imJudged(rec, n, cmdPromptFull, ms(cmdButtonsLimit)),
		newRecord("commands.watch_cost.watched", watched.percent(), "% of a core",
			fmt.Sprintf("CPU of this process (runtime, IM front end, fake Bot API) plus its tmux server over %v while %d threads "+
				"are watched (the last round's dialogs left open, so their screens are still: no capture while nothing changes; each was then answered in "+
				"its terminal, and each binding saw its dialog go and cleared its buttons: watched to the end): %s",
				watched.wall.Round(time.Millisecond), n, watched)),
	}
}

// cpuShare is the CPU this process and a tmux server used over a window.
type cpuShare struct {
	wall, proc, tmux time.Duration
	machine          float64 // % of all the machine's cores busy meanwhile; -1 unknown
	tmuxErr          error   // the server's CPU could not be read
}

// percent is the process's and the server's CPU as a percentage of one
// core.
func (s cpuShare) percent() float64 {
	if s.wall <= 0 {
		return 0
	}
	return 100 * float64(s.proc+s.tmux) / float64(s.wall)
}

func (s cpuShare) String() string {
	pct := func(d time.Duration) float64 { return 100 * float64(d) / float64(max(s.wall, 1)) }
	t := fmt.Sprintf("%.2f%%", pct(s.tmux))
	if s.tmuxErr != nil {
		t = fmt.Sprintf("not read (%v)", s.tmuxErr)
	}
	m := "unknown"
	if s.machine >= 0 {
		m = fmt.Sprintf("%.0f%%", s.machine)
	}
	return fmt.Sprintf("this process %.2f%% of a core (%v CPU, getrusage), the tmux server %s (%v CPU, /proc/<pid>/stat in 10 ms "+
		"ticks); the machine's cores were %s busy meanwhile", pct(s.proc), s.proc.Round(time.Millisecond), t,
		s.tmux.Round(time.Millisecond), m)
}

// measureCPU sleeps d and reports the CPU this process and the tmux
// server on socket used meanwhile.
func measureCPU(socket string, d time.Duration) cpuShare {
	var s cpuShare
	pid, err := tmuxServerPID(socket)
	var t0 time.Duration
	if err == nil {
		t0, err = pidCPU(pid)
	}
	busy0, total0 := machineTicks()
	p0, start := processCPU(), time.Now()
	time.Sleep(d)
	s.proc, s.wall = processCPU()-p0, time.Since(start)
	s.machine = -1
	if busy1, total1 := machineTicks(); total1 > total0 {
		s.machine = 100 * float64(busy1-busy0) / float64(total1-total0)
	}
	if err == nil {
		var t1 time.Duration
		t1, err = pidCPU(pid)
		s.tmux = t1 - t0
	}
	s.tmuxErr = err
	return s
}

// tmuxServerPID is the pid of the tmux server on socket.
func tmuxServerPID(socket string) (int, error) {
	out, err := tmuxOn(socket, "display-message", "-p", "#{pid}")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(out))
}

// pidCPU is the user + system CPU time of process pid so far, from
// /proc/<pid>/stat.
func pidCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command's closing parenthesis start with the
	// state (field 3); utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("bench: commands: /proc stat without a command")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("bench: commands: /proc/%d/stat has %d fields after the command", pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: commands: /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / cmdUserHz, nil
}

// benchWatchCost plants n bound bindings whose windows run cat, starts
// the daemon at its defaults (but for the fake Bot API's 1 s long poll),
// wakes each binding with a topic-name update so that all are live and
// none is at work, and measures the CPU the daemon and its tmux server
// use over a window.
func benchWatchCost(c *Config) ([]Record, error) {
	n, d := c.Count(cmdWatchFull, cmdWatchFull), c.Duration(20*time.Second, 5*time.Second)
	w, err := newIMWorld(c, "watch", config.Defaults().Actors.PassivateAfter)
	if err != nil {
		return nil, err
	}
	defer w.close()
	c.Logf("commands: %d tmux windows running cat on socket %s", n, w.socket)
	bs, err := w.boot(n)
	if err != nil {
		return nil, err
	}
	if err := w.wake(bs); err != nil {
		return nil, err
	}
	if err := w.rt.Quiesce(time.Minute); err != nil {
		return nil, err
	}
	live, err := w.liveBindings()
	if err != nil {
		return nil, err
	}
	settle := c.Duration(2*time.Second, time.Second)
	time.Sleep(settle)
	c.Logf("commands: CPU over %v with %d idle bindings (%d live)", d, n, live)
	signs0, sent0 := len(w.tg.Actions()), len(w.tg.Sent())
	share := measureCPU(w.socket, d)
	signs, sent := len(w.tg.Actions())-signs0, len(w.tg.Sent())-sent0
	if signs != 0 || sent != 0 {
		return nil, fmt.Errorf("bench: commands: idle bindings sent %d chat actions and %d messages while measured: some thread is at work", signs, sent)
	}
	rec := newRecord("commands.watch_cost", share.percent(), "% of a core",
		fmt.Sprintf("%d bound threads planted with windows running cat, each woken by one topic-name update (%d bindings live after, "+
			"PassivateAfter %v, the default), nothing typed: no thread is at work, so none is watched (0 typing signs and 0 messages "+
			"sent in the window; a watched thread shows the sign every 4 s); after %v to settle, the CPU of this process (the runtime, "+
			"the IM front end with its screen watcher, the fake Bot API answering the bot's long polls, 1 s each instead of the "+
			"adapter's default: more work, not less) plus its tmux server over %v: %s; baseline is the 2%% limit, not a measurement",
			n, live, config.Defaults().Actors.PassivateAfter, settle, share.wall.Round(time.Millisecond), share)).
		withBaseline(cmdWatchLimit)
	return []Record{imJudged(rec, n, cmdWatchFull, cmdWatchLimit)}, nil
}

// liveBindings is how many bindings the tree has live.
func (w *imWorld) liveBindings() (int, error) {
	st, err := w.rt.StatusReport()
	if err != nil {
		return 0, err
	}
	for _, k := range st.Kinds {
		if k.Kind == imbinding.KindName {
			return k.Live, nil
		}
	}
	return 0, nil
}
