package supervisor

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/goleak"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/internal/testwait"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, leakOptions...)
}

// leakOptions are the goroutines goleak ignores, for TestMain and for the
// tests that check for leaks right after stopping their tree.
var leakOptions = []goleak.Option{
	// protoactor's process-wide helpers that outlive one ActorSystem.
	goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.(*ActorSystem).Shutdown"),
	goleak.IgnoreAnyFunction("github.com/lithammer/shortuuid/v4.init"),
	// protoactor's dead-letter throttle window: a timer goroutine that
	// ends by itself one interval after the last dead letter, such as a
	// passivation check whose timer fired as its entity stopped.
	goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
}

// counter is a test kind: Add journals an Added event, Crash panics,
// Arm/Disarm flip the active mark, Get replies with the state.
type counterState struct {
	Total int  `json:"total"`
	Armed bool `json:"armed"`
}
type added struct {
	N int `json:"n"`
}
type armed struct {
	On bool `json:"on"`
}

type (
	addMsg    struct{ N int }
	getMsg    struct{}
	crashMsg  struct{}
	armMsg    struct{ On bool }
	effectMsg struct{ Name string }
)

func init() {
	messages.Register[counterState]("test.counter_state", 1)
	messages.Register[added]("test.added", 1)
	messages.Register[armed]("test.armed", 1)
}

type counterKind struct {
	recoveries *atomic.Int64
	crashes    *atomic.Int64
	crashTimes int64
}

func (counterKind) Name() string                 { return "counter" }
func (counterKind) Initial(string) *counterState { return &counterState{} }
func (counterKind) Active(s *counterState) bool  { return s.Armed }
func (c counterKind) Decide(s *counterState, msg any, _ time.Time) actors.Decision {
	switch m := msg.(type) {
	case *addMsg:
		return actors.Decision{Events: []any{&added{N: m.N}}, Reply: s.Total + m.N}
	case *getMsg:
		return actors.Decision{Reply: *s}
	case *armMsg:
		return actors.Decision{Events: []any{&armed{On: m.On}}, Reply: true}
	case *crashMsg:
		if c.crashes.Add(1) <= c.crashTimes {
			panic("test crash")
		}
		return actors.Decision{Reply: "survived"}
	case *effectMsg:
		return actors.Decision{Effects: []any{m}}
	case *actors.Recovered:
		c.recoveries.Add(1)
		return actors.Decision{}
	default:
		return actors.Decision{Unhandled: true}
	}
}
func (counterKind) View(s *counterState) any { return *s }
func (counterKind) Apply(s *counterState, ev any) *counterState {
	n := *s
	switch e := ev.(type) {
	case *added:
		n.Total += e.N
	case *armed:
		n.Armed = e.On
	}
	return &n
}

type recExec struct {
	mu   sync.Mutex
	seen []string
}

func (r *recExec) Execute(from actors.Identity, eff any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, fmt.Sprintf("%s:%v", from, eff))
}

// counterRig starts a rig whose one kind is the counter, watched by a
// probe that panics on its first crashTimes crash messages.
func counterRig(t *testing.T, crashTimes int64, c rigConfig) (*rig, *probe) {
	t.Helper()
	p := newProbe(crashTimes)
	c.kinds = []Spec{Entity[counterState](p)}
	return startRig(t, c), p
}

