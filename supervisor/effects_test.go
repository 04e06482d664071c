package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/internal/testwait"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
)

// fxKind is a test kind whose entities release the effects a message
// carries and journal the results that come back: the tree's effect
// dispatcher (Options.Effects) runs them.
type fxKind struct {
	restarts *atomic.Int64
	// spawns counts the incarnations started other than by a restart
	// (the first, and each wake after a passivation), when set.
	spawns *atomic.Int64
}

type fxState struct {
	Done []string `json:"done"`
}

// fxDone is the event of one result handled.
type fxDone struct {
	Name string `json:"name"`
}

type (
	// releaseMsg asks the entity to release Effects, in order.
	releaseMsg struct{ Effects []any }
	getFx      struct{}
	// fxResult is a handler's result: the effect Name has run.
	fxResult struct{ Name string }
	// stepResult is the result of stepEff N of a chain of Of effects.
	stepResult struct{ N, Of int }
)

type (
	// blockEff runs until the test opens its gate (or the tree stops).
	blockEff struct{ Name string }
	// stepEff is one effect of a chain: its result makes the entity
	// release the next one, up to Of.
	stepEff struct{ N, Of int }
	// orphanEff has no handler.
	orphanEff struct{}
	// ctxEff runs until its context ends.
	ctxEff struct{}
	// laneEff is a blockEff in the lane "slow".
	laneEff struct{ Name string }
)

func init() {
	messages.Register[fxState]("test.fx_state", 1)
	messages.Register[fxDone]("test.fx_done", 1)
}

func (fxKind) Name() string            { return "fx" }
func (fxKind) Initial(string) *fxState { return &fxState{} }
func (fxKind) Active(*fxState) bool    { return false }
func (k fxKind) Decide(s *fxState, msg any, _ time.Time) actors.Decision {
	switch m := msg.(type) {
	case *releaseMsg:
		return actors.Decision{Effects: m.Effects, Reply: true}
	case *fxResult:
		return actors.Decision{Events: []any{&fxDone{Name: m.Name}}}
	case *stepResult:
		d := actors.Decision{Events: []any{&fxDone{Name: fmt.Sprintf("step %d", m.N)}}}
		if m.N < m.Of {
			d.Effects = []any{&stepEff{N: m.N + 1, Of: m.Of}}
		}
		return d
	case *getFx:
		return actors.Decision{Reply: append([]string(nil), s.Done...)}
	case *actors.Recovered:
		if m.Restarted {
			k.restarts.Add(1)
		} else if k.spawns != nil {
			k.spawns.Add(1)
		}
		return actors.Decision{}
	default:
		return actors.Decision{Unhandled: true}
	}
}
func (fxKind) Apply(s *fxState, ev any) *fxState {
	if e, ok := ev.(*fxDone); ok {
		return &fxState{Done: append(append([]string(nil), s.Done...), e.Name)}
	}
	return s
}

func fxID(id string) actors.Identity { return actors.Identity{Kind: "fx", ID: id} }

// fxHandlers are the handlers of the effect types above, with what a test
// watches: started gets "entity/name" as a blockEff starts, and overlap is
// set if two effects of one entity ever run at once.
type fxHandlers struct {
	started  chan string
	ctxEnded chan error
	overlap  atomic.Bool

	mu      sync.Mutex
	gates   map[string]chan struct{}
	running map[string]int
}

func newFxHandlers() *fxHandlers {
	return &fxHandlers{started: make(chan string, 64), ctxEnded: make(chan error, 4),
		gates: map[string]chan struct{}{}, running: map[string]int{}}
}

func (h *fxHandlers) gate(name string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	g, ok := h.gates[name]
	if !ok {
		g = make(chan struct{})
		h.gates[name] = g
	}
	return g
}

// open lets the blockEff name finish.
func (h *fxHandlers) open(name string) { close(h.gate(name)) }

