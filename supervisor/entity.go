package supervisor

import (
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
)

// Journal is the slice of the persistence journal that entities use.
// *persistence.Journal implements it; tests may wrap it to inject faults.
type Journal interface {
	Append(id actors.Identity, first uint64, events [][]byte, mark persistence.ActiveMark) error
	// AppendAsync appends without holding a goroutine per append and calls
	// done once the events are durable (or failed).
	AppendAsync(id actors.Identity, first uint64, events [][]byte, mark persistence.ActiveMark, done func(error))
	HighestSeq(id actors.Identity) (uint64, error)
	// HighestFloor is HighestSeq without the entity's last event and
	// snapshot, for a reader that has just read those.
	HighestFloor(id actors.Identity) (uint64, error)
	Replay(id actors.Identity, from, to, max uint64, fn func(seq uint64, ev []byte) error) error
	LoadSnapshot(id actors.Identity, maxSeq uint64) (persistence.Snapshot, bool, error)
	Compact(id actors.Identity, seq uint64, data []byte) error
}

// Env is what every entity of one runtime shares.
type Env struct {
	Journal  Journal
	Clock    actors.Clock
	Executor actors.Executor
	Sender   actors.Sender
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
	OnPoison func(id actors.Identity, msg any, reason string)
	// OnUnhandled, if set, is told about every message a kind marked
	// Unhandled; the requester, if any, got a Rejected.
	OnUnhandled func(id actors.Identity, msg any)
	// Dispatcher runs the entities' mailboxes. Default: protoactor's
	// goroutine-per-run dispatcher. The supervisor sets a worker pool.
	Dispatcher actor.Dispatcher
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
	// Err, when set, is the sentinel behind the rejection (ErrStopped for
	// a call to a stopped tree), for errors.Is.
	Err error
}

func (r *Rejected) Error() string { return "actors: message rejected: " + r.Reason }

// Unwrap returns Err.
func (r *Rejected) Unwrap() error { return r.Err }

// Spec is a kind as the supervisor sees it: a name and a way to make the
// props of one entity.
type Spec interface {
	KindName() string
	// Effects are the effect types the kind says it releases
	// (actors.EffectLister); nil when it does not say.
	Effects() []reflect.Type
	Props(id string, env *Env) *actor.Props
	// peek rebuilds the inspection of an entity from the journal; gap
	// reports a compaction that ran while it read (read again).
	peek(j Journal, id string) (in *Inspection, gap bool, err error)
}

// Entity adapts a pure Kind to the runtime.
func Entity[S any](k actors.Kind[S]) Spec { return entitySpec[S]{k: k} }

type entitySpec[S any] struct{ k actors.Kind[S] }

func (s entitySpec[S]) KindName() string { return s.k.Name() }

func (s entitySpec[S]) Effects() []reflect.Type {
	l, ok := s.k.(actors.EffectLister)
	if !ok {
		return nil
	}
	var ts []reflect.Type
	for _, e := range l.Effects() {
		ts = append(ts, reflect.TypeOf(e))
	}
	return ts
}

func (s entitySpec[S]) Props(id string, env *Env) *actor.Props {
	sh := &shell{}
	ident := actors.Identity{Kind: s.k.Name(), ID: id}
	var opts []actor.PropsOption
	if env.Dispatcher != nil {
		opts = append(opts, actor.WithDispatcher(env.Dispatcher))
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &entity[S]{k: s.k, id: ident, env: env, sh: sh}
	}, opts...)
}

// delivery is a user message together with where to reply: a PID (a
// protoactor request) or a Call's Reply function. ack asks for a Pong when
// the message itself has no reply.
type delivery struct {
	msg     any
	sender  *actor.PID
	respond func(any)
	ack     bool
}

// wantsReply tells whether somebody waits for an answer to d.
func (d *delivery) wantsReply() bool { return d.sender != nil || d.respond != nil }

