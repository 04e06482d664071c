package thatch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/hosts/opencode"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
)

// HostClient is what the executor needs from an opencode server.
// *opencode.Client implements it; tests use a recording fake.
type HostClient interface {
	CreateSession(ctx context.Context, parentID, title string) (opencode.Session, error)
	FindChild(ctx context.Context, parentID, title string) (opencode.Session, bool, error)
	PromptNoReply(ctx context.Context, sessionID, text string) error
	PromptAsync(ctx context.Context, sessionID, text string) error
	DeleteSession(ctx context.Context, sessionID string) error
	Messages(ctx context.Context, sessionID string) ([]opencode.Message, error)
	ShowToast(ctx context.Context, title, message, variant string) error
	ExecuteTUICommand(ctx context.Context, command string) error
	PublishTUICommand(ctx context.Context, command string) error
}

// HostInfo describes one connected host to the executor.
type HostInfo struct {
	Client HostClient
	// API is "v1" or "v2"; on v2 noReply delivery is lost, so the start
	// reminder is skipped.
	API string
}

// executor runs entity effects against hosts and local registries. Effects
// of one entity run one at a time, in the order the entity issued them (the
// exit wrap-up depends on it); different entities run in parallel. Each
// effect has a timeout, and results go back to the entity as messages.
type executor struct {
	log      hclog.Logger
	send     func(to actors.Identity, msg any)
	hosts    func(name string) (HostInfo, bool)
	rows     *persistence.Rows
	reminder func(ctx context.Context, directory string) string
	timeout  time.Duration
	now      func() time.Time
	// activeFamilies lists families with unfinished work (stale sweeps).
	activeFamilies func() []string
	// stranded heals sessions left in deleted worktrees on every host and
	// drops hosts whose process is gone.
	stranded func(ctx context.Context)
	// linkChild records a child thatch created under its parent, so that
	// the child's tool calls reach the family even when the host's
	// session.created for it is lost.
	linkChild func(child, parent string) error
	// forgetDeleted forgets the journals of deleted families noted before
	// cutoff and returns how many it forgot.
	forgetDeleted func(cutoff time.Time) (int, error)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// ready is closed once send is set; effects issued earlier (by entities
	// rehydrated while the tree starts) wait for it.
	ready chan struct{}

	mu     sync.Mutex
	queues map[actors.Identity][]any
}

func newExecutor(log hclog.Logger, timeout time.Duration) *executor {
	ctx, cancel := context.WithCancel(context.Background())
	return &executor{log: log, timeout: timeout, ctx: ctx, cancel: cancel, queues: map[actors.Identity][]any{}, now: time.Now, ready: make(chan struct{})}
}

// Execute queues eff behind the entity's earlier effects. It never blocks.
func (x *executor) Execute(from actors.Identity, eff any) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ctx.Err() != nil {
		x.log.Warn("effect after shutdown dropped", "entity", from.String(), "effect", fmt.Sprintf("%T", eff))
		return
	}
	q, running := x.queues[from]
	x.queues[from] = append(q, eff)
	if running {
		return
	}
	x.wg.Add(1)
	go x.drain(from)
}

// drain runs from's queue until it is empty; it is the queue's only runner.
func (x *executor) drain(from actors.Identity) {
	defer x.wg.Done()
	select {
	case <-x.ready:
	case <-x.ctx.Done():
	}
	for {
		x.mu.Lock()
		q := x.queues[from]
		if len(q) == 0 || x.ctx.Err() != nil {
			delete(x.queues, from)
			x.mu.Unlock()
			return
		}
		eff := q[0]
		x.queues[from] = q[1:]
		x.mu.Unlock()
		x.run(from, eff)
	}
}

