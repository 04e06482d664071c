package supervisor

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/actors"
)

// Handler carries out one effect type. Run gets a context that ends when
// the tree stops (each handler bounds its own calls further) and returns
// the result message to send back to the entity that issued the effect, or
// nil when the effect has none.
type Handler struct {
	typ  reflect.Type
	lane string
	run  func(ctx context.Context, from actors.Identity, eff any) any
}

// HandlerOption changes how a handler's effects are run.
type HandlerOption func(*Handler)

// Lane runs the handler's effects in the lane called name: each entity
// has one FIFO per lane, and its lanes run apart from each other, so a
// slow effect (a chat send waiting out a 429, a search that polls for
// seconds) holds up only the effects of its own lane of its own entity.
// Effects of one lane run one at a time, in the order the entity released
// them. Default: the entity's main lane ("").
func Lane(name string) HandlerOption {
	return func(h *Handler) { h.lane = name }
}

// Handle makes the Handler of effect type *E.
func Handle[E any](run func(ctx context.Context, from actors.Identity, eff *E) any, opts ...HandlerOption) Handler {
	h := Handler{typ: reflect.TypeFor[*E](), run: func(ctx context.Context, from actors.Identity, eff any) any {
		return run(ctx, from, eff.(*E))
	}}
	for _, o := range opts {
		o(&h)
	}
	return h
}

// Type is the effect type the handler runs (a pointer type).
func (h Handler) Type() reflect.Type { return h.typ }

// LaneName is the lane the handler's effects run in ("" for the main one).
func (h Handler) LaneName() string { return h.lane }

// effects is the tree's executor: it dispatches each effect by its type to
// the handler a front end registered, on a FIFO per entity and lane (see
// Lane). Effects of one entity's lane run one at a time, in the order the
// entity released them (the exit wrap-up depends on it); different lanes
// and entities run in parallel. A handler's result goes back to its entity
// as a message, before the effect counts as done, so that a quiescence
// check sees it in the entity's mailbox: Quiesce covers every lane.
type effects struct {
	log      hclog.Logger
	handlers map[reflect.Type]Handler
	send     func(to actors.Identity, msg any)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// gate is closed once effects may run (Tree.ReleaseEffects); until
	// then they queue.
	gate chan struct{}

	mu      sync.Mutex
	queues  map[queueKey][]any
	pending int // queued or running
	// busy counts each entity's effects queued or running (an entity with
	// none has no entry).
	busy  map[actors.Identity]int
	quiet chan struct{}
	// issued counts every effect ever queued: a quiescence check compares
	// it before and after to tell that nothing new was released meanwhile.
	issued    atomic.Uint64
	unhandled atomic.Uint64
}

