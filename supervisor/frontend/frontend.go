// Package frontend is the contract between the runtime and a front end:
// the package that speaks one outside world (opencode servers and their
// plugin; IM chats and tmux) and owns the entity kinds that stand for it.
//
// The runtime composes front ends in one fixed order, visible in the root
// package's Runtime.Start:
//
//  1. Open: the store is open; the front end loads what it needs and
//     returns its Parts (entity kinds and effect handlers). Nothing runs.
//  2. The supervision tree starts with every front end's kinds and
//     handlers, and rehydrates the entities with unfinished work.
//  3. Mount: the front end adds its routes to the control API, which then
//     starts listening.
//  4. Start: the front end connects to its outside world.
//  5. Stop, in reverse order, before the tree and the store close.
//
// # Imports
//
// frontend may import supervisor, persistence, actors, internal/redact,
// hclog and the standard library (net/http only for the handler type of
// Mux). Two front ends never import each other; the root package only
// composes them.
package frontend

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/internal/redact"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/persistence/memory"
	"github.com/thatch-run/thatch/supervisor"
)

// Core is what the runtime hands a front end when it opens.
type Core struct {
	// Store is the open store: its journal and rows.
	Store *persistence.Store
	// Memory is the memory store (shared by every front end). It refuses
	// a memory holding a secret itself (see Redactor).
	Memory *memory.Store
	// Redactor is the secret redactor [memory.redact] asks for, shared by
	// every front end and the memory store, so that what one cuts the
	// others cut too and `thatch status` counts them all. Default: nil,
	// when redaction is switched off (a nil Redactor refuses nothing;
	// callers check before Redact).
	Redactor *redact.Redactor
	// Clock is the runtime's clock, the one entities decide with.
	Clock actors.Clock
	// Logger is named after the front end.
	Logger hclog.Logger
}

// Parts are what a front end adds to the supervision tree.
type Parts struct {
	// Kinds are the entity kinds the front end owns.
	Kinds []supervisor.Spec
	// Effects are the handlers of the effect types its kinds release.
	Effects []supervisor.Handler
	// Wake are entities the runtime starts once the tree is up: an entity
	// that arms its timers on recovery and journals nothing until they
	// fire (the opencode front end's sweeper) is not rehydrated before it
	// has a journal.
	Wake []actors.Identity
}

// Tree is what a front end may do with the supervision tree it runs in:
// hand its entities messages, ask them, read them without waking them,
// forget one that is gone, and wait until nothing is in flight. It cannot
// stop the tree, drop or release entities, or reach the actor system; the
// runtime owns those. *supervisor.Tree is one.
type Tree interface {
	// Send delivers msg to an entity and does not wait.
	Send(to actors.Identity, msg any)
	// DeliverContext delivers msg and waits until what it decided is
	// durable.
	DeliverContext(ctx context.Context, to actors.Identity, msg any, timeout time.Duration) error
	// Request asks an entity and waits for its answer; RequestContext
	// also gives up when ctx ends.
	Request(to actors.Identity, msg any, timeout time.Duration) (any, error)
	RequestContext(ctx context.Context, to actors.Identity, msg any, timeout time.Duration) (any, error)
	// LiveIDs lists the ids of kind's live entities.
	LiveIDs(kind string, timeout time.Duration) ([]string, error)
	// Peek reads an entity that is not live from its journal, as a
	// rehydration would, without starting it.
	Peek(id actors.Identity) (*supervisor.Inspection, bool, error)
	// ForgetPassive deletes the journal of an entity that holds nothing
	// and is not live.
	ForgetPassive(id actors.Identity, timeout time.Duration) (bool, error)
	// Quiesce waits until no message and no effect of the tree is in
	// flight: every effect released so far has run (on every lane), its
	// result was handled, and the effects that released have run too.
	// It sees nothing outside the tree: a front end's own goroutines
	// (the IM front end's transcript follower, its screen watcher's
	// loop, its receivers and cluster loops, the opencode stream
	// readers) are outside input to it, like a timer that fires later,
	// so a test first waits for what they are to have read or sent.
	// What they hand to the tree is inside: the IM bindings' and
	// notices' chat messages (the cluster's machine question among
	// them), and what the bindings tell the screen watcher to watch.
	Quiesce(timeout time.Duration) error
}

var _ Tree = (*supervisor.Tree)(nil)

