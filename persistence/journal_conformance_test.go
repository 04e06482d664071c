package persistence

// The journal and snapshot conformance suite. Its cases follow the facts that
// Akka's persistence TCK (JournalSpec, SnapshotStoreSpec) checks for every
// journal plugin, restated for thatch's API.

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/thatch-run/thatch/messages"
)

var (
	idA = Identity{Kind: "parent", ID: "ses_1"}
	idB = Identity{Kind: "parent", ID: "ses_2"}
)

func TestReplayRanges(t *testing.T) {
	st := openMem(t, Options{})
	j := st.Journal()
	mustAppend(t, j, idA, 1, 2, MarkUnchanged)
	mustAppend(t, j, idA, 3, 3, MarkUnchanged) // 1..5 in two batches
	mustAppend(t, j, idB, 1, 9, MarkUnchanged) // a neighbour that must not leak in

	tests := []struct {
		name          string
		from, to, max uint64
		want          []uint64
	}{
		{"full", 1, math.MaxUint64, NoLimit, seqRange(1, 5)},
		{"from zero means from the start", 0, math.MaxUint64, NoLimit, seqRange(1, 5)},
		{"bounded", 2, 4, NoLimit, seqRange(2, 4)},
		{"single", 3, 3, NoLimit, []uint64{3}},
		{"upper bound past the end", 4, 100, NoLimit, seqRange(4, 5)},
		{"lower bound past the end", 6, math.MaxUint64, NoLimit, nil},
		{"max 0 returns nothing", 1, math.MaxUint64, 0, nil},
		{"max 1 returns exactly one", 1, math.MaxUint64, 1, []uint64{1}},
		{"max inside a range", 2, 5, 2, seqRange(2, 3)},
		{"max larger than the range", 2, 3, 10, seqRange(2, 3)},
		{"lower above upper returns nothing", 4, 2, NoLimit, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := replay(t, j, idA, tc.from, tc.to, tc.max)
			if !sameRecords(got, want(idA, tc.want...)) {
				t.Fatalf("replay [%d,%d] max %d: got seqs %v, want %v", tc.from, tc.to, tc.max, seqsOf(got), tc.want)
			}
		})
	}
}

func TestReplayUnknownEntityIsEmpty(t *testing.T) {
	st := openMem(t, Options{})
	j := st.Journal()
	// Neighbours whose keys share a prefix with the unknown identity.
	mustAppend(t, j, Identity{Kind: "parent", ID: "ses"}, 1, 3, MarkUnchanged)
	mustAppend(t, j, Identity{Kind: "parent", ID: "ses_10"}, 1, 3, MarkUnchanged)
	mustAppend(t, j, Identity{Kind: "parentx", ID: "ses_1"}, 1, 3, MarkUnchanged)

	if got := replay(t, j, idA, 1, math.MaxUint64, NoLimit); len(got) != 0 {
		t.Fatalf("unknown entity replayed %v", seqsOf(got))
	}
	if h := mustHighest(t, j, idA); h != 0 {
		t.Fatalf("unknown entity has highest seq %d, want 0", h)
	}
	if _, ok, err := j.LoadSnapshot(idA, math.MaxUint64); err != nil || ok {
		t.Fatalf("unknown entity has a snapshot (ok=%v, err=%v)", ok, err)
	}
}

