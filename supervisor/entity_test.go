package supervisor

import (
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/internal/testwait"
	"github.com/thatch-run/thatch/persistence"
)

// probe is the counter kind with hooks a test can watch and hold: decided,
// when set, gets every message Decide sees but Recovered; every Recovered
// is recorded; Decide of a holdMsg signals entered and waits for hold.
type probe struct {
	counterKind
	decided chan any
	entered chan struct{}
	hold    chan struct{}

	mu        sync.Mutex
	recovered []actors.Recovered
}

type (
	// holdMsg keeps its entity busy in Decide until the test lets go.
	holdMsg struct{}
	// addFxMsg adds N and releases the effect effectMsg{Name}.
	addFxMsg struct {
		N    int
		Name string
	}
)

func newProbe(crashTimes int64) *probe {
	return &probe{
		counterKind: counterKind{recoveries: &atomic.Int64{}, crashes: &atomic.Int64{}, crashTimes: crashTimes},
		entered:     make(chan struct{}, 1),
		hold:        make(chan struct{}),
	}
}

func (p *probe) Decide(s *counterState, msg any, now time.Time) actors.Decision {
	switch m := msg.(type) {
	case *actors.Recovered:
		p.mu.Lock()
		p.recovered = append(p.recovered, *m)
		p.mu.Unlock()
	default:
		if p.decided != nil {
			p.decided <- msg
		}
	}
	switch m := msg.(type) {
	case *holdMsg:
		p.entered <- struct{}{}
		<-p.hold
		return actors.Decision{Reply: "released"}
	case *addFxMsg:
		return actors.Decision{Events: []any{&added{N: m.N}}, Effects: []any{&effectMsg{Name: m.Name}}, Reply: s.Total + m.N}
	}
	return p.counterKind.Decide(s, msg, now)
}

// lastRecovered is the Recovered the entity handled last.
func (p *probe) lastRecovered(t *testing.T) actors.Recovered {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.recovered) == 0 {
		t.Fatal("the entity never recovered")
	}
	return p.recovered[len(p.recovered)-1]
}

func (e *recExec) effects() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.seen...)
}

// The write-behind journal: while an append is held, the entity goes on
// deciding (so a message sent after it is decided), but no reply and no
// effect leaves it; once the append lands, exactly the outputs it made
// durable are released, effects before replies, in handling order.
func TestWriteBehindReleasesNothingBeforeTheEventsAreDurable(t *testing.T) {
	p := newProbe(0)
	p.decided = make(chan any, 64)
	exec := &recExec{}
	r := startRig(t, rigConfig{kinds: []Spec{Entity[counterState](p)}, env: Env{Executor: exec}})
	id := counterID("wb")
	r.jr.hold.Store(true)

	delivered := make(chan error, 1)
	go func() { delivered <- r.tree.Deliver(id, &addFxMsg{N: 1, Name: "first"}, 10*time.Second) }()
	first := r.jr.nextHeld(t)
	// Decided while the first append is in flight: an effect without
	// events, an add with an effect, and a get that only serves to know
	// that the entity has handled the two before it.
	r.tree.Send(id, &effectMsg{Name: "second"})
	third := r.send(id, &addFxMsg{N: 2, Name: "third"})
	get := r.send(id, &getMsg{})
	for range 4 {
		receive(t, "a decision", p.decided)
	}
	if !empty(delivered) {
		t.Fatal("Deliver returned while its event was not durable")
	}
	if !empty(third) {
		t.Fatal("a later add was answered while the first append was held")
	}
	if got := exec.effects(); len(got) != 0 {
		t.Fatalf("effects reached the executor before their events were durable: %v", got)
	}
	if high, _ := r.store.Journal().HighestSeq(id); high != 0 {
		t.Fatalf("the journal holds %d events while the append is held", high)
	}

	first.release()
	if err := receive(t, "Deliver", delivered); err != nil {
		t.Fatalf("Deliver after the append landed: %v", err)
	}
	// The first append released only its own message's effect; the
	// messages decided meanwhile wait for the second append, held too.
	second := r.jr.nextHeld(t)
	if got, want := exec.effects(), []string{"counter/wb:&{first}"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("effects after the first append: %v, want %v", got, want)
	}
	if !empty(third) {
		t.Fatal("the third message was answered before the second append landed")
	}
	second.release()
	if got := receive(t, "the third answer", third); got != 3 {
		t.Fatalf("third add answered %v, want 3", got)
	}
	if got := receive(t, "the get answer", get); got.(counterState).Total != 3 {
		t.Fatalf("get answered %v, want total 3", got)
	}
	want := []string{"counter/wb:&{first}", "counter/wb:&{second}", "counter/wb:&{third}"}
	if got := exec.effects(); !reflect.DeepEqual(got, want) {
		t.Fatalf("effects %v, want %v (handling order)", got, want)
	}
	if high, _ := r.store.Journal().HighestSeq(id); high != 2 {
		t.Fatalf("the journal holds %d events, want 2", high)
	}
}