// enter and leave count the effects of one entity running at once.
func (h *fxHandlers) enter(from actors.Identity) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running[from.ID]++
	if h.running[from.ID] > 1 {
		h.overlap.Store(true)
	}
}

func (h *fxHandlers) leave(from actors.Identity) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running[from.ID]--
}

func (h *fxHandlers) list() []Handler {
	return []Handler{
		Handle(func(ctx context.Context, from actors.Identity, e *blockEff) any {
			h.enter(from)
			defer h.leave(from)
			h.started <- from.ID + "/" + e.Name
			select {
			case <-h.gate(e.Name):
			case <-ctx.Done():
			}
			return &fxResult{Name: e.Name}
		}),
		Handle(func(_ context.Context, from actors.Identity, e *stepEff) any {
			h.enter(from)
			defer h.leave(from)
			return &stepResult{N: e.N, Of: e.Of}
		}),
		Handle(func(ctx context.Context, from actors.Identity, e *laneEff) any {
			h.started <- from.ID + "/" + e.Name
			select {
			case <-h.gate(e.Name):
			case <-ctx.Done():
			}
			return &fxResult{Name: e.Name}
		}, Lane("slow")),
		Handle(func(ctx context.Context, _ actors.Identity, _ *ctxEff) any {
			h.started <- "ctx"
			<-ctx.Done()
			h.ctxEnded <- ctx.Err()
			return &fxResult{Name: "after stop"}
		}),
	}
}

func startFx(t *testing.T, h *fxHandlers, logger hclog.Logger) (*rig, fxKind) {
	k := fxKind{restarts: &atomic.Int64{}}
	r := startRig(t, rigConfig{kinds: []Spec{Entity[fxState](k)}, effects: h.list(), logger: logger})
	return r, k
}

func (r *rig) done(id actors.Identity) []string {
	r.t.Helper()
	return r.ask(id, &getFx{}).([]string)
}

// An entity's effects run one at a time, in the order it released them,
// while another entity's effects run alongside; each result comes back
// to the entity whose effect it was.
func TestEffectsRunInOrderPerEntityAndInParallelAcrossEntities(t *testing.T) {
	h := newFxHandlers()
	r, _ := startFx(t, h, nil)
	a, b := fxID("a"), fxID("b")
	// The answer comes after the effects were handed to the dispatcher.
	r.ask(a, &releaseMsg{Effects: []any{&blockEff{"a1"}, &blockEff{"a2"}, &blockEff{"a3"}}})
	r.ask(b, &releaseMsg{Effects: []any{&blockEff{"b1"}}})

	// b1 starts while a1 is held: entities do not wait for each other.
	got := map[string]bool{}
	for range 2 {
		got[receive(t, "an effect to start", h.started)] = true
	}
	if !got["a/a1"] || !got["b/b1"] {
		t.Fatalf("started %v, want a/a1 and b/b1", got)
	}
	if !empty(h.started) {
		t.Fatal("a second effect of a started while a1 runs")
	}
	h.open("a1")
	if s := receive(t, "a2 to start", h.started); s != "a/a2" {
		t.Fatalf("after a1 %s started, want a/a2", s)
	}
	h.open("b1")
	h.open("a2")
	if s := receive(t, "a3 to start", h.started); s != "a/a3" {
		t.Fatalf("after a2 %s started, want a/a3", s)
	}
	h.open("a3")
	if err := r.tree.Quiesce(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if h.overlap.Load() {
		t.Fatal("two effects of one entity ran at once")
	}
	if got, want := r.done(a), []string{"a1", "a2", "a3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("results a handled: %v, want %v", got, want)
	}
	if got, want := r.done(b), []string{"b1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("results b handled: %v, want %v", got, want)
	}
}

// syncBuffer is a bytes.Buffer a logger may write to from any goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An effect nobody handles is logged and dropped; the entity does not
// fail, and its next effect runs.
func TestEffectWithoutAHandlerIsLoggedAndDropped(t *testing.T) {
	h := newFxHandlers()
	var logs syncBuffer
	r, k := startFx(t, h, hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn}))
	id := fxID("orphan")
	r.ask(id, &releaseMsg{Effects: []any{&orphanEff{}, &stepEff{N: 1, Of: 1}}})
	if err := r.tree.Quiesce(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := r.done(id), []string{"step 1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("results handled: %v, want %v", got, want)
	}
	if out := logs.String(); !strings.Contains(out, "no handler for effect") || !strings.Contains(out, "orphanEff") {
		t.Fatalf("the dropped effect was not logged; log:\n%s", out)
	}
	if n := k.restarts.Load(); n != 0 {
		t.Fatalf("the entity restarted %d times", n)
	}
	if f := r.failures("restart"); len(f) != 0 {
		t.Fatalf("failures recorded: %+v", f)
	}
}