// shell is the part of an entity that survives a restart of its actor:
// protoactor builds a new actor value on restart and drops the message
// whose handling failed. The shell keeps every delivery whose outcome was
// not yet released (its events not yet durable), so the restarted entity
// handles them again, in order, on top of what the journal holds.
type shell struct {
	started bool
	// undurable are the deliveries decided since the last durable append,
	// oldest first.
	undurable []*delivery
	// crashed is the delivery whose Decide, or the Encode or Apply of an
	// event it decided, panicked, if any; it counts towards the poison
	// limit, a journal failure does not.
	crashed  *delivery
	attempts int
	// recoverCrashes counts the starts whose Recovered panicked the same
	// way, in a row; past the poison limit, Recovered is skipped.
	recoverCrashes int
}

type passivateCheck struct{}

type timerFired struct {
	name string
	gen  uint64
}

// appendDone reports the end of an asynchronous journal append.
type appendDone struct {
	err error
}

// output is what one handled message releases once its events are durable:
// a reply and effects, in the order the messages were handled.
type output struct {
	d       *delivery
	reply   any
	effects []any
	// answer, when set, computes the reply at release time (Ping, Inspect).
	answer func() any
}

type entity[S any] struct {
	k   actors.Kind[S]
	id  actors.Identity
	env *Env
	sh  *shell

	state *S
	// seq is the sequence number of the last event applied to state;
	// durable is the last one the journal acknowledged. They differ while
	// an append is in flight or events wait for the next one.
	seq     uint64
	durable uint64
	snapSeq uint64
	// active is Kind.Active as last journaled (the index mark).
	active bool

	// Write-behind: the entity decides and applies messages while the
	// previous append is in flight, collects their events in buf, and
	// journals them together when it lands. Outputs are released strictly
	// after their events are durable, in order.
	buf       [][]byte
	outs      []output
	flying    bool
	flyOuts   []output
	flyEvents int
	flyDone   chan struct{}

	timers     map[string]runningTimer
	timerGen   uint64
	lastActive time.Time
	passTimer  actors.Timer
	log        hclog.Logger
}

type runningTimer struct {
	t   actors.Timer
	gen uint64
}

func (e *entity[S]) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		e.start(ctx)
	case *actor.Stopping:
		e.drainInFlight(ctx)
		e.stopTimers()
	case *actor.Restarting:
		// The new incarnation replays the journal: an append still in
		// flight must land (or fail) first, and if it landed its messages
		// are done and must not be handled again.
		e.settleInFlight(ctx)
		e.stopTimers()
	case *actor.Stopped:
		for _, d := range e.sh.undurable {
			// Stopped with messages in hand: the supervisor gave up on this
			// entity. Tell requesters rather than let them time out.
			e.reply(ctx, d, &Rejected{Reason: fmt.Sprintf("%s stopped after repeated failures", e.id)})
		}
		e.sh.undurable = nil
	case *appendDone:
		e.landed(ctx, m.err)
	case *passivateCheck:
		e.checkPassivate(ctx)
	case *Ping, *Inspect:
		e.answerWhenDurable(ctx, &delivery{msg: m, sender: ctx.Sender()})
	case *Call:
		d := &delivery{msg: m.Msg, respond: m.Reply, ack: m.Ack}
		switch m.Msg.(type) {
		case *Ping, *Inspect:
			e.answerWhenDurable(ctx, d)
		default:
			e.handle(ctx, d)
		}
	case *timerFired:
		if rt, ok := e.timers[m.name]; ok && rt.gen == m.gen {
			delete(e.timers, m.name)
			e.handle(ctx, &delivery{msg: &actors.Tick{Name: m.name}})
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
		panic(&RecoverError{ID: e.id, Err: err})
	}
	e.touch(ctx)
	redo, crashed := e.sh.undurable, e.sh.crashed
	e.sh.undurable, e.sh.crashed = nil, nil
	if e.sh.recoverCrashes > e.maxRedeliveries() {
		// Recovered itself is the poison: the entity runs without it
		// rather than restart until the policy gives up.
		e.sh.recoverCrashes = 0
		reason := fmt.Sprintf("message %T failed %s %d times", &actors.Recovered{}, e.id, e.maxRedeliveries()+1)
		e.log.Error("dropping poison message", "message", fmt.Sprintf("%T", &actors.Recovered{}))
		if e.env.OnPoison != nil {
			e.env.OnPoison(e.id, &actors.Recovered{}, reason)
		}
	} else {
		e.sh.recoverCrashes++
		e.handle(ctx, &delivery{msg: &actors.Recovered{Restarted: restarted, Events: replayed}})
		e.sh.recoverCrashes = 0
	}
	for _, d := range redo {
		if d == crashed {
			e.sh.attempts++
			if e.sh.attempts > e.maxRedeliveries() {
				e.sh.attempts = 0
				reason := fmt.Sprintf("message %T failed %s %d times", d.msg, e.id, e.maxRedeliveries()+1)
				e.log.Error("dropping poison message", "message", fmt.Sprintf("%T", d.msg))
				if e.env.OnPoison != nil {
					e.env.OnPoison(e.id, d.msg, reason)
				}
				e.reply(ctx, d, &Rejected{Reason: reason})
				continue
			}
			e.log.Warn("redelivering the message that failed", "message", fmt.Sprintf("%T", d.msg), "attempt", e.sh.attempts)
		}
		switch d.msg.(type) {
		case *Ping, *Inspect:
			e.answerWhenDurable(ctx, d)
		default:
			e.handle(ctx, d)
		}
	}
}