// A journal that fails an append makes the entity restart and handle the
// message again on the replayed state. A journal failure is not the
// message's fault: failing twice with MaxRedeliveries 1 does not make it
// poison.
func TestJournalFailureRestartsTheEntityAndRedeliversTheMessage(t *testing.T) {
	p := newProbe(0)
	r := startRig(t, rigConfig{kinds: []Spec{Entity[counterState](p)}, env: Env{MaxRedeliveries: 1}})
	id := counterID("jf")
	if got := r.ask(id, &addMsg{N: 5}); got != 5 {
		t.Fatalf("first add answered %v", got)
	}
	r.jr.failNext.Store(2)
	if got := r.ask(id, &addMsg{N: 7}); got != 12 {
		t.Fatalf("the add whose append failed answered %v, want 12", got)
	}
	if high, _ := r.store.Journal().HighestSeq(id); high != 2 {
		t.Fatalf("the journal holds %d events, want 2 (each add once)", high)
	}
	if rec := p.lastRecovered(t); !rec.Restarted || rec.Events != 1 {
		t.Fatalf("last recovery %+v, want a restart that replayed the first add", rec)
	}
	if got := len(r.failures("restart")); got != 2 {
		t.Fatalf("%d restarts recorded, want 2", got)
	}
	if drops := r.failures("drop"); len(drops) != 0 {
		t.Fatalf("a journal failure made the message poison: %+v", drops)
	}
	if got := r.ask(id, &getMsg{}); got.(counterState).Total != 12 {
		t.Fatalf("state after the restarts: %v", got)
	}
}

// A message whose Decide panics every time is handled 1+MaxRedeliveries
// times (MaxRedeliveries defaults to 1), then dropped: its requester is
// told, the tree's last errors say so, the entity's state is intact, and
// the message behind it is handled.
func TestPoisonMessageIsDroppedAfterMaxRedeliveries(t *testing.T) {
	for _, c := range []struct {
		name            string
		maxRedeliveries int
		decided         int64
	}{
		{"default", 0, 2},
		{"three redeliveries", 3, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, p := counterRig(t, 1000, rigConfig{env: Env{MaxRedeliveries: c.maxRedeliveries}})
			id := counterID("poison")
			r.ask(id, &addMsg{N: 2})
			crash := r.send(id, &crashMsg{})
			after := r.send(id, &addMsg{N: 3})

			res := receive(t, "the poison answer", crash)
			var rej *Rejected
			if err, _ := res.(error); !errors.As(err, &rej) {
				t.Fatalf("the poison message was answered %v, want a *Rejected", res)
			}
			if got := receive(t, "the next answer", after); got != 5 {
				t.Fatalf("the add behind the poison message answered %v, want 5", got)
			}
			if n := p.crashes.Load(); n != c.decided {
				t.Fatalf("the poison message was decided %d times, want %d (once and every redelivery)", n, c.decided)
			}
			drops := r.failures("drop")
			if len(drops) != 1 || drops[0].Entity != "counter/poison" {
				t.Fatalf("recorded drops %+v, want one for counter/poison", drops)
			}
			if got := r.ask(id, &getMsg{}); got.(counterState).Total != 5 {
				t.Fatalf("state after the poison message: %v, want total 5", got)
			}

			// Through Request, the caller gets an error wrapping *Rejected.
			if _, err := r.tree.Request(id, &crashMsg{}, 10*time.Second); !errors.As(err, &rej) {
				t.Fatalf("Request of a poison message: %v, want a *Rejected", err)
			}
		})
	}
}

