package supervisor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/persistence"
)

var (
	// ErrUnknownKind is returned when a message is addressed to a kind that
	// was not registered with the tree.
	ErrUnknownKind = errors.New("supervisor: unknown entity kind")
	// ErrStopped is returned by calls made after Stop.
	ErrStopped = errors.New("supervisor: stopped")
)

// Options configure Start.
type Options struct {
	// Journal is the persistence journal: entities write to it and the tree
	// scans its index on start. Required.
	Journal *persistence.Journal
	// Env is shared by every entity. Its Journal defaults to Journal and its
	// Sender is set to the tree.
	Env Env
	// Kinds are the entity kinds the tree supervises.
	Kinds []Spec
	// Policy is the restart policy.
	Policy Policy
	// Logger is the tree's logger. Default: a null logger.
	Logger hclog.Logger
	// KeepErrors is how many recent failures Status reports. Default: 20.
	KeepErrors int
	// RestartAfter schedules a delayed restart. Default: time.AfterFunc.
	// Backoff runs on real time even when entities use a fake clock, so a
	// test that freezes time still sees failed entities come back. The
	// tree stops every pending restart at Stop.
	RestartAfter func(time.Duration, func())
	// Rows, when set, keeps the quarantined entities across restarts.
	// Default: they are quarantined until the process ends.
	Rows *persistence.Rows
	// Effects are the handlers of every effect type the kinds release
	// (besides the timer and Send effects the entities run themselves),
	// one per type. The tree runs them on a FIFO per entity and sends each
	// result back to its entity. Ignored when Env.Executor is set.
	Effects []Handler
	// HoldEffects queues effects until ReleaseEffects is called, so that
	// entities rehydrated by Start cannot run a handler before the front
	// end it belongs to is ready. Default: effects run at once.
	HoldEffects bool
}

// Tree is a running supervision tree. It implements actors.Sender.
type Tree struct {
	sys     *actor.ActorSystem
	journal *persistence.Journal
	env     *Env
	log     hclog.Logger
	root    *actor.PID
	kinds   map[string]*actor.PID
	specs   map[string]Spec
	started time.Time

	pool     *poolDispatcher
	effects  *effects
	sub      *eventstream.Subscription
	mu       sync.Mutex
	errs     []Failure
	keepErrs int
	stopped  bool
	// restarts are the pending delayed restarts, stopped at Stop.
	restarts map[*time.Timer]struct{}
	// forgetQ holds journal forgets for the forget worker, which runs them
	// off the kind supervisors' mailboxes; forgetWake wakes it.
	forgetQ    []func()
	forgetWake chan struct{}
	done       chan struct{}
	wg         sync.WaitGroup
	// unknown counts messages an entity's kind did not handle.
	unknown atomic.Uint64
	// rows keeps the quarantine; quarantined is its copy (under mu).
	rows        *persistence.Rows
	quarantined quarantineSet
	// forget deletes an entity's journal for the forget worker. It is
	// journal.Forget; a test in this package may wrap it to hold a forget.
	forget func(persistence.Identity) error
}

// Failure is one recorded entity failure.
type Failure struct {
	Time     time.Time `json:"time"`
	Entity   string    `json:"entity"`
	Error    string    `json:"error"`
	Restarts int       `json:"restarts"`
	Action   string    `json:"action"` // restart, stop, drop
}

type envelope struct {
	id    string
	msg   any
	spawn bool // spawn the entity if needed; deliver nothing
	// reply, when set, receives the entity's answer (see Call);
	// ack asks for a Pong when msg itself has no reply.
	reply func(any)
	ack   bool
}

type rehydrated struct {
	kind  string
	count int
	err   error
}

