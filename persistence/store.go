package persistence

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

var (
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("persistence: closed")
	// ErrBadIdentity is returned for an identity whose kind or id is empty or
	// contains a NUL byte.
	ErrBadIdentity = errors.New("persistence: bad identity")
	// ErrSequence is returned by Append when the first sequence number is
	// zero or the events would wrap around.
	ErrSequence = errors.New("persistence: bad sequence number")
	// ErrFailed is returned by every method after Pebble hit a fatal error,
	// such as a failed WAL write or sync. Unsynced writes may then be
	// readable in memory but absent on disk, so the store serves nothing
	// more: exit and reopen it, which recovers exactly what was synced.
	ErrFailed = errors.New("persistence: store failed")
	// ErrDiskFull is matched (errors.Is) by the error of an open that found
	// no room on the disk, and by the failure of a store whose disk filled
	// up (which also matches ErrFailed). The error's text names the folder:
	// "persistence: disk full at PATH". Nothing acknowledged is lost: free
	// some space and open the store again.
	ErrDiskFull = errors.New("persistence: disk full")
	// ErrInUse is matched (errors.Is) by the *InUseError of an open whose
	// folder another process (or another Store of this one) holds.
	ErrInUse = errors.New("persistence: data directory in use")
)

// Options configure Open. The zero value is usable.
type Options struct {
	// FS is the filesystem the database lives on. Default: the OS filesystem.
	// Tests pass vfs.NewMem(), vfs.NewCrashableMem() or an errorfs wrapper.
	FS vfs.FS
	// Now is the clock used to stamp rows. Default: time.Now.
	Now func() time.Time
	// NoSync skips fsync on writes. Only benchmarks of the non-durable path
	// and throwaway tests may set it. Default: false.
	NoSync bool
	// CacheSize is Pebble's block cache in bytes. Default: 32 MiB.
	CacheSize int64
	// MemTableSize is the largest memtable in bytes. Default: 64 MiB.
	// Pebble starts with a 256 KiB memtable and doubles it at each flush
	// up to this size, so a quiet daemon seldom grows one this large. Under
	// load a large memtable is what keeps the journal cheap: an entity's
	// events are deleted by its next snapshot, and events deleted while
	// still in the memtable are never written to an sstable or compacted.
	MemTableSize uint64
	// Logger receives Pebble's own log lines. Default: discarded.
	Logger pebble.Logger
	// OnFailure, if set, is called once when the store fails for good (a
	// WAL write or sync error). The daemon exits on it: a process restart
	// reopens the store from what is durable, which is the only safe
	// recovery. Default: nothing.
	//
	// The error wraps ErrFailed, and also ErrDiskFull when the disk filled
	// up (a failed WAL write or a flush that found no room). It may run on
	// a Pebble goroutine that holds Pebble's locks, so it must not call the
	// store; signalling a channel, as the daemon does, is what it is for.
	OnFailure func(error)
	// Warn, if set, is called during Open with what the owner should know
	// but need not stop for, such as a data folder that others could read
	// and that Open made private. The arguments after msg are key/value
	// pairs, as hclog.Logger.Warn takes them. Default: nothing.
	Warn func(msg string, args ...any)
	// MinFreeBytes is the free space Open requires on top of the size of
	// the write-ahead log it replays, which Pebble flushes to new tables
	// before it opens. With less, Open fails with ErrDiskFull instead of
	// waiting for room that never comes. Only checked on filesystems that
	// report their usage. Default: 1 MiB.
	MinFreeBytes uint64
}

