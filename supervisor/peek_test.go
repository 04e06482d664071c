package supervisor

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/thatch-run/thatch/internal/testwait"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
)

// Status reads a passivated entity from its journal: Peek gives what the
// live entity's Inspect gave, and the entity stays passivated (it is not
// spawned, and does not recover).
func TestPeekReadsAPassivatedEntityWithoutWakingIt(t *testing.T) {
	p := newProbe(0)
	r := startRig(t, rigConfig{kinds: []Spec{Entity[counterState](p)}, env: Env{PassivateAfter: time.Minute, SnapshotEvery: 2}})
	id := counterID("asleep")
	r.ask(id, &addMsg{N: 3})
	r.ask(id, &armMsg{On: true})
	r.ask(id, &addMsg{N: 4}) // after the snapshot at 2
	res, err := r.tree.Request(id, &Inspect{}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	awake := res.(*Inspection)
	r.clock.Advance(time.Minute)
	testwait.Until(t, "passivation", func() bool { return len(r.live()) == 0 })
	p.mu.Lock()
	spawns := len(p.recovered)
	p.mu.Unlock()

	in, ok, err := r.tree.Peek(id)
	if err != nil || !ok {
		t.Fatalf("Peek: %v, ok %v", err, ok)
	}
	if in.Seq != awake.Seq || in.Active != awake.Active || in.View != awake.View {
		t.Errorf("Peek = %+v, want what the live entity answered, %+v", *in, *awake)
	}
	if want := (counterState{Total: 7, Armed: true}); in.View != want || in.Seq != 3 || !in.Active {
		t.Errorf("Peek = %+v, want seq 3, active, view %+v", *in, want)
	}
	if got := r.live(); len(got) != 0 {
		t.Errorf("Peek woke %v", got)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.recovered) != spawns {
		t.Errorf("Peek spawned the entity: %d recoveries, want %d", len(p.recovered), spawns)
	}
}

// A compaction that runs between Peek's read of the snapshot and its read
// of the events (the entity woke meanwhile) would leave the events it
// deleted out of the view: Peek sees that the events do not follow the
// snapshot, or stop short of the entity's sequence number, and reads again.
func TestPeekReadsAgainWhenACompactionRanUnderIt(t *testing.T) {
	totals := []int{1, 3, 7, 15, 31} // after each of the events 1..5
	for _, c := range []struct{ before, at uint64 }{{0, 3}, {0, 5}, {3, 5}} {
		before, at := c.before, c.at
		t.Run(fmt.Sprintf("snapshot at %d, compacted to %d", before, at), func(t *testing.T) {
			p := newProbe(0)
			r := startRig(t, rigConfig{kinds: []Spec{Entity[counterState](p)}, env: Env{PassivateAfter: time.Minute}})
			id := counterID("compacted")
			for _, n := range []int{1, 2, 4, 8, 16} {
				r.ask(id, &addMsg{N: n})
			}
			r.clock.Advance(time.Minute)
			testwait.Until(t, "passivation", func() bool { return len(r.live()) == 0 })
			if before > 0 {
				old, err := messages.Encode(&counterState{Total: totals[before-1]})
				if err != nil {
					t.Fatal(err)
				}
				if err := r.store.Journal().Compact(id, before, old); err != nil {
					t.Fatal(err)
				}
			}
			snap, err := messages.Encode(&counterState{Total: totals[at-1]})
			if err != nil {
				t.Fatal(err)
			}
			compact := func() {
				if err := r.store.Journal().Compact(id, at, snap); err != nil {
					t.Errorf("compact: %v", err)
				}
			}
			r.jr.beforeReplay.Store(&compact)

			in, ok, err := r.tree.Peek(id)
			if err != nil || !ok {
				t.Fatalf("Peek: %v, ok %v", err, ok)
			}
			if r.jr.beforeReplay.Load() != nil {
				t.Fatal("the compaction did not run under the read")
			}
			if want := (counterState{Total: 31}); in.View != want || in.Seq != 5 {
				t.Errorf("Peek = %+v, want seq 5 and view %+v (the snapshot at %d and the events after it)", *in, want, at)
			}
		})
	}
}

// An entity whose journal holds an event that cannot be decoded shows the
// error to status without being spawned, and is quarantined (so that
// thatch repair lists it) as its restarts would have ended.
func TestPeekQuarantinesAnEntityWhoseJournalCannotBeDecoded(t *testing.T) {
	p := newProbe(0)
	r := startRig(t, rigConfig{kinds: []Spec{Entity[counterState](p)}, env: Env{PassivateAfter: time.Minute}})
	id := counterID("broken")
	r.ask(id, &addMsg{N: 1})
	r.clock.Advance(time.Minute)
	testwait.Until(t, "passivation", func() bool { return len(r.live()) == 0 })
	if err := r.store.Journal().Append(id, 2, [][]byte{[]byte("not an event")}, persistence.MarkUnchanged); err != nil {
		t.Fatal(err)
	}

	_, _, err := r.tree.Peek(id)
	if err == nil || !strings.Contains(err.Error(), "event 2") {
		t.Fatalf("Peek: %v, want the error of event 2", err)
	}
	if q := r.tree.Quarantined(); len(q) != 1 || q[0].Entity != id.String() {
		t.Errorf("quarantined %+v, want %s", q, id)
	}
	if got := r.live(); len(got) != 0 {
		t.Errorf("Peek woke %v", got)
	}
	if _, ok, err := r.tree.Peek(id); ok || err != nil {
		t.Errorf("Peek of the quarantined entity: ok %v, %v; want the caller sent to the entity's own answer", ok, err)
	}
}

// Peek of an entity that is live reads its journal too; an event there
// that cannot be decoded does not quarantine the running entity, which
// keeps getting its messages (its own restarts decide about it).
func TestPeekNeverQuarantinesALiveEntity(t *testing.T) {
	p := newProbe(0)
	r := startRig(t, rigConfig{kinds: []Spec{Entity[counterState](p)}, env: Env{PassivateAfter: time.Minute}})
	id := counterID("running")
	r.ask(id, &addMsg{N: 1})
	if err := r.store.Journal().Append(id, 2, [][]byte{[]byte("not an event")}, persistence.MarkUnchanged); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.tree.Peek(id); err == nil {
		t.Fatal("Peek read an event that cannot be decoded")
	}
	if q := r.tree.Quarantined(); len(q) != 0 {
		t.Errorf("quarantined %+v while the entity runs", q)
	}
	if got := r.ask(id, &getMsg{}); got != (counterState{Total: 1}) {
		t.Errorf("the running entity answered %v, want its state", got)
	}
}
