package persistence

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

func runHoldChild(dir string) int {
	st, err := Open(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		return 1
	}
	fmt.Println("open")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := st.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "child: close:", err)
		return 1
	}
	return 0
}

// TestSecondProcessNamesTheFirst starts a second thatch on a folder another
// process holds, as a user who starts the daemon twice would.
func TestSecondProcessNamesTheFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	defer stdin.Close()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "open\n" {
		t.Fatalf("child said %q, %v; want open", line, err)
	}

	st, err := Open(dir, Options{})
	if err == nil {
		st.Close()
		t.Fatal("a second process opened a folder the first holds")
	}
	want := fmt.Sprintf("another thatch (pid %d) is using %s", cmd.Process.Pid, dir)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), want) {
		t.Fatalf("second open: %v; want ErrInUse saying %q", err, want)
	}

	// Once the first is gone, the folder opens, and it is this process's.
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	st, err = Open(dir, Options{})
	if err != nil {
		t.Fatalf("open after the first process exited: %v", err)
	}
	defer st.Close()
	if pid := readPID(vfs.Default, dir); pid != os.Getpid() {
		t.Fatalf("pid file says %d, want %d", pid, os.Getpid())
	}
}

func TestSecondOpenInOneProcessNamesIt(t *testing.T) {
	tests := []struct {
		name string
		fs   vfs.FS
		dir  string
	}{
		{"disk", nil, filepath.Join(t.TempDir(), "journal")},
		{"memory", vfs.NewMem(), "db"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := Open(tc.dir, Options{FS: tc.fs})
			if err != nil {
				t.Fatal(err)
			}
			_, err = Open(tc.dir, Options{FS: tc.fs})
			want := fmt.Sprintf("another thatch (pid %d) is using %s", os.Getpid(), tc.dir)
			if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), want) {
				t.Fatalf("second open: %v; want ErrInUse saying %q", err, want)
			}
			// The failed open must not have taken the first one's lock or
			// pid file.
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			re, err := Open(tc.dir, Options{FS: tc.fs})
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			if err := re.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// privateModes checks that dir is 0700 and every file in it 0600.
func privateModes(t *testing.T, dir string) {
	t.Helper()
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := st.Mode().Perm(); m != 0o700 {
		t.Errorf("%s has mode %#o, want 0700", dir, m)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 4 {
		t.Fatalf("%s holds only %d entries; the store wrote nothing?", dir, len(entries))
	}
	for _, e := range entries {
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // Pebble removed an obsolete file
		}
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().IsRegular() && info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %#o, want 0600", e.Name(), info.Mode().Perm())
		}
	}
}

// fillAndFlush appends, flushes and appends again, so that the folder holds
// a WAL, tables, a MANIFEST and the markers.
func fillAndFlush(t *testing.T, st *Store) {
	t.Helper()
	j := st.Journal()
	mustAppend(t, j, idA, 1, 50, MarkUnchanged)
	if err := st.DB().Flush(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, j, idA, 51, 5, MarkUnchanged)
}

func TestNewStoreIsPrivate(t *testing.T) {
	// The OS creates files 0666 and folders 0777 less the umask; with the
	// usual 022 they would be readable by everyone.
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "journal")
	st, err := Open(dir, Options{Warn: func(msg string, _ ...any) { t.Errorf("warning on a new folder: %s", msg) }})
	if err != nil {
		t.Fatal(err)
	}
	fillAndFlush(t, st)
	privateModes(t, dir)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	privateModes(t, dir)
}

func TestOpenMakesALooseStorePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	st, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fillAndFlush(t, st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// What an older thatch left: a 0755 folder of 0644 files.
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, 0o755)
		}
		return os.Chmod(p, 0o644)
	}); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var warnings []string
	st, err = Open(dir, Options{Warn: func(msg string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		warnings = append(warnings, fmt.Sprint(append([]any{msg}, args...)...))
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	privateModes(t, dir)
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) != 2 || !strings.Contains(warnings[0], "0700") || !strings.Contains(warnings[0], dir) ||
		!strings.Contains(warnings[1], "files") {
		t.Fatalf("warnings %q; want one for the folder and one for its files", warnings)
	}
	if got := replay(t, st.Journal(), idA, 1, 1000, NoLimit); len(got) != 55 {
		t.Fatalf("the store holds %d events after the chmod, want 55", len(got))
	}
}

// TestOpenContextReturnsWhenContextEnds holds Pebble inside its Open (as a
// disk that never answers would) and cancels.
func TestOpenContextReturnsWhenContextEnds(t *testing.T) {
	mem := vfs.NewMem()
	release := make(chan struct{})
	var once sync.Once
	entered := make(chan struct{})
	fsys := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpCreate && strings.Contains(op.Path, "MANIFEST") {
			once.Do(func() { close(entered) })
			<-release
		}
		return nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		st, err := OpenContext(ctx, "db", Options{FS: fsys})
		if st != nil {
			st.Close()
		}
		errc <- err
	}()
	<-entered
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "db") {
			t.Fatalf("OpenContext after cancel: %v; want context.Canceled naming the folder", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OpenContext did not return after its context ended")
	}
	// The folder stays locked while Pebble still opens; once it finishes,
	// the abandoned open closes the database and releases the lock.
	if _, err := Open("db", Options{FS: fsys}); !errors.Is(err, ErrInUse) {
		t.Fatalf("open while the abandoned one runs: %v, want ErrInUse", err)
	}
	close(release)
	abandonedOpens.Wait()
	st, err := Open("db", Options{FS: fsys})
	if err != nil {
		t.Fatalf("open after the abandoned one ended: %v", err)
	}
	st.Close()
}
