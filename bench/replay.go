package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
)

func init() {
	register(Bench{
		Name:  "replay",
		Doc:   "events/s replayed from many entities' journals, raw and through messages.Decode, vs reading SQLite state rows",
		Order: 20,
		Run:   benchReplay,
	})
}

// replayReps is how many times each replay is measured; the median counts.
const replayReps = 3

func benchReplay(c *Config) ([]Record, error) {
	entities := c.Count(10_000, 2_000)
	perEntity := c.Count(100, 50)
	workers := runtime.GOMAXPROCS(0)

	dir, remove, err := c.TempDir("replay")
	if err != nil {
		return nil, err
	}
	defer remove()
	c.Logf("replay: journaling %d entities x %d events", entities, perEntity)
	if err := fillJournal(dir, entities, perEntity); err != nil {
		return nil, err
	}
	st, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	rp := newReplayer(st.Journal(), entities, perEntity)

	c.Logf("replay: thatch raw and decoded, %d workers", workers)
	var r replayRates
	for _, m := range []struct {
		into    *float64
		workers int
		decode  bool
	}{{&r.raw, workers, false}, {&r.dec, workers, true}, {&r.raw1, 1, false}, {&r.dec1, 1, true}} {
		if *m.into, err = rp.median(m.workers, m.decode); err != nil {
			return nil, err
		}
	}

	c.Logf("replay: sqlite baseline, %d rows", entities)
	if r.sqRaw, r.sqDec, err = sqliteReadRate(c, entities, uint64(perEntity), workers); err != nil {
		return nil, err
	}
	return r.records(entities, perEntity, workers), nil
}

// replayer replays every entity of a filled journal.
type replayer struct {
	j     *persistence.Journal
	ids   []persistence.Identity
	total int64 // events the journal holds
}

func newReplayer(j *persistence.Journal, entities, perEntity int) *replayer {
	ids := make([]persistence.Identity, entities)
	for i := range ids {
		ids[i] = ident(entityID(i))
	}
	return &replayer{j: j, ids: ids, total: int64(entities) * int64(perEntity)}
}

// all replays every entity once on workers goroutines, through
// messages.Decode if decode is set, checks that every event was read, and
// returns the events/s.
func (r *replayer) all(workers int, decode bool) (float64, error) {
	var n atomic.Int64
	start := time.Now()
	err := forEachParallel(workers, len(r.ids), func(i int) error {
		var mine int64
		err := r.j.Replay(r.ids[i], 1, persistence.NoLimit, persistence.NoLimit, func(_ uint64, ev []byte) error {
			if decode {
				if _, err := messages.Decode(ev); err != nil {
					return err
				}
			} else if len(ev) == 0 {
				return errors.New("empty event")
			}
			mine++
			return nil
		})
		n.Add(mine)
		return err
	})
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if n.Load() != r.total {
		return 0, fmt.Errorf("bench: replayed %d events, want %d", n.Load(), r.total)
	}
	return rate(r.total, d), nil
}

// median is the median rate of replayReps runs of all.
func (r *replayer) median(workers int, decode bool) (float64, error) {
	var xs []float64
	for range replayReps {
		x, err := r.all(workers, decode)
		if err != nil {
			return 0, err
		}
		xs = append(xs, x)
	}
	return median(xs), nil
}

// replayRates are the replay benchmark's measurements, events/s (rows/s
// for the SQLite baseline).
type replayRates struct {
	raw, dec     float64 // on every worker
	raw1, dec1   float64 // on one
	sqRaw, sqDec float64 // the baseline
}

// records turns the rates into the replay records.
func (r replayRates) records(entities, perEntity, workers int) []Record {
	common := fmt.Sprintf("%d entities x %d events (%d B), %d workers, median of %d; store flushed and reopened (Pebble cache cold, OS cache warm)",
		entities, perEntity, eventBytes, workers, replayReps)
	base := fmt.Sprintf("baseline: SELECT of %d JSON state rows (%d B), %d connections by rowid range, rows/s; a row is a whole entity, so the ratio compares records read, not entities rebuilt",
		entities, stateBytes(), workers)
	return []Record{
		newRecord("replay.raw", r.raw, "events/s",
			fmt.Sprintf("%s; 1 worker: %s events/s; %s", common, formatNumber(r.raw1), base)).
			withBaseline(r.sqRaw).atLeast(1_000_000),
		newRecord("replay.decoded", r.dec, "events/s",
			fmt.Sprintf("%s; each event through messages.Decode; 1 worker: %s events/s; entities rebuilt/s: %s vs SQLite rows decoded/s: %s; %s",
				common, formatNumber(r.dec1), formatNumber(r.dec/float64(perEntity)), formatNumber(r.sqDec), base)).
			withBaseline(r.sqDec).atLeast(1_000_000),
	}
}

// fillJournal writes perEntity events for each of n entities into a new store
// in dir, flushes it to sstables and closes it. Setup skips fsync: the files
// are complete when Close returns, and only reads are measured afterwards.
func fillJournal(dir string, n, perEntity int) error {
	st, err := persistence.Open(dir, persistence.Options{NoSync: true})
	if err != nil {
		return err
	}
	j := st.Journal()
	err = forEachParallel(runtime.GOMAXPROCS(0), n, func(i int) error {
		id := entityID(i)
		evs := make([][]byte, perEntity)
		for k := range evs {
			evs[k] = encodedEvent(id, uint64(k+1))
		}
		return j.Append(ident(id), 1, evs, persistence.MarkUnchanged)
	})
	if err == nil {
		err = st.DB().Flush()
	}
	return errors.Join(err, st.Close())
}

// sqliteReadRate fills a baseline database with n state rows, reopens it and
// measures rows read per second, raw and with JSON decoding.
func sqliteReadRate(c *Config, n int, seq uint64, workers int) (raw, decoded float64, err error) {
	dir, remove, err := c.TempDir("sqlite-replay")
	if err != nil {
		return 0, 0, err
	}
	defer remove()
	ctx := context.Background()
	db, err := openSQLite(ctx, dir, 1)
	if err != nil {
		return 0, 0, err
	}
	err = fillSQLite(ctx, db, n, seq)
	if err = errors.Join(err, db.Close()); err != nil {
		return 0, 0, err
	}
	if db, err = openSQLite(ctx, dir, workers); err != nil {
		return 0, 0, err
	}
	defer db.Close()
	once := func(decode bool) (float64, error) {
		var got atomic.Int64
		chunk := int64(n+workers-1) / int64(workers)
		start := time.Now()
		err := forEachParallel(workers, workers, func(w int) error {
			lo := 1 + int64(w)*chunk
			k, err := readSQLite(ctx, db, lo, lo+chunk, decode)
			got.Add(k)
			return err
		})
		d := time.Since(start)
		if err != nil {
			return 0, err
		}
		if got.Load() != int64(n) {
			return 0, fmt.Errorf("bench: read %d sqlite rows, want %d", got.Load(), n)
		}
		return rate(int64(n), d), nil
	}
	for _, decode := range []bool{false, true} {
		var xs []float64
		for range replayReps {
			r, err := once(decode)
			if err != nil {
				return 0, 0, err
			}
			xs = append(xs, r)
		}
		if decode {
			decoded = median(xs)
		} else {
			raw = median(xs)
		}
	}
	return raw, decoded, nil
}

// forEachParallel calls fn(i) for i in [0, n) on the given number of
// goroutines and returns the first error (the others stop early).
func forEachParallel(workers, n int, fn func(i int) error) error {
	var (
		next    atomic.Int64
		failed  atomic.Bool
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					errOnce.Do(func() { first = err })
					failed.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