// answerWhenDurable answers a Ping or Inspect once everything handled
// before it is durable: a Pong tells a caller its earlier messages are.
func (e *entity[S]) answerWhenDurable(ctx actor.Context, d *delivery) {
	e.sh.undurable = append(e.sh.undurable, d)
	answer := func() any { return &Pong{Seq: e.durable, Active: e.active} }
	if _, ok := d.msg.(*Inspect); ok {
		answer = func() any {
			var view any
			if v, ok := e.k.(actors.Viewer[S]); ok {
				view = v.View(e.state)
			}
			return &Inspection{ID: e.id, Seq: e.durable, Active: e.active, View: view}
		}
	}
	e.queue(ctx, output{d: d, answer: answer})
}

func (e *entity[S]) maxRedeliveries() int {
	if e.env.MaxRedeliveries <= 0 {
		return 1
	}
	return e.env.MaxRedeliveries
}

func (e *entity[S]) recoverState() (int, error) {
	e.seq, e.snapSeq = 0, 0
	e.buf, e.outs, e.flyOuts, e.flying = nil, nil, nil, false
	r, err := rebuild(e.k, e.env.Journal, e.id, false)
	e.state = r.state // on an error, what was read before it (at least the initial state)
	if err != nil {
		return r.replayed, err
	}
	e.state, e.seq, e.snapSeq = r.state, r.seq, r.snapSeq
	e.durable = e.seq
	e.active = e.k.Active(e.state)
	return r.replayed, nil
}

// rebuilt is an entity's state as its journal holds it.
type rebuilt[S any] struct {
	state *S
	// seq is the entity's sequence number (the highest ever journaled),
	// snapSeq that of the snapshot the state started from.
	seq, snapSeq uint64
	// replayed is how many events were applied after the snapshot.
	replayed int
	// gap is set when the events read do not follow the snapshot read, or
	// stop short of the highest sequence number: a compaction ran between
	// the reads (only a reader other than the live entity can see this).
	gap bool
}