// Start builds the tree, rebuilds the journal index and rehydrates every
// entity with unfinished work. It returns once every kind supervisor has
// spawned its active entities; messages sent after Start returns queue
// behind their recovery.
func Start(o Options) (t *Tree, err error) {
	if o.Journal == nil {
		return nil, errors.New("supervisor: Journal is required")
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	sys := NewActorSystem(o.Logger)
	if o.KeepErrors <= 0 {
		o.KeepErrors = 20
	}
	t = &Tree{sys: sys, journal: o.Journal, log: o.Logger, kinds: map[string]*actor.PID{}, specs: map[string]Spec{}, keepErrs: o.KeepErrors,
		started: time.Now(), restarts: map[*time.Timer]struct{}{}, forgetWake: make(chan struct{}, 1), done: make(chan struct{}),
		forget: o.Journal.Forget}
	built := t // the returns below set t to nil
	defer func() {
		if err != nil {
			_ = built.shutdown(context.Background())
			sys.Shutdown()
		}
	}()
	t.rows = o.Rows
	if t.quarantined, err = loadQuarantine(o.Rows); err != nil {
		return nil, fmt.Errorf("supervisor: read the quarantine: %w", err)
	}
	if t.env, err = t.entityEnv(o); err != nil {
		return nil, err
	}
	t.wg.Add(1)
	go t.runForgets()
	t.watchDeadLetters()
	after := o.RestartAfter
	if after == nil {
		after = t.restartAfter
	}
	if !o.HoldEffects {
		t.ReleaseEffects()
	}
	if err := t.spawnKinds(o.Kinds, newStrategy(o.Policy, after, t.onFailure)); err != nil {
		return nil, err
	}
	return t, nil
}

// entityEnv completes the environment every entity shares: defaults, the
// tree as sender, the effect dispatcher as executor, the worker pool, and
// the hooks that record poison and unhandled messages.
func (t *Tree) entityEnv(o Options) (*Env, error) {
	env := o.Env
	if env.Journal == nil {
		env.Journal = o.Journal
	}
	if env.Clock == nil {
		env.Clock = actors.RealClock{}
	}
	if env.Logger == nil {
		env.Logger = o.Logger.Named("entity")
	}
	env.Sender = t
	if env.Executor == nil {
		var err error
		t.effects, err = newEffects(o.Logger.Named("effects"), o.Effects)
		if err != nil {
			return nil, err
		}
		if err := t.effects.cover(o.Kinds); err != nil {
			return nil, err
		}
		t.effects.send = t.Send
		env.Executor = t.effects
	}
	if env.Dispatcher == nil {
		t.pool = newPoolDispatcher(0, 300)
		env.Dispatcher = t.pool
	}
	prevPoison := env.OnPoison
	env.OnPoison = func(id actors.Identity, msg any, reason string) {
		t.record(Failure{Time: time.Now(), Entity: id.String(), Error: reason, Action: "drop"})
		if prevPoison != nil {
			prevPoison(id, msg, reason)
		}
	}
	prevUnhandled := env.OnUnhandled
	env.OnUnhandled = func(id actors.Identity, msg any) {
		t.unknown.Add(1)
		if prevUnhandled != nil {
			prevUnhandled(id, msg)
		}
	}
	return &env, nil
}

// watchDeadLetters answers requests that reach a stopped process (an
// entity the supervisor gave up on, before its Terminated was handled, or
// a kind supervisor after Stop): they become dead letters, and their
// callers are told at once instead of waiting out their timeouts. Stop
// removes the subscription.
func (t *Tree) watchDeadLetters() {
	t.sub = t.sys.EventStream.Subscribe(func(ev any) {
		dl, ok := ev.(*actor.DeadLetterEvent)
		if !ok {
			return
		}
		switch m := dl.Message.(type) {
		case *Call:
			m.Reply(&Rejected{Reason: "its actor is gone: " + dl.PID.String()})
		case *envelope:
			if m.reply != nil {
				m.reply(&Rejected{Reason: "the supervision tree is stopped"})
			}
		}
	})
}

// spawnKinds spawns the root and one supervisor per kind, and waits until
// every kind supervisor has rehydrated its entities with unfinished work.
func (t *Tree) spawnKinds(kinds []Spec, strat *strategy) error {
	done := make(chan rehydrated, len(kinds))
	rootProps := actor.PropsFromProducer(func() actor.Actor { return &rootActor{} },
		actor.WithSupervisor(actor.NewOneForOneStrategy(10, time.Minute, actor.DefaultDecider)))
	root, err := t.sys.Root.SpawnNamed(rootProps, "thatch")
	if err != nil {
		return fmt.Errorf("supervisor: spawn root: %w", err)
	}
	t.root = root
	for _, spec := range kinds {
		props := actor.PropsFromProducer(func() actor.Actor {
			return &kindSupervisor{tree: t, spec: spec, strategy: strat, done: done}
		}, actor.WithDispatcher(t.env.Dispatcher))
		res, err := t.sys.Root.RequestFuture(root, &spawnKind{name: spec.KindName(), props: props}, 10*time.Second).Result()
		if err != nil {
			return fmt.Errorf("supervisor: spawn %s supervisor: %w", spec.KindName(), err)
		}
		pid, ok := res.(*actor.PID)
		if !ok {
			return fmt.Errorf("supervisor: spawn %s supervisor: %v", spec.KindName(), res)
		}
		t.kinds[spec.KindName()] = pid
		t.specs[spec.KindName()] = spec
	}
	for range kinds {
		r := <-done
		if r.err != nil {
			return fmt.Errorf("supervisor: rehydrate %s: %w", r.kind, r.err)
		}
		if r.count > 0 {
			t.log.Info("rehydrated entities with unfinished work", "kind", r.kind, "count", r.count)
		}
	}
	return nil
}

func (t *Tree) onFailure(child *actor.PID, reason any, restarts int, stopped bool, delay time.Duration) {
	action := "restart"
	if stopped {
		action = "stop"
		t.log.Error("entity failed too often; stopping it until its next message", "actor", child.Id, "failures", restarts, "error", reason)
	} else {
		t.log.Warn("entity failed; restarting", "actor", child.Id, "failures", restarts, "backoff", delay, "error", reason)
	}
	t.record(Failure{Time: time.Now(), Entity: child.Id, Error: fmt.Sprint(reason), Restarts: restarts, Action: action})
	var re *RecoverError
	if err, ok := reason.(error); ok && stopped && errors.As(err, &re) {
		t.quarantine(re.ID.String(), re.Err)
	}
}

func (t *Tree) record(f Failure) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.errs = append(t.errs, f)
	if len(t.errs) > t.keepErrs {
		t.errs = t.errs[len(t.errs)-t.keepErrs:]
	}
}

