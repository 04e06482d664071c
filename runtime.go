package thatch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/internal/redact"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/persistence/memory"
	"github.com/thatch-run/thatch/persistence/memory/embed"
	"github.com/thatch-run/thatch/supervisor"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// Version is the build's version, set with -ldflags "-X github.com/thatch-run/thatch.Version=...".
var Version = "dev"

// ErrStarted is returned by Start on a runtime that was already started.
var ErrStarted = errors.New("thatch: runtime already started")

// Options are what an embedder may supply beyond the config.
type Options struct {
	// Logger is the root logger. Default: built from cfg.Log, on stderr.
	Logger hclog.Logger
	// Clock drives entity timers and decisions. Default: the wall clock.
	Clock actors.Clock
	// FrontEnds are the front ends to run (cmd/thatch runs the opencode
	// one). Default: none; the runtime then runs the store, the memory
	// store and the control API only.
	FrontEnds []frontend.FrontEnd
	// Kinds are extra entity kinds to supervise besides the front ends'.
	Kinds []supervisor.Spec
	// Effects are handlers for effects of the extra kinds.
	Effects []supervisor.Handler
}

// Runtime is one running thatch: store, supervision tree, front ends and
// control API.
type Runtime struct {
	cfg *config.Config
	o   Options
	log hclog.Logger

	mu      sync.Mutex
	started bool
	stopped bool
	start   time.Time
	store   *persistence.Store
	mem     *memory.Store
	// red is the secret redactor (nil: memory.redact.enabled is false).
	red     *redact.Redactor
	tree    *supervisor.Tree
	control *control.Server
	// running are the front ends that started, stopped in reverse.
	running []frontend.FrontEnd
	fatal   chan error
	fatalMu sync.Once
}

// New checks the config and prepares a runtime. Nothing is opened yet.
func New(cfg *config.Config, o Options) (*Runtime, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = NewLogger(cfg.Log, os.Stderr)
	}
	if o.Clock == nil {
		o.Clock = actors.RealClock{}
	}
	seen := map[string]bool{}
	for _, fe := range o.FrontEnds {
		if seen[fe.Name()] {
			return nil, fmt.Errorf("thatch: two front ends named %q", fe.Name())
		}
		seen[fe.Name()] = true
	}
	return &Runtime{cfg: cfg, o: o, log: o.Logger, fatal: make(chan error, 1)}, nil
}

// NewLogger builds the root logger described by the log config.
func NewLogger(c config.Log, out *os.File) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "thatch",
		Level:      hclog.LevelFromString(c.Level),
		JSONFormat: c.Format == "json",
		Output:     out,
	})
}

// NewRedactor builds the secret redactor [memory.redact] asks for; nil
// (which redacts and refuses nothing) when it is switched off. It is the
// one place the config becomes a redactor: the runtime builds one and
// gives it to the memory store and to every front end (Core.Redactor), and
// OpenMemory builds the same for a CLI that opens the store itself, so a
// memory holding a secret is refused whichever way it comes in.
func NewRedactor(c config.Redact) (*redact.Redactor, error) {
	if !c.Enabled {
		return nil, nil
	}
	opts := redact.Options{Disable: c.Disable}
	for _, p := range c.Patterns {
		kind, pattern, ok := config.RedactRule(p)
		if !ok {
			return nil, fmt.Errorf("thatch: memory.redact.patterns: %q is not kind=regexp", p)
		}
		opts.Extra = append(opts.Extra, redact.Rule{Kind: kind, Pattern: pattern})
	}
	red, err := redact.New(opts)
	if err != nil {
		return nil, fmt.Errorf("thatch: memory.redact: %w", err)
	}
	return red, nil
}

// OpenMemory opens the memory store described by the config on an open
// store, refusing memories that hold a secret as [memory.redact] says. The
// CLI uses it when no daemon is running.
func OpenMemory(ctx context.Context, st *persistence.Store, c config.Memory, log hclog.Logger) (*memory.Store, error) {
	red, err := NewRedactor(c.Redact)
	if err != nil {
		return nil, err
	}
	return openMemory(ctx, st, c, red, log)
}

// openMemory is OpenMemory with the redactor given: the runtime's, which
// its front ends share.
func openMemory(ctx context.Context, st *persistence.Store, c config.Memory, red *redact.Redactor, log hclog.Logger) (*memory.Store, error) {
	var guard func(label, content string) error
	if red != nil {
		guard = func(label, content string) error { return red.Refuse(label, content) }
	}
	var e embed.Embedder = embed.Local{}
	if c.Embedder == config.EmbedderOpenAI {
		e = embed.OpenAI{URL: c.EmbeddingsURL, Model: c.EmbeddingsModel, APIKey: c.EmbeddingsAPIKey.Reveal()}
	}
	return memory.OpenContext(ctx, st, memory.Options{
		Embedder:       e,
		DedupThreshold: c.DedupThreshold,
		StaleAfter:     c.StaleAfter,
		Logger:         log,
		Guard:          guard,
	})
}

