package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/supervisor"
)

func init() {
	register(Bench{
		Name:  "recovery",
		Doc:   "cold start: open the store and rehydrate active entities (snapshot + 20 events each) until all are idle, vs reading SQLite state rows",
		Order: 30,
		Run:   benchRecovery,
	})
}

// Each recovering entity has a snapshot at recoverySnap and recoveryTail
// events after it.
const (
	recoverySnap = 100
	recoveryTail = 20
	waitTimeout  = 5 * time.Minute
)

// coldPhases is how long each step of one cold start took, and how Pebble's
// block cache fared.
type coldPhases struct {
	open    time.Duration // persistence.Open
	start   time.Duration // supervisor.Start: scan the active index, spawn
	rebuild time.Duration // until WaitIdle: every entity recovered
	idle    time.Duration // a second WaitIdle with nothing left to do
	hits    int64         // block cache hits during the cold start
	misses  int64         // block cache misses during the cold start
}

func (p coldPhases) total() time.Duration { return p.open + p.start + p.rebuild }

func (p coldPhases) String() string {
	return fmt.Sprintf("open %.0f ms, supervisor.Start %.0f ms, until WaitIdle %.0f ms (a WaitIdle with nothing to do: %.0f ms); block cache hits %d misses %d",
		ms(p.open), ms(p.start), ms(p.rebuild), ms(p.idle), p.hits, p.misses)
}

// recoveryTarget is the entity count the cold recovery target is set for.
const recoveryTarget = 10_000

// bigCache is the block cache of recovery.cold_bigcache: eight times the
// default, to show whether recovery is bound by cache misses.
const bigCache = 256 << 20

func benchRecovery(c *Config) ([]Record, error) {
	rc := &recoveryRun{c: c, n: c.Count(recoveryTarget, 2_000), reps: c.Count(3, 1)}
	template, remove, err := c.TempDir("recovery-template")
	if err != nil {
		return nil, err
	}
	defer remove()
	rc.template = template
	c.Logf("recovery: writing %d active entities (snapshot + %d events)", rc.n, recoveryTail)
	if err := fillRecovery(template, rc.n); err != nil {
		return nil, err
	}

	var m recoveryResults
	c.Logf("recovery: %d cold starts with the journal still in the WAL", rc.reps)
	if m.wal, err = rc.fromWAL(persistence.Options{}); err != nil {
		return nil, err
	}
	c.Logf("recovery: %d cold starts from the WAL with a %d MiB block cache", rc.reps, bigCache>>20)
	if m.big, err = rc.fromWAL(persistence.Options{CacheSize: bigCache}); err != nil {
		return nil, err
	}
	c.Logf("recovery: %d cold starts with the journal flushed to sstables", rc.reps)
	if m.flushed, err = rc.flushed(); err != nil {
		return nil, err
	}
	c.Logf("recovery: storage only (no actors)")
	if m.storage1, m.storageN, err = storageRecovery(template, rc.n); err != nil {
		return nil, err
	}
	c.Logf("recovery: sqlite baseline")
	if m.sqlite, err = sqliteRecovery(c, rc.n); err != nil {
		return nil, err
	}
	return m.records(rc.n, rc.reps), nil
}

// recoveryRun is the recovery benchmark's data set: n active entities in
// the store in template, each cold start measured reps times.
type recoveryRun struct {
	c        *Config
	template string
	n, reps  int
}

// fromWAL is the median of reps cold starts, each from a fresh copy of the
// template: the first Open replays and flushes the WAL, which changes what
// the next one finds.
func (rc *recoveryRun) fromWAL(o persistence.Options) (coldPhases, error) {
	var runs []coldPhases
	for range rc.reps {
		dir, removeCopy, err := rc.c.TempDir("recovery")
		if err != nil {
			return coldPhases{}, err
		}
		if err := copyDir(rc.template, dir); err != nil {
			removeCopy()
			return coldPhases{}, err
		}
		p, err := coldStart(dir, rc.n, o)
		removeCopy()
		if err != nil {
			return coldPhases{}, err
		}
		runs = append(runs, p)
	}
	return medianRun(runs), nil
}

