package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/supervisor"
)

// The benchmark entity is a stand-in for a session family: its state keeps a
// running total and the last few notes (like a family keeps buffered
// interactions), and each event carries one note. Sizes are fixed so that
// runs compare: an encoded event is about eventBytes long, a snapshot (and a
// SQLite state row) about 4x that.
const (
	benchKind   = "bench.entity"
	eventBytes  = 200
	recentNotes = 4
	// snapshotEvery and passivateAfter are the daemon's defaults
	// (config.Defaults).
	snapshotEvery  = 100
	passivateAfter = 5 * time.Minute
)

// entityState is the benchmark entity's state. The SQLite baseline stores it
// as one JSON row per entity.
type entityState struct {
	ID     string   `json:"id"`
	Seq    uint64   `json:"seq"`
	Total  int64    `json:"total"`
	Armed  bool     `json:"armed"`
	Recent []string `json:"recent,omitempty"`
}

// noted is the benchmark entity's one event.
type noted struct {
	N    int64  `json:"n"`
	Note string `json:"note"`
}

func init() {
	messages.Register[entityState]("bench.entity_state", 1)
	messages.Register[noted]("bench.noted", 1)
}

// Messages of the benchmark kind.
type (
	// addNote journals one noted event and replies with the new total.
	addNote struct{ N int64 }
	// touch changes nothing and replies nothing: it wakes an entity.
	touch struct{}
	// getState replies with a copy of the state.
	getState struct{}
)

// benchEntity is the benchmark's actors.Kind.
type benchEntity struct{}

func (benchEntity) Name() string                   { return benchKind }
func (benchEntity) Initial(id string) *entityState { return &entityState{ID: id} }
func (benchEntity) Active(s *entityState) bool     { return s.Armed }

func (benchEntity) Decide(s *entityState, msg any, _ time.Time) actors.Decision {
	switch m := msg.(type) {
	case *addNote:
		return actors.Decision{Events: []any{&noted{N: m.N, Note: noteFor(s.ID, s.Seq+1)}}, Reply: s.Total + m.N}
	case *getState:
		c := *s
		c.Recent = append([]string(nil), s.Recent...)
		return actors.Decision{Reply: &c}
	}
	return actors.Decision{}
}

// entityView is the benchmark kind's status view.
type entityView struct {
	ID  string `json:"id"`
	Seq uint64 `json:"seq"`
}

func (benchEntity) View(s *entityState) any { return entityView{ID: s.ID, Seq: s.Seq} }

func (benchEntity) Apply(s *entityState, ev any) *entityState {
	e, ok := ev.(*noted)
	if !ok {
		return s
	}
	n := *s
	n.Seq++
	n.Total += e.N
	n.Recent = appendRecent(s.Recent, e.Note)
	return &n
}

// appendRecent returns recent with note added, keeping the last recentNotes,
// without changing recent's backing array.
func appendRecent(recent []string, note string) []string {
	keep := recent
	if len(keep) >= recentNotes {
		keep = keep[len(keep)-recentNotes+1:]
	}
	out := make([]string, 0, recentNotes)
	return append(append(out, keep...), note)
}

// noteFor is the deterministic note of event seq of entity id, sized so that
// the encoded event is about eventBytes long.
func noteFor(id string, seq uint64) string {
	head := fmt.Sprintf("%s#%d ", id, seq)
	const body = 160 // + envelope and JSON keys ~= eventBytes
	if len(head) >= body {
		return head
	}
	return head + strings.Repeat("x", body-len(head))
}

// encodedEvent is event seq of id as the entity runtime journals it.
func encodedEvent(id string, seq uint64) []byte {
	b, err := messages.Encode(&noted{N: 1, Note: noteFor(id, seq)})
	if err != nil {
		panic(err) // the type is registered in init; this cannot fail
	}
	return b
}

// stateAfter is the state of entity id after events 1..seq, all with N=1,
// as Apply builds it.
func stateAfter(id string, seq uint64, armed bool) *entityState {
	s := &entityState{ID: id, Seq: seq, Total: int64(seq), Armed: armed}
	for i := seq - min(seq, recentNotes) + 1; i <= seq; i++ {
		s.Recent = append(s.Recent, noteFor(id, i))
	}
	return s
}

// entityID is the id of the i-th benchmark entity.
func entityID(i int) string { return fmt.Sprintf("ses_%08d", i) }

func ident(id string) persistence.Identity {
	return persistence.Identity{Kind: benchKind, ID: id}
}

// benchEnv is the entity environment of every benchmark tree: the daemon's
// default snapshot and passivation settings, no logging.
func benchEnv() supervisor.Env {
	return supervisor.Env{
		Clock:          actors.RealClock{},
		Logger:         hclog.NewNullLogger(),
		SnapshotEvery:  snapshotEvery,
		PassivateAfter: passivateAfter,
	}
}