// Mux is where a front end mounts its control API routes; every route is
// behind the control API's bearer token.
type Mux interface {
	MountFunc(pattern string, h func(http.ResponseWriter, *http.Request))
}

// FrontEnd is one front end, as the runtime composes it.
type FrontEnd interface {
	// Name names the front end in logs and status ("opencode", "im").
	Name() string
	// Open prepares the front end on the open store (step 1).
	Open(ctx context.Context, c Core) (Parts, error)
	// Mount adds the front end's routes (step 3). The tree is running and
	// has rehydrated the front end's entities; a front end reads what it
	// routes by here.
	Mount(ctx context.Context, t Tree, m Mux) error
	// Start connects the front end to its outside world (step 4). An
	// unreachable outside world is logged, not an error: only a front end
	// that cannot run at all fails Start.
	Start(ctx context.Context) error
	// Stop disconnects; everything acknowledged is already durable.
	Stop(ctx context.Context) error
}

// Report is what `thatch status` shows of one front end, under its name.
type Report struct {
	// Entities are the status views of the front end's entities (the
	// opencode families, the IM bindings), at most the limit asked for;
	// Total is how many there are in all.
	Entities []any `json:"entities,omitempty"`
	Total    int   `json:"total"`
	// Health is how its link to the outside world goes; nil for a front
	// end that cannot tell.
	Health *Health `json:"health,omitempty"`
	// Details are views of its own that fit no field above, by name (the
	// opencode front end's "sweepers").
	Details map[string]any `json:"details,omitempty"`
}

// Reporter is implemented by a front end that `thatch status` shows.
type Reporter interface {
	// Report returns the front end's status, with at most limit entity
	// views (0: no limit).
	Report(limit int) Report
}

// Health is how a front end's link to the outside world goes, for
// `thatch status` (which exits non-zero while one is not OK).
type Health struct {
	// OK: it works (polling, connected).
	OK bool `json:"ok"`
	// State says what it does, in a few words ("polling Telegram",
	// "Telegram refuses the bot token").
	State string `json:"state"`
	// LastError is the last failure while not OK.
	LastError string `json:"lastError,omitempty"`
	// Since is when the state began.
	Since time.Time `json:"since,omitzero"`
}

// knownIDs lists the ids of kind's entities, sorted: every live one and
// every one with a journal; live holds the ones that were live.
func knownIDs(t Tree, j *persistence.Journal, kind string, timeout time.Duration) (ids []string, live map[string]bool) {
	all, live := map[string]bool{}, map[string]bool{}
	if l, err := t.LiveIDs(kind, timeout); err == nil {
		for _, id := range l {
			live[id], all[id] = true, true
		}
	}
	_ = j.EntityIDs(kind, func(id persistence.Identity) error {
		all[id.ID] = true
		return nil
	})
	return slices.Sorted(maps.Keys(all)), live
}

// Entities lists the status views of kind's entities (knownIDs), sorted by
// id, at most limit of them (0: all), and how many there are. A live
// entity answers itself; one that is not is read from its journal
// (Tree.Peek), so a status never wakes the passivated ones. A few are
// asked at a time, so that one that cannot answer costs one timeout, not
// one per entity; it shows its error instead of its view, under idKey
// ("family", "thread").
func Entities(t Tree, j *persistence.Journal, kind, idKey string, limit int, timeout time.Duration) ([]any, int) {
	ids, live := knownIDs(t, j, kind, timeout)
	total := len(ids)
	if limit > 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	out := make([]any, len(ids))
	sem := make(chan struct{}, reportConcurrency)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = inspect(t, actors.Identity{Kind: kind, ID: id}, live[id], idKey, timeout)
		}()
	}
	wg.Wait()
	return out, total
}

// inspect is the status view of one entity, or its error under idKey.
func inspect(t Tree, id actors.Identity, live bool, idKey string, timeout time.Duration) any {
	failed := func(err error) any { return map[string]string{idKey: id.ID, "error": err.Error()} }
	if !live {
		in, ok, err := t.Peek(id)
		switch {
		case err != nil:
			return failed(err)
		case ok:
			return in.View
		}
	}
	res, err := t.Request(id, &supervisor.Inspect{}, timeout)
	switch in, ok := res.(*supervisor.Inspection); {
	case err != nil:
		return failed(err)
	case ok:
		return in.View
	default:
		return failed(fmt.Errorf("inspect answered %T", res))
	}
}

// reportConcurrency is how many entities Entities asks at once.
const reportConcurrency = 16
