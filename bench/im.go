package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch"
	"github.com/thatch-run/thatch/actors/imbinding"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/e2e/faketelegram"
	"github.com/thatch-run/thatch/im/agents"
	"github.com/thatch-run/thatch/im/feishu"
	imfront "github.com/thatch-run/thatch/im/front"
	"github.com/thatch-run/thatch/im/telegram"
	"github.com/thatch-run/thatch/im/tmux"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// The IM front end measured in process: the daemon's runtime with the IM
// front end, a fake Bot API server (e2e/faketelegram), a real tmux server
// on a private socket whose windows run cat, and bindings planted in the
// journal so that no setup flow runs.
const (
	imToken       = "123456:bench-token"
	imChat  int64 = -1001234
	imUser  int64 = 42
	// imFirstThread is the thread id of binding 0; binding i has
	// imFirstThread+i.
	imFirstThread int64 = 1000

	// Targets.
	imKeysLimit    = 20 * time.Millisecond  // update to keys, p99
	imReplyLimit   = 250 * time.Millisecond // transcript line to sendMessage, p99
	imBytesLimit   = 4096.0                 // heap per passivated binding
	imKeysFull     = 500                    // bindings the update_to_keys target is set for
	imReplyFull    = 50                     // bindings the transcript_to_reply target is set for
	imBytesFull    = 2000                   // bindings the passivated bytes target is set for
	imLinesPerSec  = 3                      // transcript lines per binding per second
	imBareRuns     = 51                     // bare send-keys round trips
	imDrainTimeout = 2 * time.Minute        // after the last push, for the last result
)

func init() {
	register(Bench{
		Name: "im",
		Doc: "IM front end: update to keys typed (500 bound threads, 500 msgs/s) vs 20 ms and a bare tmux send-keys; " +
			"a thread whose handler is held 1 s per update vs 1.1x the others' latency without it; " +
			"transcript line to sendMessage (50 bindings) vs 250 ms; heap per passivated binding (2000) vs 4 KiB",
		Order: 90,
		Run:   benchIM,
	})
}

func benchIM(c *Config) ([]Record, error) {
	return runSteps(c, benchIMKeys, benchIMStalled, benchIMReplies, benchIMPassivated)
}

// runSteps runs the parts of a benchmark in order and gathers their
// records, stopping at the first that fails (with what was measured so
// far).
func runSteps(c *Config, steps ...func(*Config) ([]Record, error)) ([]Record, error) {
	var recs []Record
	for _, step := range steps {
		r, err := step(c)
		recs = append(recs, r...)
		if err != nil {
			return recs, err
		}
	}
	return recs, nil
}

// imFront is the IM front end with the two handles the benchmark reads:
// the store and the tree the runtime hands it. Everything else is the
// front end's own.
type imFront struct {
	*imfront.FrontEnd
	store *persistence.Store
	tree  frontend.Tree
}

func (f *imFront) Open(ctx context.Context, c frontend.Core) (frontend.Parts, error) {
	f.store = c.Store
	return f.FrontEnd.Open(ctx, c)
}

func (f *imFront) Mount(ctx context.Context, t frontend.Tree, m frontend.Mux) error {
	f.tree = t
	return f.FrontEnd.Mount(ctx, t, m)
}

// imTracer records when each update passed each stage of the front end's
// Trace hook.
type imTracer struct {
	mu       sync.Mutex
	received map[int64]time.Time
	typed    map[int64]time.Time
	// other holds the other stages (a cluster's "published" and
	// "consumed"), by stage and update.
	other map[string]map[int64]time.Time
	// hold makes the front end's handler of these updates wait this long
	// at "received": a thread whose handler is slow.
	hold map[int64]time.Duration
}

func newIMTracer() *imTracer {
	return &imTracer{received: map[int64]time.Time{}, typed: map[int64]time.Time{}, other: map[string]map[int64]time.Time{},
		hold: map[int64]time.Duration{}}
}

// holding pushes an update (push returns its id) whose handler is to wait
// d at "received"; the id is known before the front end can trace it.
func (t *imTracer) holding(d time.Duration, push func() int64) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	id := push()
	t.hold[id] = d
	return id
}

func (t *imTracer) trace(stage string, id int64) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if d := t.hold[id]; d > 0 && stage == "received" {
		delete(t.hold, id)
		t.mu.Unlock()
		time.Sleep(d)
		t.mu.Lock()
	}
	switch stage {
	case "received":
		t.received[id] = now
	case "typed":
		t.typed[id] = now
	default:
		if t.other[stage] == nil {
			t.other[stage] = map[int64]time.Time{}
		}
		t.other[stage][id] = now
	}
}

// stages returns the times of update id, and whether it was typed.
func (t *imTracer) stages(id int64) (received, typed time.Time, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	received, ok1 := t.received[id]
	typed, ok2 := t.typed[id]
	return received, typed, ok1 && ok2
}

