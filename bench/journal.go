package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/thatch-run/thatch/persistence"
)

func init() {
	register(Bench{
		Name:  "journal",
		Doc:   "durable appends/s with 1, 64 and 1000 concurrent entities, vs SQLite rewriting a JSON row per event; c1000 also vs Pebble's own limit (synced 100-event batches, raw Set+Sync)",
		Order: 10,
		Run:   benchJournal,
	})
}

// journalLevels are the numbers of concurrent entities (one goroutine each).
var journalLevels = []int{1, 64, 1000}

// sqlitePool is the baseline's database/sql pool size at a concurrency
// level. SQLite lets one writer in at a time whatever the pool size; more
// connections only add lock hand-offs (busy_timeout sleeps), so the pool is
// capped. The cap gives the baseline its best case: on a 2-core machine,
// with 64 and 1000 writers, pools of 1, 4, 16, 64 and 1000 connections wrote
// about 2.5k/1.2k, 5.0k/4.8k, 2.2k/3.6k, 1.3k/1.2k and 0.7k/0.4k rows/s.
func sqlitePool(level int) int { return min(level, 4) }

// loadResult is what one throughput run measured.
type loadResult struct {
	events  int64
	elapsed time.Duration
	p50     time.Duration
	p99     time.Duration
}

func (r loadResult) rate() float64 { return rate(r.events, r.elapsed) }

func benchJournal(c *Config) ([]Record, error) {
	dur := c.Duration(3*time.Second, 400*time.Millisecond)
	var out []Record
	for _, level := range journalLevels {
		c.Logf("journal: thatch, %d entities, %v", level, dur)
		th, err := thatchAppends(c, level, dur)
		if err != nil {
			return out, err
		}
		c.Logf("journal: sqlite, %d entities, %v", level, dur)
		sq, err := sqliteWrites(c, level, dur)
		if err != nil {
			return out, err
		}
		notes := fmt.Sprintf("%d goroutines, 1 pre-encoded event (%d B) per fsync'd Append for %v, fresh store; append latency p50 %v p99 %v; "+
			"baseline: SQLite WAL synchronous=FULL, json.Marshal + INSERT OR REPLACE of a %d B state row per event, pool %d conns, p50 %v p99 %v",
			level, eventBytes, dur.Round(time.Millisecond), th.p50, th.p99, stateBytes(), sqlitePool(level), sq.p50, sq.p99)
		r := newRecord(fmt.Sprintf("journal.durable.c%d", level), th.rate(), "events/s", notes).withBaseline(sq.rate())
		if level == 1000 {
			r = r.atLeast(300_000).ratioAtLeast(10)
		}
		out = append(out, r)
		if level == 1000 {
			lim, err := limitRecord(c, th, dur)
			if err != nil {
				return out, err
			}
			out = append(out, lim)
		}
	}
	return out, nil
}

// stateBytes is the size of a typical baseline state row.
func stateBytes() int {
	b, _ := jsonSize(stateAfter(entityID(0), 120, false))
	return b
}

// load runs n workers; each calls op in a loop. Once every worker has
// completed one call, a warm-up of dur/5 (Pebble's WAL, the connection pool,
// spawned entities) is followed by the measured window of dur: the calls
// that complete in it are counted and their latencies kept.
func load(n int, dur time.Duration, op func(worker int, i uint64) error) (loadResult, error) {
	warm := dur / 5
	var (
		counting atomic.Bool
		stop     atomic.Bool
		count    atomic.Int64
		wg       sync.WaitGroup
		ready    sync.WaitGroup
		errOnce  sync.Once
		firstErr error
		lats     = make([][]time.Duration, n)
	)
	ready.Add(n)
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			isReady := false
			markReady := func() {
				if !isReady {
					isReady = true
					ready.Done()
				}
			}
			defer markReady()
			for i := uint64(0); !stop.Load(); i++ {
				t0 := time.Now()
				if err := op(w, i); err != nil {
					errOnce.Do(func() { firstErr = err })
					stop.Store(true)
					return
				}
				markReady()
				if counting.Load() {
					count.Add(1)
					mine = append(mine, time.Since(t0))
				}
			}
			lats[w] = mine
		}()
	}
	ready.Wait()
	time.Sleep(warm)
	counting.Store(true)
	start := time.Now()
	base := count.Load()
	time.Sleep(dur)
	// A window so short (tiny test runs) or a machine so loaded that no
	// operation finished in it measures nothing: wait for the first one,
	// a bounded while, and count the time it took.
	for deadline := time.Now().Add(10 * time.Second); count.Load() == base && time.Now().Before(deadline); {
		time.Sleep(dur/10 + time.Millisecond)
	}
	events := count.Load() - base
	elapsed := time.Since(start)
	stop.Store(true)
	wg.Wait()
	if firstErr != nil {
		return loadResult{}, firstErr
	}
	all := slices.Concat(lats...)
	slices.Sort(all)
	return loadResult{events: events, elapsed: elapsed, p50: percentile(all, 50).Round(time.Microsecond), p99: percentile(all, 99).Round(time.Microsecond)}, nil
}

// thatchAppends measures durable appends of n entities on a fresh store.
func thatchAppends(c *Config, n int, dur time.Duration) (loadResult, error) {
	dir, remove, err := c.TempDir("journal")
	if err != nil {
		return loadResult{}, err
	}
	defer remove()
	st, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		return loadResult{}, err
	}
	j := st.Journal()
	ids := make([]persistence.Identity, n)
	evs := make([][][]byte, n)
	for i := range ids {
		ids[i] = ident(entityID(i))
		evs[i] = [][]byte{encodedEvent(ids[i].ID, 1)}
	}
	res, err := load(n, dur, func(w int, i uint64) error {
		return j.Append(ids[w], i+1, evs[w], persistence.MarkUnchanged)
	})
	return res, errors.Join(err, st.Close())
}

// sqliteWrites measures the baseline: n entities each rewriting its JSON
// state row per event through one database/sql pool.
func sqliteWrites(c *Config, n int, dur time.Duration) (loadResult, error) {
	dir, remove, err := c.TempDir("sqlite")
	if err != nil {
		return loadResult{}, err
	}
	defer remove()
	ctx := context.Background()
	db, err := openSQLite(ctx, dir, sqlitePool(n))
	if err != nil {
		return loadResult{}, err
	}
	res, err := runSQLiteWriters(ctx, db, n, dur)
	return res, errors.Join(err, db.Close())
}

func runSQLiteWriters(ctx context.Context, db *sql.DB, n int, dur time.Duration) (loadResult, error) {
	stmt, err := db.PrepareContext(ctx, upsertSQL)
	if err != nil {
		return loadResult{}, fmt.Errorf("bench: prepare: %w", err)
	}
	defer stmt.Close()
	ws := make([]*sqliteWriter, n)
	for i := range ws {
		ws[i] = &sqliteWriter{stmt: stmt, state: entityState{ID: entityID(i)}}
	}
	return load(n, dur, func(w int, _ uint64) error { return ws[w].write(ctx) })
}
