package persistence

import (
	"errors"
	"fmt"
	"os"
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
	OnFailure func(error)
}

// Store is one open Pebble database holding journals and rows.
type Store struct {
	db     *pebble.DB
	dir    string
	fs     vfs.FS
	now    func() time.Time
	wo     *pebble.WriteOptions
	closed atomic.Bool
	failed atomic.Bool
	commit *committer
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
	failed *atomic.Bool
	notify func(error)
}

func (l fatalLogger) Fatalf(format string, args ...any) {
	if l.failed.CompareAndSwap(false, true) && l.notify != nil {
		l.notify(fmt.Errorf("%w: "+format, append([]any{ErrFailed}, args...)...))
	}
	l.Logger.Fatalf(format, args...)
	panic(fmt.Sprintf("pebble: "+format, args...))
}

// Open opens (creating if needed) the database in dir.
func Open(dir string, o Options) (*Store, error) {
	if o.FS == nil {
		o.FS = vfs.Default
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("persistence: create %s: %w", dir, err)
		}
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
	var logger pebble.Logger = quietLogger{}
	if o.Logger != nil {
		logger = o.Logger
	}
	s := &Store{dir: dir, fs: o.FS, now: o.Now}
	// Pebble reserves each memtable's size out of the block cache. The
	// cache gets room for two full memtables (the one being written and
	// the one being flushed) on top of CacheSize, so that CacheSize stays
	// the memory for cached blocks in the steady state; while flushes fall
	// behind, up to MemTableStopWritesThreshold memtables exist and the
	// cached blocks give way to them. The store's memory is thus about
	// CacheSize plus two to four memtables under a heavy write load, and
	// CacheSize plus a few small memtables when thatch is quiet.
	cache := pebble.NewCache(o.CacheSize + 2*int64(o.MemTableSize))
	defer cache.Unref()
	popts := &pebble.Options{
		FS:                          o.FS,
		Cache:                       cache,
		Logger:                      fatalLogger{Logger: logger, failed: &s.failed, notify: o.OnFailure},
		MemTableSize:                o.MemTableSize,
		MemTableStopWritesThreshold: 4,
		L0CompactionThreshold:       4,
		L0StopWritesThreshold:       40,
		FormatMajorVersion:          pebble.FormatNewest,
	}
	popts.EnsureDefaults()
	db, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("persistence: open %s: %w", filepath.Clean(dir), err)
	}
	s.db, s.wo = db, pebble.Sync
	if o.NoSync {
		s.wo = pebble.NoSync
	}
	s.commit = newCommitter(s)
	return s, nil
}

// Close releases the database; later calls return ErrClosed. Every
// acknowledged write is already synced, so nothing depends on Close: it
// flushes the memtable only so that the next Open need not replay the WAL.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	s.commit.close()
	if !s.failed.Load() {
		_ = s.db.Flush()
	}
	return s.db.Close()
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
		return ErrFailed
	}
	return nil
}
