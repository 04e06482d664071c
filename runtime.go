package thatch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/session"
	"github.com/thatch-run/thatch/actors/sweeper"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/persistence/memory"
	"github.com/thatch-run/thatch/supervisor"
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
	// Executor runs entity effects. Default: the runtime's own executor.
	// A replacement must send each effect's result message back to the
	// entity that issued it (see messages: ChildSessionCreated,
	// SessionPrompted, MessagesFetched with FetchMessages.Check echoed,
	// SessionCompactIssued, SessionExitIssued, DeletionNoted); a family
	// waits for them.
	Executor actors.Executor
	// Kinds are extra entity kinds to supervise besides thatch's own.
	Kinds []actors.Spec
	// Hosts are opencode hosts whose clients the embedder supplies, by host
	// name; they have no event stream of their own (the embedder delivers
	// events with DeliverHostEvent, and reconciles with ReconcileHost).
	// Tests use recording fakes here.
	Hosts map[string]HostInfo
}

// Runtime is one running thatch: store, supervision tree, control API.
type Runtime struct {
	cfg   *config.Config
	o     Options
	log   hclog.Logger
	kinds []actors.Spec

	mu      sync.Mutex
	started bool
	stopped bool
	start   time.Time
	store   *persistence.Store
	sys     *actor.ActorSystem
	tree    *supervisor.Tree
	control *control.Server
	oc      *openCode
	exec    *executor
	fatal   chan error
	fatalMu sync.Once
	mem     *memory.Store
	memSvc  *memoryService
	stopFns []func(context.Context) error
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
	r := &Runtime{cfg: cfg, o: o, log: o.Logger, fatal: make(chan error, 1)}
	r.kinds = append(r.kinds, o.Kinds...)
	return r, nil
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

// Start opens the store, builds the tree (rehydrating entities with
// unfinished work) and opens the control API, in that order, so that no
// input is accepted before recovery.
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
			r.stopLocked(context.Background())
		}
	}()
	dir := filepath.Join(r.cfg.Data.Dir, "journal")
	r.store, err = persistence.Open(dir, persistence.Options{
		CacheSize: int64(r.cfg.Journal.CacheSizeMB) << 20,
		OnFailure: r.fail,
		// Rows age on the clock the sweeps compute their cutoffs with.
		Now: r.o.Clock.Now,
	})
	if err != nil {
		return err
	}
	r.log.Info("data directory", "path", r.cfg.Data.Dir)
	mctx, mcancel := context.WithTimeout(ctx, memoryOpenTimeout)
	r.mem, err = OpenMemory(mctx, r.store, r.cfg.Memory, r.log.Named("memory"))
	mcancel()
	if err != nil {
		return err
	}
	sessions, err := loadDirectory(r.store.Rows())
	if err != nil {
		return err
	}
	grace := r.cfg.OpenCode.FinishGrace
	if grace == 0 {
		grace = session.NoGrace // the config allows "0s": no grace, not the default
	}
	family := session.New(session.Config{
		BufferLimit:     r.cfg.OpenCode.BufferLimit,
		StaleAfter:      r.cfg.OpenCode.StaleAfter,
		FinishGrace:     grace,
		ExitRetryWindow: r.cfg.OpenCode.ExitRetryWindow,
	})
	r.exec = newExecutor(r.log.Named("executor"), r.cfg.OpenCode.RequestTimeout)
	r.exec.rows = r.store.Rows()
	r.exec.now = r.o.Clock.Now
	r.exec.reminder = r.reminderText
	r.oc = &openCode{log: r.log.Named("opencode"), cfg: r.cfg, dir: sessions, hosts: map[string]*hostConn{}}
	r.exec.hosts = r.oc.hostInfo
	r.memSvc = &memoryService{log: r.log.Named("memory"), mem: r.mem, oc: r.oc}
	r.oc.store = func(dir string) (string, string) { return r.memSvc.projectStore(dir), memory.GlobalStore }
	r.oc.journaled = func(id string) bool {
		high, err := r.store.Journal().HighestSeq(familyID(id))
		return err == nil && high > 0
	}
	for name, h := range r.o.Hosts {
		r.oc.addStatic(name, h)
	}
	executor := r.o.Executor
	if executor == nil {
		executor = r.exec
	}
	r.exec.stranded = r.oc.healStranded
	r.exec.forgetDeleted = r.forgetDeletedFamilies
	r.exec.linkChild = func(child, parent string) error {
		_, err := sessions.link(child, parent)
		return err
	}
	r.exec.activeFamilies = func() []string {
		var ids []string
		_ = r.store.Journal().Active(session.KindName, func(id persistence.Identity) error {
			ids = append(ids, id.ID)
			return nil
		})
		return ids
	}
	sweep := sweeper.Kind{Interval: r.cfg.Sweep.Interval, RuntimeStateTTL: r.cfg.Sweep.RuntimeStateTTL}
	kinds := append([]actors.Spec{actors.Entity[session.State](family), actors.Entity[sweeper.State](sweep)}, r.kinds...)
	r.sys = supervisor.NewActorSystem(r.log)
	r.tree, err = supervisor.Start(supervisor.Options{
		System:  r.sys,
		Journal: r.store.Journal(),
		Env: actors.Env{
			Clock:          r.o.Clock,
			Executor:       executor,
			Logger:         r.log.Named("entity"),
			SnapshotEvery:  r.cfg.Journal.SnapshotEvery,
			PassivateAfter: r.cfg.Actors.PassivateAfter,
		},
		Kinds: kinds,
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
	r.exec.send = r.tree.Send
	close(r.exec.ready)
	r.oc.tree = r.tree
	// The sweeper journals nothing until its first round; wake it so that
	// its timer runs from the start.
	if _, err := r.tree.Request(actors.Identity{Kind: sweeper.KindName, ID: sweeper.ID}, &actors.Ping{}, 10*time.Second); err != nil {
		return fmt.Errorf("thatch: start sweeper: %w", err)
	}
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
	r.oc.mount(r.control)
	r.memSvc.mount(r.control)
	if err := r.control.Start(); err != nil {
		return err
	}
	r.log.Info("control API listening", "addr", "http://"+r.control.Addr(), "token_file", r.cfg.Control.TokenFile, "state_file", r.cfg.Control.StateFile)
	for _, s := range r.cfg.OpenCode.Servers {
		if _, err := r.oc.connect(ctx, s, 0, ""); err != nil {
			r.log.Error("cannot watch configured opencode server", "host", s.Name, "error", err)
		}
	}
	return nil
}

// DeliverHostEvent hands a decoded host event (a *messages.SessionCreated,
// *messages.SessionIdle, ...) to its session family and waits until it is
// journaled. Embedders with their own host connection, and tests, use it.
func (r *Runtime) DeliverHostEvent(msg any) error {
	if r.oc == nil {
		return errors.New("thatch: runtime not started")
	}
	return r.oc.deliver(msg)
}

// ReconcileHost lists a connected host's sessions and reconciles every
// family on it, as a (re)connect of its event stream does. A host supplied
// in Options.Hosts is connected from Start but has no stream: call this
// after Start, and after the host was unreachable, so that families
// rehydrated by the start resume their host calls. Its client must also
// offer ListSessions and SessionStatus.
func (r *Runtime) ReconcileHost(ctx context.Context, host string) error {
	if r.oc == nil {
		return errors.New("thatch: runtime not started")
	}
	return r.oc.reconcileHost(ctx, host)
}

// Reconcile delivers a host's session listing as after a reconnect.
func (r *Runtime) Reconcile(host string, fr *messages.FamilyReconciled) error {
	if r.oc == nil {
		return errors.New("thatch: runtime not started")
	}
	fr.Host = host
	for _, c := range fr.Children {
		if _, err := r.oc.dir.link(c.SessionID, fr.Parent.SessionID); err != nil {
			return err
		}
	}
	return r.tree.Deliver(familyID(fr.Parent.SessionID), fr, deliverTimeout)
}

// forgetDeletedFamilies forgets the journal of every family whose parent
// was deleted before cutoff: a tombstone only has to outlive the late
// events of its session. A family that is live (woken since) waits for
// the next sweep; the tree checks and forgets in one step, so no entity
// wakes in between. Its directory rows (child links a late create answer
// may have added) go with it.
func (r *Runtime) forgetDeletedFamilies(cutoff time.Time) (int, error) {
	var due []string
	err := r.store.Rows().Scan(tableDeletedFamilies, func(row persistence.Row) error {
		if row.WrittenAt.Before(cutoff) {
			due = append(due, row.Key)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range due {
		forgotten, err := r.tree.ForgetPassive(familyID(id), 5*time.Second)
		if err != nil {
			return n, err
		}
		if !forgotten {
			continue
		}
		n++
		if err := r.oc.dir.forget(id); err != nil {
			return n, err
		}
		if err := r.store.Rows().Delete(tableDeletedFamilies, id); err != nil {
			return n, err
		}
	}
	return n, nil
}

// reminderText is the session-start reminder for a session in directory,
// with the hygiene heartbeat of its stores when any signal is raised.
func (r *Runtime) reminderText(_ context.Context, dir string) string {
	if hb := r.memSvc.heartbeat(dir); hb != "" {
		return sessionStartReminder + "\n\nMemory hygiene (fix with memory_recall / memory_remember overwrite / memory_forget):\n" + hb
	}
	return sessionStartReminder
}

// Memory is the memory store (nil before Start).
func (r *Runtime) Memory() *memory.Store { return r.mem }

const sessionStartReminder = `thatch is watching this session. Memory tools are available:
- memory_recall(query): look up durable facts saved from earlier sessions before you re-discover them;
- memory_remember(label, content): save a fact that will still be true and useful weeks from now (one fact per memory, a specific label);
- memory_forget(label) and memory_list(): correct or review what is stored.
Buffered tool calls are turned into memories automatically when the session goes idle.`

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

// OnStop registers a function that Stop calls (in reverse order of
// registration) before the tree and store close.
func (r *Runtime) OnStop(f func(context.Context) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopFns = append(r.stopFns, f)
}

// Stop closes the control API, stops every entity and closes the store.
// Every acknowledged write is already durable, so Stop loses nothing even
// when ctx ends early.
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
	if r.oc != nil {
		errs = append(errs, r.oc.stop(ctx))
	}
	for i := len(r.stopFns) - 1; i >= 0; i-- {
		errs = append(errs, r.stopFns[i](ctx))
	}
	if r.tree != nil {
		errs = append(errs, r.tree.Stop(10*time.Second))
	}
	if r.exec != nil {
		errs = append(errs, r.exec.Stop(ctx))
	}
	if r.sys != nil {
		r.sys.Shutdown()
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

// Tree is the supervision tree (nil before Start).
func (r *Runtime) Tree() *supervisor.Tree { return r.tree }

// Store is the open store (nil before Start).
func (r *Runtime) Store() *persistence.Store { return r.store }

// Control is the control API server, for mounting routes (nil before Start).
func (r *Runtime) Control() *control.Server { return r.control }

// Logger is the runtime's root logger.
func (r *Runtime) Logger() hclog.Logger { return r.log }

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
	Sessions      []any                  `json:"sessions,omitempty"`
}

// statusFamilies caps the session families one status report shows.
const statusFamilies = 500

var errStatusFull = errors.New("thatch: status is full")

// StatusReport gathers the runtime's status.
func (r *Runtime) StatusReport() (*Status, error) {
	kinds, errs, err := r.tree.Stats(5 * time.Second)
	if err != nil {
		return nil, err
	}
	if errs == nil {
		errs = []supervisor.Failure{}
	}
	var fams []string
	if live, err := r.tree.LiveIDs(session.KindName, 5*time.Second); err == nil {
		fams = live
	}
	seen := map[string]bool{}
	for _, f := range fams {
		seen[f] = true
	}
	// Every persisted family, not only those with unfinished work: a
	// passivated family that only buffers interactions must show too. A
	// view wakes its family, so a status shows at most statusFamilies.
	_ = r.store.Journal().EntityIDs(session.KindName, func(id persistence.Identity) error {
		if len(fams) >= statusFamilies {
			return errStatusFull
		}
		if !seen[id.ID] {
			fams = append(fams, id.ID)
		}
		return nil
	})
	sort.Strings(fams)
	return &Status{
		Sessions:      r.oc.sessionViews(fams),
		Version:       Version,
		PID:           os.Getpid(),
		UptimeSeconds: time.Since(r.start).Seconds(),
		DataDir:       r.cfg.Data.Dir,
		ControlAddr:   r.ControlAddr(),
		JournalBytes:  r.store.DiskUsage(),
		Kinds:         kinds,
		LastErrors:    errs,
	}, nil
}

func (r *Runtime) serveStatus(w http.ResponseWriter, _ *http.Request) {
	st, err := r.StatusReport()
	if err != nil {
		control.WriteError(w, http.StatusInternalServerError, fmt.Sprintf("status: %v", err))
		return
	}
	control.WriteJSON(w, http.StatusOK, st)
}