// memoryOpenTimeout bounds re-embedding at start with a remote embedder.
const memoryOpenTimeout = 10 * time.Minute

// Start brings the runtime up in this order, so that no input is accepted
// before recovery: open the store and the memory store; open each front
// end (its kinds and effect handlers); start the supervision tree, which
// rehydrates every entity with unfinished work (their effects wait); mount
// the status route and each front end's routes and start the control API;
// let the effects run; start each front end.
func (r *Runtime) Start(ctx context.Context) (err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return ErrStarted
	}
	r.started = true
	r.start = time.Now()
	defer func() {
		if err != nil {
			_ = r.stopLocked(context.Background())
		}
	}()
	if err := r.openStores(ctx); err != nil {
		return err
	}
	var kinds []supervisor.Spec
	var wake []actors.Identity
	effects := append([]supervisor.Handler(nil), r.o.Effects...)
	for _, fe := range r.o.FrontEnds {
		parts, err := fe.Open(ctx, frontend.Core{Store: r.store, Memory: r.mem, Redactor: r.red, Clock: r.o.Clock, Logger: r.log.Named(fe.Name())})
		if err != nil {
			return fmt.Errorf("thatch: open the %s front end: %w", fe.Name(), err)
		}
		kinds = append(kinds, parts.Kinds...)
		effects = append(effects, parts.Effects...)
		wake = append(wake, parts.Wake...)
	}
	kinds = append(kinds, r.o.Kinds...)
	if err := r.startTree(kinds, effects, wake); err != nil {
		return err
	}
	if err := r.startControl(ctx); err != nil {
		return err
	}
	r.tree.ReleaseEffects()
	for _, fe := range r.o.FrontEnds {
		if err := fe.Start(ctx); err != nil {
			return fmt.Errorf("thatch: start the %s front end: %w", fe.Name(), err)
		}
		r.running = append(r.running, fe)
	}
	return nil
}

// openStores opens the journal store and the memory store on it.
func (r *Runtime) openStores(ctx context.Context) error {
	if err := r.privateDataDir(); err != nil {
		return err
	}
	var err error
	// The open takes ctx: a store that cannot open (a full disk) must not
	// hold a daemon that was asked to stop.
	r.store, err = persistence.OpenContext(ctx, filepath.Join(r.cfg.Data.Dir, "journal"), persistence.Options{
		CacheSize: int64(r.cfg.Journal.CacheSizeMB) << 20,
		OnFailure: r.fail,
		// Rows age on the clock the sweeps compute their cutoffs with.
		Now:  r.o.Clock.Now,
		Warn: r.log.Named("store").Warn,
	})
	if err != nil {
		return err
	}
	r.log.Info("data directory", "path", r.cfg.Data.Dir)
	mctx, cancel := context.WithTimeout(ctx, memoryOpenTimeout)
	defer cancel()
	if r.red, err = NewRedactor(r.cfg.Memory.Redact); err != nil {
		return err
	}
	r.mem, err = openMemory(mctx, r.store, r.cfg.Memory, r.red, r.log.Named("memory"))
	return err
}

// privateDataDir makes the data directory (journal, memories, the control
// token) readable by its owner only, and says so when it was not.
func (r *Runtime) privateDataDir() error {
	dir := r.cfg.Data.Dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("thatch: data directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("thatch: data directory: %w", err)
	}
	if mode := fi.Mode().Perm(); mode&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("thatch: data directory %s is readable by others (%v) and cannot be made private: %w", dir, mode, err)
		}
		r.log.Warn("the data directory was readable by others; made it private", "path", dir, "was", mode.String())
	}
	return nil
}

// startTree starts the supervision tree with every kind and effect
// handler, then wakes the entities the front ends named (the opencode
// one's sweeper), so that their timers run from the start.
func (r *Runtime) startTree(kinds []supervisor.Spec, effects []supervisor.Handler, wake []actors.Identity) error {
	var err error
	r.tree, err = supervisor.Start(supervisor.Options{
		Journal: r.store.Journal(),
		Rows:    r.store.Rows(),
		Env: supervisor.Env{
			Clock:          r.o.Clock,
			Logger:         r.log.Named("entity"),
			SnapshotEvery:  r.cfg.Journal.SnapshotEvery,
			PassivateAfter: r.cfg.Actors.PassivateAfter,
		},
		Kinds:   kinds,
		Effects: effects,
		// Rehydrated entities' effects wait until every front end mounted.
		HoldEffects: true,
		Policy: supervisor.Policy{
			MaxRestarts: r.cfg.Supervisor.MaxRestarts,
			Window:      r.cfg.Supervisor.RestartWindow,
			BackoffBase: r.cfg.Supervisor.BackoffBase,
			BackoffMax:  r.cfg.Supervisor.BackoffMax,
		},
		Logger: r.log.Named("supervisor"),
	})
	if err != nil {
		return err
	}
	for _, id := range wake {
		if _, err := r.tree.Request(id, &supervisor.Ping{}, 10*time.Second); err != nil {
			return fmt.Errorf("thatch: start %s: %w", id, err)
		}
	}
	return nil
}