// rebuild reads an entity's newest snapshot and the events after it, and
// applies them to its state. The entity itself (the journal's one writer)
// reads only the highest sequence number's index key: it has just read the
// last snapshot and event. Another reader (peek) reads the whole
// HighestSeq, so that a compaction that ran between its reads and left no
// event after the snapshot it wrote shows as a gap.
func rebuild[S any](k actors.Kind[S], j Journal, id actors.Identity, peek bool) (rebuilt[S], error) {
	r := rebuilt[S]{state: k.Initial(id.ID)}
	snap, ok, err := j.LoadSnapshot(id, math.MaxUint64)
	if err != nil {
		return r, err
	}
	if ok {
		v, err := messages.Decode(snap.Data)
		if err != nil {
			return r, &unreadable{fmt.Errorf("snapshot at %d: %w", snap.Seq, err)}
		}
		s, isS := v.(*S)
		if !isS {
			return r, &unreadable{fmt.Errorf("snapshot at %d holds %T", snap.Seq, v)}
		}
		r.state, r.seq, r.snapSeq = s, snap.Seq, snap.Seq
	}
	err = j.Replay(id, r.seq+1, math.MaxUint64, persistence.NoLimit, func(seq uint64, b []byte) error {
		if r.replayed == 0 && seq != r.snapSeq+1 {
			r.gap = true
		}
		ev, err := messages.Decode(b)
		if err != nil {
			return &unreadable{fmt.Errorf("event %d: %w", seq, err)}
		}
		r.state = k.Apply(r.state, ev)
		r.seq = seq
		r.replayed++
		return nil
	})
	if err != nil {
		return r, err
	}
	highest := j.HighestFloor
	if peek {
		highest = j.HighestSeq
	}
	high, err := highest(id)
	if err != nil {
		return r, err
	}
	if r.seq < high {
		r.gap = true
		r.seq = high
	}
	return r, nil
}

// unreadable is a rebuild's error for a snapshot or an event that was
// read but cannot be decoded: reading it again gives the same error (an
// I/O error might not).
type unreadable struct{ err error }

func (u *unreadable) Error() string { return u.err.Error() }
func (u *unreadable) Unwrap() error { return u.err }

// peek is the inspection of a not-live entity, from its journal.
func (s entitySpec[S]) peek(j Journal, id string) (*Inspection, bool, error) {
	ident := actors.Identity{Kind: s.k.Name(), ID: id}
	r, err := rebuild(s.k, j, ident, true)
	if err != nil || r.gap {
		return nil, r.gap, err
	}
	in := &Inspection{ID: ident, Seq: r.seq, Active: s.k.Active(r.state)}
	if v, ok := s.k.(actors.Viewer[S]); ok {
		in.View = v.View(r.state)
	}
	return in, false, nil
}

// handle runs one message through Decide, applies its events to the state
// at once (so the next message sees them), and queues its reply and
// effects behind the journal append that makes those events durable.
// Replies and effects are never released before their events are durable,
// and always in the order the messages were handled.
func (e *entity[S]) handle(ctx actor.Context, d *delivery) {
	e.touch(ctx)
	_, isRecovered := d.msg.(*actors.Recovered)
	if !isRecovered {
		e.sh.undurable = append(e.sh.undurable, d)
		e.sh.crashed = d // cleared once Decide returns
	}
	dec := e.k.Decide(e.state, d.msg, e.env.Clock.Now())
	if dec.Unhandled {
		e.log.Warn("message not handled by its kind; dropped", "message", fmt.Sprintf("%T", d.msg))
		if e.env.OnUnhandled != nil {
			e.env.OnUnhandled(e.id, d.msg)
		}
		dec = actors.Decision{Reply: &Rejected{Reason: fmt.Sprintf("%s does not handle %T", e.id, d.msg)}}
	}
	for _, ev := range dec.Events {
		b, err := messages.Encode(ev)
		if err != nil {
			panic(fmt.Errorf("actors: %s: encode %T: %w", e.id, ev, err))
		}
		e.buf = append(e.buf, b)
		e.state = e.k.Apply(e.state, ev)
		e.seq++
	}
	if !isRecovered {
		e.sh.crashed = nil // a panic in Decide, Encode or Apply counts
	}
	if isRecovered {
		d = nil
	}
	e.queue(ctx, output{d: d, reply: dec.Reply, effects: dec.Effects})
}