// Store is one open Pebble database holding journals and rows.
type Store struct {
	db     *pebble.DB
	dir    string
	fs     vfs.FS
	now    func() time.Time
	wo     *pebble.WriteOptions
	lock   *pebble.Lock
	closed atomic.Bool
	failed atomic.Bool
	// failErr is the first failure. It is set just after failed, so a
	// reader may see failed without it and return plain ErrFailed.
	failErr   atomic.Pointer[error]
	onFailure func(error)
	// failedCh is closed when the store fails.
	failedCh chan struct{}
	// opened is set once Pebble's Open returned; until then a full disk
	// goes to openFull and fails the open, not the store.
	opened   atomic.Bool
	openFull chan error
	commit   *committer
	// rowsMu lets DeleteWrittenBefore scan and delete with no row write in
	// between; row writes share it.
	rowsMu sync.RWMutex
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(string, ...any) {}

// fatalLogger stops the store on Pebble's fatal errors. Pebble calls Fatalf
// when a WAL write or sync fails, after the batch is already visible in
// memory, and reports the commit as a success if Fatalf returns. So Fatalf
// marks the store failed and panics, whatever the wrapped logger does.
type fatalLogger struct {
	pebble.Logger
	s *Store
}

func (l fatalLogger) Fatalf(format string, args ...any) {
	err := fmt.Errorf("%w: "+format, append([]any{ErrFailed}, args...)...)
	for _, a := range args {
		if e, ok := a.(error); ok && vfs.IsNoSpaceError(e) {
			err = &diskFullError{path: l.s.dir, err: err}
			break
		}
	}
	// The wrapped logger hears it first: once the store is failed, an
	// append waiting on this commit is answered (see committer.watch), and
	// its caller may look at the log before this line was written.
	l.Logger.Fatalf(format, args...)
	l.s.fail(err)
	panic(fmt.Sprintf("pebble: "+format, args...))
}

// fail marks the store failed for good with err (the first error wins) and
// tells the owner once.
func (s *Store) fail(err error) {
	if !s.failed.CompareAndSwap(false, true) {
		return
	}
	s.failErr.Store(&err)
	// An open that failed, or was given up, returned its own error: its
	// owner hears nothing more. The owner hears of the failure before
	// anything that waits on failedCh (an append answered by the
	// committer's failure watcher) does.
	if s.onFailure != nil && s.opened.Load() {
		s.onFailure(err)
	}
	close(s.failedCh)
}

// failure is the error a failed store returns: the first failure, which
// wraps ErrFailed (and ErrDiskFull when the disk filled up).
func (s *Store) failure() error {
	if p := s.failErr.Load(); p != nil {
		return *p
	}
	return ErrFailed
}

// backgroundError sees the errors of Pebble's flushes and compactions.
// Pebble retries a failed flush at once and forever, so on a full disk it
// spins and never finishes what waits for the flush: Open, or the next
// memtable rotation. A full disk therefore fails the store (while it
// opens, it fails the open instead); other errors are only logged.
func (s *Store) backgroundError(logger pebble.Logger, err error) {
	logger.Errorf("background error: %s", err)
	if !vfs.IsNoSpaceError(err) {
		return
	}
	full := &diskFullError{path: s.dir, err: err}
	if !s.opened.Load() {
		select {
		case s.openFull <- full:
		default:
		}
		return
	}
	s.fail(fmt.Errorf("%w: %w", ErrFailed, full))
}

// abandonedOpens counts the Pebble opens that OpenContext gave up on and
// that still run; tests wait for them.
var abandonedOpens sync.WaitGroup

// Open opens (creating if needed) the database in dir. It is OpenContext
// with a context that never ends.
func Open(dir string, o Options) (*Store, error) {
	return OpenContext(context.Background(), dir, o)
}

// OpenContext opens (creating if needed) the database in dir, and returns
// when ctx ends even if Pebble is still opening.
//
// Before Pebble opens, it takes the folder's lock (an InUseError names the
// process that holds it) and records this process's id next to it (in
// thatch.pid), makes the folder 0700 and its files 0600 (see Options.Warn),
// and checks that the disk has room to replay the write-ahead log
// (ErrDiskFull if not). On the OS filesystem, files are created 0600. A
// full disk found while Pebble opens also fails with ErrDiskFull.
//
// Pebble's Open cannot be interrupted. When ctx ends or the disk is full
// first, OpenContext returns and leaves Pebble's Open running on its own
// goroutine, which keeps the directory locked; if that Open ever finishes,
// the goroutine closes the database and releases the lock. On a full disk
// it never finishes: the caller is expected to exit, which ends it.
func OpenContext(ctx context.Context, dir string, o Options) (*Store, error) {
	dir = filepath.Clean(dir)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("persistence: open %s: %w", dir, err)
	}
	onDisk := o.FS == nil
	o = o.withDefaults()
	if err := o.FS.MkdirAll(dir, 0o700); err != nil {
		return nil, diskFullOr(dir, fmt.Errorf("persistence: create %s: %w", dir, err))
	}
	lock, err := lockDir(o.FS, dir)
	if err != nil {
		return nil, err
	}
	if onDisk {
		err = makePrivate(dir, o.Warn)
	}
	if err == nil {
		err = checkFreeSpace(o.FS, dir, o.MinFreeBytes)
	}
	if err != nil {
		_ = releaseDir(o.FS, dir, lock)
		return nil, err
	}
	s := &Store{dir: dir, fs: o.FS, now: o.Now, lock: lock, onFailure: o.OnFailure,
		failedCh: make(chan struct{}), openFull: make(chan error, 1)}
	cache := pebble.NewCache(o.CacheSize + 2*int64(o.MemTableSize))
	defer cache.Unref()
	db, err := s.openPebble(ctx, o, s.pebbleOptions(o, cache))
	if err != nil {
		return nil, err
	}
	s.db, s.wo = db, pebble.Sync
	if o.NoSync {
		s.wo = pebble.NoSync
	}
	s.opened.Store(true)
	// A full disk that Pebble reported while opening, but after the open
	// had already finished, is still a full disk.
	select {
	case full := <-s.openFull:
		s.fail(fmt.Errorf("%w: %w", ErrFailed, full))
	default:
	}
	s.commit = newCommitter(s)
	return s, nil
}

