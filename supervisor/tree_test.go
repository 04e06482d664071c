package supervisor

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/thatch-run/thatch/actors"
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

// flakyJournal fails appends while fail is set, and holds async appends
// until the gate closes while a gate is set.
type flakyJournal struct {
	*persistence.Journal
	fail atomic.Bool
	gate atomic.Pointer[chan struct{}]
}

func (f *flakyJournal) AppendAsync(id actors.Identity, first uint64, evs [][]byte, mark persistence.ActiveMark, done func(error)) {
	if f.fail.Load() {
		done(errors.New("injected journal failure"))
		return
	}
	if g := f.gate.Load(); g != nil {
		go func() {
			<-*g
			f.Journal.AppendAsync(id, first, evs, mark, done)
		}()
		return
	}
	f.Journal.AppendAsync(id, first, evs, mark, done)
}

func (f *flakyJournal) Append(id actors.Identity, first uint64, evs [][]byte, mark persistence.ActiveMark) error {
	if f.fail.Load() {
		return errors.New("injected journal failure")
	}
	return f.Journal.Append(id, first, evs, mark)
}

type fixture struct {
	t     *testing.T
	fs    vfs.FS
	store *persistence.Store
	sys   *actor.ActorSystem
	tree  *Tree
	kind  counterKind
	exec  *recExec
	clock *actors.FakeClock
	jr    *flakyJournal
}