// queue adds an output behind everything not yet durable, and starts an
// append when none is in flight.
func (e *entity[S]) queue(ctx actor.Context, o output) {
	e.outs = append(e.outs, o)
	if !e.flying {
		e.flush(ctx)
	}
}

// flush journals the collected events in one append, in the background. An
// entity has at most one append in flight, so its events reach the journal
// in order; whatever it handles meanwhile waits for the next one. With
// nothing to journal the outputs are released at once.
func (e *entity[S]) flush(ctx actor.Context) {
	if len(e.buf) == 0 {
		outs := e.outs
		e.outs = nil
		e.release(ctx, outs)
		return
	}
	events, outs := e.buf, e.outs
	e.buf, e.outs = nil, nil
	mark := e.nextMark()
	e.flying, e.flyOuts, e.flyEvents = true, outs, len(events)
	first := e.durable + 1
	done := make(chan struct{})
	e.flyDone = done
	self, root := ctx.Self(), ctx.ActorSystem().Root
	e.env.Journal.AppendAsync(e.id, first, events, mark, func(err error) {
		close(done)
		root.Send(self, &appendDone{err: err})
	})
}

// nextMark is the index mark for the next append: the entity's Active as of
// the state that append makes durable.
func (e *entity[S]) nextMark() persistence.ActiveMark {
	active := e.k.Active(e.state)
	if active == e.active && e.durable > 0 {
		return persistence.MarkUnchanged
	}
	e.active = active
	if active {
		return persistence.MarkActive
	}
	return persistence.MarkIdle
}

// landed handles the end of the append in flight.
func (e *entity[S]) landed(ctx actor.Context, err error) {
	if !e.flying {
		return
	}
	e.flying = false
	if err != nil {
		// Nothing of this append (or after it) is acknowledged. The restart
		// rebuilds the state from the journal and handles every delivery
		// still in the shell again; a journal failure makes none of them
		// poison.
		panic(fmt.Errorf("actors: %s: journal: %w", e.id, err))
	}
	e.durable += uint64(e.flyEvents)
	outs := e.flyOuts
	e.flyOuts, e.flyEvents = nil, 0
	e.release(ctx, outs)
	if len(e.buf) == 0 && e.env.SnapshotEvery > 0 && e.durable-e.snapSeq >= uint64(e.env.SnapshotEvery) {
		// Only with nothing waiting is the state exactly the durable one.
		e.snapshot()
	}
	if len(e.buf) > 0 || len(e.outs) > 0 {
		e.flush(ctx)
	}
}

// release sends replies and runs effects of outputs whose events are
// durable, and forgets their deliveries.
//
// A message's effects are dispatched before its reply is sent, so a caller
// that has the reply knows they are under way: its timers are set and its
// host calls are queued at the executor.
func (e *entity[S]) release(ctx actor.Context, outs []output) {
	for _, o := range outs {
		for _, eff := range o.effects {
			e.run(ctx, eff)
		}
		if o.d != nil && o.d.wantsReply() {
			switch {
			case o.answer != nil:
				e.reply(ctx, o.d, o.answer())
			case o.reply != nil:
				e.reply(ctx, o.d, o.reply)
			case o.d.ack:
				e.reply(ctx, o.d, &Pong{Seq: e.durable, Active: e.active})
			}
		}
		if o.d != nil && len(e.sh.undurable) > 0 && e.sh.undurable[0] == o.d {
			e.sh.undurable = e.sh.undurable[1:]
			e.sh.attempts = 0
		}
	}
}

// reply answers d's requester, if any.
func (e *entity[S]) reply(ctx actor.Context, d *delivery, v any) {
	switch {
	case d.respond != nil:
		d.respond(v)
	case d.sender != nil:
		ctx.Send(d.sender, v)
	}
}