func TestReplayStopsAtCallbackError(t *testing.T) {
	st := openMem(t, Options{})
	j := st.Journal()
	mustAppend(t, j, idA, 1, 5, MarkUnchanged)
	stop := errors.New("stop here")
	var seen []uint64
	err := j.Replay(idA, 1, math.MaxUint64, NoLimit, func(seq uint64, _ []byte) error {
		seen = append(seen, seq)
		if seq == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("replay returned %v, want the callback's error", err)
	}
	if !slices.Equal(seen, []uint64{1, 2}) {
		t.Fatalf("callback saw %v after stopping at 2", seen)
	}
}

// TestCompactEverythingKeepsTheNumbering covers the actor's own use of
// Compact (a snapshot at its last event): the snapshot alone carries the
// highest seq, the entity stays listed, and the next append goes on from it.
func TestCompactEverythingKeepsTheNumbering(t *testing.T) {
	st := openMem(t, Options{})
	j := st.Journal()
	// Two appends: the first writes the highest-seq key (1), the second
	// does not, so after the compaction only the snapshot says 5.
	mustAppend(t, j, idA, 1, 1, MarkUnchanged)
	mustAppend(t, j, idA, 2, 4, MarkUnchanged)
	if err := j.Compact(idA, 5, []byte("state@5")); err != nil {
		t.Fatal(err)
	}
	if got := replay(t, j, idA, 0, math.MaxUint64, NoLimit); len(got) != 0 {
		t.Fatalf("events left after compacting everything: %v", seqsOf(got))
	}
	if h := mustHighest(t, j, idA); h != 5 {
		t.Fatalf("highest after compacting everything: %d, want 5", h)
	}
	if ids := entities(t, j, idA.Kind); ids[idA] != 5 {
		t.Fatalf("compacted entity not listed: %v", ids)
	}
	// Deleting the snapshot too must not lose the number.
	if err := j.DeleteSnapshotsUpTo(idA, math.MaxUint64); err != nil {
		t.Fatal(err)
	}
	if h := mustHighest(t, j, idA); h != 5 {
		t.Fatalf("highest after deleting the only snapshot: %d, want 5", h)
	}
	// The next append goes on from it.
	mustAppend(t, j, idA, 6, 1, MarkUnchanged)
	if h := mustHighest(t, j, idA); h != 6 {
		t.Fatalf("highest after appending 6: %d", h)
	}
	if got := replay(t, j, idA, 0, math.MaxUint64, NoLimit); !slices.Equal(seqsOf(got), []uint64{6}) {
		t.Fatalf("events after the append: %v", seqsOf(got))
	}
	// Compact on an unknown entity at 0 (a rapid finding) lists nothing.
	if err := j.Compact(idB, 0, []byte("empty")); err != nil {
		t.Fatal(err)
	}
	if h := mustHighest(t, j, idB); h != 0 {
		t.Fatalf("compact at 0 of an unknown entity: highest %d", h)
	}
	ids := entities(t, j, idB.Kind)
	if _, listed := ids[idB]; listed {
		t.Fatalf("compact at 0 listed an unknown entity: %v", ids)
	}
}

// TestUnsyncedCompactIsAllOrNothing: Compact does not wait for an fsync, so
// a crash right after it may keep or lose it, but never half of it: the
// state after the crash replays to the same events either way.
func TestUnsyncedCompactIsAllOrNothing(t *testing.T) {
	// The snapshot spans several WAL blocks, so a crash can keep some of
	// the compaction's bytes and not others; it must still be all or
	// nothing. Clones keep 0%..100% of the unsynced data, with several
	// random draws in between.
	snapData := bytes.Repeat([]byte("state@8;"), 12_000)
	var kept, lost int
	for i, percent := range []int{0, 100, 30, 50, 50, 70, 70, 90} {
		mem := vfs.NewCrashableMem()
		st := openMem(t, Options{FS: mem})
		j := st.Journal()
		mustAppend(t, j, idA, 1, 1, MarkUnchanged) // the highest-seq key says 1
		mustAppend(t, j, idA, 2, 7, MarkUnchanged)
		if err := j.Compact(idA, 8, snapData); err != nil {
			t.Fatal(err)
		}
		// An unsynced write behind it fills the WAL block the compaction
		// ends in, so that all of its bytes reach the file, unsynced.
		if err := st.db.Set([]byte("zz-filler"), bytes.Repeat([]byte{'f'}, 64<<10), pebble.NoSync); err != nil {
			t.Fatal(err)
		}
		// The WAL writer hands full blocks to the file in the background.
		// A clone that keeps every unsynced byte is retried until it
		// holds them, so that the kept outcome is seen for sure.
		var rj *Journal
		var events []record
		var snap Snapshot
		var ok bool
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: percent, RNG: rand.New(rand.NewPCG(1, uint64(i)))})
			re := openMem(t, Options{FS: crashed})
			rj = re.Journal()
			events = replay(t, rj, idA, 0, math.MaxUint64, NoLimit)
			var err error
			if snap, ok, err = rj.LoadSnapshot(idA, math.MaxUint64); err != nil {
				t.Fatal(err)
			}
			if percent < 100 || ok || time.Now().After(deadline) {
				break
			}
			closeQuietly(t, re)
		}
		switch {
		case ok && snap.Seq == 8 && bytes.Equal(snap.Data, snapData) && len(events) == 0:
			kept++ // the compaction survived whole
		case !ok && sameRecords(events, want(idA, seqRange(1, 8)...)):
			lost++ // it was lost whole: every event is still there
		default:
			t.Fatalf("%d%% unsynced kept: snapshot ok=%v seq=%d (%d bytes) with events %v: a torn compaction",
				percent, ok, snap.Seq, len(snap.Data), seqsOf(events))
		}
		if h := mustHighest(t, rj, idA); h != 8 {
			t.Fatalf("%d%% unsynced kept: highest %d, want 8", percent, h)
		}
		// A synced append after Compact makes it durable.
		mustAppend(t, j, idA, 9, 1, MarkUnchanged)
		after := openMem(t, Options{FS: mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})})
		if snap, ok, err := after.Journal().LoadSnapshot(idA, math.MaxUint64); err != nil || !ok || snap.Seq != 8 {
			t.Fatalf("a synced append did not make the compaction durable: %+v ok=%v err=%v", snap.Seq, ok, err)
		}
	}
	// Both outcomes must have happened, or the test checked only one.
	if kept == 0 || lost == 0 {
		t.Errorf("the compaction was kept by %d clones and lost by %d: want both outcomes", kept, lost)
	}
}