// Send delivers msg to the entity, spawning it if needed. It implements
// actors.Sender. Messages to an unknown kind are logged and dropped.
func (t *Tree) Send(to actors.Identity, msg any) {
	pid, ok := t.kinds[to.Kind]
	if !ok {
		t.log.Error("message for unknown kind dropped", "to", to.String(), "message", fmt.Sprintf("%T", msg))
		return
	}
	t.sys.Root.Send(pid, &envelope{id: to.ID, msg: msg})
}

// Request delivers msg and waits up to timeout for the entity's reply. A
// message dropped as poison answers with an error wrapping *Rejected.
func (t *Tree) Request(to actors.Identity, msg any, timeout time.Duration) (any, error) {
	return t.call(to, msg, false, timeout)
}

// ErrTimeout is returned by Request and Deliver when the entity did not
// answer in time. The message may still be handled later.
var ErrTimeout = errors.New("supervisor: no answer in time")

// call sends msg with a reply function (Call) and waits for the
// answer.
func (t *Tree) call(to actors.Identity, msg any, ack bool, timeout time.Duration) (any, error) {
	return t.callContext(context.Background(), to, msg, ack, timeout)
}

// startCall sends msg with a reply function and returns the channel its
// answer arrives on. Unlike a protoactor future, the reply needs no process
// registry entry: the entity calls the function, which hands the answer
// over a buffered channel.
func (t *Tree) startCall(to actors.Identity, msg any, ack bool) (<-chan any, error) {
	t.mu.Lock()
	stopped := t.stopped
	t.mu.Unlock()
	if stopped {
		return nil, fmt.Errorf("supervisor: request %s: %w", to, &Rejected{Reason: "the supervision tree is stopped", Err: ErrStopped})
	}
	pid, ok := t.kinds[to.Kind]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKind, to.Kind)
	}
	answer := make(chan any, 1)
	reply := func(v any) {
		select {
		case answer <- v:
		default: // answered already; a second answer has nobody to go to
		}
	}
	t.sys.Root.Send(pid, &envelope{id: to.ID, msg: msg, reply: reply, ack: ack})
	return answer, nil
}

// await waits for the answer of a call to, up to timeout or until ctx ends.
func (t *Tree) await(ctx context.Context, to actors.Identity, answer <-chan any, timeout time.Duration) (any, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var res any
	select {
	case res = <-answer:
	case <-timer.C:
		return nil, fmt.Errorf("request %s: %w after %v", to, ErrTimeout, timeout)
	case <-ctx.Done():
		return nil, fmt.Errorf("supervisor: request %s: %w", to, ctx.Err())
	}
	if rej, ok := res.(*Rejected); ok {
		return nil, fmt.Errorf("supervisor: request %s: %w", to, rej)
	}
	return res, nil
}