// settleInFlight waits for the append in flight, if any, and releases its
// outputs when it landed. Its appendDone message stays in the mailbox and
// is ignored (landed only acts while an append is flying).
func (e *entity[S]) settleInFlight(ctx actor.Context) bool {
	if !e.flying {
		return true
	}
	<-e.flyDone
	e.flying = false
	outs := e.flyOuts
	e.flyOuts = nil
	high, err := e.env.Journal.HighestSeq(e.id)
	if err != nil || high < e.durable+uint64(e.flyEvents) {
		return false
	}
	e.durable += uint64(e.flyEvents)
	e.release(ctx, outs)
	return true
}

// drainInFlight finishes the entity's writes when it stops: it settles the
// append in flight, then journals whatever was handled meanwhile, so that
// no goroutine outlives the entity and every message it handled is either
// durable and answered or (on a journal failure) left unanswered, never
// half-done.
func (e *entity[S]) drainInFlight(ctx actor.Context) {
	if !e.settleInFlight(ctx) {
		e.log.Error("the append in flight at stop did not land")
		return
	}
	if len(e.buf) == 0 {
		outs := e.outs
		e.outs = nil
		e.release(ctx, outs)
		return
	}
	if err := e.env.Journal.Append(e.id, e.durable+1, e.buf, e.nextMark()); err != nil {
		e.log.Error("final append at stop failed", "error", err)
		return
	}
	e.durable += uint64(len(e.buf))
	outs := e.outs
	e.buf, e.outs = nil, nil
	e.release(ctx, outs)
}

func (e *entity[S]) snapshot() {
	b, err := messages.Encode(e.state)
	if err != nil {
		e.log.Error("snapshot: encode state", "error", err)
		return
	}
	if err := e.env.Journal.Compact(e.id, e.durable, b); err != nil {
		// A missed snapshot costs replay time, not data: keep going.
		e.log.Warn("snapshot failed", "seq", e.durable, "error", err)
		return
	}
	e.snapSeq = e.durable
}

func (e *entity[S]) run(ctx actor.Context, eff any) {
	switch f := eff.(type) {
	case *actors.StartTimer:
		e.startTimer(ctx, f.Name, f.After)
	case *actors.CancelTimer:
		if rt, ok := e.timers[f.Name]; ok {
			rt.t.Stop()
			delete(e.timers, f.Name)
		}
	case *actors.Send:
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

// busyExecutor is an executor that tells whether an entity's effects are
// queued or running (the tree's dispatcher).
type busyExecutor interface {
	Busy(id actors.Identity) bool
}

// effectsBusy tells whether an effect the entity released still runs.
func (e *entity[S]) effectsBusy() bool {
	b, ok := e.env.Executor.(busyExecutor)
	return ok && b.Busy(e.id)
}

func (e *entity[S]) checkPassivate(ctx actor.Context) {
	e.passTimer = nil
	idle := e.env.Clock.Now().Sub(e.lastActive)
	if idle < e.env.PassivateAfter || len(e.timers) > 0 || e.flying || len(e.buf) > 0 || len(e.outs) > 0 || e.effectsBusy() {
		// Still in use, writing, waiting for a timer that passivation
		// would lose, or for the result of an effect it released (a new
		// incarnation woken by that result would redo what the effect
		// did, such as a send, on its recovery).
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

// Call carries a message together with a function that receives the
// entity's answer, in place of a protoactor request and its future: the
// supervisor uses it for requests, which then cost no registry entry.
// Reply is called at most once, on the entity's goroutine, and must not
// block. With Ack set, a message whose handling has no reply of its own is
// answered with a Pong once its events are durable (Tree.Deliver).
type Call struct {
	Msg   any
	Reply func(any)
	Ack   bool
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
	ID     actors.Identity `json:"id"`
	Seq    uint64          `json:"seq"`
	Active bool            `json:"active"`
	View   any             `json:"view,omitempty"`
}
