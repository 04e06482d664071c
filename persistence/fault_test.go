package persistence

// Fault injection on the write-ahead log.
//
// What Pebble v2.1.7 really does when a WAL write or sync fails (read in
// pebble's db.go applyInternal and record/log_writer.go, and seen here):
//
//   - The commit is not turned into an error for the caller. The failure
//     reaches the committing goroutine through the batch, and DB.Apply then
//     calls Options.Logger.Fatalf("pebble: fatal commit error: ..."). If
//     Fatalf returns, Apply returns nil: the write would be acknowledged
//     although it is on no disk. The WAL sync is fdatasync (OpFileSyncData),
//     not OpFileSync.
//   - By then the batch is already applied to the memtable, so reads in the
//     same process see the unsynced, unacknowledged events.
//   - The WAL writer keeps the error: every later commit fails the same way.
//     Close returns the error.
//
// The store's contract therefore is: Append never returns nil for events
// that are not synced. On a fatal WAL error the store's Fatalf marks the
// store failed and panics in the goroutine that was committing, whatever
// logger the caller supplied; every later call returns ErrFailed, so nothing
// unsynced can be read back. (A fatal error on a Pebble background goroutine,
// such as a failed MANIFEST sync during a flush, panics there and ends the
// process.) The owner of the store should exit and reopen it; reopening
// recovers exactly what was synced.

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/thatch-run/thatch/internal/testwait"
)

// walFault fails writes or syncs of the WAL once armed.
type walFault struct {
	kinds    []errorfs.OpKind
	armed    atomic.Bool
	injected atomic.Int64
}

func (f *walFault) String() string { return fmt.Sprintf("walFault%v", f.kinds) }

func (f *walFault) MaybeError(op errorfs.Op) error {
	if !f.armed.Load() || !strings.HasSuffix(op.Path, ".log") {
		return nil
	}
	for _, k := range f.kinds {
		if op.Kind == k {
			f.injected.Add(1)
			return errorfs.ErrInjected
		}
	}
	return nil
}

// appendOutcome runs an Append and reports its error and any panic.
func appendOutcome(j *Journal, id Identity, first uint64, evs [][]byte) (panicked any, err error) {
	defer func() { panicked = recover() }()
	return nil, j.Append(id, first, evs, MarkUnchanged)
}

var syncKinds = []errorfs.OpKind{errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo}

func TestWALFaultNeverAcknowledgesLostEvents(t *testing.T) {
	tests := []struct {
		name  string
		kinds []errorfs.OpKind
	}{
		{"write fails", []errorfs.OpKind{errorfs.OpFileWrite, errorfs.OpFileWriteAt}},
		{"sync fails", syncKinds},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			fault := &walFault{kinds: tc.kinds}
			st := openMem(t, Options{FS: errorfs.Wrap(mem, fault)})
			j := st.Journal()

			// Appenders on their own entities; the fault is armed while
			// they run. Each records the last sequence it got a nil for.
			const writers = 6
			acked := make([]atomic.Uint64, writers)
			var wg sync.WaitGroup
			outcomes := make(chan string, writers)
			for w := range writers {
				wg.Go(func() {
					id := Identity{Kind: "fault", ID: fmt.Sprint(w)}
					for seq := uint64(1); ; seq++ {
						p, err := appendOutcome(j, id, seq, [][]byte{payload(id, seq)})
						switch {
						case p != nil:
							outcomes <- fmt.Sprintf("panic: %v", p)
							return
						case err != nil:
							outcomes <- "error: " + err.Error()
							return
						}
						acked[w].Store(seq)
					}
				})
			}
			testwait.Until(t, "every writer to have 3 events acknowledged", func() bool {
				for w := range acked {
					if acked[w].Load() < 3 {
						return false
					}
				}
				return true
			})
			fault.armed.Store(true)
			wg.Wait()
			close(outcomes)
			for o := range outcomes {
				// In v2.1.7 the failure surfaces as Pebble's fatal commit
				// error, raised as a panic by the store.
				if !strings.Contains(o, "fatal commit error") && !strings.Contains(o, ErrFailed.Error()) {
					t.Errorf("append during the fault ended with %s", o)
				}
			}
			if fault.injected.Load() == 0 {
				t.Fatal("no fault was injected")
			}

			// The store is failed: nothing that was not synced can be read
			// back, and nothing more is accepted.
			id0 := Identity{Kind: "fault", ID: "0"}
			if _, err := j.HighestSeq(id0); !errors.Is(err, ErrFailed) {
				t.Errorf("HighestSeq after the fault: %v, want ErrFailed", err)
			}
			if err := j.Replay(id0, 1, math.MaxUint64, NoLimit, func(uint64, []byte) error { return nil }); !errors.Is(err, ErrFailed) {
				t.Errorf("Replay after the fault: %v, want ErrFailed", err)
			}
			if p, err := appendOutcome(j, id0, acked[0].Load()+1, [][]byte{[]byte("x")}); !errors.Is(err, ErrFailed) || p != nil {
				t.Errorf("Append after the fault: err=%v panic=%v, want ErrFailed", err, p)
			}
			if err := st.Rows().Put("t", "k", nil); !errors.Is(err, ErrFailed) {
				t.Errorf("Rows.Put after the fault: %v, want ErrFailed", err)
			}
			_ = st.Close() // returns the WAL's error

			// A machine crash now keeps only what was synced. Every
			// acknowledged event is there; the one that failed may or may
			// not be, but never with a hole before it.
			crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
			re, err := Open("db", Options{FS: crashed})
			if err != nil {
				t.Fatalf("reopen after the fault: %v", err)
			}
			defer closeQuietly(t, re)
			for w := range writers {
				id := Identity{Kind: "fault", ID: fmt.Sprint(w)}
				checkPrefix(t, re.Journal(), id, acked[w].Load())
			}
		})
	}
}