// RequestContext is Request bounded by ctx as well as by timeout: a caller
// that went away stops waiting (the message may still be handled).
func (t *Tree) RequestContext(ctx context.Context, to actors.Identity, msg any, timeout time.Duration) (any, error) {
	return t.callContext(ctx, to, msg, false, timeout)
}

// DeliverContext is Deliver bounded by ctx as well as by timeout.
func (t *Tree) DeliverContext(ctx context.Context, to actors.Identity, msg any, timeout time.Duration) error {
	_, err := t.callContext(ctx, to, msg, true, timeout)
	return err
}

func (t *Tree) callContext(ctx context.Context, to actors.Identity, msg any, ack bool, timeout time.Duration) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("supervisor: request %s: %w", to, err)
	}
	answer, err := t.startCall(to, msg, ack)
	if err != nil {
		return nil, err
	}
	return t.await(ctx, to, answer, timeout)
}

// KindStats describes one kind for status.
type KindStats struct {
	Kind       string `json:"kind"`
	Live       int    `json:"live"`
	Persisted  int    `json:"persisted"`
	Passivated int    `json:"passivated"`
	Active     int    `json:"active"`
}

// Stats reports, per kind, how many entities are live, how many the journal
// knows and how many of those are passivated, plus the recent failures.
func (t *Tree) Stats(timeout time.Duration) ([]KindStats, []Failure, error) {
	var out []KindStats
	for name, pid := range t.kinds {
		res, err := t.sys.Root.RequestFuture(pid, &liveQuery{}, timeout).Result()
		if err != nil {
			return nil, nil, fmt.Errorf("supervisor: stats of %s: %w", name, err)
		}
		live, _ := res.(*liveAnswer)
		ks := KindStats{Kind: name}
		if live != nil {
			ks.Live = len(live.ids)
		}
		liveSet := map[string]bool{}
		if live != nil {
			for _, id := range live.ids {
				liveSet[id] = true
			}
		}
		if err := t.journal.EntityIDs(name, func(id persistence.Identity) error {
			ks.Persisted++
			if !liveSet[id.ID] {
				ks.Passivated++
			}
			return nil
		}); err != nil {
			return nil, nil, err
		}
		if err := t.journal.Active(name, func(persistence.Identity) error { ks.Active++; return nil }); err != nil {
			return nil, nil, err
		}
		out = append(out, ks)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	t.mu.Lock()
	errs := append([]Failure(nil), t.errs...)
	t.mu.Unlock()
	return out, errs, nil
}

// LiveIDs lists the ids of the live entities of a kind.
func (t *Tree) LiveIDs(kind string, timeout time.Duration) ([]string, error) {
	pid, ok := t.kinds[kind]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKind, kind)
	}
	res, err := t.sys.Root.RequestFuture(pid, &liveQuery{}, timeout).Result()
	if err != nil {
		return nil, err
	}
	ids := res.(*liveAnswer).ids
	sort.Strings(ids)
	return ids, nil
}

// peekReads is how many times Peek reads a journal that a compaction
// changed under it before it gives up.
const peekReads = 3

// Peek reads the inspection of an entity that is not live from its
// journal, as the entity would rehydrate, without waking it: status can
// show thousands of passivated entities without spawning them. An entity
// whose journal cannot be decoded is quarantined at once (as it would be
// once its restarts were spent) and shows its error, without being
// started to fail again and again. ok is false when the entity is
// quarantined or its journal changed under every read (it woke and
// compacted meanwhile): then ask the entity itself (Request Inspect).
// Peek of a live entity reads what it has made durable.
func (t *Tree) Peek(id actors.Identity) (in *Inspection, ok bool, err error) {
	spec, known := t.specs[id.Kind]
	if !known {
		return nil, false, fmt.Errorf("%w: %q", ErrUnknownKind, id.Kind)
	}
	if _, q := t.quarantinedAs(id); q {
		return nil, false, nil
	}
	for range peekReads {
		in, gap, err := spec.peek(t.env.Journal, id.ID)
		if u := (*unreadable)(nil); errors.As(err, &u) {
			t.quarantinePassive(id, err)
		}
		if err != nil {
			return nil, true, err
		}
		if !gap {
			return in, true, nil
		}
	}
	return nil, false, nil
}

