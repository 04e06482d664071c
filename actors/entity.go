package actors

import (
	"fmt"
	"math"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
)

// Journal is the slice of the persistence journal that entities use.
// *persistence.Journal implements it; tests may wrap it to inject faults.
type Journal interface {
	Append(id Identity, first uint64, events [][]byte, mark persistence.ActiveMark) error
	HighestSeq(id Identity) (uint64, error)
	Replay(id Identity, from, to, max uint64, fn func(seq uint64, ev []byte) error) error
	LoadSnapshot(id Identity, maxSeq uint64) (persistence.Snapshot, bool, error)
	Compact(id Identity, seq uint64, data []byte) error
}

// Env is what every entity of one runtime shares.
type Env struct {
	Journal  Journal
	Clock    Clock
	Executor Executor
	Sender   Sender
	Logger   hclog.Logger
	// SnapshotEvery is how many events an entity journals between snapshots.
	// Default: 100.
	SnapshotEvery int
	// PassivateAfter is how long an entity may sit idle before it stops; its
	// next message respawns it from storage. Zero disables passivation.
	PassivateAfter time.Duration
	// MaxRedeliveries is how many times the message that made an entity fail
	// is delivered again after the restart before it is dropped as poison.
	// Default: 1.
	MaxRedeliveries int
	// OnPoison, if set, is told about every message dropped as poison.
	OnPoison func(id Identity, msg any, reason string)
}

// PassivateRequest is what an idle entity sends its parent (the kind
// supervisor), which stops it once no message for it is in flight.
type PassivateRequest struct {
	ID string
}

// Rejected is the reply a requester gets when its message was dropped as
// poison (it made the entity fail more than MaxRedeliveries times) or the
// entity could not be started.
type Rejected struct {
	Reason string
}

func (r *Rejected) Error() string { return "actors: message rejected: " + r.Reason }

// Spec is a kind as the supervisor sees it: a name and a way to make the
// props of one entity.
type Spec interface {
	KindName() string
	Props(id string, env *Env) *actor.Props
}

// Entity adapts a pure Kind to the runtime.
func Entity[S any](k Kind[S]) Spec { return entitySpec[S]{k: k} }

type entitySpec[S any] struct{ k Kind[S] }

func (s entitySpec[S]) KindName() string { return s.k.Name() }

func (s entitySpec[S]) Props(id string, env *Env) *actor.Props {
	sh := &shell{}
	ident := Identity{Kind: s.k.Name(), ID: id}
	return actor.PropsFromProducer(func() actor.Actor {
		return &entity[S]{k: s.k, id: ident, env: env, sh: sh}
	})
}

// delivery is a user message together with the PID to reply to.
type delivery struct {
	msg    any
	sender *actor.PID
}

// shell is the part of an entity that survives a restart of its actor:
// protoactor builds a new actor value on restart, and the message that was
// being handled when it failed must not be forgotten (protoactor drops it).
type shell struct {
	started  bool
	inflight *delivery
	attempts int
	// journalFailed is set when the last failure was the journal's, not the
	// kind's: such a message is not poison and is retried without counting.
	journalFailed bool
}

type passivateCheck struct{}

type timerFired struct {
	name string
	gen  uint64
}

type entity[S any] struct {
	k   Kind[S]
	id  Identity
	env *Env
	sh  *shell

	state   *S
	seq     uint64
	snapSeq uint64
	active  bool

	timers     map[string]runningTimer
	timerGen   uint64
	lastActive time.Time
	passTimer  Timer
	log        hclog.Logger
}

type runningTimer struct {
	t   Timer
	gen uint64
}

func (e *entity[S]) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		e.start(ctx)
	case *actor.Stopping, *actor.Restarting:
		e.stopTimers()
	case *actor.Stopped:
		if d := e.sh.inflight; d != nil && d.sender != nil {
			// Stopped with a message in hand: the supervisor gave up on this
			// entity. Tell the requester rather than let it time out.
			ctx.Send(d.sender, &Rejected{Reason: fmt.Sprintf("%s stopped after repeated failures", e.id)})
			e.sh.inflight = nil
		}
	case *passivateCheck:
		e.checkPassivate(ctx)
	case *Ping:
		ctx.Respond(&Pong{Seq: e.seq, Active: e.active})
	case *Inspect:
		var view any
		if v, ok := e.k.(Viewer[S]); ok {
			view = v.View(e.state)
		}
		ctx.Respond(&Inspection{ID: e.id, Seq: e.seq, Active: e.active, View: view})
	case *timerFired:
		if rt, ok := e.timers[m.name]; ok && rt.gen == m.gen {
			delete(e.timers, m.name)
			e.handle(ctx, &delivery{msg: &Tick{Name: m.name}})
		}
	case actor.SystemMessage, actor.AutoReceiveMessage:
		// Lifecycle messages this entity does not act on.
	default:
		e.handle(ctx, &delivery{msg: m, sender: ctx.Sender()})
	}
}