// between is the sorted times from stage from to stage to of each of ids
// that passed both ("received" and "typed" are stages too).
func (t *imTracer) between(from, to string, ids []int64) []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	at := func(stage string) map[int64]time.Time {
		switch stage {
		case "received":
			return t.received
		case "typed":
			return t.typed
		}
		return t.other[stage]
	}
	a, b := at(from), at(to)
	var out []time.Duration
	for _, id := range ids {
		x, ok1 := a[id]
		y, ok2 := b[id]
		if ok1 && ok2 {
			out = append(out, y.Sub(x))
		}
	}
	slices.Sort(out)
	return out
}

// typedAll reports whether every one of ids was typed.
func (t *imTracer) typedAll(ids []int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		if _, ok := t.typed[id]; !ok {
			return false
		}
	}
	return true
}

var imSockets atomic.Int64

// imWorld is one in-process daemon with the IM front end and what it talks
// to. Make it with newIMWorld, plant bindings, start it, and close it.
type imWorld struct {
	c      *Config
	dir    string
	remove func()
	tg     *faketelegram.Server
	socket string
	cfg    *config.Config
	fe     *imFront
	rt     *thatch.Runtime
	tracer *imTracer
	log    *imLog
	// info, when set, receives the daemon's lines at Info and above as
	// well (the Feishu benchmark reads its webhook's address there).
	info io.Writer
	// winCmd is what each window openWindows makes runs, with winEnv
	// ("NAME=value" each) in its environment. Default: cat, nothing added.
	winCmd, winEnv []string
	// paced: the daemon paces its requests to a chat as for Telegram
	// (im.telegram's defaults) rather than not at all.
	paced bool
}

// imLog keeps the first lines the daemon logs (warnings and errors) and
// counts the rest; close prints them. Config.Progress takes no
// concurrent writes, and the daemon logs from its own goroutines.
type imLog struct {
	mu      sync.Mutex
	lines   []string
	dropped int
}

// imLogLines is how many of the daemon's lines a world keeps.
const imLogLines = 20

func (l *imLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) < imLogLines {
		l.lines = append(l.lines, strings.TrimSpace(string(p)))
	} else {
		l.dropped++
	}
	return len(p), nil
}

func (l *imLog) note(format string, args ...any) { _, _ = fmt.Fprintf(l, format, args...) }

// flush prints what was kept, from the caller's goroutine.
func (l *imLog) flush(c *Config) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		c.Logf("im: logged: %s", line)
	}
	if l.dropped > 0 {
		c.Logf("im: logged %d more lines", l.dropped)
	}
	l.lines, l.dropped = nil, 0
}

// newIMWorld makes the world's folder, the fake Bot API server and the
// config; nothing of thatch runs yet.
func newIMWorld(c *Config, name string, passivateAfter time.Duration) (*imWorld, error) {
	dir, remove, err := c.TempDir("im-" + name)
	if err != nil {
		return nil, err
	}
	w := &imWorld{c: c, dir: dir, remove: remove, tg: faketelegram.New(imToken), tracer: newIMTracer(), log: &imLog{},
		socket: fmt.Sprintf("thatch-bench-%d-%d", os.Getpid(), imSockets.Add(1))}
	// The allowed user makes and renames the topics: thatch takes nothing
	// from anyone else.
	w.tg.ServiceFrom(imUser)
	cfg := config.Defaults()
	cfg.Data.Dir = filepath.Join(dir, "data")
	cfg.Control.TokenFile = filepath.Join(cfg.Data.Dir, "control.token")
	cfg.Control.StateFile = filepath.Join(cfg.Data.Dir, "control.json")
	cfg.Actors.PassivateAfter = passivateAfter
	cfg.IM.Telegram.Token = config.Secret(imToken)
	cfg.IM.Telegram.APIURL = w.tg.URL()
	cfg.IM.AllowedUsers = []string{strconv.FormatInt(imUser, 10)}
	cfg.IM.Roots = []string{dir}
	cfg.IM.Tmux.Socket = w.socket
	// The windows run cat; /proc names it "cat", so cat is claude here.
	// cat draws no input line: typing is not checked (the bench measures
	// routing, not an agent's TUI).
	cfg.IM.Agents.Claude.Detect = "^cat$"
	cfg.IM.Agents.Claude.Input = config.InputOff
	w.cfg = cfg
	if err := os.MkdirAll(cfg.Data.Dir, 0o700); err != nil {
		w.close()
		return nil, fmt.Errorf("bench: im data dir: %w", err)
	}
	return w, nil
}

// start builds the front end and the runtime and starts them.
func (w *imWorld) start() error {
	var logger hclog.Logger = hclog.New(&hclog.LoggerOptions{Name: "thatch", Level: hclog.Warn, Output: w.log})
	if w.info != nil {
		il := hclog.NewInterceptLogger(&hclog.LoggerOptions{Name: "thatch", Level: hclog.Warn, Output: w.log})
		il.RegisterSink(hclog.NewSinkAdapter(&hclog.LoggerOptions{Level: hclog.Info, Output: w.info}))
		logger = il
	}
	interval := time.Duration(-1) // no pacing: the fake has no rates
	if w.paced {
		interval = 0 // the config's
	}
	ag := imfront.NewAgents(w.cfg, imfront.Options{Home: w.dir})
	w.fe = &imFront{FrontEnd: imfront.New(w.cfg, imfront.Options{
		Home: w.dir, PollTimeout: time.Second, ChatInterval: interval, Zoxide: "-", Trace: w.tracer.trace, Agents: ag,
	})}
	rt, err := thatch.New(w.cfg, thatch.Options{Logger: logger, FrontEnds: []frontend.FrontEnd{ag, w.fe}})
	if err != nil {
		return err
	}
	if err := rt.Start(context.Background()); err != nil {
		return fmt.Errorf("bench: im runtime: %w", err)
	}
	w.rt = rt
	return nil
}

