package persistence

import (
	"slices"
	"testing"
)

// TestAGroupInKeyOrderKeepsEachEntitysAppendsInOrder commits one group,
// queued with the entities interleaved, as the committer does: every append
// is durable and acknowledged, and an entity whose appends in the group set
// and then cleared its mark ends up idle (and the reverse active), however
// the group is reordered into key order.
func TestAGroupInKeyOrderKeepsEachEntitysAppendsInOrder(t *testing.T) {
	st := openMem(t, Options{})
	j := st.Journal()
	c, b, a := Identity{Kind: "k", ID: "c"}, Identity{Kind: "k", ID: "b"}, Identity{Kind: "k", ID: "a"}
	var acked []Identity
	req := func(id Identity, first uint64, n int, mark ActiveMark) appendReq {
		return appendReq{id: id, first: first, events: payloads(id, first, n), mark: mark, done: func(err error) {
			if err != nil {
				t.Errorf("append %s at %d: %v", id, first, err)
			}
			acked = append(acked, id)
		}}
	}
	g := []appendReq{
		req(c, 1, 2, MarkActive),
		req(a, 1, 1, MarkActive),
		req(b, 1, 1, MarkIdle),
		req(c, 3, 1, MarkIdle),
		req(b, 2, 2, MarkActive),
		req(a, 2, 1, MarkUnchanged),
	}
	st.commit.commit(g)
	if len(acked) != 6 {
		t.Fatalf("acknowledged %d appends, want 6", len(acked))
	}
	if got, want := active(t, j, "k"), []Identity{a, b}; !slices.Equal(got, want) {
		t.Errorf("active = %v, want %v (c's later append cleared its mark, b's later one set it)", got, want)
	}
	for id, n := range map[Identity]uint64{a: 2, b: 3, c: 3} {
		if got := replay(t, j, id, 1, n, 100); !sameRecords(got, want(id, seqRange(1, n)...)) {
			t.Errorf("%s replays %v, want seqs 1..%d", id, seqsOf(got), n)
		}
		if h := mustHighest(t, j, id); h != n {
			t.Errorf("%s highest seq %d, want %d", id, h, n)
		}
	}
}
