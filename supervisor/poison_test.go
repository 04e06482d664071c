package supervisor

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// fragileKind fails in each place an entity runs a kind's code: its
// Decide of a Recovered (while failRecover counts down from above zero),
// the Encode of an event it decided (an event type the codec does not
// know), and the Apply of one.
type fragileKind struct {
	counterKind
	failRecover *atomic.Int64
}

type (
	unencodableMsg struct{}
	applyPanicMsg  struct{}
	// notRegistered is an event type the codec refuses.
	notRegistered struct{}
	// applyPanics is an event whose Apply panics.
	applyPanics struct{}
)

func init() { messages.Register[applyPanics]("test.apply_panics", 1) }

func (fragileKind) Name() string { return "fragile" }
func (k fragileKind) Decide(s *counterState, msg any, now time.Time) actors.Decision {
	switch msg.(type) {
	case *actors.Recovered:
		if k.failRecover.Add(-1) >= 0 {
			panic("test: Recovered fails")
		}
		return actors.Decision{}
	case *unencodableMsg:
		return actors.Decision{Events: []any{&notRegistered{}}, Reply: "decided"}
	case *applyPanicMsg:
		return actors.Decision{Events: []any{&applyPanics{}}, Reply: "decided"}
	}
	return k.counterKind.Decide(s, msg, now)
}
func (k fragileKind) Apply(s *counterState, ev any) *counterState {
	if _, ok := ev.(*applyPanics); ok {
		panic("test: Apply fails")
	}
	return k.counterKind.Apply(s, ev)
}

func startFragile(t *testing.T, failRecover int64) (*rig, *atomic.Int64) {
	t.Helper()
	n := &atomic.Int64{}
	n.Store(failRecover)
	k := fragileKind{counterKind: counterKind{recoveries: &atomic.Int64{}, crashes: &atomic.Int64{}}, failRecover: n}
	return startRig(t, rigConfig{kinds: []Spec{Entity[counterState](k)}, env: Env{MaxRedeliveries: 2}}), n
}

func fragileID(id string) actors.Identity { return actors.Identity{Kind: "fragile", ID: id} }

// A message whose decided event cannot be encoded, or whose event's Apply
// panics, is poison like one whose Decide panics: dropped (rejected)
// after MaxRedeliveries, and the entity goes on with the next message.
func TestAPanicInEncodeOrApplyIsCountedAsPoison(t *testing.T) {
	for _, msg := range []any{&unencodableMsg{}, &applyPanicMsg{}} {
		r, _ := startFragile(t, 0)
		id := fragileID("e")
		r.ask(id, &addMsg{N: 2})
		bad := r.send(id, msg)
		after := r.send(id, &addMsg{N: 3})
		var rej *Rejected
		if res := receive(t, "the poison answer", bad); !errors.As(asError(res), &rej) {
			t.Fatalf("%T answered %v, want a *Rejected", msg, res)
		}
		if got := receive(t, "the next answer", after); got != 5 {
			t.Fatalf("after %T the next add answered %v, want 5", msg, got)
		}
		if drops := r.failures("drop"); len(drops) != 1 {
			t.Fatalf("after %T recorded drops %+v, want one", msg, drops)
		}
		r.close()
	}
}

// A Recovered that panics at every start is dropped as poison after
// MaxRedeliveries: the entity then runs (without it) instead of restarting
// until the policy gives up.
func TestARecoveredThatAlwaysPanicsIsDroppedAsPoison(t *testing.T) {
	r, _ := startFragile(t, 1000)
	id := fragileID("r")
	if got := r.ask(id, &addMsg{N: 4}); got != 4 {
		t.Fatalf("add answered %v, want 4", got)
	}
	if drops := r.failures("drop"); len(drops) != 1 || drops[0].Entity != "fragile/r" {
		t.Fatalf("recorded drops %+v, want one for fragile/r", drops)
	}
}

func asError(v any) error {
	err, _ := v.(error)
	return err
}