func TestReplyComesAfterJournalAndStateSurvivesRestart(t *testing.T) {
	c := rigConfig{fs: vfs.NewMem(), env: Env{SnapshotEvery: 5}}
	r, _ := counterRig(t, 0, c)
	id := counterID("a")
	for i := 1; i <= 12; i++ {
		if got := r.ask(id, &addMsg{N: i}); got != i*(i+1)/2 {
			t.Fatalf("after add %d: total %v", i, got)
		}
	}
	// Every acknowledged add is durable: a fresh tree on the same store sees it.
	if high, _ := r.store.Journal().HighestSeq(id); high != 12 {
		t.Fatalf("highest seq %d, want 12", high)
	}
	snap, ok, _ := r.store.Journal().LoadSnapshot(id, persistence.NoLimit)
	if !ok || snap.Seq != 10 {
		t.Fatalf("snapshot every 5 events: got %v at %d", ok, snap.Seq)
	}
	r.close()

	r, _ = counterRig(t, 0, c)
	if got := r.ask(id, &getMsg{}); got.(counterState).Total != 78 {
		t.Fatalf("recovered total %v, want 78", got)
	}
}

func TestForgetPassiveSparesALiveEntity(t *testing.T) {
	r, _ := counterRig(t, 0, rigConfig{env: Env{PassivateAfter: time.Minute}})
	e := counterID("e")
	r.ask(e, &addMsg{N: 3})
	if forgotten, err := r.tree.ForgetPassive(e, time.Second); err != nil || forgotten {
		t.Fatalf("a live entity: forgotten %v, %v", forgotten, err)
	}
	if high, _ := r.store.Journal().HighestSeq(e); high == 0 {
		t.Fatal("the live entity's journal is gone")
	}
	r.clock.Advance(2 * time.Minute)
	// An entity no longer listed live may still be stopping, and a
	// stopping one is spared too: the forget succeeds once it stopped.
	testwait.Until(t, "the passivated entity's forget", func() bool {
		forgotten, err := r.tree.ForgetPassive(e, time.Second)
		if err != nil {
			t.Fatalf("a passivated entity: %v", err)
		}
		return forgotten
	})
	if high, _ := r.store.Journal().HighestSeq(e); high != 0 {
		t.Fatalf("journal still ends at %d", high)
	}
	// Woken again, it starts from nothing.
	if got := r.ask(e, &addMsg{N: 4}); got != 4 {
		t.Fatalf("after forget the entity answered %v", got)
	}
	if _, err := r.tree.ForgetPassive(actors.Identity{Kind: "nope", ID: "e"}, time.Second); !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("unknown kind: %v", err)
	}
}

// Messages racing the passivation handoff, in whatever interleaving the
// scheduler picks, are all handled once. (The interleavings that matter
// most are forced one by one in
// TestMessagesSentWhileAnEntityStopsAreHandledAfterItWakes.)
func TestMessagesDuringPassivationAreHeldNotLost(t *testing.T) {
	r, _ := counterRig(t, 0, rigConfig{env: Env{PassivateAfter: time.Minute}})
	id := counterID("p")
	r.ask(id, &addMsg{N: 1})
	r.clock.Advance(2 * time.Minute)
	for range 200 {
		r.tree.Send(id, &addMsg{N: 1})
	}
	testwait.Until(t, "all adds", func() bool {
		got, err := r.tree.Request(id, &getMsg{}, 5*time.Second)
		return err == nil && got.(counterState).Total == 201
	})
}

func TestActiveEntitiesAreRehydratedOnStart(t *testing.T) {
	c := rigConfig{fs: vfs.NewMem()}
	r, _ := counterRig(t, 0, c)
	r.ask(counterID("armed"), &armMsg{On: true})
	r.ask(counterID("quiet"), &addMsg{N: 1})
	r.close()

	r, _ = counterRig(t, 0, c)
	if ids := r.live(); len(ids) != 1 || ids[0] != "armed" {
		t.Fatalf("rehydrated %v, want only the armed entity", ids)
	}
	stats, _, err := r.tree.Stats(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if stats[0].Persisted != 2 || stats[0].Passivated != 1 || stats[0].Active != 1 {
		t.Fatalf("stats %+v", stats)
	}
}

// A request that can only end as a dead letter is answered with a
// rejection at once, not left to time out.
func TestRequestToAStoppedTreeIsRejected(t *testing.T) {
	r, _ := counterRig(t, 0, rigConfig{})
	id := counterID("r")
	r.ask(id, &addMsg{N: 1})
	if err := r.tree.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	_, err := r.tree.Request(id, &getMsg{}, time.Minute)
	var rej *Rejected
	if !errors.As(err, &rej) {
		t.Fatalf("request after Stop: %v, want a rejection", err)
	}
	if err := r.tree.Deliver(id, &addMsg{N: 1}, time.Minute); !errors.As(err, &rej) {
		t.Fatalf("deliver after Stop: %v, want a rejection", err)
	}
}

func TestUnknownKind(t *testing.T) {
	r, _ := counterRig(t, 0, rigConfig{})
	_, err := r.tree.Request(actors.Identity{Kind: "nope", ID: "1"}, &getMsg{}, time.Second)
	if !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("err %v", err)
	}
}