// flushed flushes the template to sstables, lets the compactions that the
// flushed files trigger finish, and returns the median of reps cold starts
// of it.
func (rc *recoveryRun) flushed() (coldPhases, error) {
	if err := flushStore(rc.template); err != nil {
		return coldPhases{}, err
	}
	if err := settleStore(rc.template); err != nil {
		return coldPhases{}, err
	}
	var runs []coldPhases
	for range rc.reps {
		p, err := coldStart(rc.template, rc.n, persistence.Options{})
		if err != nil {
			return coldPhases{}, err
		}
		runs = append(runs, p)
	}
	return medianRun(runs), nil
}

// recoveryResults are the recovery benchmark's measurements.
type recoveryResults struct {
	wal, big, flushed  coldPhases
	storage1, storageN time.Duration // storage only, 1 and GOMAXPROCS goroutines
	sqlite             time.Duration // the baseline
}

// records turns the measurements into the recovery records.
func (m recoveryResults) records(n, reps int) []Record {
	wal, big, flushed, sq := m.wal, m.big, m.flushed, m.sqlite
	workers := runtime.GOMAXPROCS(0)
	setup := fmt.Sprintf("%d entities marked active, each a snapshot (%d B) at seq %d + %d events (%d B); median of %d cold starts",
		n, stateBytes(), recoverySnap, recoveryTail, eventBytes, reps)
	base := fmt.Sprintf("baseline: sql.Open + SELECT and json.Unmarshal of %d state rows (%d B), one connection", n, stateBytes())
	cold := newRecord("recovery.cold", ms(wal.total()), "ms",
		fmt.Sprintf("%s; journal left in the WAL as the writers left it (Close does not flush), so Open replays and flushes it; %s; %s",
			setup, wal, base)).
		withBaseline(ms(sq))
	if n == recoveryTarget {
		cold = cold.atMost(500)
	} else {
		cold.Notes += fmt.Sprintf("; the <= 500 ms target is for %d entities and is not judged at %d", recoveryTarget, n)
	}
	return []Record{
		cold,
		newRecord("recovery.cold.open", ms(wal.open), "ms", "persistence.Open of recovery.cold (WAL replay + flush)"),
		newRecord("recovery.cold.start", ms(wal.start), "ms", "supervisor.Start of recovery.cold (active index scan, spawn of every entity; they start recovering meanwhile)"),
		newRecord("recovery.cold.rebuild", ms(wal.rebuild), "ms", "from Start's return until WaitIdle returned (snapshot load, replay, decode, Apply in the actors)"),
		newRecord("recovery.cold_bigcache", ms(big.total()), "ms",
			fmt.Sprintf("as recovery.cold but Options.CacheSize %d MiB instead of the default 32 MiB (the store adds room for two full memtables to either, since Pebble reserves memtable memory out of the cache); compare the misses; %s",
				bigCache>>20, big)).withBaseline(ms(sq)),
		newRecord("recovery.cold_flushed", ms(flushed.total()), "ms",
			fmt.Sprintf("same data flushed to sstables and compacted before the store was closed; %s", flushed)).withBaseline(ms(sq)),
		newRecord("recovery.storage_only", ms(m.storageN), "ms",
			fmt.Sprintf("no actors: LoadSnapshot + Decode + Replay + Decode + Apply + HighestSeq for %d entities on %d goroutines, store already open (flushed); 1 goroutine: %.0f ms",
				n, workers, ms(m.storage1))),
	}
}

// medianRun is the run with the median total time.
func medianRun(runs []coldPhases) coldPhases {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b coldPhases) int { return cmp.Compare(a.total(), b.total()) })
	return sorted[len(sorted)/2]
}

