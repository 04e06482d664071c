package supervisor

import (
	"sync"
	"testing"
	"time"

	"github.com/thatch-run/thatch/internal/testwait"
	"github.com/thatch-run/thatch/persistence"
)

// A journal forget (a synced batch) does not run on the kind supervisor,
// through which every message of the kind passes: while one is held, the
// kind's other entities are routed and answer, and a message for the
// entity being forgotten waits until the forget is done, then wakes a
// fresh entity with an empty state.
func TestForgetDoesNotHoldUpTheKindsOtherEntities(t *testing.T) {
	p := newProbe(0)
	r := startRig(t, rigConfig{kinds: []Spec{Entity[counterState](p)}, env: Env{PassivateAfter: time.Minute}})
	gone, other := counterID("gone"), counterID("other")
	r.ask(gone, &addMsg{N: 5})
	r.ask(other, &addMsg{N: 1})
	r.clock.Advance(2 * time.Minute)
	testwait.Until(t, "passivation", func() bool { return len(r.live()) == 0 })

	started := make(chan persistence.Identity, 1)
	release := make(chan struct{})
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	t.Cleanup(let) // runs before the rig's cleanup, which stops the tree
	forget := r.tree.forget
	r.tree.forget = func(id persistence.Identity) error {
		started <- id
		<-release
		return forget(id)
	}
	type result struct {
		forgotten bool
		err       error
	}
	done := make(chan result, 1)
	go func() {
		// The entity may not have finished stopping yet, and a forget
		// spares an entity that is stopping: try until one is under way.
		for {
			ok, err := r.tree.ForgetPassive(gone, 10*time.Second)
			if ok || err != nil {
				done <- result{ok, err}
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	if id := receive(t, "the forget to start", started); id != (persistence.Identity{Kind: "counter", ID: "gone"}) {
		t.Fatalf("forgetting %v, want counter/gone", id)
	}

	if got := r.ask(other, &addMsg{N: 2}); got != 3 {
		t.Fatalf("a passivated entity woken during the forget answered %v, want 3", got)
	}
	if got := r.ask(counterID("new"), &addMsg{N: 7}); got != 7 {
		t.Fatalf("a new entity spawned during the forget answered %v, want 7", got)
	}
	waiting := r.send(gone, &getMsg{})
	for _, id := range r.live() {
		if id == "gone" {
			t.Fatal("the entity being forgotten was spawned before its journal was gone")
		}
	}
	if !empty(waiting) {
		t.Fatal("the entity being forgotten answered before its forget ended")
	}

	let()
	if res := receive(t, "ForgetPassive", done); !res.forgotten || res.err != nil {
		t.Fatalf("ForgetPassive: %v, %v", res.forgotten, res.err)
	}
	if got := receive(t, "the held message's answer", waiting); got.(counterState) != (counterState{}) {
		t.Fatalf("the entity woken after the forget has state %+v, want an empty one", got)
	}
	if got := r.ask(gone, &addMsg{N: 4}); got != 4 {
		t.Fatalf("the forgotten entity answered %v, want 4", got)
	}
	if high, _ := r.store.Journal().HighestSeq(gone); high != 1 {
		t.Fatalf("the forgotten entity's journal ends at %d, want 1", high)
	}
}
