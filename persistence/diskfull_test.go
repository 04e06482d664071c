package persistence

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/thatch-run/thatch/internal/testwait"
)

// noSpace fails the writes to files whose name ends in suffix with ENOSPC,
// as a full disk does, while armed.
type noSpace struct {
	suffix   string
	armed    atomic.Bool
	injected atomic.Int64
}

func (n *noSpace) String() string { return "noSpace(" + n.suffix + ")" }

func (n *noSpace) MaybeError(op errorfs.Op) error {
	if !n.armed.Load() || !strings.HasSuffix(op.Path, n.suffix) || op.Kind.ReadOrWrite() != errorfs.OpIsWrite {
		return nil
	}
	n.injected.Add(1)
	return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
}

// openWithin runs OpenContext and fails the test when it takes longer than
// d: a full disk must not hang the open.
func openWithin(t *testing.T, d time.Duration, dir string, o Options) (*Store, error) {
	t.Helper()
	type res struct {
		st  *Store
		err error
	}
	c := make(chan res, 1)
	go func() {
		st, err := OpenContext(context.Background(), dir, o)
		c <- res{st, err}
	}()
	select {
	case r := <-c:
		return r.st, r.err
	case <-time.After(d):
		t.Fatalf("open of %s still running after %v", dir, d)
		return nil, nil
	}
}

// TestOpenOnFullDiskFailsPromptly restarts on a disk that has no room for
// the tables the WAL replay must write. Pebble alone retries the flush
// forever inside Open.
func TestOpenOnFullDiskFailsPromptly(t *testing.T) {
	mem := vfs.NewCrashableMem()
	st, err := Open("db", Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, st.Journal(), idA, 1, 20, MarkUnchanged)
	crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	closeQuietly(t, st)

	full := &noSpace{suffix: ".sst"}
	full.armed.Store(true)
	fsys := errorfs.Wrap(crashed, full)
	_, err = openWithin(t, 20*time.Second, "db", Options{FS: fsys})
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "persistence: disk full at db") {
		t.Fatalf("open on a full disk: %v; want ErrDiskFull naming the folder", err)
	}
	if full.injected.Load() == 0 {
		t.Fatal("no ENOSPC was injected: the test proves nothing")
	}

	// Room again: the abandoned open finishes and lets go; a new open
	// finds everything that was acknowledged.
	full.armed.Store(false)
	abandonedOpens.Wait()
	re, err := Open("db", Options{FS: fsys})
	if err != nil {
		t.Fatalf("open once there is room: %v", err)
	}
	defer closeQuietly(t, re)
	checkPrefix(t, re.Journal(), idA, 20)
}

func TestOpenRefusesADiskWithNoRoom(t *testing.T) {
	mem := vfs.NewMem()
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 4096, TotalBytes: 1 << 30, UsedBytes: 1<<30 - 4096})
	_, err := Open("db", Options{FS: mem})
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "persistence: disk full at db: 4096 bytes free") {
		t.Fatalf("open with 4 KiB free: %v; want ErrDiskFull naming the folder and the room", err)
	}
	// The refused open let go of the folder.
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1 << 30, TotalBytes: 2 << 30, UsedBytes: 1 << 30})
	st, err := Open("db", Options{FS: mem})
	if err != nil {
		t.Fatalf("open with room: %v", err)
	}
	closeQuietly(t, st)
}

