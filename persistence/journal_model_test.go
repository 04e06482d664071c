package persistence

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// modelEntity is what the journal must hold for one entity.
type modelEntity struct {
	highest uint64
	events  map[uint64]bool // seqs still stored
	snaps   map[uint64]string
	active  bool
	listed  bool // has appended events, or saved a snapshot above 0, since it was last forgotten
}

// journalMachine drives a journal and a plain model with the same random
// operations and checks after every step that they agree.
type journalMachine struct {
	j      *Journal
	ids    []Identity
	model  map[Identity]*modelEntity
	nsnaps int
}

func (m *journalMachine) entity(t *rapid.T) (Identity, *modelEntity) {
	id := rapid.SampledFrom(m.ids).Draw(t, "id")
	return id, m.model[id]
}

func (m *journalMachine) Append(t *rapid.T) {
	id, e := m.entity(t)
	n := rapid.IntRange(0, 4).Draw(t, "n")
	mark := ActiveMark(rapid.IntRange(0, 2).Draw(t, "mark"))
	first := e.highest + 1
	if err := m.j.Append(id, first, payloads(id, first, n), mark); err != nil {
		t.Fatalf("append: %v", err)
	}
	for i := range n {
		e.events[first+uint64(i)] = true
	}
	if n > 0 {
		e.highest = first + uint64(n) - 1
		e.listed = true
	}
	switch mark {
	case MarkActive:
		e.active = true
	case MarkIdle:
		e.active = false
	}
}

func (m *journalMachine) DeleteUpTo(t *rapid.T) {
	id, e := m.entity(t)
	to := rapid.Uint64Range(0, e.highest+2).Draw(t, "to")
	if rapid.Bool().Draw(t, "all") {
		to = math.MaxUint64
	}
	if err := m.j.DeleteUpTo(id, to); err != nil {
		t.Fatalf("delete: %v", err)
	}
	for s := range e.events {
		if s <= to {
			delete(e.events, s)
		}
	}
}

func (m *journalMachine) SaveSnapshot(t *rapid.T) {
	id, e := m.entity(t)
	seq := rapid.Uint64Range(0, e.highest+1).Draw(t, "seq")
	m.nsnaps++
	data := string(payload(id, uint64(m.nsnaps)))
	if err := m.j.SaveSnapshot(id, seq, []byte(data)); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	e.snaps[seq] = data
	// A snapshot's seq counts as taken, even one ahead of the events, and
	// lists the entity.
	e.highest = max(e.highest, seq)
	if seq > 0 {
		e.listed = true
	}
}

func (m *journalMachine) DeleteSnapshotsUpTo(t *rapid.T) {
	id, e := m.entity(t)
	to := rapid.Uint64Range(0, e.highest+2).Draw(t, "to")
	if err := m.j.DeleteSnapshotsUpTo(id, to); err != nil {
		t.Fatalf("delete snapshots: %v", err)
	}
	for s := range e.snaps {
		if s <= to {
			delete(e.snaps, s)
		}
	}
}

func (m *journalMachine) Compact(t *rapid.T) {
	id, e := m.entity(t)
	seq := rapid.Uint64Range(0, e.highest).Draw(t, "seq")
	m.nsnaps++
	data := string(payload(id, uint64(m.nsnaps)))
	if err := m.j.Compact(id, seq, []byte(data)); err != nil {
		t.Fatalf("compact: %v", err)
	}
	for s := range e.snaps {
		if s < seq {
			delete(e.snaps, s)
		}
	}
	e.snaps[seq] = data
	for s := range e.events {
		if s <= seq {
			delete(e.events, s)
		}
	}
}

func (m *journalMachine) Forget(t *rapid.T) {
	id, _ := m.entity(t)
	if err := m.j.Forget(id); err != nil {
		t.Fatalf("forget: %v", err)
	}
	m.model[id] = newModelEntity()
}

func (m *journalMachine) Check(t *rapid.T) {
	listed := entities(t, m.j, "k")
	var wantActive []Identity
	for _, id := range m.ids {
		e := m.model[id]
		if h := mustHighest(t, m.j, id); h != e.highest {
			t.Fatalf("%s: highest %d, model %d", id, h, e.highest)
		}
		var seqs []uint64
		for s := range e.events {
			seqs = append(seqs, s)
		}
		slices.Sort(seqs)
		if got := replay(t, m.j, id, 0, math.MaxUint64, NoLimit); !sameRecords(got, want(id, seqs...)) {
			t.Fatalf("%s: replay %v, model %v", id, seqsOf(got), seqs)
		}
		snap, ok, err := m.j.LoadSnapshot(id, math.MaxUint64)
		if err != nil {
			t.Fatal(err)
		}
		var newest uint64
		var has bool
		for s := range e.snaps {
			if !has || s > newest {
				newest, has = s, true
			}
		}
		if ok != has || (has && (snap.Seq != newest || string(snap.Data) != e.snaps[newest])) {
			t.Fatalf("%s: snapshot %+v ok=%v, model newest %d (has=%v)", id, snap.Seq, ok, newest, has)
		}
		h, inIndex := listed[id]
		if inIndex != e.listed || h != e.highest && e.listed {
			t.Fatalf("%s: entity index says (%d, %v), model (%d, %v)", id, h, inIndex, e.highest, e.listed)
		}
		if e.active {
			wantActive = append(wantActive, id)
		}
	}
	if got := active(t, m.j, "k"); !slices.Equal(got, wantActive) {
		t.Fatalf("active %v, model %v", got, wantActive)
	}
}

func newModelEntity() *modelEntity {
	return &modelEntity{events: map[uint64]bool{}, snaps: map[uint64]string{}}
}

func TestJournalMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		st := openMem(t, Options{})
		// Identities whose keys are prefixes of one another, in sorted order.
		m := &journalMachine{
			j:     st.Journal(),
			ids:   []Identity{{Kind: "k", ID: "e"}, {Kind: "k", ID: "e1"}, {Kind: "k", ID: "f"}},
			model: map[Identity]*modelEntity{},
		}
		for _, id := range m.ids {
			m.model[id] = newModelEntity()
		}
		t.Repeat(rapid.StateMachineActions(m))
	})
}
