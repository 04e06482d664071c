package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// tb is what the helpers need from *testing.T and *rapid.T alike.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Cleanup(func())
}

// openMem opens a store on a fresh in-memory filesystem and closes it when
// the test ends.
func openMem(t tb, o Options) *Store {
	t.Helper()
	if o.FS == nil {
		o.FS = vfs.NewMem()
	}
	st, err := Open("db", o)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { closeQuietly(t, st) })
	return st
}

// closeQuietly closes st, accepting that a test may have closed it already.
func closeQuietly(t tb, st *Store) {
	t.Helper()
	if err := st.Close(); err != nil && !errors.Is(err, ErrClosed) {
		t.Errorf("close: %v", err)
	}
}

// payload is the deterministic event body for (id, seq). Lengths vary so
// that events straddle WAL block boundaries; every 97th event is large.
func payload(id Identity, seq uint64) []byte {
	unit := fmt.Sprintf("%s#%d;", id, seq)
	n := int(seq%7) + 1
	if seq%97 == 0 {
		n = 40000 / len(unit)
	}
	return bytes.Repeat([]byte(unit), n)
}

// payloads returns the events first..first+n-1 of id.
func payloads(id Identity, first uint64, n int) [][]byte {
	evs := make([][]byte, n)
	for i := range evs {
		evs[i] = payload(id, first+uint64(i))
	}
	return evs
}

type record struct {
	Seq  uint64
	Data string
}

// replay collects what Replay hands out.
func replay(t tb, j *Journal, id Identity, from, to, max uint64) []record {
	t.Helper()
	var got []record
	err := j.Replay(id, from, to, max, func(seq uint64, ev []byte) error {
		got = append(got, record{seq, string(ev)})
		return nil
	})
	if err != nil {
		t.Fatalf("replay %s [%d,%d] max %d: %v", id, from, to, max, err)
	}
	return got
}

// want builds the records payload produces for the given sequence numbers.
func want(id Identity, seqs ...uint64) []record {
	out := make([]record, 0, len(seqs))
	for _, s := range seqs {
		out = append(out, record{s, string(payload(id, s))})
	}
	return out
}

func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func seqsOf(rs []record) []uint64 {
	s := make([]uint64, len(rs))
	for i, r := range rs {
		s[i] = r.Seq
	}
	return s
}

func sameRecords(a, b []record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func mustAppend(t tb, j *Journal, id Identity, first uint64, n int, mark ActiveMark) {
	t.Helper()
	if err := j.Append(id, first, payloads(id, first, n), mark); err != nil {
		t.Fatalf("append %s at %d: %v", id, first, err)
	}
}

func mustHighest(t tb, j *Journal, id Identity) uint64 {
	t.Helper()
	h, err := j.HighestSeq(id)
	if err != nil {
		t.Fatalf("highest seq of %s: %v", id, err)
	}
	return h
}

func entities(t tb, j *Journal, kind string) map[Identity]uint64 {
	t.Helper()
	got := map[Identity]uint64{}
	err := j.Entities(kind, func(id Identity, h uint64) error {
		got[id] = h
		return nil
	})
	if err != nil {
		t.Fatalf("entities %q: %v", kind, err)
	}
	return got
}

func active(t tb, j *Journal, kind string) []Identity {
	t.Helper()
	var got []Identity
	if err := j.Active(kind, func(id Identity) error {
		got = append(got, id)
		return nil
	}); err != nil {
		t.Fatalf("active %q: %v", kind, err)
	}
	return got
}

// fakeClock is the injected clock for rows.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}