func TestHighestSequence(t *testing.T) {
	st := openMem(t, Options{})
	j := st.Journal()
	if h := mustHighest(t, j, idA); h != 0 {
		t.Fatalf("unknown entity: highest %d, want 0", h)
	}
	mustAppend(t, j, idA, 1, 3, MarkUnchanged)
	mustAppend(t, j, idA, 4, 4, MarkUnchanged)
	if h := mustHighest(t, j, idA); h != 7 {
		t.Fatalf("after appending 1..7: highest %d, want 7", h)
	}
	// Events alone do not move it: a mark-only append keeps it.
	if err := j.Append(idA, 8, nil, MarkActive); err != nil {
		t.Fatal(err)
	}
	if h := mustHighest(t, j, idA); h != 7 {
		t.Fatalf("after a mark-only append: highest %d, want 7", h)
	}
}

func TestDeleteUpToKeepsHighestSequence(t *testing.T) {
	tests := []struct {
		name       string
		deleteTo   uint64
		wantReplay []uint64
	}{
		{"nothing", 0, seqRange(1, 6)},
		{"partial", 3, seqRange(4, 6)},
		{"exactly everything", 6, nil},
		{"past the end", 100, nil},
		{"no limit", math.MaxUint64, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := openMem(t, Options{})
			j := st.Journal()
			mustAppend(t, j, idA, 1, 6, MarkUnchanged)
			mustAppend(t, j, idB, 1, 6, MarkUnchanged)
			if err := j.DeleteUpTo(idA, tc.deleteTo); err != nil {
				t.Fatal(err)
			}
			if got := replay(t, j, idA, 1, math.MaxUint64, NoLimit); !sameRecords(got, want(idA, tc.wantReplay...)) {
				t.Fatalf("replay after delete up to %d: %v, want %v", tc.deleteTo, seqsOf(got), tc.wantReplay)
			}
			if h := mustHighest(t, j, idA); h != 6 {
				t.Fatalf("delete lowered the highest seq to %d, want 6", h)
			}
			if got := replay(t, j, idB, 1, math.MaxUint64, NoLimit); len(got) != 6 {
				t.Fatalf("delete of %s removed events of %s: %v left", idA, idB, seqsOf(got))
			}
			// The entity goes on from its highest seq, not from the deleted range.
			mustAppend(t, j, idA, 7, 1, MarkUnchanged)
			if h := mustHighest(t, j, idA); h != 7 {
				t.Fatalf("after appending 7: highest %d", h)
			}
			if got := replay(t, j, idA, 1, math.MaxUint64, NoLimit); !sameRecords(got, want(idA, append(tc.wantReplay, 7)...)) {
				t.Fatalf("replay after appending 7: %v", seqsOf(got))
			}
		})
	}
}