func (e *entity[S]) start(ctx actor.Context) {
	e.log = e.env.Logger.With("entity", e.id.String())
	restarted := e.sh.started
	e.sh.started = true
	replayed, err := e.recoverState()
	if err != nil {
		// Panicking hands the failure to the supervisor, which restarts the
		// entity with backoff; a journal that cannot be read is not a reason
		// to run on an empty state.
		panic(fmt.Errorf("actors: recover %s: %w", e.id, err))
	}
	e.touch(ctx)
	e.handle(ctx, &delivery{msg: &Recovered{Restarted: restarted, Events: replayed}})
	if d := e.sh.inflight; d != nil {
		if !e.sh.journalFailed {
			e.sh.attempts++
		}
		e.sh.journalFailed = false
		if e.sh.attempts > e.maxRedeliveries() {
			e.sh.inflight, e.sh.attempts = nil, 0
			reason := fmt.Sprintf("message %T failed %s %d times", d.msg, e.id, e.maxRedeliveries()+1)
			e.log.Error("dropping poison message", "message", fmt.Sprintf("%T", d.msg))
			if e.env.OnPoison != nil {
				e.env.OnPoison(e.id, d.msg, reason)
			}
			if d.sender != nil {
				ctx.Send(d.sender, &Rejected{Reason: reason})
			}
			return
		}
		e.log.Warn("redelivering the message that failed", "message", fmt.Sprintf("%T", d.msg), "attempt", e.sh.attempts)
		e.handle(ctx, d)
	}
}

func (e *entity[S]) maxRedeliveries() int {
	if e.env.MaxRedeliveries <= 0 {
		return 1
	}
	return e.env.MaxRedeliveries
}

func (e *entity[S]) recoverState() (int, error) {
	j := e.env.Journal
	e.state = e.k.Initial(e.id.ID)
	e.seq, e.snapSeq = 0, 0
	snap, ok, err := j.LoadSnapshot(e.id, math.MaxUint64)
	if err != nil {
		return 0, err
	}
	if ok {
		v, err := messages.Decode(snap.Data)
		if err != nil {
			return 0, fmt.Errorf("snapshot at %d: %w", snap.Seq, err)
		}
		s, isS := v.(*S)
		if !isS {
			return 0, fmt.Errorf("snapshot at %d holds %T", snap.Seq, v)
		}
		e.state, e.seq, e.snapSeq = s, snap.Seq, snap.Seq
	}
	n := 0
	err = j.Replay(e.id, e.seq+1, math.MaxUint64, persistence.NoLimit, func(seq uint64, b []byte) error {
		ev, err := messages.Decode(b)
		if err != nil {
			return fmt.Errorf("event %d: %w", seq, err)
		}
		e.state = e.k.Apply(e.state, ev)
		e.seq = seq
		n++
		return nil
	})
	if err != nil {
		return n, err
	}
	high, err := j.HighestSeq(e.id)
	if err != nil {
		return n, err
	}
	if high > e.seq {
		e.seq = high
	}
	e.active = e.k.Active(e.state)
	return n, nil
}

// handle runs one message through Decide and applies the Decision in the
// order its doc promises. A journal failure panics: the supervisor restarts
// the entity, which rebuilds its state from what was durable and gets the
// message again.
func (e *entity[S]) handle(ctx actor.Context, d *delivery) {
	e.touch(ctx)
	_, isRecovered := d.msg.(*Recovered)
	if !isRecovered {
		e.sh.inflight = d
	}
	dec := e.k.Decide(e.state, d.msg, e.env.Clock.Now())
	if len(dec.Events) > 0 {
		encoded := make([][]byte, len(dec.Events))
		for i, ev := range dec.Events {
			b, err := messages.Encode(ev)
			if err != nil {
				panic(fmt.Errorf("actors: %s: encode %T: %w", e.id, ev, err))
			}
			encoded[i] = b
		}
		for _, ev := range dec.Events {
			e.state = e.k.Apply(e.state, ev)
		}
		mark := persistence.MarkUnchanged
		if active := e.k.Active(e.state); active != e.active || e.seq == 0 {
			mark = persistence.MarkIdle
			if active {
				mark = persistence.MarkActive
			}
			e.active = active
		}
		if err := e.env.Journal.Append(e.id, e.seq+1, encoded, mark); err != nil {
			e.sh.journalFailed = true
			panic(fmt.Errorf("actors: %s: journal: %w", e.id, err))
		}
		e.seq += uint64(len(encoded))
	} else if !isRecovered && len(dec.Effects) == 0 && dec.Reply == nil {
		e.log.Trace("message changed nothing", "message", fmt.Sprintf("%T", d.msg))
	}
	if dec.Reply != nil && d.sender != nil {
		ctx.Send(d.sender, dec.Reply)
	}
	for _, eff := range dec.Effects {
		e.run(ctx, eff)
	}
	if e.env.SnapshotEvery > 0 && e.seq-e.snapSeq >= uint64(e.env.SnapshotEvery) {
		e.snapshot()
	}
	if !isRecovered {
		e.sh.inflight, e.sh.attempts = nil, 0
	}
}

