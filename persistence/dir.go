package persistence

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// pidFile, in the database folder, holds the id of the process that holds
// the folder's lock. It is read only when the lock is taken, to say who
// holds it; a stale one left by a crash is overwritten by the next open.
const pidFile = "thatch.pid"

// InUseError is the error of an open whose folder is locked by another
// process, or by a Store of this process that is still open. It matches
// ErrInUse.
type InUseError struct {
	// Dir is the database folder.
	Dir string
	// PID is the process that holds it, as its pid file says; 0 when the
	// file cannot be read (the holder is not a thatch of this version, or
	// it is between taking the lock and writing the file).
	PID int
	// Err is the lock error.
	Err error
}

func (e *InUseError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("persistence: another thatch is using %s (%v)", e.Dir, e.Err)
	}
	return fmt.Sprintf("persistence: another thatch (pid %d) is using %s", e.PID, e.Dir)
}

// Is makes errors.Is(err, ErrInUse) hold.
func (e *InUseError) Is(target error) bool { return target == ErrInUse }

func (e *InUseError) Unwrap() error { return e.Err }

// diskFullError names the folder whose disk is full. It matches ErrDiskFull
// and unwraps to the error that showed it.
type diskFullError struct {
	path string
	err  error
}

func (e *diskFullError) Error() string {
	return fmt.Sprintf("%v at %s: %v", ErrDiskFull, e.path, e.err)
}

func (e *diskFullError) Is(target error) bool { return target == ErrDiskFull }

func (e *diskFullError) Unwrap() error { return e.err }

// diskFullOr returns err as a disk-full error of dir when it is one.
func diskFullOr(dir string, err error) error {
	if vfs.IsNoSpaceError(err) && !errors.Is(err, ErrDiskFull) {
		return &diskFullError{path: dir, err: err}
	}
	return err
}

// lockDir takes the folder's Pebble lock and records this process in the
// pid file.
func lockDir(fsys vfs.FS, dir string) (*pebble.Lock, error) {
	lock, err := pebble.LockDirectory(dir, fsys)
	if err != nil {
		if lockHeld(err) {
			return nil, &InUseError{Dir: dir, PID: readPID(fsys, dir), Err: err}
		}
		return nil, diskFullOr(dir, fmt.Errorf("persistence: lock %s: %w", dir, err))
	}
	if err := writePID(fsys, dir); err != nil {
		_ = lock.Close()
		return nil, diskFullOr(dir, fmt.Errorf("persistence: record this process in %s: %w", filepath.Join(dir, pidFile), err))
	}
	return lock, nil
}

// releaseDir removes the pid file and releases the lock. The pid file goes
// first, while the lock still says it is ours.
func releaseDir(fsys vfs.FS, dir string, lock *pebble.Lock) error {
	err := fsys.Remove(filepath.Join(dir, pidFile))
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if lerr := lock.Close(); err == nil {
		err = lerr
	}
	return err
}

// lockHeld tells a lock held by someone else from a lock file that could
// not be created. fcntl answers EAGAIN or EACCES; vfs.MemFS answers EAGAIN;
// Pebble answers a lock this process holds with a plain error.
func lockHeld(err error) bool {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return false // creating the lock file failed
	}
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) ||
		strings.Contains(err.Error(), "lock held by current process")
}

func writePID(fsys vfs.FS, dir string) error {
	f, err := fsys.Create(filepath.Join(dir, pidFile), vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, strconv.Itoa(os.Getpid())+"\n"); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// readPID returns the pid in dir's pid file, or 0.
func readPID(fsys vfs.FS, dir string) int {
	f, err := fsys.Open(filepath.Join(dir, pidFile))
	if err != nil {
		return 0
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 32))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// checkFreeSpace fails with ErrDiskFull when the disk under dir has less
// room than the write-ahead logs Pebble will replay and flush, plus
// headroom. Pebble does not fail on a full disk while it opens: it retries
// the flush forever.
func checkFreeSpace(fsys vfs.FS, dir string, headroom uint64) error {
	usage, err := fsys.GetDiskUsage(dir)
	if err != nil {
		return nil // the filesystem does not say; Pebble's errors will
	}
	var wal uint64
	names, err := fsys.List(dir)
	if err != nil {
		return fmt.Errorf("persistence: list %s: %w", dir, err)
	}
	for _, n := range names {
		if !strings.HasSuffix(n, ".log") {
			continue
		}
		if st, err := fsys.Stat(filepath.Join(dir, n)); err == nil {
			wal += uint64(st.Size())
		}
	}
	if need := wal + headroom; usage.AvailBytes < need {
		return &diskFullError{path: dir, err: fmt.Errorf(
			"%d bytes free, opening needs %d (%d of write-ahead log to replay and %d of headroom); free some space and start again",
			usage.AvailBytes, need, wal, headroom)}
	}
	return nil
}

// makePrivate makes dir 0700 and the files in it 0600, and warns when they
// were open to others. The data holds session transcripts and memories.
func makePrivate(dir string, warn func(string, ...any)) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("persistence: %w", err)
	}
	if mode := st.Mode().Perm(); mode != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("persistence: make %s private: %w", dir, err)
		}
		if mode&0o077 != 0 && warn != nil {
			warn("the data folder was open to other users; it is now private (0700)", "path", dir, "mode", fmt.Sprintf("%#o", mode))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("persistence: %w", err)
	}
	loose := 0
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil || info.Mode().Perm()&0o077 == 0 {
			continue
		}
		if err := os.Chmod(filepath.Join(dir, e.Name()), info.Mode().Perm()&0o700); err != nil {
			return fmt.Errorf("persistence: make %s private: %w", filepath.Join(dir, e.Name()), err)
		}
		loose++
	}
	if loose > 0 && warn != nil {
		warn("files in the data folder were readable by other users; they are now private", "path", dir, "files", loose)
	}
	return nil
}

// privateFS is the OS filesystem with files created 0600 and folders 0700
// (the OS one creates them 0666 and 0755, less the umask).
type privateFS struct{ vfs.FS }

func (p privateFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.Create(name, c)
	return private(f, err)
}

func (p privateFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := p.FS.OpenReadWrite(name, c, opts...)
	return private(f, err)
}

func (p privateFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.ReuseForWrite(oldname, newname, c)
	return private(f, err)
}

func (p privateFS) MkdirAll(dir string, _ os.FileMode) error {
	return p.FS.MkdirAll(dir, 0o700)
}

// Lock also makes the lock file, which Pebble creates with os.Create,
// private.
func (p privateFS) Lock(name string) (io.Closer, error) {
	c, err := p.FS.Lock(name)
	if err == nil {
		_ = os.Chmod(name, 0o600)
	}
	return c, err
}

func (p privateFS) Unwrap() vfs.FS { return p.FS }

func private(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	if fd := f.Fd(); fd != vfs.InvalidFd {
		if err := syscall.Fchmod(int(fd), 0o600); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("persistence: make file private: %w", err)
		}
	}
	return f, nil
}