// An entity left idle for PassivateAfter stops; its next message brings it
// back from the journal with its state.
func TestIdleEntityPassivatesAndWakesFromItsJournal(t *testing.T) {
	p := newProbe(0)
	r := startRig(t, rigConfig{kinds: []Spec{Entity[counterState](p)}, env: Env{PassivateAfter: time.Minute}})
	id := counterID("idle")
	r.ask(id, &addMsg{N: 3})
	r.ask(id, &armMsg{On: false})
	r.ask(id, &addMsg{N: 4})
	r.clock.Advance(59 * time.Second)
	if got := r.live(); len(got) != 1 {
		t.Fatalf("live before PassivateAfter: %v", got)
	}
	r.clock.Advance(time.Second)
	testwait.Until(t, "passivation", func() bool { return len(r.live()) == 0 })
	stats, _, err := r.tree.Stats(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if stats[0].Passivated != 1 || stats[0].Live != 0 {
		t.Fatalf("stats after passivation: %+v", stats)
	}
	if got := r.ask(id, &addMsg{N: 10}); got != 17 {
		t.Fatalf("the woken entity answered %v, want 17", got)
	}
	if rec := p.lastRecovered(t); rec.Restarted || rec.Events != 3 {
		t.Fatalf("wake %+v, want a spawn that replayed 3 events", rec)
	}
}

// Messages that reach the kind supervisor while an entity is stopping for
// passivation wait for it to stop and go to its next incarnation, after
// everything the old one handled is durable.
func TestMessagesSentWhileAnEntityStopsAreHandledAfterItWakes(t *testing.T) {
	p := newProbe(0)
	r := startRig(t, rigConfig{kinds: []Spec{Entity[counterState](p)}, env: Env{PassivateAfter: time.Minute}})
	id := counterID("stopping")
	r.ask(id, &addMsg{N: 1})

	// Keep the entity busy while its passivation check falls due, so that
	// the next add is in its mailbox behind the check: it is handled after
	// the entity asked to stop and before the supervisor stops it, and its
	// append, held, keeps the entity stopping.
	hold := r.send(id, &holdMsg{})
	receive(t, "the entity in Decide", p.entered)
	r.clock.Advance(2 * time.Minute)
	r.jr.hold.Store(true)
	inFlight := r.send(id, &addMsg{N: 10})
	r.live() // the supervisor has routed the add
	close(p.hold)
	receive(t, "the hold answer", hold)
	held := r.jr.nextHeld(t)
	testwait.Until(t, "the supervisor stopping the entity", func() bool { return len(r.live()) == 0 })

	later := r.send(id, &addMsg{N: 100})
	if got := r.live(); len(got) != 0 {
		t.Fatalf("a message sent while the entity stops spawned %v", got)
	}
	r.jr.hold.Store(false)
	held.release()
	if got := receive(t, "the in-flight add", inFlight); got != 11 {
		t.Fatalf("the add in flight at stop answered %v, want 11", got)
	}
	if got := receive(t, "the add sent while stopping", later); got != 111 {
		t.Fatalf("the add sent while stopping answered %v, want 111", got)
	}
	if rec := p.lastRecovered(t); rec.Restarted || rec.Events != 2 {
		t.Fatalf("wake %+v, want a spawn that replayed 2 events", rec)
	}
	if high, _ := r.store.Journal().HighestSeq(id); high != 3 {
		t.Fatalf("the journal holds %d events, want 3", high)
	}
}

// Every SnapshotEvery events the entity saves its state; a restart loads
// it and replays only the events after it, and ends in the same state.
func TestRestartRebuildsTheStateFromTheSnapshot(t *testing.T) {
	p := newProbe(1)
	r := startRig(t, rigConfig{kinds: []Spec{Entity[counterState](p)}, env: Env{SnapshotEvery: 5}})
	id := counterID("snap")
	r.ask(id, &armMsg{On: true})
	for i := 1; i <= 6; i++ {
		r.ask(id, &addMsg{N: i})
	}
	before := r.ask(id, &getMsg{}).(counterState)
	if before != (counterState{Total: 21, Armed: true}) {
		t.Fatalf("state before the restart: %+v", before)
	}
	snap, ok, err := r.store.Journal().LoadSnapshot(id, persistence.NoLimit)
	if err != nil || !ok || snap.Seq != 5 {
		t.Fatalf("snapshot: %v at %d (%v), want one at 5", ok, snap.Seq, err)
	}
	// The snapshot compacted the events it holds: only a right snapshot
	// gives the right state now.
	n := 0
	if err := r.store.Journal().Replay(id, 1, 5, persistence.NoLimit, func(uint64, []byte) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("%d events up to the snapshot remain (%v)", n, err)
	}

	if got := r.ask(id, &crashMsg{}); got != "survived" {
		t.Fatalf("crash message answered %v", got)
	}
	if rec := p.lastRecovered(t); !rec.Restarted || rec.Events != 2 {
		t.Fatalf("restart %+v, want one that replayed the 2 events after the snapshot", rec)
	}
	if got := r.ask(id, &getMsg{}).(counterState); got != before {
		t.Fatalf("state after the restart %+v, want %+v", got, before)
	}
}

// A message sent as a value where the kind handles a pointer is not
// acknowledged: the caller gets a rejection, the tree counts it, and the
// entity's state and journal do not change.
func TestMessageSentAsAValueIsRejected(t *testing.T) {
	p := newProbe(0)
	r := startRig(t, rigConfig{kinds: []Spec{Entity[counterState](p)}})
	id := counterID("value")
	r.ask(id, &addMsg{N: 3})

	var rej *Rejected
	if err := r.tree.Deliver(id, addMsg{N: 1}, 10*time.Second); !errors.As(err, &rej) {
		t.Fatalf("Deliver of a value: %v, want an error wrapping *Rejected", err)
	}
	if got, err := r.tree.Request(id, addMsg{N: 1}, 10*time.Second); !errors.As(err, &rej) {
		t.Fatalf("Request of a value: %v, %v, want an error wrapping *Rejected", got, err)
	}
	if n := r.tree.UnknownMessages(); n != 2 {
		t.Fatalf("UnknownMessages %d, want 2", n)
	}
	if got := r.ask(id, &getMsg{}).(counterState); got.Total != 3 {
		t.Fatalf("state after the values: %+v, want total 3", got)
	}
	if high, _ := r.store.Journal().HighestSeq(id); high != 1 {
		t.Fatalf("the journal holds %d events, want 1", high)
	}
	if n := r.tree.UnknownMessages(); n != 2 {
		t.Fatalf("UnknownMessages %d after a handled message, want 2", n)
	}
}