// TestDiskFullWhileWritingIsFatal fills the disk under the WAL: the append
// fails with ErrDiskFull, the owner hears of it once, and a reopen has
// every acknowledged event.
func TestDiskFullWhileWritingIsFatal(t *testing.T) {
	mem := vfs.NewCrashableMem()
	full := &noSpace{suffix: ".log"}
	var failures []error
	failed := make(chan struct{}, 10)
	st := openMem(t, Options{FS: errorfs.Wrap(mem, full), OnFailure: func(err error) {
		failures = append(failures, err)
		failed <- struct{}{}
	}})
	j := st.Journal()
	mustAppend(t, j, idA, 1, 3, MarkUnchanged)
	full.armed.Store(true)
	p, err := appendOutcome(j, idA, 4, payloads(idA, 4, 1))
	if p != nil || !errors.Is(err, ErrDiskFull) || !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "disk full at db") {
		t.Fatalf("append on a full disk: err=%v panic=%v; want ErrDiskFull and ErrFailed", err, p)
	}
	<-failed
	if len(failures) != 1 || !errors.Is(failures[0], ErrDiskFull) {
		t.Fatalf("OnFailure got %v; want one ErrDiskFull", failures)
	}
	if _, err := j.HighestSeq(idA); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("HighestSeq after the disk filled: %v; want ErrDiskFull", err)
	}
	_ = st.Close()
	re, err := Open("db", Options{FS: mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})})
	if err != nil {
		t.Fatal(err)
	}
	defer closeQuietly(t, re)
	checkPrefix(t, re.Journal(), idA, 3)
}

// TestDiskFullOnARealDisk fills a small tmpfs through the store. It needs
// root (mount) and is skipped without it.
func TestDiskFullOnARealDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a tmpfs; skipped with -short")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (needs root): %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	// A filler takes most of the room; freeing it later is what an
	// operator does.
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, 6<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(mnt, "journal")
	var failure atomic.Pointer[error]
	st, err := Open(dir, Options{OnFailure: func(err error) { failure.Store(&err) }})
	if err != nil {
		t.Fatal(err)
	}
	j := st.Journal()
	ids := []Identity{{Kind: "full", ID: "a"}, {Kind: "full", ID: "b"}}
	acked := make([]uint64, len(ids))
	var last error
	for seq := uint64(1); last == nil; seq++ {
		if seq > 1e6 {
			t.Fatal("8 MiB tmpfs never filled")
		}
		for i, id := range ids {
			p, err := appendOutcome(j, id, seq, [][]byte{payload(id, seq)})
			if p != nil {
				t.Fatalf("append on a full disk panicked: %v", p)
			}
			if err != nil {
				last = err
				break
			}
			acked[i] = seq
		}
	}
	if !errors.Is(last, ErrDiskFull) || !strings.Contains(last.Error(), "disk full at "+dir) {
		t.Fatalf("append on a full tmpfs: %v; want ErrDiskFull naming %s", last, dir)
	}
	if f := failure.Load(); f == nil || !errors.Is(*f, ErrDiskFull) {
		t.Fatalf("OnFailure got %v; want ErrDiskFull", f)
	}
	_ = st.Close()

	// Restart on the still full disk: a prompt, clear refusal.
	_, err = openWithin(t, 20*time.Second, dir, Options{})
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "disk full at "+dir) {
		t.Fatalf("open on the full tmpfs: %v; want ErrDiskFull", err)
	}
	t.Logf("open on the full tmpfs: %v", err)
	abandonedOpens.Wait()

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	re, err := openWithin(t, 20*time.Second, dir, Options{})
	if err != nil {
		t.Fatalf("open once there is room: %v", err)
	}
	defer closeQuietly(t, re)
	for i, id := range ids {
		k := checkPrefix(t, re.Journal(), id, acked[i])
		t.Logf("%s: %d acknowledged, %d present", id, acked[i], k)
	}
}

// TestCloseOnFullDiskReturns fills the disk under the tables while Close
// flushes the memtable: Pebble retries that flush forever, so Close must
// not wait for it. Everything acknowledged is in the WAL.
func TestCloseOnFullDiskReturns(t *testing.T) {
	mem := vfs.NewCrashableMem()
	full := &noSpace{suffix: ".sst"}
	failed := make(chan error, 1)
	st, err := Open("db", Options{FS: errorfs.Wrap(mem, full), OnFailure: func(err error) { failed <- err }})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, st.Journal(), idA, 1, 10, MarkUnchanged)
	full.armed.Store(true)
	closed := make(chan error, 1)
	go func() { closed <- st.Close() }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close still flushing onto a full disk after 20s")
	}
	if err := <-failed; !errors.Is(err, ErrDiskFull) {
		t.Fatalf("OnFailure got %v, want ErrDiskFull", err)
	}
	full.armed.Store(false)
	re, err := Open("db", Options{FS: mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})})
	if err != nil {
		t.Fatal(err)
	}
	defer closeQuietly(t, re)
	checkPrefix(t, re.Journal(), idA, 10)
}