// cover checks that every effect a kind says it releases
// (actors.EffectLister) has a handler.
func (x *effects) cover(kinds []Spec) error {
	var missing []string
	for _, k := range kinds {
		for _, t := range k.Effects() {
			if _, ok := x.handlers[t]; !ok && !runByEntity(t) {
				missing = append(missing, fmt.Sprintf("%s releases %v", k.KindName(), t))
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("supervisor: effects without a handler: %s", strings.Join(missing, "; "))
	}
	return nil
}

// runByEntity reports the effects an entity runs itself: timers and
// sends.
func runByEntity(t reflect.Type) bool {
	switch t {
	case reflect.TypeFor[*actors.StartTimer](), reflect.TypeFor[*actors.CancelTimer](), reflect.TypeFor[*actors.Send]():
		return true
	}
	return false
}

func newEffects(log hclog.Logger, hs []Handler) (*effects, error) {
	x := &effects{log: log, handlers: map[reflect.Type]Handler{}, queues: map[queueKey][]any{}, busy: map[actors.Identity]int{}, gate: make(chan struct{})}
	for _, h := range hs {
		if h.typ == nil {
			return nil, fmt.Errorf("supervisor: a handler without an effect type")
		}
		if _, dup := x.handlers[h.typ]; dup {
			return nil, fmt.Errorf("supervisor: two handlers for %v", h.typ)
		}
		x.handlers[h.typ] = h
	}
	x.ctx, x.cancel = context.WithCancel(context.Background())
	return x, nil
}

// queueKey names one FIFO: an entity's lane.
type queueKey struct {
	from actors.Identity
	lane string
}

// Execute queues eff behind the earlier effects of the entity's lane it
// runs in. It never blocks. It implements actors.Executor.
func (x *effects) Execute(from actors.Identity, eff any) {
	key := queueKey{from: from, lane: x.handlers[reflect.TypeOf(eff)].lane}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ctx.Err() != nil {
		x.log.Warn("effect after shutdown dropped", "entity", from.String(), "effect", fmt.Sprintf("%T", eff))
		return
	}
	x.issued.Add(1)
	x.pending++
	x.busy[from]++
	q, running := x.queues[key]
	x.queues[key] = append(q, eff)
	if running {
		return
	}
	x.wg.Add(1)
	go x.drain(key)
}

// drain runs a lane's queue until it is empty; it is the queue's only
// runner.
func (x *effects) drain(key queueKey) {
	defer x.wg.Done()
	select {
	case <-x.gate:
	case <-x.ctx.Done():
	}
	for {
		x.mu.Lock()
		q := x.queues[key]
		if len(q) == 0 || x.ctx.Err() != nil {
			x.pending -= len(q)
			x.doneLocked(key.from, len(q))
			delete(x.queues, key)
			x.signalLocked()
			x.mu.Unlock()
			return
		}
		eff := q[0]
		x.queues[key] = q[1:]
		x.mu.Unlock()
		x.run(key.from, eff)
		x.mu.Lock()
		x.pending--
		x.doneLocked(key.from, 1)
		x.signalLocked()
		x.mu.Unlock()
	}
}

func (x *effects) run(from actors.Identity, eff any) {
	h, ok := x.handlers[reflect.TypeOf(eff)]
	if !ok {
		x.unhandled.Add(1)
		x.log.Error("no handler for effect; dropped", "entity", from.String(), "effect", fmt.Sprintf("%T", eff))
		return
	}
	if res := h.run(x.ctx, from, eff); res != nil && x.ctx.Err() == nil {
		x.send(from, res)
	}
}

// doneLocked counts n of from's effects as done.
func (x *effects) doneLocked(from actors.Identity, n int) {
	if n == 0 {
		return
	}
	if x.busy[from] -= n; x.busy[from] <= 0 {
		delete(x.busy, from)
	}
}

// Busy tells whether an effect of id is queued or running; an entity is
// not passivated while one is, so that its result comes back to the
// incarnation that released it. It implements busyExecutor.
func (x *effects) Busy(id actors.Identity) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.busy[id] > 0
}

func (x *effects) signalLocked() {
	if x.pending == 0 && x.quiet != nil {
		close(x.quiet)
		x.quiet = nil
	}
}

// waitQuiet waits until no effect is queued or running.
func (x *effects) waitQuiet(ctx context.Context) error {
	x.mu.Lock()
	if x.pending == 0 {
		x.mu.Unlock()
		return nil
	}
	if x.quiet == nil {
		x.quiet = make(chan struct{})
	}
	ch := x.quiet
	x.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("supervisor: effects still running: %w", ctx.Err())
	}
}

// stop cancels effects in flight and waits for their runners, at most
// until ctx ends.
func (x *effects) stop(ctx context.Context) error {
	x.mu.Lock()
	x.cancel()
	x.mu.Unlock()
	done := make(chan struct{})
	go func() { x.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("supervisor: effect runners did not end: %w", ctx.Err())
	}
}

// ReleaseEffects lets the effects released so far, and every later one,
// run. Until it is called they queue: the runtime calls it once every front
// end has mounted (its handlers may need what Mount sets up). Calling it
// again does nothing.
func (t *Tree) ReleaseEffects() {
	if t.effects == nil {
		return
	}
	t.effects.mu.Lock()
	defer t.effects.mu.Unlock()
	select {
	case <-t.effects.gate:
	default:
		close(t.effects.gate)
	}
}

// Quiesce waits until nothing more will happen without new input: every
// effect released so far has run, every result it sent back was handled,
// and the effects those results released have run too. Tests use it to
// show that something does not happen; a time window would prove nothing
// on a loaded machine. Timers are input here: a timer that fires later is
// not waited for.
func (t *Tree) Quiesce(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if t.effects == nil {
		return t.WaitIdle(timeout)
	}
	for {
		before := t.effects.issued.Load()
		if err := t.effects.waitQuiet(ctx); err != nil {
			return err
		}
		deadline, _ := ctx.Deadline()
		if err := t.WaitIdle(max(time.Until(deadline), time.Millisecond)); err != nil {
			return err
		}
		if err := t.effects.waitQuiet(ctx); err != nil {
			return err
		}
		if t.effects.issued.Load() == before {
			return nil
		}
	}
}