// copyDir copies the regular files of src (a Pebble folder is flat) into dst.
func copyDir(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("bench: copy %s: %w", src, err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return fmt.Errorf("bench: copy %s: %w", src, err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			return fmt.Errorf("bench: copy %s: %w", src, err)
		}
	}
	return nil
}

// settleStore opens the store in dir and waits until Pebble has no
// compaction running or owed, then closes it.
func settleStore(dir string) error {
	st, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		m := st.DB().Metrics()
		if m.Compact.NumInProgress == 0 && m.Compact.EstimatedDebt == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return st.Close()
}

// fillRecovery writes n active entities into a new store in dir: a snapshot
// at recoverySnap and recoveryTail events after it, marked active. Setup
// skips fsync; Close leaves the data in the WAL, where a stopped daemon
// leaves it.
func fillRecovery(dir string, n int) error {
	st, err := persistence.Open(dir, persistence.Options{NoSync: true})
	if err != nil {
		return err
	}
	j := st.Journal()
	err = forEachParallel(runtime.GOMAXPROCS(0), n, func(i int) error {
		id := entityID(i)
		snap, err := messages.Encode(stateAfter(id, recoverySnap, true))
		if err != nil {
			return err
		}
		// The tail first: Compact's seq must not exceed the entity's
		// highest, which the tail's last event sets.
		evs := make([][]byte, recoveryTail)
		for k := range evs {
			evs[k] = encodedEvent(id, uint64(recoverySnap+k+1))
		}
		if err := j.Append(ident(id), recoverySnap+1, evs, persistence.MarkActive); err != nil {
			return err
		}
		return j.Compact(ident(id), recoverySnap, snap)
	})
	return errors.Join(err, st.Close())
}

// flushStore opens the store in dir, flushes its memtables and closes it.
func flushStore(dir string) error {
	st, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		return err
	}
	return errors.Join(st.DB().Flush(), st.Close())
}

// startTree starts a tree of the benchmark kind.
func startTree(st *persistence.Store) (*liveTree, error) {
	tree, err := supervisor.Start(supervisor.Options{
		Journal: st.Journal(),
		Env:     benchEnv(),
		Kinds:   []supervisor.Spec{supervisor.Entity[entityState](benchEntity{})},
	})
	if err != nil {
		return nil, err
	}
	return &liveTree{tree: tree}, nil
}

// liveTree is a running tree (with its own actor system).
type liveTree struct {
	tree *supervisor.Tree
}

func (a *liveTree) stop() {
	_ = a.tree.Stop(time.Minute)
}

// coldStart opens the store in dir and starts a tree, which rehydrates the n
// active entities, and times each step until all of them have recovered.
// It then checks that they rebuilt the right state.
func coldStart(dir string, n int, o persistence.Options) (coldPhases, error) {
	var p coldPhases
	runtime.GC()
	t0 := time.Now()
	st, err := persistence.Open(dir, o)
	if err != nil {
		return p, err
	}
	defer st.Close()
	t1 := time.Now()
	a, err := startTree(st)
	if err != nil {
		return p, err
	}
	defer a.stop()
	t2 := time.Now()
	if err := a.tree.WaitIdle(waitTimeout); err != nil {
		return p, err
	}
	t3 := time.Now()
	if err := a.tree.WaitIdle(waitTimeout); err != nil {
		return p, err
	}
	t4 := time.Now()
	bc := st.DB().Metrics().BlockCache
	p = coldPhases{open: t1.Sub(t0), start: t2.Sub(t1), rebuild: t3.Sub(t2), idle: t4.Sub(t3), hits: bc.Hits, misses: bc.Misses}
	return p, checkRecovered(a.tree, n, recoverySnap+recoveryTail)
}