// Stop cancels effects in flight and waits for the runners to end.
func (x *executor) Stop(context.Context) error {
	x.cancel()
	x.wg.Wait()
	return nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (x *executor) host(name string) (HostInfo, error) {
	if x.hosts != nil {
		if h, ok := x.hosts(name); ok {
			return h, nil
		}
	}
	return HostInfo{}, fmt.Errorf("thatch: host %q is not connected", name)
}

func (x *executor) run(from actors.Identity, eff any) {
	ctx, cancel := context.WithTimeout(x.ctx, x.timeout)
	defer cancel()
	log := x.log.With("entity", from.String(), "effect", fmt.Sprintf("%T", eff))
	switch e := eff.(type) {
	case *messages.CreateChildSession:
		res := &messages.ChildSessionCreated{ParentID: e.ParentID}
		h, err := x.host(e.Host)
		if err == nil {
			// A repeat after a crash must not make a second child.
			var s opencode.Session
			var found bool
			s, found, err = h.Client.FindChild(ctx, e.ParentID, e.Title)
			if err == nil && !found {
				s, err = h.Client.CreateSession(ctx, e.ParentID, e.Title)
			}
			res.ChildID = s.ID
		}
		if err == nil && x.linkChild != nil {
			// Only a lost session.created makes this link matter; the
			// child exists either way, so a failure here is only logged.
			if lerr := x.linkChild(res.ChildID, e.ParentID); lerr != nil {
				log.Warn("cannot record the extraction child's parent", "child", res.ChildID, "error", lerr)
			}
		}
		res.Err = errText(err)
		if err != nil {
			log.Error("cannot create extraction child", "parent", e.ParentID, "error", err)
		}
		x.send(from, res)
	case *messages.PromptSession:
		h, err := x.host(e.Host)
		if err == nil {
			if e.NoReply {
				err = h.Client.PromptNoReply(ctx, e.SessionID, e.Text)
			} else {
				err = h.Client.PromptAsync(ctx, e.SessionID, e.Text)
			}
		}
		if err != nil {
			log.Error("cannot prompt session", "session", e.SessionID, "error", err)
		}
		x.send(from, &messages.SessionPrompted{SessionID: e.SessionID, Err: errText(err)})
	case *messages.SendStartReminder:
		h, err := x.host(e.Host)
		if err == nil {
			if h.API == "v2" {
				log.Debug("start reminder skipped: the v2 API drops noReply prompts", "session", e.SessionID)
				return
			}
			text := x.reminder(ctx, e.Directory)
			err = h.Client.PromptNoReply(ctx, e.SessionID, text)
		}
		if err != nil {
			log.Warn("cannot send the session-start reminder", "session", e.SessionID, "error", err)
		}
	case *messages.DeleteSession:
		h, err := x.host(e.Host)
		if err == nil {
			err = h.Client.DeleteSession(ctx, e.SessionID)
		}
		if err != nil {
			log.Warn("cannot delete session", "session", e.SessionID, "error", err)
		}
	case *messages.ShowToast:
		h, err := x.host(e.Host)
		if err == nil {
			err = h.Client.ShowToast(ctx, e.Title, e.Message, e.Variant)
		}
		if err != nil {
			log.Debug("toast not shown", "error", err)
		}
	case *messages.FetchMessages:
		res := &messages.MessagesFetched{SessionID: e.SessionID, Check: e.Check}
		h, err := x.host(e.Host)
		if err == nil {
			var msgs []opencode.Message
			msgs, err = h.Client.Messages(ctx, e.SessionID)
			res.FinalAssistantText = opencode.FinalAssistantText(msgs)
		}
		res.Err = errText(err)
		x.send(from, res)
	case *messages.CompactSession:
		h, err := x.host(e.Host)
		if err == nil {
			if c, ok := h.Client.(interface {
				Compact(ctx context.Context, sessionID string) error
			}); ok {
				// The v2 surface compacts a named session itself.
				err = c.Compact(ctx, e.SessionID)
			} else {
				err = h.Client.ExecuteTUICommand(ctx, "session_compact")
			}
		}
		if err != nil {
			log.Error("cannot start compaction", "session", e.SessionID, "error", err)
		}
		x.send(from, &messages.SessionCompactIssued{SessionID: e.SessionID, Err: errText(err)})
	case *messages.ExitSession:
		h, err := x.host(e.Host)
		if err == nil {
			err = h.Client.PublishTUICommand(ctx, "app.exit")
		}
		if err != nil {
			log.Error("cannot close the session's host", "session", e.SessionID, "error", err)
		}
		x.send(from, &messages.SessionExitIssued{SessionID: e.SessionID, Err: errText(err)})
	case *messages.RecordWatcherDeaths:
		if err := x.rows.Put(tableWatcherDeaths, e.SessionID, []byte(x.now().UTC().Format(time.RFC3339Nano))); err != nil {
			log.Error("cannot record watcher deaths", "error", err)
		}
	case *messages.RecordFamilyDeleted:
		// The first note's time counts: asking again must not postpone
		// the sweep.
		_, ok, err := x.rows.Get(tableDeletedFamilies, e.SessionID)
		if err == nil && !ok {
			err = x.rows.Put(tableDeletedFamilies, e.SessionID, nil)
		}
		if err != nil {
			// No answer: the tombstone stays active and asks again when
			// it is next rehydrated.
			log.Error("cannot note deleted family", "error", err)
			return
		}
		x.send(from, &messages.DeletionNoted{SessionID: e.SessionID})
	case *messages.UnregisterChat:
		if err := x.rows.Delete(tableChatDirectory, e.SessionID); err != nil {
			log.Error("cannot unregister chat", "error", err)
		}
	case *messages.SweepRuntimeState:
		for _, table := range []string{tableWatcherDeaths} {
			n, err := x.rows.DeleteWrittenBefore(table, e.Cutoff)
			if err != nil {
				log.Error("runtime-state sweep failed", "table", table, "error", err)
			} else if n > 0 {
				log.Info("aged out runtime-state rows", "table", table, "rows", n)
			}
		}
		if x.forgetDeleted != nil {
			n, err := x.forgetDeleted(e.Cutoff)
			if err != nil {
				log.Error("cannot forget deleted sessions", "error", err)
			}
			if n > 0 {
				log.Info("forgot the journals of deleted sessions", "sessions", n)
			}
		}
	case *messages.SweepStaleClaims:
		if x.activeFamilies != nil {
			for _, id := range x.activeFamilies() {
				x.send(familyID(id), &messages.StaleSweep{})
			}
		}
	case *messages.SweepStrandedSessions:
		if x.stranded != nil {
			x.stranded(ctx)
		}
	default:
		log.Error("no executor for effect")
	}
}