func TestForgetResetsEverything(t *testing.T) {
	st := openMem(t, Options{})
	j := st.Journal()
	mustAppend(t, j, idA, 1, 4, MarkActive)
	mustAppend(t, j, idB, 1, 2, MarkActive)
	if err := j.SaveSnapshot(idA, 2, []byte("snap")); err != nil {
		t.Fatal(err)
	}
	if err := j.DeleteUpTo(idA, 2); err != nil {
		t.Fatal(err)
	}
	if err := j.Forget(idA); err != nil {
		t.Fatal(err)
	}
	if h := mustHighest(t, j, idA); h != 0 {
		t.Fatalf("forgotten entity has highest %d, want 0", h)
	}
	if got := replay(t, j, idA, 0, math.MaxUint64, NoLimit); len(got) != 0 {
		t.Fatalf("forgotten entity replays %v", seqsOf(got))
	}
	if _, ok, err := j.LoadSnapshot(idA, math.MaxUint64); err != nil || ok {
		t.Fatalf("forgotten entity still has a snapshot (ok=%v, err=%v)", ok, err)
	}
	if got := entities(t, j, ""); len(got) != 1 || got[idB] != 2 {
		t.Fatalf("entities after forget: %v, want only %s", got, idB)
	}
	if got := active(t, j, ""); !slices.Equal(got, []Identity{idB}) {
		t.Fatalf("active after forget: %v, want only %s", got, idB)
	}
	// The same identity comes back from sequence 1.
	mustAppend(t, j, idA, 1, 1, MarkUnchanged)
	if got := replay(t, j, idA, 0, math.MaxUint64, NoLimit); !sameRecords(got, want(idA, 1)) {
		t.Fatalf("replay after coming back: %v", seqsOf(got))
	}
	if h := mustHighest(t, j, idB); h != 2 {
		t.Fatalf("forget touched %s: highest %d", idB, h)
	}
}