// stop stops the runtime, if one runs; start may start another on the
// same journal and windows.
func (w *imWorld) stop() {
	if w.rt != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := w.rt.Stop(ctx); err != nil {
			w.c.Logf("im: stopping the runtime: %v", err)
		}
		cancel()
		w.rt = nil
	}
}

// close stops the runtime and the fake server, kills the private tmux
// server, and removes every file the world made.
func (w *imWorld) close() {
	w.stop()
	w.log.flush(w.c)
	w.tg.Close()
	killTmuxServer(w.socket)
	w.remove()
}

// killTmuxServer ends the private tmux server on socket, if one runs, and
// removes its socket file.
func killTmuxServer(socket string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = exec.CommandContext(ctx, "tmux", "-L", socket, "kill-server").Run() // no server is fine
	base := os.Getenv("TMUX_TMPDIR")
	if base == "" {
		base = "/tmp"
	}
	_ = os.Remove(filepath.Join(base, fmt.Sprintf("tmux-%d", os.Getuid()), socket))
}

// imBinding is one planted binding: of a Telegram topic, or of a Feishu
// chat when chatID is set.
type imBinding struct {
	thread     int64
	chatID     string // the Feishu chat (a group); "" for a Telegram topic
	topic      string // the topic's name; "" for none known (a topic the fake server did not create)
	window     string // tmux window id
	panePID    int    // the window's pane process (cat); 0 when there is no window
	transcript string // "" for none
}

func (b imBinding) key() string {
	if b.chatID != "" {
		return feishu.ThreadKey(b.chatID, "")
	}
	return telegram.ThreadKey(imChat, b.thread)
}

// user is the binding's user, in its platform's ids.
func (b imBinding) user() string {
	if b.chatID != "" {
		return fsUser
	}
	return strconv.FormatInt(imUser, 10)
}

// session is the agent session id the binding names, one of its own.
func (b imBinding) session() string {
	if b.chatID != "" {
		return "bench-" + b.chatID
	}
	return fmt.Sprintf("bench-%d", b.thread)
}

// name is the binding's Name(): its topic's, or "topic-<thread>".
func (b imBinding) name() string {
	if b.topic != "" {
		return b.topic
	}
	return "topic-" + strconv.FormatInt(b.thread, 10)
}

func (b imBinding) tag() string { return "thatch:" + b.key() + ":1" }

// events are what a finished setup flow would have journaled for b, in
// short: the message that started it (its user is the binding's) and the
// binding itself.
func (b imBinding) events(dir string) []any {
	return []any{
		&messages.IMUpdateSeen{User: b.user(), TopicName: b.topic, Actor: true},
		&messages.IMBound{DisplayName: b.name(), SessionID: b.session(), WindowID: b.window,
			Tag: b.tag(), Cwd: dir, Agent: "claude", Transcript: b.transcript},
	}
}

// plant writes the bindings into the world's journal before the runtime
// opens it, marked active when the kind says their state is.
func (w *imWorld) plant(bs []imBinding) error {
	st, err := persistence.Open(filepath.Join(w.cfg.Data.Dir, "journal"), persistence.Options{NoSync: true})
	if err != nil {
		return err
	}
	kind := imbinding.New(imbinding.Config{})
	j := st.Journal()
	err = forEachParallel(runtime.GOMAXPROCS(0), len(bs), func(i int) error {
		b := bs[i]
		s := kind.Initial(b.key())
		var evs [][]byte
		for _, ev := range b.events(w.dir) {
			raw, err := messages.Encode(ev)
			if err != nil {
				return err
			}
			evs = append(evs, raw)
			s = kind.Apply(s, ev)
		}
		mark := persistence.MarkUnchanged
		if kind.Active(s) {
			mark = persistence.MarkActive
		}
		return j.Append(imIdent(b), 1, evs, mark)
	})
	return errors.Join(err, st.Close())
}

func imIdent(b imBinding) persistence.Identity {
	return persistence.Identity{Kind: imbinding.KindName, ID: b.key()}
}

// boot opens n windows, plants their bindings and starts the world.
func (w *imWorld) boot(n int) ([]imBinding, error) {
	bs, err := w.windows(n)
	if err != nil {
		return nil, err
	}
	if err := w.plant(bs); err != nil {
		return nil, err
	}
	return bs, w.start()
}

// windows starts n windows running cat on the world's tmux server, each
// named and tagged as Telegram binding i's, and returns the bindings.
func (w *imWorld) windows(n int) ([]imBinding, error) {
	bs := make([]imBinding, n)
	for i := range bs {
		bs[i] = imBinding{thread: imFirstThread + int64(i)}
	}
	return bs, w.openWindows(bs)
}