// slowFull holds every table write until opened, then fails it with
// ENOSPC while full is set: a flush that first takes long and then finds
// the disk full.
type slowFull struct {
	open chan struct{}
	full atomic.Bool
}

func (s *slowFull) String() string { return "slowFull" }

func (s *slowFull) MaybeError(op errorfs.Op) error {
	if !strings.HasSuffix(op.Path, ".sst") || op.Kind.ReadOrWrite() != errorfs.OpIsWrite {
		return nil
	}
	<-s.open
	if s.full.Load() {
		return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
	}
	return nil
}

// TestDiskFullUnderAWriteStallAnswersTheAppend fills the memtables while a
// flush is slow, so that the committer waits inside Pebble for the flush
// (a write stall), and then the flush finds the disk full. Pebble retries
// that flush for ever and the committer never comes back: the append it
// holds is answered with ErrDiskFull anyway, and Close returns (with the
// failure) instead of waiting for the database. (Before, the append and
// Close waited for ever.)
func TestDiskFullUnderAWriteStallAnswersTheAppend(t *testing.T) {
	mem := vfs.NewCrashableMem()
	fs := &slowFull{open: make(chan struct{})}
	fs.full.Store(true)
	st, err := Open("db", Options{FS: errorfs.Wrap(mem, fs), MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	j := st.Journal()
	var acked atomic.Uint64
	res := make(chan error, 1)
	go func() {
		ev := make([]byte, 64<<10)
		for seq := uint64(1); ; seq++ {
			if err := j.Append(idA, seq, [][]byte{ev}, MarkUnchanged); err != nil {
				res <- err
				return
			}
			acked.Store(seq)
		}
	}()
	// Four 1 MiB memtables stop the writes (the store's
	// MemTableStopWritesThreshold) while no flush can finish: the
	// committer waits in Pebble's write stall.
	testwait.Until(t, "the committer in a write stall", func() bool {
		select {
		case err := <-res:
			t.Fatalf("append failed before the disk filled: %v", err)
		default:
		}
		buf := make([]byte, 1<<20)
		return bytes.Contains(buf[:runtime.Stack(buf, true)], []byte("maybeInduceWriteStall"))
	})
	close(fs.open)
	select {
	case err := <-res:
		if !errors.Is(err, ErrDiskFull) {
			t.Fatalf("the stalled append: %v; want ErrDiskFull", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the append held in the write stall was never answered")
	}
	closed := make(chan error, 1)
	go func() { closed <- st.Close() }()
	select {
	case err := <-closed:
		if !errors.Is(err, ErrDiskFull) {
			t.Fatalf("Close with a write stuck in Pebble: %v; want the disk-full failure", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close waited for a write that Pebble holds for ever")
	}

	// Room again: the flush goes through, the stuck committer comes back,
	// and the test closes the database Close had to leave open.
	fs.full.Store(false)
	<-st.commit.done
	if err := st.db.Close(); err != nil {
		t.Logf("closing the database after the stall: %v", err)
	}
	if err := releaseDir(st.fs, st.dir, st.lock); err != nil {
		t.Fatal(err)
	}
	re, err := Open("db", Options{FS: mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})})
	if err != nil {
		t.Fatal(err)
	}
	defer closeQuietly(t, re)
	if high, err := re.Journal().HighestSeq(idA); err != nil || high < acked.Load() {
		t.Fatalf("after a reopen the journal ends at %d (%v); %d were acknowledged", high, err, acked.Load())
	}
}
