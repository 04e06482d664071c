package supervisor

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/thatch-run/thatch/internal/testwait"
)

// A restart waiting out its backoff when the tree stops is cancelled: its
// timer is stopped (it would otherwise restart an entity of a stopped tree
// an hour later), the requester whose message failed is told, and nothing
// the tree started is left running.
func TestStopCancelsAPendingRestart(t *testing.T) {
	p := newProbe(1)
	r := startRig(t, rigConfig{kinds: []Spec{Entity[counterState](p)},
		policy: Policy{MaxRestarts: 5, Window: time.Hour, BackoffBase: time.Hour, BackoffMax: 2 * time.Hour}})
	id := counterID("backoff")
	r.ask(id, &addMsg{N: 1})
	crash := r.send(id, &crashMsg{})

	// The failure is recorded before its restart is scheduled; wait for
	// the schedule itself.
	var pending []*time.Timer
	testwait.Until(t, "a pending restart", func() bool {
		r.tree.mu.Lock()
		defer r.tree.mu.Unlock()
		pending = pending[:0]
		for tm := range r.tree.restarts {
			pending = append(pending, tm)
		}
		return len(pending) == 1
	})
	if got := r.failures("restart"); len(got) != 1 {
		t.Fatalf("recorded restarts %+v, want one", got)
	}

	if err := r.tree.Stop(5 * time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}
	// Stop on a timer reports whether it was still pending: Stop must
	// have stopped it already.
	for _, tm := range pending {
		if tm.Stop() {
			t.Fatal("the restart timer was still pending after Stop")
		}
	}
	res := receive(t, "the crashed message's answer", crash)
	var rej *Rejected
	if err, _ := res.(error); !errors.As(err, &rej) {
		t.Fatalf("the message waiting for the restart was answered %v, want a *Rejected", res)
	}
	if n := p.crashes.Load(); n != 1 {
		t.Fatalf("the crash message was decided %d times, want once (no restart ran)", n)
	}
	r.close()
	goleak.VerifyNone(t, leakOptions...)
}

// The tree subscribes to its actor system's event stream for dead letters
// and leaves it at Stop, when it shuts the system down.
func TestStopRemovesTheDeadLetterSubscription(t *testing.T) {
	r := startRig(t, rigConfig{kinds: []Spec{Entity[counterState](newProbe(0))}})
	sys := r.tree.System()
	before := sys.EventStream.Length() - 1
	if before < 0 {
		t.Fatal("the tree did not subscribe to its system's event stream")
	}
	r.ask(counterID("s"), &addMsg{N: 1})
	if err := r.tree.Stop(5 * time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if got := sys.EventStream.Length(); got != before {
		t.Fatalf("event stream subscriptions after Stop: %d, want %d", got, before)
	}
	r.close()
	goleak.VerifyNone(t, leakOptions...)
}