// withDefaults fills the options' defaults; on the OS filesystem files
// are created private.
func (o Options) withDefaults() Options {
	if o.FS == nil {
		o.FS = privateFS{vfs.Default}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.CacheSize == 0 {
		o.CacheSize = 32 << 20
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = 64 << 20
	}
	if o.MinFreeBytes == 0 {
		o.MinFreeBytes = 1 << 20
	}
	return o
}

// pebbleOptions are the options the store opens Pebble with.
//
// Pebble reserves each memtable's size out of the block cache. The cache
// gets room for two full memtables (the one being written and the one being
// flushed) on top of CacheSize, so that CacheSize stays the memory for
// cached blocks in the steady state; while flushes fall behind, up to
// MemTableStopWritesThreshold memtables exist and the cached blocks give
// way to them. The store's memory is thus about CacheSize plus two to four
// memtables under a heavy write load, and CacheSize plus a few small
// memtables when thatch is quiet.
func (s *Store) pebbleOptions(o Options, cache *pebble.Cache) *pebble.Options {
	var logger pebble.Logger = quietLogger{}
	if o.Logger != nil {
		logger = o.Logger
	}
	popts := &pebble.Options{
		FS:                          o.FS,
		Cache:                       cache,
		Lock:                        s.lock,
		Logger:                      fatalLogger{Logger: logger, s: s},
		EventListener:               &pebble.EventListener{BackgroundError: func(err error) { s.backgroundError(logger, err) }},
		MemTableSize:                o.MemTableSize,
		MemTableStopWritesThreshold: 4,
		L0CompactionThreshold:       4,
		L0StopWritesThreshold:       40,
		FormatMajorVersion:          pebble.FormatNewest,
	}
	popts.EnsureDefaults()
	return popts
}

// openPebble runs pebble.Open in its own goroutine and waits for it, for
// ctx, or for a full disk reported while it opens, whichever comes first.
func (s *Store) openPebble(ctx context.Context, o Options, popts *pebble.Options) (*pebble.DB, error) {
	type opened struct {
		db  *pebble.DB
		err error
	}
	dir, lock := s.dir, s.lock
	// done is unbuffered: Pebble's result is handed over only while this
	// function still waits for it; once it gave up (quit), the goroutine
	// cleans up after itself.
	done, quit := make(chan opened), make(chan struct{})
	abandonedOpens.Add(1)
	go func() {
		defer abandonedOpens.Done()
		db, err := pebble.Open(dir, popts)
		select {
		case done <- opened{db, err}:
		case <-quit:
			if db != nil {
				_ = db.Close()
			}
			_ = releaseDir(o.FS, dir, lock)
		}
	}()
	var r opened
	select {
	case r = <-done:
	case <-ctx.Done():
		close(quit)
		return nil, fmt.Errorf("persistence: open %s: stopped waiting for Pebble, which goes on opening in the background and holds the folder until it is done or the process exits: %w", dir, ctx.Err())
	case full := <-s.openFull:
		close(quit)
		return nil, fmt.Errorf("persistence: open %s: %w", dir, full)
	}
	if r.err != nil {
		_ = releaseDir(o.FS, dir, lock)
		return nil, diskFullOr(dir, fmt.Errorf("persistence: open %s: %w", dir, r.err))
	}
	return r.db, nil
}

// Close releases the database; later calls return ErrClosed. Every
// acknowledged write is already synced, so nothing depends on Close: it
// flushes the memtable only so that the next Open need not replay the WAL.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	if !s.commit.close() {
		// Pebble holds a commit that waits for a flush which cannot
		// write, and Pebble's Close would wait for it too. The store is
		// failed and its appends answered; its files and lock stay with
		// this process, which is expected to exit.
		return fmt.Errorf("%w: a write is stuck in the database; it stays open until the process exits", s.failure())
	}
	if !s.failed.Load() {
		// Not Flush: on a full disk Pebble retries the flush forever, and
		// the failure that reports it is the signal to stop waiting.
		if done, err := s.db.AsyncFlush(); err == nil {
			select {
			case <-done:
			case <-s.failedCh:
			}
		}
	}
	err := s.db.Close()
	if rerr := releaseDir(s.fs, s.dir, s.lock); err == nil {
		err = rerr
	}
	return err
}

// Dir is the folder the database lives in.
func (s *Store) Dir() string { return s.dir }

// DiskUsage is the total size of the database's files in bytes.
func (s *Store) DiskUsage() uint64 {
	if s.closed.Load() {
		return 0
	}
	return s.db.Metrics().DiskSpaceUsage()
}

// Journal returns the event journal view of the store.
func (s *Store) Journal() *Journal { return &Journal{s: s} }

// Rows returns the row table view of the store.
func (s *Store) Rows() *Rows { return &Rows{s: s} }

// DB exposes the underlying Pebble database to other storage types in this
// package family (memory store). Callers must use their own key prefix.
func (s *Store) DB() *pebble.DB { return s.db }

// WriteOptions is the sync policy every durable write must use.
func (s *Store) WriteOptions() *pebble.WriteOptions { return s.wo }

func (s *Store) check() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if s.failed.Load() {
		return s.failure()
	}
	return nil
}