// quarantinePassive quarantines an entity whose journal Peek could not
// decode, unless it is live (it woke meanwhile: then its own restarts
// decide). The check runs on the kind's supervisor, where entities are
// spawned and routed, so a running entity is never cut off from its
// messages by a quarantine it does not know about.
func (t *Tree) quarantinePassive(id actors.Identity, cause error) {
	pid, ok := t.kinds[id.Kind]
	if !ok {
		return
	}
	if _, err := t.sys.Root.RequestFuture(pid, &quarantinePassive{id: id.ID, cause: cause}, peekQuarantineTimeout).Result(); err != nil {
		t.log.Warn("cannot quarantine an entity whose journal cannot be decoded", "entity", id.String(), "error", err)
	}
}

// peekQuarantineTimeout bounds how long Peek waits for the kind supervisor
// to record a quarantine.
const peekQuarantineTimeout = 5 * time.Second

// WaitIdle waits until every live entity has handled what was sent to it
// before this call (it pings each one).
func (t *Tree) WaitIdle(timeout time.Duration) error {
	for kind := range t.kinds {
		ids, err := t.LiveIDs(kind, timeout)
		if err != nil {
			return err
		}
		deadline := time.Now().Add(timeout)
		type pending struct {
			id     actors.Identity
			answer <-chan any
		}
		waits := make([]pending, 0, len(ids))
		for _, id := range ids {
			to := actors.Identity{Kind: kind, ID: id}
			answer, err := t.startCall(to, &Ping{}, false)
			if err != nil {
				return err
			}
			waits = append(waits, pending{to, answer})
		}
		for _, w := range waits {
			if _, err := t.await(context.Background(), w.id, w.answer, max(time.Until(deadline), time.Millisecond)); err != nil {
				return fmt.Errorf("supervisor: wait for %s: %w", kind, err)
			}
		}
	}
	return nil
}

// Stop stops every entity (they are already durable) and the tree.
func (t *Tree) Stop(timeout time.Duration) error {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return ErrStopped
	}
	t.stopped = true
	for tm := range t.restarts {
		tm.Stop()
	}
	t.restarts = nil
	t.mu.Unlock()
	err := t.sys.Root.StopFuture(t.root).Wait()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err = errors.Join(err, t.shutdown(ctx))
	t.sys.Shutdown()
	return err
}

// shutdown ends what the tree runs besides its actors: the effect runners,
// the forget worker, the dead-letter subscription and the worker pool.
func (t *Tree) shutdown(ctx context.Context) error {
	var err error
	if t.effects != nil {
		err = t.effects.stop(ctx)
	}
	t.mu.Lock()
	t.stopped = true
	select {
	case <-t.done:
	default:
		close(t.done)
	}
	t.forgetQ = nil
	t.mu.Unlock()
	t.wg.Wait()
	if t.sub != nil {
		t.sys.EventStream.Unsubscribe(t.sub)
		t.sub = nil
	}
	if t.pool != nil {
		t.pool.stop()
		t.pool = nil
	}
	return err
}

// restartAfter runs f after d unless the tree stops first.
func (t *Tree) restartAfter(d time.Duration, f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	var tm *time.Timer
	tm = time.AfterFunc(d, func() {
		t.mu.Lock()
		_, pending := t.restarts[tm]
		delete(t.restarts, tm)
		t.mu.Unlock()
		if pending {
			f()
		}
	})
	t.restarts[tm] = struct{}{}
}

// UnknownMessages is how many messages entities got that their kind does
// not handle (a value sent where a pointer was expected, a message for
// another kind): each was logged and none was acknowledged as handled.
func (t *Tree) UnknownMessages() uint64 { return t.unknown.Load() }

// HasKind reports whether the tree runs the kind called name.
func (t *Tree) HasKind(name string) bool {
	_, ok := t.kinds[name]
	return ok
}

// UnhandledEffects counts the effects released with no handler for their
// type (each logged and dropped).
func (t *Tree) UnhandledEffects() uint64 {
	if t.effects == nil {
		return 0
	}
	return t.effects.unhandled.Load()
}

// Deliver sends msg to the entity and waits until the entity has handled it
// (its events are durable), without needing the kind to reply: the entity
// answers a Pong once the message's events are durable when its handling
// has no reply of its own. Use it where a caller must not be acknowledged
// before the journal is.
func (t *Tree) Deliver(to actors.Identity, msg any, timeout time.Duration) error {
	_, err := t.call(to, msg, true, timeout)
	return err
}

// System is the actor system the tree runs in. The tree made it and shuts
// it down at Stop; nothing else may.
func (t *Tree) System() *actor.ActorSystem { return t.sys }