// startControl mounts the routes and starts the control API.
func (r *Runtime) startControl(ctx context.Context) error {
	var err error
	r.control, err = control.New(control.Options{
		Listen:    r.cfg.Control.Listen,
		TokenFile: r.cfg.Control.TokenFile,
		StateFile: r.cfg.Control.StateFile,
		Version:   Version,
		DataDir:   r.cfg.Data.Dir,
		Logger:    r.log.Named("control"),
	})
	if err != nil {
		return err
	}
	r.control.MountFunc("GET /v1/status", r.serveStatus)
	r.control.MountFunc("POST /v1/repair", r.serveRepair)
	r.control.MountFunc("POST /v1/quiesce", r.serveQuiesce)
	for _, fe := range r.o.FrontEnds {
		if err := fe.Mount(ctx, r.tree, r.control); err != nil {
			return fmt.Errorf("thatch: mount the %s front end: %w", fe.Name(), err)
		}
	}
	if err := r.control.Start(); err != nil {
		return err
	}
	r.log.Info("control API listening", "addr", "http://"+r.control.Addr(), "token_file", r.cfg.Control.TokenFile, "state_file", r.cfg.Control.StateFile)
	return nil
}

// Memory is the memory store (nil before Start).
func (r *Runtime) Memory() *memory.Store { return r.mem }

// fail reports a failure the runtime cannot recover from in-process.
func (r *Runtime) fail(err error) {
	r.fatalMu.Do(func() {
		r.log.Error("fatal: the runtime must restart", "error", err)
		r.fatal <- err
	})
}

// Fatal delivers at most one error: a failure (the store failed for good)
// after which the runtime must be stopped and the process restarted.
// Everything acknowledged before it is durable.
func (r *Runtime) Fatal() <-chan error { return r.fatal }

// Stop closes the control API, stops the front ends, every entity and the
// effect runners, and closes the store. Every acknowledged write is
// already durable, so Stop loses nothing even when ctx ends early.
func (r *Runtime) Stop(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopLocked(ctx)
}

func (r *Runtime) stopLocked(ctx context.Context) error {
	if r.stopped {
		return nil
	}
	r.stopped = true
	var errs []error
	if r.control != nil {
		errs = append(errs, r.control.Stop(ctx))
	}
	for i := len(r.running) - 1; i >= 0; i-- {
		errs = append(errs, r.running[i].Stop(ctx))
	}
	if r.tree != nil {
		errs = append(errs, r.tree.Stop(10*time.Second))
	}
	if r.mem != nil {
		errs = append(errs, r.mem.Close())
	}
	if r.store != nil {
		errs = append(errs, r.store.Close())
	}
	return errors.Join(errs...)
}

// ControlAddr is the control API's bound address.
func (r *Runtime) ControlAddr() string {
	if r.control == nil {
		return ""
	}
	return r.control.Addr()
}

// Logger is the runtime's root logger.
func (r *Runtime) Logger() hclog.Logger { return r.log }

// Quiesce waits until nothing more happens without new input: every effect
// released so far has run and every result it sent back was handled (see
// supervisor.Tree.Quiesce). Tests use it to show that something does not
// happen.
func (r *Runtime) Quiesce(timeout time.Duration) error {
	if r.tree == nil {
		return errors.New("thatch: runtime not started")
	}
	return r.tree.Quiesce(timeout)
}

// Status is what `thatch status` shows.
type Status struct {
	Version       string                 `json:"version"`
	PID           int                    `json:"pid"`
	UptimeSeconds float64                `json:"uptimeSeconds"`
	DataDir       string                 `json:"dataDir"`
	ControlAddr   string                 `json:"controlAddr"`
	JournalBytes  uint64                 `json:"journalBytes"`
	Kinds         []supervisor.KindStats `json:"kinds"`
	LastErrors    []supervisor.Failure   `json:"lastErrors"`
	// UnhandledMessages counts messages an entity's kind did not handle
	// (each one logged; none acknowledged).
	UnhandledMessages uint64 `json:"unhandledMessages"`
	// UnhandledEffects counts effects released with no handler for their
	// type (each logged and dropped): a front end that should run them is
	// missing.
	UnhandledEffects uint64 `json:"unhandledEffects"`
	// Quarantined are the entities that cannot rebuild their state from
	// their journal; `thatch repair` drops or releases them.
	Quarantined []supervisor.Quarantine `json:"quarantined"`
	// FrontEnds are the front ends' own reports, by name: their entities
	// (the opencode families, the IM bindings), how their link to the
	// outside goes, and what else each shows (the opencode sweepers).
	FrontEnds map[string]frontend.Report `json:"frontEnds,omitempty"`
}