// checkRecovered verifies that n entities are live and that a sample of them
// holds the state that seq events build.
func checkRecovered(tree *supervisor.Tree, n int, seq uint64) error {
	live, err := tree.LiveIDs(benchKind, time.Minute)
	if err != nil {
		return err
	}
	if len(live) != n {
		return fmt.Errorf("bench: %d entities live after recovery, want %d", len(live), n)
	}
	step := max(n/16, 1)
	for i := 0; i < n; i += step {
		if err := checkState(tree, entityID(i), seq, true); err != nil {
			return err
		}
	}
	return checkState(tree, entityID(n-1), seq, true)
}

// checkState asks entity id for its state and compares it with the state
// seq events build (armed is what its snapshot says).
func checkState(tree *supervisor.Tree, id string, seq uint64, armed bool) error {
	res, err := tree.Request(ident(id), &getState{}, time.Minute)
	if err != nil {
		return err
	}
	got, ok := res.(*entityState)
	want := stateAfter(id, seq, armed)
	if !ok || got.Seq != want.Seq || got.Total != want.Total || got.Armed != want.Armed ||
		len(got.Recent) != len(want.Recent) || got.Recent[len(got.Recent)-1] != want.Recent[len(want.Recent)-1] {
		return fmt.Errorf("bench: %s recovered %+v, want seq %d total %d", id, res, want.Seq, want.Total)
	}
	return nil
}

// storageRecovery does what each entity does in recoverState, without
// actors: on GOMAXPROCS goroutines, then on one.
func storageRecovery(dir string, n int) (one, all time.Duration, err error) {
	st, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		return 0, 0, err
	}
	defer st.Close()
	return rebuildAll(st, n)
}

// rebuildAll rebuilds the n entities' states from st as recoverState does,
// on GOMAXPROCS goroutines and then on one.
func rebuildAll(st *persistence.Store, n int) (one, all time.Duration, err error) {
	j := st.Journal()
	k := benchEntity{}
	rebuild := func(i int) error {
		id := ident(entityID(i))
		snap, ok, err := j.LoadSnapshot(id, math.MaxUint64)
		if err != nil || !ok {
			return fmt.Errorf("bench: snapshot of %s: %v %w", id, ok, err)
		}
		s, err := messages.DecodeAs[entityState](snap.Data)
		if err != nil {
			return err
		}
		err = j.Replay(id, snap.Seq+1, math.MaxUint64, persistence.NoLimit, func(_ uint64, b []byte) error {
			ev, err := messages.Decode(b)
			if err == nil {
				s = k.Apply(s, ev)
			}
			return err
		})
		if err != nil {
			return err
		}
		if _, err := j.HighestSeq(id); err != nil {
			return err
		}
		if s.Seq != recoverySnap+recoveryTail {
			return fmt.Errorf("bench: %s rebuilt to seq %d", id, s.Seq)
		}
		return nil
	}
	for _, w := range []int{runtime.GOMAXPROCS(0), 1} {
		start := time.Now()
		if err := forEachParallel(w, n, rebuild); err != nil {
			return 0, 0, err
		}
		if w == 1 {
			one = time.Since(start)
		} else {
			all = time.Since(start)
		}
	}
	return one, all, nil
}

// sqliteRecovery fills a baseline database with n state rows and times a
// cold start of the baseline: open it and decode every row.
func sqliteRecovery(c *Config, n int) (time.Duration, error) {
	dir, remove, err := c.TempDir("sqlite-recovery")
	if err != nil {
		return 0, err
	}
	defer remove()
	ctx := context.Background()
	db, err := openSQLite(ctx, dir, 1)
	if err != nil {
		return 0, err
	}
	err = fillSQLite(ctx, db, n, recoverySnap+recoveryTail)
	if err = errors.Join(err, db.Close()); err != nil {
		return 0, err
	}
	runtime.GC()
	start := time.Now()
	db, err = openSQLite(ctx, dir, 1)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	got, err := readSQLite(ctx, db, math.MinInt64, math.MaxInt64, true)
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if got != int64(n) {
		return 0, fmt.Errorf("bench: baseline recovered %d rows, want %d", got, n)
	}
	return d, nil
}