func TestBackoffGrowsExponentiallyWithJitter(t *testing.T) {
	p := Policy{BackoffBase: 100 * time.Millisecond, BackoffMax: 2 * time.Second}.withDefaults()
	for _, c := range []struct {
		n      int
		lo, hi time.Duration
	}{{1, 50 * time.Millisecond, 100 * time.Millisecond}, {2, 100 * time.Millisecond, 200 * time.Millisecond},
		{4, 400 * time.Millisecond, 800 * time.Millisecond}, {10, time.Second, 2 * time.Second}} {
		for _, r := range []float64{0, 0.5, 0.999} {
			d := p.Backoff(c.n, func() float64 { return r })
			if d < c.lo || d > c.hi {
				t.Errorf("Backoff(%d, %v) = %v, want in [%v, %v]", c.n, r, d, c.lo, c.hi)
			}
		}
	}
}

// Deliver returns only once the message's events are durable: while the
// journal holds the append it times out, and it succeeds after.
func TestDeliverWaitsForTheJournal(t *testing.T) {
	r, _ := counterRig(t, 0, rigConfig{})
	id := counterID("d")
	r.jr.hold.Store(true)
	if err := r.tree.Deliver(id, &addMsg{N: 2}, 50*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Deliver with the append held: %v, want ErrTimeout", err)
	}
	held := r.jr.nextHeld(t)
	if high, _ := r.store.Journal().HighestSeq(id); high != 0 {
		t.Fatalf("journal holds %d events before the append was released", high)
	}
	r.jr.hold.Store(false)
	held.release()
	if err := r.tree.Deliver(id, &addMsg{N: 3}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if high, _ := r.store.Journal().HighestSeq(id); high != 2 {
		t.Fatalf("journal holds %d events after two delivered adds, want 2", high)
	}
	// A message whose handling replies gets that reply through Request.
	if got := r.ask(id, &getMsg{}); got.(counterState).Total != 5 {
		t.Fatalf("get after the adds: %v", got)
	}
}

// Messages handled while an append is in flight are journaled by the next
// one; when an append fails, every message not yet durable is handled
// again after the restart, so none is lost or applied twice.
func TestWriteBehindLosesNothingOnJournalFailure(t *testing.T) {
	r, _ := counterRig(t, 0, rigConfig{})
	id := counterID("wb")
	r.jr.failNext.Store(2)
	for range 50 {
		r.tree.Send(id, &addMsg{N: 1})
	}
	testwait.Until(t, "a journal failure", func() bool { return len(r.failures("restart")) >= 1 })
	for range 50 {
		r.tree.Send(id, &addMsg{N: 1})
	}
	testwait.Until(t, "all 100 adds", func() bool {
		got, err := r.tree.Request(id, &getMsg{}, 5*time.Second)
		return err == nil && got.(counterState).Total == 100
	})
	if err := r.tree.Deliver(id, &addMsg{N: 0}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if high, _ := r.store.Journal().HighestSeq(id); high != 101 {
		t.Fatalf("journal holds %d events, want 101 (100 adds and the zero add, each once)", high)
	}
}
