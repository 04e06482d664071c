package supervisor

import (
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/thatch-run/thatch/internal/testwait"
	"github.com/thatch-run/thatch/persistence"
)

// TestAnEntityThatCannotRecoverIsQuarantined is issue 11's third defect: an
// entity whose journal holds an event it cannot decode used to crash on
// every message, and status waited on it. Now it is quarantined once its
// restarts are spent: callers are told at once and why, the quarantine
// outlives a restart, the journal is kept, and Drop starts it afresh.
func TestAnEntityThatCannotRecoverIsQuarantined(t *testing.T) {
	fs := vfs.NewMem()
	st, err := persistence.Open("db", persistence.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	bad, good := counterID("bad"), counterID("good")
	// One undecodable event, marked active so that the start rehydrates it.
	if err := st.Journal().Append(bad, 1, [][]byte{[]byte("not an envelope")}, persistence.MarkActive); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	c := rigConfig{fs: fs, rows: true,
		policy: Policy{MaxRestarts: 2, Window: time.Minute, BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond}}
	r, _ := counterRig(t, 0, c)
	tree := r.tree
	testwait.Until(t, "the quarantine", func() bool { return len(tree.Quarantined()) == 1 })
	q := tree.Quarantined()[0]
	if q.Entity != bad.String() || !strings.Contains(q.Error, "event 1") {
		t.Fatalf("quarantine %+v", q)
	}
	begin := time.Now()
	_, err = tree.Request(bad, &getMsg{}, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "quarantined") {
		t.Fatalf("request to a quarantined entity: %v", err)
	}
	if waited := time.Since(begin); waited > 30*time.Second {
		t.Fatalf("the rejection took %v: it waited for a timeout", waited)
	}
	if _, err := tree.Request(good, &addMsg{N: 2}, 5*time.Second); err != nil {
		t.Fatalf("another entity of the kind: %v", err)
	}
	if high, _ := r.store.Journal().HighestSeq(bad); high != 1 {
		t.Fatalf("the quarantined journal holds %d events, want it kept", high)
	}
	r.close()

	r, _ = counterRig(t, 0, c)
	tree = r.tree
	if got := tree.Quarantined(); len(got) != 1 || got[0].Entity != bad.String() {
		t.Fatalf("after a restart: %+v", got)
	}
	if _, err := tree.Request(bad, &getMsg{}, time.Minute); err == nil || !strings.Contains(err.Error(), "quarantined") {
		t.Fatalf("after a restart, request: %v", err)
	}
	if err := tree.Drop(good); err == nil {
		t.Fatal("Drop of an entity that is not quarantined succeeded")
	}
	if err := tree.Drop(bad); err != nil {
		t.Fatal(err)
	}
	res, err := tree.Request(bad, &getMsg{}, 5*time.Second)
	if err != nil {
		t.Fatalf("after Drop: %v", err)
	}
	if s, ok := res.(counterState); !ok || s.Total != 0 {
		t.Fatalf("after Drop the entity answers %#v, want a fresh state", res)
	}
	if len(tree.Quarantined()) != 0 {
		t.Fatalf("still quarantined: %+v", tree.Quarantined())
	}
}
