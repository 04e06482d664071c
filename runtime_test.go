package thatch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/actors/sweeper"
	"github.com/thatch-run/thatch/config"
)

// startBare starts a runtime with no front end in a new data directory
// made with mode 0755.
func startBare(t *testing.T, logger hclog.Logger) (*Runtime, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults()
	cfg.Data.Dir = dir
	cfg.Control.TokenFile = filepath.Join(dir, "control.token")
	cfg.Control.StateFile = filepath.Join(dir, "control.json")
	rt, err := New(cfg, Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	return rt, dir
}

func TestTheDataDirectoryIsMadePrivate(t *testing.T) {
	_, dir := startBare(t, hclog.NewNullLogger())
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o700 {
		t.Errorf("data directory mode %v, want 0700", mode)
	}
}

// A runtime without the opencode front end (an embedder's, or the IM
// front end alone) runs no sweeper: no sweep is released that nobody
// handles, and nothing is logged as dropped.
func TestARuntimeWithoutTheOpencodeFrontEndRunsNoSweeps(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	})})
	rt, _ := startBare(t, logger)
	if rt.tree.HasKind(sweeper.KindName) {
		t.Fatal("a sweeper runs with no front end to run its sweeps")
	}
	if err := rt.Quiesce(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	st, err := rt.StatusReport()
	if err != nil {
		t.Fatal(err)
	}
	if st.UnhandledEffects != 0 || len(st.FrontEnds) != 0 {
		t.Fatalf("status: %d effects without a handler, front ends %+v", st.UnhandledEffects, st.FrontEnds)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logs.String(), "no handler for effect") {
		t.Fatalf("logged:\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