// openWindows starts a window running cat (or winCmd) for each binding,
// named and tagged as its, and sets the binding's window and pane.
func (w *imWorld) openWindows(bs []imBinding) error {
	cl, err := tmux.New(tmux.Options{Socket: w.socket, Session: w.cfg.IM.Tmux.Session, Config: os.DevNull})
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The first window starts the server and the session.
	n := len(bs)
	err = forEachParallel(1, min(n, 1), func(i int) error { return w.window(ctx, cl, bs, i) })
	if err == nil && n > 1 {
		err = forEachParallel(4, n-1, func(i int) error { return w.window(ctx, cl, bs, i+1) })
	}
	return err
}

func (w *imWorld) window(ctx context.Context, cl *tmux.Client, bs []imBinding, i int) error {
	b := bs[i]
	cmd := w.winCmd
	if len(cmd) == 0 {
		cmd = []string{"cat"}
	}
	win, err := cl.NewWindowEnv(ctx, b.name(), w.dir, b.tag(), w.winEnv, cmd)
	if err != nil {
		// NewWindow reads the new window back with a format that expands
		// pane_current_command twice (its length, then its value); while
		// the pane execs sh, then cat, the two can differ and the read
		// fails though the window exists. Find it by its tag instead.
		found, ok, ferr := cl.FindTagged(ctx, b.tag())
		if ferr != nil || !ok {
			return errors.Join(err, ferr)
		}
		w.log.note("window %s of %s read back only by its tag: %v", found.ID, b.name(), err)
		win = found
	}
	b.window, b.panePID = win.ID, win.PanePID
	bs[i] = b
	return nil
}