func (e *entity[S]) snapshot() {
	b, err := messages.Encode(e.state)
	if err != nil {
		e.log.Error("snapshot: encode state", "error", err)
		return
	}
	if err := e.env.Journal.Compact(e.id, e.seq, b); err != nil {
		// A missed snapshot costs replay time, not data: keep going.
		e.log.Warn("snapshot failed", "seq", e.seq, "error", err)
		return
	}
	e.snapSeq = e.seq
}

func (e *entity[S]) run(ctx actor.Context, eff any) {
	switch f := eff.(type) {
	case *StartTimer:
		e.startTimer(ctx, f.Name, f.After)
	case *CancelTimer:
		if rt, ok := e.timers[f.Name]; ok {
			rt.t.Stop()
			delete(e.timers, f.Name)
		}
	case *Send:
		e.env.Sender.Send(f.To, f.Msg)
	default:
		if e.env.Executor == nil {
			e.log.Error("no executor for effect", "effect", fmt.Sprintf("%T", eff))
			return
		}
		e.env.Executor.Execute(e.id, eff)
	}
}

func (e *entity[S]) startTimer(ctx actor.Context, name string, after time.Duration) {
	if e.timers == nil {
		e.timers = map[string]runningTimer{}
	}
	if rt, ok := e.timers[name]; ok {
		rt.t.Stop()
	}
	e.timerGen++
	gen := e.timerGen
	self, root := ctx.Self(), ctx.ActorSystem().Root
	t := e.env.Clock.AfterFunc(after, func() { root.Send(self, &timerFired{name: name, gen: gen}) })
	e.timers[name] = runningTimer{t: t, gen: gen}
}

func (e *entity[S]) stopTimers() {
	for name, rt := range e.timers {
		rt.t.Stop()
		delete(e.timers, name)
	}
	if e.passTimer != nil {
		e.passTimer.Stop()
		e.passTimer = nil
	}
}

func (e *entity[S]) touch(ctx actor.Context) {
	e.lastActive = e.env.Clock.Now()
	if e.env.PassivateAfter > 0 && e.passTimer == nil {
		e.armPassivate(ctx, e.env.PassivateAfter)
	}
}

func (e *entity[S]) armPassivate(ctx actor.Context, d time.Duration) {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	e.passTimer = e.env.Clock.AfterFunc(d, func() { root.Send(self, &passivateCheck{}) })
}

func (e *entity[S]) checkPassivate(ctx actor.Context) {
	e.passTimer = nil
	idle := e.env.Clock.Now().Sub(e.lastActive)
	if idle < e.env.PassivateAfter || len(e.timers) > 0 {
		// Still in use, or waiting for a timer that passivation would lose.
		wait := e.env.PassivateAfter - idle
		if wait <= 0 {
			wait = e.env.PassivateAfter
		}
		e.armPassivate(ctx, wait)
		return
	}
	if ctx.Parent() != nil {
		ctx.Send(ctx.Parent(), &PassivateRequest{ID: e.id.ID})
	}
}

// Ping asks an entity to answer with Pong once every message before it was
// handled. The supervisor uses it to wait for rehydration; status uses it
// to read an entity's sequence number.
type Ping struct{}

// Pong answers Ping.
type Pong struct {
	Seq    uint64
	Active bool
}

// Inspect asks an entity for an Inspection (for `thatch status`). It does not
// count as activity for passivation purposes any more than another message.
type Inspect struct{}

// Inspection answers Inspect.
type Inspection struct {
	ID     Identity `json:"id"`
	Seq    uint64   `json:"seq"`
	Active bool     `json:"active"`
	View   any      `json:"view,omitempty"`
}

// Viewer is implemented by kinds that can show their state to a person.
type Viewer[S any] interface {
	View(s *S) any
}