// Quiesce returns once a chain effect -> result -> effect -> result has
// run to its end, so a test that looks after it sees every result.
func TestQuiesceWaitsForAChainOfEffectsAndResults(t *testing.T) {
	h := newFxHandlers()
	r, _ := startFx(t, h, nil)
	id := fxID("chain")
	r.ask(id, &releaseMsg{Effects: []any{&stepEff{N: 1, Of: 5}}})
	if err := r.tree.Quiesce(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	want := []string{"step 1", "step 2", "step 3", "step 4", "step 5"}
	if got := r.done(id); !reflect.DeepEqual(got, want) {
		t.Fatalf("after Quiesce the entity has handled %v, want %v", got, want)
	}
}

// Quiesce reports an error when an effect is still running at its
// timeout, and succeeds once that effect ends.
func TestQuiesceFailsWhileAnEffectIsBlocked(t *testing.T) {
	h := newFxHandlers()
	r, _ := startFx(t, h, nil)
	id := fxID("stuck")
	r.ask(id, &releaseMsg{Effects: []any{&blockEff{"stuck"}}})
	receive(t, "the effect to start", h.started)
	if err := r.tree.Quiesce(50 * time.Millisecond); err == nil {
		t.Fatal("Quiesce returned nil while an effect was blocked")
	}
	h.open("stuck")
	if err := r.tree.Quiesce(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := r.done(id), []string{"stuck"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("results handled: %v, want %v", got, want)
	}
}

// Stop does not wait for a handler that runs until its context ends: it
// cancels the context, the handler returns, and no goroutine is left.
func TestStopCancelsABlockedEffect(t *testing.T) {
	h := newFxHandlers()
	r, _ := startFx(t, h, nil)
	r.ask(fxID("long"), &releaseMsg{Effects: []any{&ctxEff{}}})
	receive(t, "the effect to start", h.started)
	if err := r.tree.Stop(5 * time.Second); err != nil {
		t.Fatalf("stop with an effect running: %v", err)
	}
	if err := receive(t, "the handler's context to end", h.ctxEnded); !errors.Is(err, context.Canceled) {
		t.Fatalf("the handler's context ended with %v, want context.Canceled", err)
	}
	r.close()
	goleak.VerifyNone(t, leakOptions...)
}

// An effect in a lane of its own does not hold up the entity's other
// effects, its lane keeps its order, and Quiesce waits for every lane: a
// test that proves a negative with it cannot pass while a send is still in
// flight in another lane.
func TestALaneRunsApartInOrderAndQuiesceWaitsForIt(t *testing.T) {
	h := newFxHandlers()
	r, _ := startFx(t, h, nil)
	id := fxID("laned")
	r.ask(id, &releaseMsg{Effects: []any{&laneEff{"s1"}, &laneEff{"s2"}, &blockEff{"m1"}}})
	got := map[string]bool{}
	for range 2 {
		got[receive(t, "an effect to start", h.started)] = true
	}
	if !got["laned/s1"] || !got["laned/m1"] {
		t.Fatalf("started %v, want s1 and m1 (the main lane does not wait for the slow one)", got)
	}
	h.open("m1")
	if err := r.tree.Quiesce(100 * time.Millisecond); err == nil {
		t.Fatal("Quiesce returned nil while an effect of another lane was blocked")
	}
	if !empty(h.started) {
		t.Fatal("s2 started while s1 runs in the same lane")
	}
	h.open("s1")
	if s := receive(t, "s2 to start", h.started); s != "laned/s2" {
		t.Fatalf("after s1 %s started, want laned/s2", s)
	}
	h.open("s2")
	if err := r.tree.Quiesce(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := r.done(id), []string{"m1", "s1", "s2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("results handled: %v, want %v", got, want)
	}
}

// An entity is not passivated while an effect it released is queued or
// running: the effect's result comes back to the incarnation that released
// it. (An IM binding passivated under its chat send, and woken by the
// send's result, sent that reply a second time on its recovery.)
func TestAnEntityIsNotPassivatedWhileItsEffectRuns(t *testing.T) {
	h := newFxHandlers()
	k := fxKind{restarts: &atomic.Int64{}, spawns: &atomic.Int64{}}
	r := startRig(t, rigConfig{kinds: []Spec{Entity[fxState](k)}, effects: h.list(), env: Env{PassivateAfter: time.Minute}})
	id := fxID("sending")
	r.ask(id, &releaseMsg{Effects: []any{&blockEff{"slow send"}}})
	receive(t, "the effect to start", h.started)

	// The passivation check falls due while the effect runs; a Ping (which
	// is no activity) comes after it in the entity's mailbox, so once it is
	// answered the check has run, and a passivation it asked for reached
	// the kind supervisor before the effect's result can.
	r.clock.Advance(2 * time.Minute)
	if _, err := r.tree.Request(id, &Ping{}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	h.open("slow send")
	if err := r.tree.Quiesce(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := r.done(id), []string{"slow send"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("results handled: %v, want %v", got, want)
	}
	if n := k.spawns.Load(); n != 1 {
		t.Fatalf("the entity was started %d times; its effect's result woke a new incarnation", n)
	}

	// With nothing in flight, it passivates as usual.
	r.clock.Advance(2 * time.Minute)
	testwait.Until(t, "passivation once the effect is done", func() bool {
		ids, err := r.tree.LiveIDs("fx", 5*time.Second)
		return err == nil && len(ids) == 0
	})
}

// listingKind is fxKind saying it releases orphanEff and stepEff
// (actors.EffectLister).
type listingKind struct{ fxKind }

func (listingKind) Effects() []any {
	return []any{(*stepEff)(nil), (*orphanEff)(nil), (*actors.StartTimer)(nil)}
}

// A kind that says which effects it releases is refused at start when one
// of them has no handler, naming it, rather than dropping the effect the
// first time it is released; with a handler for each it starts.
func TestStartRefusesAKindWhoseListedEffectHasNoHandler(t *testing.T) {
	st, err := persistence.Open("db", persistence.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	k := listingKind{fxKind{restarts: new(atomic.Int64)}}
	step := Handle(func(context.Context, actors.Identity, *stepEff) any { return nil })
	_, err = Start(Options{Journal: st.Journal(), Kinds: []Spec{Entity[fxState](k)}, Effects: []Handler{step}})
	if err == nil || !strings.Contains(err.Error(), "fx releases *supervisor.orphanEff") || strings.Contains(err.Error(), "stepEff") {
		t.Fatalf("Start = %v, want it refused for orphanEff alone", err)
	}
	orphan := Handle(func(context.Context, actors.Identity, *orphanEff) any { return nil })
	tree, err := Start(Options{Journal: st.Journal(), Kinds: []Spec{Entity[fxState](k)}, Effects: []Handler{step, orphan}})
	if err != nil {
		t.Fatalf("Start with a handler for each listed effect: %v", err)
	}
	if err := tree.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
}