// Down lists the front ends whose link to the outside does not work
// (`thatch status` exits non-zero while one is down), sorted.
func (st *Status) Down() []string {
	var down []string
	for name, rep := range st.FrontEnds {
		if rep.Health != nil && !rep.Health.OK {
			down = append(down, name)
		}
	}
	slices.Sort(down)
	return down
}

// StatusReport gathers the runtime's status.
func (r *Runtime) StatusReport() (*Status, error) {
	if r.tree == nil {
		return nil, errors.New("thatch: runtime not started")
	}
	kinds, errs, err := r.tree.Stats(5 * time.Second)
	if err != nil {
		return nil, err
	}
	if errs == nil {
		errs = []supervisor.Failure{}
	}
	st := &Status{
		Version:           Version,
		PID:               os.Getpid(),
		UptimeSeconds:     time.Since(r.start).Seconds(),
		DataDir:           r.cfg.Data.Dir,
		ControlAddr:       r.ControlAddr(),
		JournalBytes:      r.store.DiskUsage(),
		Kinds:             kinds,
		LastErrors:        errs,
		UnhandledMessages: r.tree.UnknownMessages(),
		UnhandledEffects:  r.tree.UnhandledEffects(),
		Quarantined:       r.tree.Quarantined(),
	}
	for _, fe := range r.o.FrontEnds {
		if rep, ok := fe.(frontend.Reporter); ok {
			if st.FrontEnds == nil {
				st.FrontEnds = map[string]frontend.Report{}
			}
			st.FrontEnds[fe.Name()] = rep.Report(0)
		}
	}
	return st, nil
}

func (r *Runtime) serveStatus(w http.ResponseWriter, _ *http.Request) {
	st, err := r.StatusReport()
	if err != nil {
		control.WriteError(w, http.StatusInternalServerError, fmt.Sprintf("status: %v", err))
		return
	}
	control.WriteJSON(w, http.StatusOK, st)
}

// repairBody is what `thatch repair` posts: drop (delete the journal and
// start afresh) or release (try it again) one quarantined entity.
type repairBody struct {
	Action string `json:"action"`
	Entity string `json:"entity"`
}

// Repair drops or releases a quarantined entity, named kind/id.
func (r *Runtime) Repair(action, entity string) error {
	id, err := supervisor.ParseIdentity(entity)
	if err != nil {
		return err
	}
	switch action {
	case "drop":
		return r.tree.Drop(id)
	case "release":
		return r.tree.Release(id)
	}
	return fmt.Errorf("thatch: repair action %q: want drop or release", action)
}

// quiesceBody asks POST /v1/quiesce to wait at most TimeoutMS (default
// 30 s) for quiescence.
type quiesceBody struct {
	TimeoutMS int64 `json:"timeoutMS,omitempty"`
}

// serveQuiesce answers once nothing more happens without new input (see
// Quiesce), or 503 when something still runs at the timeout: the e2e
// suite proves with it that something does not happen, rather than by
// waiting a while.
func (r *Runtime) serveQuiesce(w http.ResponseWriter, req *http.Request) {
	var b quiesceBody
	if !control.DecodeJSON(w, req, &b, 0) {
		return
	}
	timeout := 30 * time.Second
	if b.TimeoutMS > 0 {
		timeout = min(time.Duration(b.TimeoutMS)*time.Millisecond, 5*time.Minute)
	}
	if err := r.Quiesce(timeout); err != nil {
		control.WriteError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	control.WriteJSON(w, http.StatusOK, map[string]bool{"quiet": true})
}

func (r *Runtime) serveRepair(w http.ResponseWriter, req *http.Request) {
	var b repairBody
	if !control.DecodeJSON(w, req, &b, 0) {
		return
	}
	switch err := r.Repair(b.Action, b.Entity); {
	case errors.Is(err, supervisor.ErrNotQuarantined):
		control.WriteError(w, http.StatusNotFound, err.Error())
	case err != nil:
		control.WriteError(w, http.StatusBadRequest, err.Error())
	default:
		control.WriteJSON(w, http.StatusOK, map[string]string{"entity": b.Entity, "done": b.Action})
	}
}