// imWaitFor polls cond every 20ms until it holds or timeout passes.
func imWaitFor(timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: im: %s: not after %v", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// imPace calls push(i) for i in [0, total), spread evenly over d from now,
// and returns how long the pushes took.
func imPace(total int, d time.Duration, push func(i int) error) (time.Duration, error) {
	start := time.Now()
	every := d / time.Duration(max(total, 1))
	for i := range total {
		if wait := time.Until(start.Add(time.Duration(i) * every)); wait > 0 {
			time.Sleep(wait)
		}
		if err := push(i); err != nil {
			return time.Since(start), err
		}
	}
	return time.Since(start), nil
}

// imLatencies is the sorted latencies' percentiles, in words.
func imLatencies(sorted []time.Duration) string {
	if len(sorted) == 0 {
		return "no samples"
	}
	return fmt.Sprintf("p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms over %d",
		ms(percentile(sorted, 50)), ms(percentile(sorted, 90)), ms(percentile(sorted, 99)), ms(sorted[len(sorted)-1]), len(sorted))
}

// imJudged adds the target value <= limit when the run has the size the
// target is set for, and says why not otherwise.
func imJudged(r Record, n, full int, limit float64) Record {
	if n == full {
		return r.atMost(limit)
	}
	r.Notes += fmt.Sprintf("; the <= %s target is for %d bindings and is not judged at %d", formatNumber(limit), full, n)
	return r
}

// imCount is how many events n bindings make at perSec each over d; at
// least one per binding.
func imCount(n int, perSec float64, d time.Duration) int {
	return max(int(float64(n)*perSec*d.Seconds()), n)
}

func benchIMKeys(c *Config) ([]Record, error) {
	n, d := c.Count(imKeysFull, imKeysFull), c.Duration(30*time.Second, 10*time.Second)
	w, err := newIMWorld(c, "keys", 5*time.Minute)
	if err != nil {
		return nil, err
	}
	defer w.close()
	c.Logf("im: %d tmux windows running cat on socket %s", n, w.socket)
	bs, err := w.boot(n)
	if err != nil {
		return nil, err
	}
	c.Logf("im: warm-up, one message per binding (rehydrates each)")
	if _, err := w.typeRound(bs, n, time.Second, "w", true); err != nil {
		return nil, err
	}
	probes, err := w.probes(bs[0])
	if err != nil {
		return nil, err
	}
	c.Logf("im: unloaded, %d messages over %v", c.Count(30, 30), c.Duration(6*time.Second, 6*time.Second))
	idle, err := w.typeRound(bs, c.Count(30, 30), c.Duration(6*time.Second, 6*time.Second), "u", true)
	if err != nil {
		return nil, err
	}
	total := imCount(n, 1, d)
	c.Logf("im: %d messages over %v (%d bindings, one per second each)", total, d, n)
	run, err := w.typeRound(bs, total, d, "m", false)
	if err != nil {
		return nil, err
	}
	return append(run.records(n, total, d, probes.bare), probes.records(idle)...), nil
}

// imProbes are the costs the update path is made of, each measured alone
// on the loaded world: a forked send-keys, the pane's process tree read
// as a window check reads it, and one synced write to the store.
type imProbes struct {
	bare, procTree, synced time.Duration // p50s
	procs                  int           // processes on the machine
}

// probes measures the imProbes against binding b's window.
func (w *imWorld) probes(b imBinding) (imProbes, error) {
	var p imProbes
	var err error
	if p.bare, err = bareSendKeys(w.socket, b.window, imBareRuns); err != nil {
		return p, err
	}
	if p.procTree, err = imP50(imBareRuns, func() error { _, err := agents.ProcTree(b.panePID); return err }); err != nil {
		return p, fmt.Errorf("bench: im: process tree of %s: %w", b.window, err)
	}
	rows := w.fe.store.Rows()
	if p.synced, err = imP50(imBareRuns, func() error { return rows.Put("bench.probe", "k", []byte("v")) }); err != nil {
		return p, err
	}
	ents, err := os.ReadDir("/proc")
	for _, e := range ents {
		if _, aerr := strconv.Atoi(e.Name()); aerr == nil {
			p.procs++
		}
	}
	return p, err
}

// imP50 is the median time of runs calls of fn.
func imP50(runs int, fn func() error) (time.Duration, error) {
	times := make([]time.Duration, 0, runs)
	for range runs {
		start := time.Now()
		if err := fn(); err != nil {
			return 0, err
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	return percentile(times, 50), nil
}

func (p imProbes) records(idle *keysRun) []Record {
	return []Record{
		newRecord("im.update_to_keys.unloaded", ms(percentile(idle.inside, 99)), "ms",
			fmt.Sprintf("as im.update_to_keys, with the same windows, but %d messages over %v (no queue): %s",
				len(idle.inside), idle.pushing.Round(time.Second), imLatencies(idle.inside))),
		newRecord("im.proc_tree", ms(p.procTree), "ms",
			fmt.Sprintf("p50 of %d agents.ProcTree calls on a window's pane, which every window check makes (it reads /proc/<pid>/stat "+
				"and cmdline of every process on the machine: %d now)", imBareRuns, p.procs)),
		newRecord("im.synced_write", ms(p.synced), "ms",
			fmt.Sprintf("p50 of %d synced Rows.Put on the daemon's store; each update costs a journal append (synced, shared by "+
				"the threads handled at once through the journal's group commit)", imBareRuns)),
	}
}

// keysRun is what one round of messages gave.
type keysRun struct {
	inside, endToEnd []time.Duration // received to typed; pushed to typed
	pushing          time.Duration   // how long the pushes took
	drained          time.Duration   // from the first push to the last typed
	missing          int             // not typed within imDrainTimeout of the last push
	ids              []int64         // the updates
}

// typeRound pushes total messages round robin over the bindings, spread
// over d, waits (at most imDrainTimeout after the last push) until each
// was typed, and returns their latencies. With strict, a message not
// typed in time is an error; otherwise it is counted as missing.
func (w *imWorld) typeRound(bs []imBinding, total int, d time.Duration, prefix string, strict bool) (*keysRun, error) {
	ids := make([]int64, total)
	pushed := make([]time.Time, total)
	took, _ := imPace(total, d, func(i int) error {
		pushed[i] = time.Now()
		ids[i] = w.tg.Message(imChat, bs[i%len(bs)].thread, imUser, prefix+strconv.Itoa(i))
		return nil
	})
	return w.typedRound(ids, pushed, took, strict)
}

// typedRound waits (at most imDrainTimeout) until each update of ids,
// pushed at pushed[i], was typed, and returns their latencies; took is
// how long the pushes took. With strict, an update not typed in time is
// an error; otherwise it is counted as missing.
func (w *imWorld) typedRound(ids []int64, pushed []time.Time, took time.Duration, strict bool) (*keysRun, error) {
	total := len(ids)
	err := imWaitFor(imDrainTimeout, fmt.Sprintf("%d messages typed", total), func() (bool, error) {
		return w.tracer.typedAll(ids), nil
	})
	if err != nil && strict {
		return nil, err
	}
	run := &keysRun{pushing: took, ids: ids}
	var last time.Time
	for i, id := range ids {
		rec, typed, ok := w.tracer.stages(id)
		if !ok {
			run.missing++
			continue
		}
		run.inside = append(run.inside, typed.Sub(rec))
		run.endToEnd = append(run.endToEnd, typed.Sub(pushed[i]))
		if typed.After(last) {
			last = typed
		}
	}
	if len(run.inside) == 0 {
		return nil, fmt.Errorf("bench: im: none of %d messages was typed", total)
	}
	run.drained = last.Sub(pushed[0])
	slices.Sort(run.inside)
	slices.Sort(run.endToEnd)
	return run, nil
}

// bareSendKeys is the p50 of runs forked `tmux -L socket send-keys -t id
// -l x` round trips.
func bareSendKeys(socket, id string, runs int) (time.Duration, error) {
	return imP50(runs, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "tmux", "-L", socket, "send-keys", "-t", id, "-l", "x").CombinedOutput()
		if err != nil {
			return fmt.Errorf("bench: im: bare send-keys: %w: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	})
}

func (r *keysRun) records(n, total int, d time.Duration, bare time.Duration) []Record {
	p99 := ms(percentile(r.inside, 99))
	typed := len(r.inside)
	setup := fmt.Sprintf("%d bound threads (planted), one message per second each, %d messages pushed into the fake Bot API over %v "+
		"(pushing took %v), %d typed within %v of the last push; latency is Trace(\"typed\") minus Trace(\"received\") of each "+
		"update: the binding journals it, checks its window (tmux display-message and the pane's process tree) and types it "+
		"(send-keys -l + Enter over the control-mode client): %s; from the push into the fake server (long poll included): %s",
		n, total, d, r.pushing.Round(time.Millisecond), typed, imDrainTimeout, imLatencies(r.inside), imLatencies(r.endToEnd))
	keys := newRecord("im.update_to_keys", p99, "ms", setup+"; baseline is the 20 ms limit, not a measurement").
		withBaseline(ms(imKeysLimit))
	keys = imJudged(keys, n, imKeysFull, ms(imKeysLimit))
	if r.missing > 0 {
		keys = keys.addTarget("every message typed", false)
		keys.Notes += fmt.Sprintf("; %d messages were never typed: the percentiles are of the typed ones only", r.missing)
	}
	offered := rate(int64(total), d)
	return []Record{
		keys,
		newRecord("im.update_throughput", rate(int64(typed), r.drained), "msgs/s",
			fmt.Sprintf("messages typed per second from the first push to the last typed (%d in %v); baseline is the offered rate",
				typed, r.drained.Round(time.Millisecond))).withBaseline(offered),
		newRecord("im.bare_send_keys", ms(bare), "ms",
			fmt.Sprintf("p50 of %d forked `tmux -L <socket> send-keys -t @id -l x` round trips (fork+exec of a tmux client) on the same server, "+
				"between the warm-up and the measured messages", imBareRuns)),
		newRecord("im.update_to_keys.vs_bare_send_keys", p99, "ms",
			"p99 of im.update_to_keys against the p50 of im.bare_send_keys: how many forked send-keys one update costs at the tail").
			withBaseline(ms(bare)).ratioAtMost(1.2),
	}
}

func benchIMReplies(c *Config) ([]Record, error) {
	n, d := c.Count(imReplyFull, imReplyFull), c.Duration(20*time.Second, 10*time.Second)
	w, err := newIMWorld(c, "replies", 5*time.Minute)
	if err != nil {
		return nil, err
	}
	defer w.close()
	_, files, err := w.startFollowing(n)
	defer closeAll(files)
	if err != nil {
		return nil, err
	}
	c.Logf("im: warm-up, one transcript line per binding")
	if _, err := w.replyRound(files, n, time.Second, "w"); err != nil {
		return nil, err
	}
	total := imCount(n, imLinesPerSec, d)
	c.Logf("im: %d transcript lines over %v (%d bindings, %d a second each)", total, d, n, imLinesPerSec)
	lat, err := w.replyRound(files, total, d, "r")
	if err != nil {
		return nil, err
	}
	rec := newRecord("im.transcript_to_reply", ms(percentile(lat, 99)), "ms",
		fmt.Sprintf("%d bindings following a Claude Code JSONL transcript each (planted, active, followed from start), %d assistant "+
			"lines appended over %v, round robin; latency is the fake Bot API's Sent.At of the sendMessage with the line's text minus "+
			"the time the line was written (inotify, read, parse, the binding journals the read and its outbox, sendMessage to one "+
			"forum chat, requests to it serialized by the bot): %s; baseline is the 250 ms limit, not a measurement",
			n, total, d, imLatencies(lat))).withBaseline(ms(imReplyLimit))
	return []Record{imJudged(rec, n, imReplyFull, ms(imReplyLimit))}, nil
}

// startFollowing makes n topics with a transcript each (transcripts),
// plants their bindings, starts the daemon and waits until it settled:
// the topics' creations confirmed, each binding following its file. The
// caller closes the files (closeAll), also after an error.
func (w *imWorld) startFollowing(n int) ([]imBinding, []*os.File, error) {
	bs, files, err := w.transcripts(n)
	if err != nil {
		return nil, nil, err
	}
	if err := w.plant(bs); err != nil {
		return nil, files, err
	}
	if err := w.start(); err != nil {
		return nil, files, err
	}
	// Rehydration at start released each binding's IMFollowTranscript;
	// the topics' creation updates reach the bindings meanwhile.
	if err := imWaitFor(imDrainTimeout, "topic creations confirmed", func() (bool, error) { return w.tg.Pending() == 0, nil }); err != nil {
		return nil, files, err
	}
	return bs, files, w.rt.Quiesce(time.Minute)
}

// closeAll closes files.
func closeAll(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// transcripts makes n forum topics in the fake server (it sends only into
// topics it knows), an empty transcript file for each and their bindings
// (bound to no real window: no message is typed here), and opens each
// file for appending.
func (w *imWorld) transcripts(n int) ([]imBinding, []*os.File, error) {
	dir := filepath.Join(w.dir, ".claude", "projects", "bench")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("bench: im: %w", err)
	}
	bs := make([]imBinding, n)
	files := make([]*os.File, n)
	for i := range n {
		path := filepath.Join(dir, fmt.Sprintf("session-%04d.jsonl", i))
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			for _, g := range files[:i] {
				_ = g.Close()
			}
			return nil, nil, fmt.Errorf("bench: im: %w", err)
		}
		files[i] = f
		name := fmt.Sprintf("bench %d", i)
		bs[i] = imBinding{thread: w.tg.CreateTopic(imChat, name), topic: name, window: "@" + strconv.Itoa(i+1), transcript: path}
	}
	return bs, files, nil
}

// claudeLine is one assistant line of a Claude Code transcript saying text.
func claudeLine(text string) []byte {
	return []byte(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":` +
		strconv.Quote(text) + `}]}}` + "\n")
}

// replyText is the text of line i of a round, unique within the run.
func replyText(prefix string, binding, i int) string {
	return fmt.Sprintf("%s-%d-%d", prefix, binding, i)
}

// replyRound appends total lines round robin over the transcripts, spread
// over d, waits until the bot sent each, and returns the latencies.
func (w *imWorld) replyRound(files []*os.File, total int, d time.Duration, prefix string) ([]time.Duration, error) {
	written := make(map[string]time.Time, total)
	_, err := imPace(total, d, func(i int) error {
		b := i % len(files)
		text := replyText(prefix, b, i)
		written[text] = time.Now()
		_, err := files[b].Write(claudeLine(text))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bench: im: transcript write: %w", err)
	}
	sent := map[string]time.Time{}
	err = imWaitFor(imDrainTimeout, fmt.Sprintf("%d replies sent", total), func() (bool, error) {
		for _, s := range w.tg.Sent() {
			if _, ok := written[s.Text]; ok && s.Method == "sendMessage" {
				sent[s.Text] = s.At
			}
		}
		return len(sent) == total, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w (%d of %d sent)", err, len(sent), total)
	}
	lat := make([]time.Duration, 0, total)
	for text, at := range written {
		lat = append(lat, sent[text].Sub(at))
	}
	slices.Sort(lat)
	return lat, nil
}

// imHeapNow is the live heap and goroutine count after two collections.
func imHeapNow() (uint64, int) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, runtime.NumGoroutine()
}

// imHeap is the passivated benchmark's three readings.
type imHeap struct {
	before, started, after    uint64 // HeapAlloc
	gBefore, gStarted, gAfter int    // goroutines
}

func benchIMPassivated(c *Config) ([]Record, error) {
	n := c.Count(imBytesFull, imBytesFull)
	w, err := newIMWorld(c, "passivated", 500*time.Millisecond)
	if err != nil {
		return nil, err
	}
	defer w.close()
	bs := make([]imBinding, n)
	for i := range bs {
		bs[i] = imBinding{thread: imFirstThread + int64(i), window: "@" + strconv.Itoa(i+1)}
	}
	var h imHeap
	h.before, h.gBefore = imHeapNow()
	if err := w.plant(bs); err != nil {
		return nil, err
	}
	if err := w.start(); err != nil {
		return nil, err
	}
	if err := w.waitPassivated(n); err != nil {
		return nil, err
	}
	h.started, h.gStarted = imHeapNow()
	c.Logf("im: waking %d passivated bindings with a topic-name update each", n)
	if err := w.wake(bs); err != nil {
		return nil, err
	}
	if err := w.waitPassivated(n); err != nil {
		return nil, err
	}
	h.after, h.gAfter = imHeapNow()
	return h.records(n), nil
}

// waitPassivated waits until the tree knows n bindings and none is live.
func (w *imWorld) waitPassivated(n int) error {
	return imWaitFor(imDrainTimeout, fmt.Sprintf("%d bindings passivated", n), func() (bool, error) {
		st, err := w.rt.StatusReport()
		if err != nil {
			return false, err
		}
		for _, k := range st.Kinds {
			if k.Kind == imbinding.KindName {
				return k.Live == 0 && k.Passivated == n, nil
			}
		}
		return n == 0, nil
	})
}

// wake sends each binding a topic-name update, in batches of the bot's
// poll size, each confirmed before the next (so that the fake server's
// queue, which lives in this heap, stays small), and checks that each
// binding journaled it.
func (w *imWorld) wake(bs []imBinding) error {
	const batch = 100
	for from := 0; from < len(bs); from += batch {
		for _, b := range bs[from:min(from+batch, len(bs))] {
			w.tg.EditTopic(imChat, b.thread, b.name())
		}
		err := imWaitFor(imDrainTimeout, "topic updates confirmed", func() (bool, error) { return w.tg.Pending() == 0, nil })
		if err != nil {
			return err
		}
	}
	j := w.fe.store.Journal()
	for _, b := range bs {
		seq, err := j.HighestSeq(imIdent(b))
		if err != nil {
			return err
		}
		if seq != 3 {
			return fmt.Errorf("bench: im: binding %s journaled up to seq %d after its update, want 3", b.key(), seq)
		}
	}
	return nil
}

func (h imHeap) records(n int) []Record {
	per := (float64(h.after) - float64(h.before)) / float64(n)
	residue := (float64(h.after) - float64(h.started)) / float64(n)
	gPer := float64(h.gAfter-h.gBefore) / float64(n)
	counted := fmt.Sprintf("HeapAlloc after two runtime.GC(): %d B before planting and starting, %d B with the runtime started "+
		"and %d bindings planted but never live (the runtime's fixed cost: store, memory store, bot, control API, tree: %.0f KiB), "+
		"%d B after each was woken by one topic-name update (one IMUpdateSeen journaled) and passivated again (PassivateAfter 500ms); "+
		"per binding from the start: %.0f B. Counted: the Go heap of this process (the runtime, its Pebble store's Go-side "+
		"structures, the fake Bot API's retained updates, bounded by confirming each batch of 100). Not counted: memory outside the "+
		"Go heap (Pebble's memtables and block cache are allocated with cgo's malloc when cgo is on), tmux, the page cache",
		h.before, h.started, n, (float64(h.started)-float64(h.before))/1024, h.after, residue)
	bytes := imJudged(newRecord("im.binding_passivated_bytes", per, "B/binding", counted), n, imBytesFull, imBytesLimit)
	return []Record{
		bytes,
		newRecord("im.binding_passivated_bytes.after_start", residue, "B/binding",
			"as im.binding_passivated_bytes, from the runtime started with the bindings planted (their fixed cost left out): what a binding "+
				"keeps once it has been live and is passivated again"),
		newRecord("im.binding_passivated_goroutines", gPer, "goroutines/binding",
			fmt.Sprintf("runtime.NumGoroutine(): %d before, %d started, %d after waking and passivating %d bindings",
				h.gBefore, h.gStarted, h.gAfter, n)),
	}
}

// The stalled-thread comparison: imStallThreads bound threads take
// messages at imStallRate in stretches of imStallStretch; every other
// stretch, one more thread gets a message every imStallHold whose
// handler is held imStallHold at "received" (the front end's Trace hook),
// so that the thread always has an update being handled slowly.
const (
	imStallThreads = 20
	imStallRate    = 20 // messages per second over the threads
	imStallStretch = 3 * time.Second
	imStallHold    = time.Second
	imStallLimit   = 1.1 // p99 with the stalled thread against without
)

func benchIMStalled(c *Config) ([]Record, error) {
	pairs := c.Count(3, 2)
	w, err := newIMWorld(c, "stalled", 5*time.Minute)
	if err != nil {
		return nil, err
	}
	defer w.close()
	bs, err := w.boot(imStallThreads + 1)
	if err != nil {
		return nil, err
	}
	slow, others := bs[0], bs[1:]
	c.Logf("im: stalled thread, warm-up")
	if _, err := w.typeRound(bs, len(bs), time.Second, "sw", true); err != nil {
		return nil, err
	}
	stretch := c.Duration(imStallStretch, imStallStretch)
	per := max(int(imStallRate*stretch.Seconds()), 1)
	plain, stalled := &keysRun{}, &keysRun{}
	var held []int64
	for p := range pairs {
		c.Logf("im: stalled thread, pair %d of %d: %d messages without, then with a thread held %v per update", p+1, pairs, per, imStallHold)
		r, err := w.typeRound(others, per, stretch, fmt.Sprintf("sa%d-", p), true)
		if err != nil {
			return nil, err
		}
		plain.add(r)
		// The held thread's updates start a stretch's worth before the
		// measured messages and go on through them, one per hold.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			t := time.NewTicker(imStallHold)
			defer t.Stop()
			for i := 0; ; i++ {
				held = append(held, w.tracer.holding(imStallHold, func() int64 {
					return w.tg.Message(imChat, slow.thread, imUser, fmt.Sprintf("held%d-%d", p, i))
				}))
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
		})
		time.Sleep(imStallHold + imStallHold/2)
		r, err = w.typeRound(others, per, stretch, fmt.Sprintf("sb%d-", p), true)
		close(stop)
		wg.Wait()
		if err != nil {
			return nil, err
		}
		stalled.add(r)
		// The held thread drains before the next plain stretch.
		if err := imWaitFor(imDrainTimeout, "the held thread's updates typed", func() (bool, error) {
			return w.tracer.typedAll(held), nil
		}); err != nil {
			return nil, err
		}
	}
	for _, r := range []*keysRun{plain, stalled} {
		slices.Sort(r.endToEnd)
		slices.Sort(r.inside)
	}
	with, without := ms(percentile(stalled.endToEnd, 99)), ms(percentile(plain.endToEnd, 99))
	return []Record{newRecord("im.update_to_keys.stalled", with, "ms",
		fmt.Sprintf("%d bound threads, %d messages per stretch of %v at %d/s round robin, pushed into the fake Bot API; stretches "+
			"take turns (%d pairs): without, then with one more thread (from 1.5 holds before) whose every update's handler is held %v at the front "+
			"end's Trace(\"received\") (a binding that does not answer), an update every %v, so one is always being handled "+
			"(%d held in all; the adapter parks that thread's updates after 500 ms and goes on); latency from the push to "+
			"Trace(\"typed\"), the long poll included, of the other threads' messages: with the held thread %s; baseline is "+
			"the same without it: %s", imStallThreads, per, stretch, imStallRate, pairs, imStallHold, imStallHold,
			len(held), imLatencies(stalled.endToEnd), imLatencies(plain.endToEnd))).
		withBaseline(without).ratioAtMost(imStallLimit)}, nil
}
