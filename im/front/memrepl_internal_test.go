package front

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/persistence/memory"
)

// A change of another node's that the stream offers again after its
// deduplication window (published, a crash before its outbox row went,
// and more than an hour down) is skipped: the write that came after it
// on the stream stays, on this node and after its restart. A change
// published before the envelopes is applied as it was.
func TestAMemoryChangePublishedAgainIsNotAppliedOverANewerOne(t *testing.T) {
	dir := t.TempDir()
	open := func() (*memoryReplica, func()) {
		st, err := persistence.Open(dir, persistence.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ms, err := memory.Open(st, memory.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cfg := &config.Config{}
		cfg.Cluster.Node, cfg.Cluster.Listen = "n1", "127.0.0.1:1"
		f := &FrontEnd{cfg: cfg, rows: st.Rows(), mem: ms, log: hclog.NewNullLogger()}
		if err := f.openMemoryReplica(); err != nil || f.memRepl == nil {
			t.Fatalf("open the replica: %v (cluster enabled: %v)", err, cfg.Cluster.Enabled())
		}
		return f.memRepl, func() { ms.Close(); st.Close() }
	}
	change := func(seq uint64, content string) []byte {
		e := memory.Entry{Slug: "deploy", Store: "global", Label: "Deploy", Content: content, Confidence: 5}
		c, _ := json.Marshal(memory.Change{Store: "global", Slug: "deploy", Entry: &e})
		b, _ := json.Marshal(memoryEnvelope{Origin: "n2", Seq: seq, Change: c})
		return b
	}
	content := func(r *memoryReplica) string {
		e, err := r.f.mem.Get("global", "deploy")
		if err != nil {
			t.Fatal(err)
		}
		return e.Content
	}
	ctx := context.Background()
	r, closeAll := open()
	for _, data := range [][]byte{change(7, "make ship"), change(8, "make release"), change(7, "make ship")} {
		if err := r.apply(ctx, data); err != nil {
			t.Fatal(err)
		}
	}
	if got := content(r); got != "make release" {
		t.Fatalf("after a change published again: %q", got)
	}
	closeAll()
	r, closeAll = open()
	defer closeAll()
	if err := r.apply(ctx, change(8, "make ship")); err != nil {
		t.Fatal(err)
	}
	if got := content(r); got != "make release" {
		t.Fatalf("after a restart, a change applied before was applied again: %q", got)
	}
	e := memory.Entry{Slug: "deploy", Store: "global", Label: "Deploy", Content: "make bare", Confidence: 5}
	bare, _ := json.Marshal(memory.Change{Store: "global", Slug: "deploy", Entry: &e})
	if err := r.apply(ctx, bare); err != nil || content(r) != "make bare" {
		t.Fatalf("a bare change: %v, %q", err, content(r))
	}
}

// The memories a node held before it joined the cluster go to the outbox
// once, as seeds; a restart does not send them again, and a node that
// took part in the cluster before sends none.
func TestTheMemoriesHeldBeforeJoiningAreSharedOnce(t *testing.T) {
	st, ms := openTestMemory(t, t.TempDir())
	ctx := context.Background()
	for _, label := range []string{"Deploy", "Lint"} {
		if _, err := ms.Remember(ctx, memory.RememberInput{Store: "global", Label: label, Content: "make " + label, Confidence: 5}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &config.Config{}
	cfg.Cluster.Node, cfg.Cluster.Listen = "n1", "127.0.0.1:1"
	outbox := func() []memory.Change {
		var out []memory.Change
		_ = st.Rows().Scan(memoryOutbox, func(row persistence.Row) error {
			var c memory.Change
			if json.Unmarshal(row.Value, &c) == nil {
				out = append(out, c)
			}
			return nil
		})
		return out
	}
	for range 2 { // a restart seeds nothing again
		f := &FrontEnd{cfg: cfg, rows: st.Rows(), mem: ms, log: hclog.NewNullLogger()}
		if err := f.openMemoryReplica(); err != nil {
			t.Fatal(err)
		}
		ms.LogChanges(nil)
		got := outbox()
		if len(got) != 2 || !got[0].Seed || got[0].Entry == nil || got[0].Entry.Label != "Deploy" || got[1].Entry.Label != "Lint" {
			t.Fatalf("outbox %+v", got)
		}
	}

	st2, ms2 := openTestMemory(t, t.TempDir())
	if _, err := ms2.Remember(ctx, memory.RememberInput{Store: "global", Label: "Test", Content: "make test", Confidence: 5}); err != nil {
		t.Fatal(err)
	}
	if err := st2.Rows().Put(memoryApplied, "n2", []byte("7")); err != nil {
		t.Fatal(err)
	}
	f := &FrontEnd{cfg: cfg, rows: st2.Rows(), mem: ms2, log: hclog.NewNullLogger()}
	if err := f.openMemoryReplica(); err != nil {
		t.Fatal(err)
	}
	n := 0
	_ = st2.Rows().Scan(memoryOutbox, func(persistence.Row) error { n++; return nil })
	if n != 0 {
		t.Fatalf("a node of the cluster seeded %d memories", n)
	}
}

// The outbox's keys go on from the largest given out before, whatever
// the clock says now (a clock stepped back would make the other nodes
// skip the new changes as applied before); a store that was a cluster's
// before (its id row) seeds nothing.
func TestTheMemoryKeysGoOnWhateverTheClock(t *testing.T) {
	st, ms := openTestMemory(t, t.TempDir())
	ctx := context.Background()
	if _, err := ms.Remember(ctx, memory.RememberInput{Store: "global", Label: "Old", Content: "kept here", Confidence: 5}); err != nil {
		t.Fatal(err)
	}
	if err := st.Rows().Put(clusterTable, instanceKey, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	ahead := uint64(time.Now().Add(time.Hour).UnixNano())
	if err := st.Rows().Put(clusterTable, memorySeqKey, []byte(strconv.FormatUint(ahead, 10))); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{}
	cfg.Cluster.Node, cfg.Cluster.Listen = "n1", "127.0.0.1:1"
	f := &FrontEnd{cfg: cfg, rows: st.Rows(), mem: ms, log: hclog.NewNullLogger()}
	if err := f.openMemoryReplica(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	_ = st.Rows().Scan(memoryOutbox, func(row persistence.Row) error { keys = append(keys, row.Key); return nil })
	if len(keys) != 0 {
		t.Fatalf("a store of a cluster seeded %v", keys)
	}
	if _, err := ms.Remember(ctx, memory.RememberInput{Store: "global", Label: "New", Content: "made now", Confidence: 5}); err != nil {
		t.Fatal(err)
	}
	_ = st.Rows().Scan(memoryOutbox, func(row persistence.Row) error { keys = append(keys, row.Key); return nil })
	if len(keys) != 1 {
		t.Fatalf("outbox %v", keys)
	}
	if n, _ := strconv.ParseUint(keys[0], 10, 64); n <= ahead {
		t.Fatalf("the new change's key %d is not after the last one given out, %d", n, ahead)
	}
}

// openTestMemory opens a store and its memory in dir, closed when the
// test ends.
func openTestMemory(t *testing.T, dir string) (*persistence.Store, *memory.Store) {
	t.Helper()
	st, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := memory.Open(st, memory.Options{})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close(); st.Close() })
	return st, ms
}