func newFixture(t *testing.T, fs vfs.FS, crashTimes int64, passivate time.Duration) *fixture {
	t.Helper()
	st, err := persistence.Open("db", persistence.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, fs: fs, store: st, exec: &recExec{}, clock: actors.NewFakeClock(time.Unix(1_700_000_000, 0)),
		kind: counterKind{recoveries: &atomic.Int64{}, crashes: &atomic.Int64{}, crashTimes: crashTimes}}
	f.jr = &flakyJournal{Journal: st.Journal()}
	f.sys = NewActorSystem(hclog.NewNullLogger())
	f.tree, err = Start(Options{
		System:  f.sys,
		Journal: st.Journal(),
		Env: Env{Journal: f.jr, Clock: f.clock, Executor: f.exec, SnapshotEvery: 5,
			PassivateAfter: passivate, Logger: hclog.NewNullLogger()},
		Kinds:  []Spec{Entity[counterState](f.kind)},
		Policy: Policy{MaxRestarts: 3, Window: time.Minute, BackoffBase: time.Millisecond, BackoffMax: 4 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) close() {
	_ = f.tree.Stop(time.Second)
	f.sys.Shutdown()
	_ = f.store.Close()
}

func (f *fixture) req(id string, msg any) (any, error) {
	return f.tree.Request(actors.Identity{Kind: "counter", ID: id}, msg, 5*time.Second)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestReplyComesAfterJournalAndStateSurvivesRestart(t *testing.T) {
	fs := vfs.NewMem()
	f := newFixture(t, fs, 0, 0)
	for i := 1; i <= 12; i++ {
		got, err := f.req("a", &addMsg{N: i})
		if err != nil {
			t.Fatal(err)
		}
		if got != i*(i+1)/2 {
			t.Fatalf("after add %d: total %v", i, got)
		}
	}
	// Every acknowledged add is durable: a fresh tree on the same store sees it.
	id := actors.Identity{Kind: "counter", ID: "a"}
	high, _ := f.store.Journal().HighestSeq(id)
	if high != 12 {
		t.Fatalf("highest seq %d, want 12", high)
	}
	snap, ok, _ := f.store.Journal().LoadSnapshot(id, persistence.NoLimit)
	if !ok || snap.Seq != 10 {
		t.Fatalf("snapshot every 5 events: got %v at %d", ok, snap.Seq)
	}
	f.close()

	f2 := newFixture(t, fs, 0, 0)
	defer f2.close()
	got, err := f2.req("a", &getMsg{})
	if err != nil {
		t.Fatal(err)
	}
	if got.(counterState).Total != 78 {
		t.Fatalf("recovered total %v, want 78", got)
	}
}

func TestCrashingMessageIsRedeliveredOnce(t *testing.T) {
	f := newFixture(t, vfs.NewMem(), 1, 0)
	defer f.close()
	if _, err := f.req("b", &addMsg{N: 2}); err != nil {
		t.Fatal(err)
	}
	got, err := f.req("b", &crashMsg{})
	if err != nil {
		t.Fatal(err)
	}
	if got != "survived" {
		t.Fatalf("redelivered message answered %v", got)
	}
	if f.kind.recoveries.Load() < 2 {
		t.Fatalf("entity was not restarted (recoveries %d)", f.kind.recoveries.Load())
	}
	st, _ := f.req("b", &getMsg{})
	if st.(counterState).Total != 2 {
		t.Fatalf("state after restart: %v", st)
	}
}

func TestPoisonMessageIsRejectedNotRetriedForever(t *testing.T) {
	f := newFixture(t, vfs.NewMem(), 100, 0)
	defer f.close()
	_, err := f.req("c", &crashMsg{})
	var rej *Rejected
	if !errors.As(err, &rej) {
		t.Fatalf("want Rejected, got %v", err)
	}
	if n := f.kind.crashes.Load(); n != 2 {
		t.Fatalf("poison message handled %d times, want 2 (first try + one redelivery)", n)
	}
	_, errs, err := f.tree.Stats(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var drops int
	for _, e := range errs {
		if e.Action == "drop" {
			drops++
		}
	}
	if drops != 1 {
		t.Fatalf("recorded failures %+v, want one drop", errs)
	}
	// The entity still works.
	if got, err := f.req("c", &addMsg{N: 1}); err != nil || got != 1 {
		t.Fatalf("after poison: %v %v", got, err)
	}
}

func TestJournalFailureRestartsWithBackoffAndLosesNothing(t *testing.T) {
	f := newFixture(t, vfs.NewMem(), 0, 0)
	defer f.close()
	if _, err := f.req("d", &addMsg{N: 5}); err != nil {
		t.Fatal(err)
	}
	f.jr.fail.Store(true)
	fut := f.sys.Root.RequestFuture(f.tree.kinds["counter"], &envelope{id: "d", msg: &addMsg{N: 7}}, 10*time.Second)
	// Let it fail at least twice (each restart replays and retries), then heal.
	eventually(t, "two failures", func() bool {
		_, errs, _ := f.tree.Stats(time.Second)
		return len(errs) >= 2
	})
	f.jr.fail.Store(false)
	res, err := fut.Result()
	if err != nil {
		t.Fatal(err)
	}
	if res != 12 {
		t.Fatalf("retried add answered %v, want 12", res)
	}
	_, errs, _ := f.tree.Stats(time.Second)
	if len(errs) == 0 || errs[0].Action != "restart" {
		t.Fatalf("failure not recorded: %+v", errs)
	}
}

func TestPassivationAndWake(t *testing.T) {
	f := newFixture(t, vfs.NewMem(), 0, time.Minute)
	defer f.close()
	if _, err := f.req("e", &addMsg{N: 3}); err != nil {
		t.Fatal(err)
	}
	ids, _ := f.tree.LiveIDs("counter", time.Second)
	if len(ids) != 1 {
		t.Fatalf("live %v", ids)
	}
	f.clock.Advance(2 * time.Minute)
	eventually(t, "passivation", func() bool {
		ids, _ := f.tree.LiveIDs("counter", time.Second)
		return len(ids) == 0
	})
	stats, _, _ := f.tree.Stats(time.Second)
	if stats[0].Passivated != 1 || stats[0].Live != 0 {
		t.Fatalf("stats %+v", stats)
	}
	got, err := f.req("e", &addMsg{N: 4})
	if err != nil || got != 7 {
		t.Fatalf("woken entity answered %v %v", got, err)
	}
}

func TestForgetPassiveSparesALiveEntity(t *testing.T) {
	f := newFixture(t, vfs.NewMem(), 0, time.Minute)
	defer f.close()
	e := actors.Identity{Kind: "counter", ID: "e"}
	if _, err := f.req("e", &addMsg{N: 3}); err != nil {
		t.Fatal(err)
	}
	if forgotten, err := f.tree.ForgetPassive(e, time.Second); err != nil || forgotten {
		t.Fatalf("a live entity: forgotten %v, %v", forgotten, err)
	}
	if high, _ := f.store.Journal().HighestSeq(e); high == 0 {
		t.Fatal("the live entity's journal is gone")
	}
	f.clock.Advance(2 * time.Minute)
	// An entity no longer listed live may still be stopping, and a
	// stopping one is spared too: the forget succeeds once it stopped.
	eventually(t, "the passivated entity's forget", func() bool {
		forgotten, err := f.tree.ForgetPassive(e, time.Second)
		if err != nil {
			t.Fatalf("a passivated entity: %v", err)
		}
		return forgotten
	})
	if high, _ := f.store.Journal().HighestSeq(e); high != 0 {
		t.Fatalf("journal still ends at %d", high)
	}
	// Woken again, it starts from nothing.
	if got, err := f.req("e", &addMsg{N: 4}); err != nil || got != 4 {
		t.Fatalf("after forget the entity answered %v %v", got, err)
	}
	if _, err := f.tree.ForgetPassive(actors.Identity{Kind: "nope", ID: "e"}, time.Second); !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("unknown kind: %v", err)
	}
}

func TestMessagesDuringPassivationAreHeldNotLost(t *testing.T) {
	f := newFixture(t, vfs.NewMem(), 0, time.Minute)
	defer f.close()
	if _, err := f.req("p", &addMsg{N: 1}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Minute)
	// Race sends against the passivation handoff.
	for i := 0; i < 200; i++ {
		f.tree.Send(actors.Identity{Kind: "counter", ID: "p"}, &addMsg{N: 1})
	}
	eventually(t, "all adds", func() bool {
		got, err := f.req("p", &getMsg{})
		return err == nil && got.(counterState).Total == 201
	})
}

func TestActiveEntitiesAreRehydratedOnStart(t *testing.T) {
	fs := vfs.NewMem()
	f := newFixture(t, fs, 0, 0)
	if _, err := f.req("armed", &armMsg{On: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.req("quiet", &addMsg{N: 1}); err != nil {
		t.Fatal(err)
	}
	f.close()

	f2 := newFixture(t, fs, 0, 0)
	defer f2.close()
	ids, err := f2.tree.LiveIDs("counter", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != "armed" {
		t.Fatalf("rehydrated %v, want only the armed entity", ids)
	}
	stats, _, _ := f2.tree.Stats(time.Second)
	if stats[0].Persisted != 2 || stats[0].Passivated != 1 || stats[0].Active != 1 {
		t.Fatalf("stats %+v", stats)
	}
}

func TestEffectsGoToTheExecutor(t *testing.T) {
	f := newFixture(t, vfs.NewMem(), 0, 0)
	defer f.close()
	f.tree.Send(actors.Identity{Kind: "counter", ID: "x"}, &effectMsg{Name: "toast"})
	eventually(t, "effect", func() bool {
		f.exec.mu.Lock()
		defer f.exec.mu.Unlock()
		return len(f.exec.seen) == 1 && f.exec.seen[0] == "counter/x:&{toast}"
	})
}

// A request that can only end as a dead letter is answered with a
// rejection at once, not left to time out.
func TestRequestToAStoppedTreeIsRejected(t *testing.T) {
	f := newFixture(t, vfs.NewMem(), 0, 0)
	defer f.close()
	if _, err := f.req("r", &addMsg{N: 1}); err != nil {
		t.Fatal(err)
	}
	if err := f.tree.Stop(time.Second); err != nil {
		t.Fatal(err)
	}
	_, err := f.tree.Request(actors.Identity{Kind: "counter", ID: "r"}, &getMsg{}, time.Minute)
	var rej *Rejected
	if !errors.As(err, &rej) {
		t.Fatalf("request after Stop: %v, want a rejection", err)
	}
	if err := f.tree.Deliver(actors.Identity{Kind: "counter", ID: "r"}, &addMsg{N: 1}, time.Minute); !errors.As(err, &rej) {
		t.Fatalf("deliver after Stop: %v, want a rejection", err)
	}
}

func TestUnknownKind(t *testing.T) {
	f := newFixture(t, vfs.NewMem(), 0, 0)
	defer f.close()
	_, err := f.tree.Request(actors.Identity{Kind: "nope", ID: "1"}, &getMsg{}, time.Second)
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
	f := newFixture(t, vfs.NewMem(), 0, 0)
	defer f.close()
	id := actors.Identity{Kind: "counter", ID: "d"}
	gate := make(chan struct{})
	f.jr.gate.Store(&gate)
	err := f.tree.Deliver(id, &addMsg{N: 2}, 50*time.Millisecond)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Deliver with the append held: %v, want ErrTimeout", err)
	}
	if high, _ := f.store.Journal().HighestSeq(id); high != 0 {
		t.Fatalf("journal holds %d events before the gate opened", high)
	}
	f.jr.gate.Store(nil)
	close(gate)
	if err := f.tree.Deliver(id, &addMsg{N: 3}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if high, _ := f.store.Journal().HighestSeq(id); high != 2 {
		t.Fatalf("journal holds %d events after two delivered adds, want 2", high)
	}
	// A message whose handling replies gets that reply through Request.
	got, err := f.req("d", &getMsg{})
	if err != nil || got.(counterState).Total != 5 {
		t.Fatalf("get after the adds: %v, %v", got, err)
	}
}

// Messages handled while an append is in flight are journaled by the next
// one; when an append fails, every message not yet durable is handled
// again after the restart, so none is lost or applied twice.
func TestWriteBehindLosesNothingOnJournalFailure(t *testing.T) {
	f := newFixture(t, vfs.NewMem(), 0, 0)
	defer f.close()
	id := actors.Identity{Kind: "counter", ID: "wb"}
	f.jr.fail.Store(true)
	for i := 0; i < 50; i++ {
		f.tree.Send(id, &addMsg{N: 1})
	}
	eventually(t, "a journal failure", func() bool {
		_, errs, _ := f.tree.Stats(time.Second)
		return len(errs) >= 1
	})
	f.jr.fail.Store(false)
	for i := 0; i < 50; i++ {
		f.tree.Send(id, &addMsg{N: 1})
	}
	eventually(t, "all 100 adds", func() bool {
		got, err := f.req("wb", &getMsg{})
		return err == nil && got.(counterState).Total == 100
	})
	if err := f.tree.Deliver(id, &addMsg{N: 0}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	high, _ := f.store.Journal().HighestSeq(id)
	if high != 101 {
		t.Fatalf("journal holds %d events, want 101 (100 adds and the zero add, each once)", high)
	}
}