func TestSnapshotSelection(t *testing.T) {
	st := openMem(t, Options{})
	j := st.Journal()
	for _, seq := range []uint64{5, 2, 9} {
		if err := j.SaveSnapshot(idA, seq, []byte{byte(seq)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.SaveSnapshot(idB, 3, []byte("other")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		maxSeq uint64
		want   uint64 // 0: none
	}{
		{0, 0},
		{1, 0},
		{2, 2},
		{4, 2},
		{5, 5},
		{8, 5},
		{9, 9},
		{10, 9},
		{math.MaxUint64, 9},
	}
	for _, tc := range tests {
		snap, ok, err := j.LoadSnapshot(idA, tc.maxSeq)
		if err != nil {
			t.Fatalf("load at most %d: %v", tc.maxSeq, err)
		}
		if tc.want == 0 {
			if ok {
				t.Errorf("load at most %d: got snapshot %d, want none", tc.maxSeq, snap.Seq)
			}
			continue
		}
		if !ok || snap.Seq != tc.want || string(snap.Data) != string([]byte{byte(tc.want)}) {
			t.Errorf("load at most %d: got %+v (ok=%v), want seq %d", tc.maxSeq, snap, ok, tc.want)
		}
	}
}

func TestSnapshotOverwriteAndDelete(t *testing.T) {
	st := openMem(t, Options{})
	j := st.Journal()
	for _, seq := range []uint64{2, 5, 9} {
		if err := j.SaveSnapshot(idA, seq, []byte("old")); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.SaveSnapshot(idA, 5, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if snap, ok, err := j.LoadSnapshot(idA, 8); err != nil || !ok || snap.Seq != 5 || string(snap.Data) != "new" {
		t.Fatalf("after overwrite at 5: %+v ok=%v err=%v", snap, ok, err)
	}

	if err := j.DeleteSnapshotsUpTo(idA, 5); err != nil {
		t.Fatal(err)
	}
	if snap, ok, err := j.LoadSnapshot(idA, 8); err != nil || ok {
		t.Fatalf("snapshots up to 5 deleted, yet load at most 8 gave %+v (err=%v)", snap, err)
	}
	if snap, ok, err := j.LoadSnapshot(idA, math.MaxUint64); err != nil || !ok || snap.Seq != 9 {
		t.Fatalf("snapshot 9 should survive deleting up to 5: %+v ok=%v err=%v", snap, ok, err)
	}
	if err := j.DeleteSnapshotsUpTo(idA, math.MaxUint64); err != nil {
		t.Fatal(err)
	}
	if snap, ok, err := j.LoadSnapshot(idA, math.MaxUint64); err != nil || ok {
		t.Fatalf("all snapshots deleted, yet load gave %+v (err=%v)", snap, err)
	}
}

func TestCompactKeepsSnapshotAndLaterEvents(t *testing.T) {
	st := openMem(t, Options{})
	j := st.Journal()
	mustAppend(t, j, idA, 1, 10, MarkUnchanged)
	mustAppend(t, j, idB, 1, 10, MarkUnchanged)
	for _, seq := range []uint64{2, 4} {
		if err := j.SaveSnapshot(idA, seq, []byte("older")); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.SaveSnapshot(idA, 8, []byte("newer")); err != nil {
		t.Fatal(err)
	}
	if err := j.SaveSnapshot(idB, 4, []byte("b")); err != nil {
		t.Fatal(err)
	}

	if err := j.Compact(idA, 6, []byte("state@6")); err != nil {
		t.Fatal(err)
	}
	if got := replay(t, j, idA, 0, math.MaxUint64, NoLimit); !sameRecords(got, want(idA, seqRange(7, 10)...)) {
		t.Fatalf("events after compact at 6: %v, want 7..10", seqsOf(got))
	}
	if snap, ok, err := j.LoadSnapshot(idA, 7); err != nil || !ok || snap.Seq != 6 || string(snap.Data) != "state@6" {
		t.Fatalf("snapshot after compact: %+v ok=%v err=%v", snap, ok, err)
	}
	if _, ok, err := j.LoadSnapshot(idA, 5); err != nil || ok {
		t.Fatalf("older snapshots survived compact (ok=%v, err=%v)", ok, err)
	}
	// A snapshot newer than the compaction point is not made redundant by it.
	if snap, ok, err := j.LoadSnapshot(idA, math.MaxUint64); err != nil || !ok || snap.Seq != 8 {
		t.Fatalf("newer snapshot lost by compact: %+v ok=%v err=%v", snap, ok, err)
	}
	if h := mustHighest(t, j, idA); h != 10 {
		t.Fatalf("compact changed highest seq to %d", h)
	}
	// The neighbour is untouched.
	if got := replay(t, j, idB, 0, math.MaxUint64, NoLimit); len(got) != 10 {
		t.Fatalf("compact of %s removed events of %s", idA, idB)
	}
	if snap, ok, err := j.LoadSnapshot(idB, math.MaxUint64); err != nil || !ok || snap.Seq != 4 {
		t.Fatalf("compact of %s removed the snapshot of %s: %+v ok=%v err=%v", idA, idB, snap, ok, err)
	}
}

func TestEntitiesIndex(t *testing.T) {
	st := openMem(t, Options{})
	j := st.Journal()
	a1 := Identity{Kind: "a", ID: "1"}
	a2 := Identity{Kind: "a", ID: "2"}
	ab := Identity{Kind: "ab", ID: "1"}
	b := Identity{Kind: "b", ID: "x"}
	mustAppend(t, j, a1, 1, 3, MarkUnchanged)
	mustAppend(t, j, a2, 1, 1, MarkUnchanged)
	mustAppend(t, j, a2, 2, 4, MarkUnchanged)
	mustAppend(t, j, ab, 1, 7, MarkUnchanged)
	mustAppend(t, j, b, 1, 2, MarkUnchanged)
	if err := j.DeleteUpTo(a1, math.MaxUint64); err != nil {
		t.Fatal(err)
	}
	// An entity that only ever set its mark has no events to list.
	if err := j.Append(Identity{Kind: "a", ID: "marks-only"}, 1, nil, MarkActive); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		kind string
		want map[Identity]uint64
	}{
		{"a", map[Identity]uint64{a1: 3, a2: 5}},
		{"ab", map[Identity]uint64{ab: 7}},
		{"b", map[Identity]uint64{b: 2}},
		{"c", map[Identity]uint64{}},
		{"", map[Identity]uint64{a1: 3, a2: 5, ab: 7, b: 2}},
	}
	for _, tc := range tests {
		got := entities(t, j, tc.kind)
		if len(got) != len(tc.want) {
			t.Errorf("entities %q: %v, want %v", tc.kind, got, tc.want)
			continue
		}
		for id, h := range tc.want {
			if got[id] != h {
				t.Errorf("entities %q: %s has %d, want %d", tc.kind, id, got[id], h)
			}
		}
		// EntityIDs lists the same identities, without the sequence numbers.
		ids := map[Identity]bool{}
		if err := j.EntityIDs(tc.kind, func(id Identity) error { ids[id] = true; return nil }); err != nil {
			t.Fatal(err)
		}
		if len(ids) != len(tc.want) {
			t.Errorf("entity ids %q: %v, want the ids of %v", tc.kind, ids, tc.want)
		}
		for id := range tc.want {
			if !ids[id] {
				t.Errorf("entity ids %q: %s missing", tc.kind, id)
			}
		}
	}
}

func TestActiveFollowsMarks(t *testing.T) {
	st := openMem(t, Options{})
	j := st.Journal()
	a1 := Identity{Kind: "a", ID: "1"}
	ab := Identity{Kind: "ab", ID: "1"}
	steps := []struct {
		id      Identity
		first   uint64
		n       int
		mark    ActiveMark
		wantA   []Identity
		wantAll []Identity
	}{
		{a1, 1, 1, MarkActive, []Identity{a1}, []Identity{a1}},
		{ab, 1, 1, MarkActive, []Identity{a1}, []Identity{a1, ab}},
		{a1, 2, 2, MarkUnchanged, []Identity{a1}, []Identity{a1, ab}},
		{a1, 4, 0, MarkIdle, nil, []Identity{ab}},
		{a1, 4, 1, MarkUnchanged, nil, []Identity{ab}},
		{a1, 5, 0, MarkActive, []Identity{a1}, []Identity{a1, ab}},
		{ab, 2, 1, MarkIdle, []Identity{a1}, []Identity{a1}},
	}
	for i, s := range steps {
		if err := j.Append(s.id, s.first, payloads(s.id, s.first, s.n), s.mark); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := active(t, j, "a"); !slices.Equal(got, s.wantA) {
			t.Fatalf("step %d: active %q = %v, want %v", i, "a", got, s.wantA)
		}
		if got := active(t, j, ""); !slices.Equal(got, s.wantAll) {
			t.Fatalf("step %d: active (all) = %v, want %v", i, got, s.wantAll)
		}
	}
}

func TestBadIdentity(t *testing.T) {
	st := openMem(t, Options{})
	j := st.Journal()
	bad := []Identity{
		{Kind: "", ID: "x"},
		{Kind: "x", ID: ""},
		{},
		{Kind: "a\x00b", ID: "x"},
		{Kind: "x", ID: "a\x00"},
	}
	for _, id := range bad {
		calls := map[string]error{
			"Append":              j.Append(id, 1, [][]byte{[]byte("e")}, MarkActive),
			"Replay":              j.Replay(id, 1, math.MaxUint64, NoLimit, func(uint64, []byte) error { return nil }),
			"DeleteUpTo":          j.DeleteUpTo(id, 5),
			"SaveSnapshot":        j.SaveSnapshot(id, 1, []byte("s")),
			"Compact":             j.Compact(id, 1, []byte("s")),
			"DeleteSnapshotsUpTo": j.DeleteSnapshotsUpTo(id, 5),
			"Forget":              j.Forget(id),
		}
		_, calls["HighestSeq"] = j.HighestSeq(id)
		_, _, calls["LoadSnapshot"] = j.LoadSnapshot(id, math.MaxUint64)
		for name, err := range calls {
			if !errors.Is(err, ErrBadIdentity) {
				t.Errorf("%s(%q): %v, want ErrBadIdentity", name, id, err)
			}
		}
	}
	// A kind with a NUL byte must not be taken as a kind/id prefix.
	mustAppend(t, j, Identity{Kind: "a", ID: "b"}, 1, 1, MarkActive)
	if err := j.Entities("a\x00b", func(Identity, uint64) error { return nil }); !errors.Is(err, ErrBadIdentity) {
		t.Errorf("Entities with a NUL in the kind: %v, want ErrBadIdentity", err)
	}
	if err := j.Active("a\x00b", func(Identity) error { return nil }); !errors.Is(err, ErrBadIdentity) {
		t.Errorf("Active with a NUL in the kind: %v, want ErrBadIdentity", err)
	}
	// Nothing was written by the rejected calls.
	if got := entities(t, j, ""); len(got) != 1 {
		t.Fatalf("rejected calls wrote entities: %v", got)
	}
}

func TestBadSequence(t *testing.T) {
	st := openMem(t, Options{})
	j := st.Journal()
	tests := []struct {
		name  string
		first uint64
		n     int
		mark  ActiveMark
	}{
		{"first zero", 0, 1, MarkUnchanged},
		{"first zero, mark only", 0, 0, MarkActive},
		{"wraps around", math.MaxUint64 - 1, 3, MarkUnchanged},
	}
	for _, tc := range tests {
		err := j.Append(idA, tc.first, payloads(idA, tc.first, tc.n), tc.mark)
		if !errors.Is(err, ErrSequence) {
			t.Errorf("%s: %v, want ErrSequence", tc.name, err)
		}
	}
	if h := mustHighest(t, j, idA); h != 0 {
		t.Fatalf("rejected appends moved highest seq to %d", h)
	}
	if got := active(t, j, ""); len(got) != 0 {
		t.Fatalf("rejected appends set marks: %v", got)
	}
	// The largest batch that does not wrap is accepted.
	if err := j.Append(idA, math.MaxUint64-2, payloads(idA, math.MaxUint64-2, 2), MarkUnchanged); err != nil {
		t.Fatalf("append ending at MaxUint64-1: %v", err)
	}
	if h := mustHighest(t, j, idA); h != math.MaxUint64-1 {
		t.Fatalf("highest %d, want MaxUint64-1", h)
	}
}

func TestEveryMethodAfterCloseReturnsErrClosed(t *testing.T) {
	st := openMem(t, Options{})
	j, r := st.Journal(), st.Rows()
	mustAppend(t, j, idA, 1, 1, MarkActive)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	calls := map[string]error{
		"Close":               st.Close(),
		"Append":              j.Append(idA, 2, [][]byte{[]byte("e")}, MarkUnchanged),
		"Replay":              j.Replay(idA, 1, math.MaxUint64, NoLimit, func(uint64, []byte) error { return nil }),
		"DeleteUpTo":          j.DeleteUpTo(idA, 1),
		"SaveSnapshot":        j.SaveSnapshot(idA, 1, nil),
		"Compact":             j.Compact(idA, 1, nil),
		"DeleteSnapshotsUpTo": j.DeleteSnapshotsUpTo(idA, 1),
		"Forget":              j.Forget(idA),
		"Entities":            j.Entities("", func(Identity, uint64) error { return nil }),
		"Active":              j.Active("", func(Identity) error { return nil }),
		"Rows.Put":            r.Put("t", "k", nil),
		"Rows.Delete":         r.Delete("t", "k"),
		"Rows.Scan":           r.Scan("t", func(Row) error { return nil }),
	}
	_, calls["HighestSeq"] = j.HighestSeq(idA)
	_, _, calls["LoadSnapshot"] = j.LoadSnapshot(idA, 1)
	_, _, calls["Rows.Get"] = r.Get("t", "k")
	_, calls["Rows.DeleteWrittenBefore"] = r.DeleteWrittenBefore("t", time.Now())
	for name, err := range calls {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if n := st.DiskUsage(); n != 0 {
		t.Errorf("DiskUsage after Close: %d, want 0", n)
	}
}

// journalEvent stands in for a journaled message: events are stored as the
// envelopes messages.Encode writes.
type journalEvent struct {
	Session string `json:"session"`
	N       int    `json:"n"`
}

func init() {
	messages.Register[journalEvent]("persistence_test.event", 1)
}

func TestDataSurvivesCloseAndReopen(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	st, err := Open(dir, Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	j, r := st.Journal(), st.Rows()
	var sent []journalEvent
	for i := 1; i <= 20; i++ {
		ev := journalEvent{Session: idA.ID, N: i}
		b, err := messages.Encode(&ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Append(idA, uint64(i), [][]byte{b}, MarkActive); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, ev)
	}
	mustAppend(t, j, idB, 1, 3, MarkIdle)
	if err := j.Compact(idA, 5, []byte("state@5")); err != nil {
		t.Fatal(err)
	}
	if err := r.Put("bindings", "chat-1", []byte("ses_1")); err != nil {
		t.Fatal(err)
	}
	written := clock.Now()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	clock.Advance(time.Hour)
	st, err = Open(dir, Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer closeQuietly(t, st)
	j, r = st.Journal(), st.Rows()
	if h := mustHighest(t, j, idA); h != 20 {
		t.Fatalf("highest after reopen: %d, want 20", h)
	}
	var got []journalEvent
	err = j.Replay(idA, 0, math.MaxUint64, NoLimit, func(seq uint64, b []byte) error {
		ev, err := messages.DecodeAs[journalEvent](b)
		if err != nil {
			return err
		}
		if uint64(ev.N) != seq {
			t.Errorf("event at seq %d holds N=%d", seq, ev.N)
		}
		got = append(got, *ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, sent[5:]) {
		t.Fatalf("replay after reopen: %v, want %v", got, sent[5:])
	}
	if snap, ok, err := j.LoadSnapshot(idA, math.MaxUint64); err != nil || !ok || snap.Seq != 5 || string(snap.Data) != "state@5" {
		t.Fatalf("snapshot after reopen: %+v ok=%v err=%v", snap, ok, err)
	}
	if got := replay(t, j, idB, 0, math.MaxUint64, NoLimit); !sameRecords(got, want(idB, 1, 2, 3)) {
		t.Fatalf("%s after reopen: %v", idB, seqsOf(got))
	}
	if got := active(t, j, ""); !slices.Equal(got, []Identity{idA}) {
		t.Fatalf("active after reopen: %v", got)
	}
	if got := entities(t, j, "parent"); len(got) != 2 || got[idA] != 20 || got[idB] != 3 {
		t.Fatalf("entities after reopen: %v", got)
	}
	row, ok, err := r.Get("bindings", "chat-1")
	if err != nil || !ok || string(row.Value) != "ses_1" || !row.WrittenAt.Equal(written) {
		t.Fatalf("row after reopen: %+v ok=%v err=%v (written at %v)", row, ok, err, written)
	}
}

func TestOpenOnFailingFilesystemReturnsError(t *testing.T) {
	// A directory that is a file cannot hold a database.
	fs := vfs.NewMem()
	f, err := fs.Create("db", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := Open("db", Options{FS: fs}); err == nil {
		closeQuietly(t, st)
		t.Fatal("open on a file instead of a directory succeeded")
	}
}

// A reader that replayed an entity's newest snapshot and every event after
// it takes the highest sequence number as the larger of the last it read
// and HighestFloor: that is HighestSeq after appends, snapshots, deletes
// and compactions alike.
func TestHighestFloorWithTheLastReadIsHighestSeq(t *testing.T) {
	st := openMem(t, Options{})
	j := st.Journal()
	lastRead := func() uint64 {
		snap, ok, err := j.LoadSnapshot(idA, math.MaxUint64)
		if err != nil {
			t.Fatal(err)
		}
		var last uint64
		if ok {
			last = snap.Seq
		}
		if err := j.Replay(idA, last+1, math.MaxUint64, NoLimit, func(seq uint64, _ []byte) error { last = seq; return nil }); err != nil {
			t.Fatal(err)
		}
		return last
	}
	steps := []struct {
		name string
		do   func() error
	}{
		{"nothing yet", func() error { return nil }},
		{"append 1..3", func() error { return j.Append(idA, 1, payloads(idA, 1, 3), MarkUnchanged) }},
		{"append 4..7", func() error { return j.Append(idA, 4, payloads(idA, 4, 4), MarkUnchanged) }},
		{"snapshot at 5, events kept", func() error { return j.SaveSnapshot(idA, 5, []byte("s5")) }},
		{"compact at 6", func() error { return j.Compact(idA, 6, []byte("s6")) }},
		{"delete up to 7", func() error { return j.DeleteUpTo(idA, 7) }},
		{"append 8", func() error { return j.Append(idA, 8, payloads(idA, 8, 1), MarkActive) }},
		{"compact at 8, no event left", func() error { return j.Compact(idA, 8, []byte("s8")) }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		floor, err := j.HighestFloor(idA)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got, want := max(floor, lastRead()), mustHighest(t, j, idA); got != want {
			t.Errorf("%s: floor %d with the last read %d gives %d, HighestSeq %d", s.name, floor, lastRead(), got, want)
		}
	}
}