// TestFatalErrorStopsAcknowledgementWithAnyLogger gives the store a logger
// whose Fatalf only records, as an adapter to a structured logger might.
// Pebble would then report the failed commit as a success.
func TestFatalErrorStopsAcknowledgementWithAnyLogger(t *testing.T) {
	fault := &walFault{kinds: syncKinds}
	logger := &recordingLogger{}
	st := openMem(t, Options{FS: errorfs.Wrap(vfs.NewMem(), fault), Logger: logger})
	j := st.Journal()
	mustAppend(t, j, idA, 1, 2, MarkUnchanged)
	fault.armed.Store(true)
	p, err := appendOutcome(j, idA, 3, payloads(idA, 3, 1))
	if err == nil && p == nil {
		t.Fatal("append whose WAL sync failed was acknowledged")
	}
	if got := logger.fatals(); len(got) != 1 || !strings.Contains(got[0], "fatal commit error") {
		t.Fatalf("the caller's logger got Fatalf lines %q, want the commit error", got)
	}
	if _, err := j.HighestSeq(idA); !errors.Is(err, ErrFailed) {
		t.Fatalf("HighestSeq after the fault: %v, want ErrFailed", err)
	}
	_ = st.Close() // returns the WAL's error
}

type recordingLogger struct {
	mu    sync.Mutex
	fatal []string
}

func (*recordingLogger) Infof(string, ...any)  {}
func (*recordingLogger) Errorf(string, ...any) {}
func (l *recordingLogger) Fatalf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fatal = append(l.fatal, fmt.Sprintf(format, args...))
}

func (l *recordingLogger) fatals() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.fatal...)
}

// checkPrefix checks that id's events are exactly 1..k with the right bytes,
// that k >= acked, and that the highest seq is k.
func checkPrefix(t tb, j *Journal, id Identity, acked uint64) uint64 {
	t.Helper()
	var k uint64
	err := j.Replay(id, 1, math.MaxUint64, NoLimit, func(seq uint64, ev []byte) error {
		if seq != k+1 {
			return fmt.Errorf("hole: event %d follows %d", seq, k)
		}
		if string(ev) != string(payload(id, seq)) {
			return fmt.Errorf("event %d has the wrong bytes (%d bytes)", seq, len(ev))
		}
		k = seq
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	if k < acked {
		t.Fatalf("%s: lost acknowledged events: present 1..%d, acknowledged 1..%d", id, k, acked)
	}
	if h := mustHighest(t, j, id); h != k {
		t.Fatalf("%s: highest seq %d but events 1..%d", id, h, k)
	}
	return k
}
