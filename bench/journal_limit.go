package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/thatch-run/thatch/persistence"
)

// The journal's limit (issue 11): what Pebble itself does on this disk, in
// the same run, with the options the journal opens it with. Two probes
// bracket the journal's group commit at 1000 entities: raw Set with
// pebble.Sync from 1000 goroutines (one commit per event, Pebble sharing
// its WAL syncs among them) is what the group commit must beat, and synced
// batches of limitBatch events from limitBatchWriters goroutines (the same
// 1000 events in flight, batched for free) is what it can at best reach.
const (
	// limitBatch is the events per synced batch of the batched probe.
	limitBatch = 100
	// limitBatchWriters is how many goroutines commit batches, so that as
	// many events are in flight as in journal.durable.c1000.
	limitBatchWriters = 1000 / limitBatch
	// limitTarget is the lowest acceptable journal.durable.c1000 as a
	// share of the batched limit.
	limitTarget = 0.5
)

// limitPrefix keeps the probes' keys apart from the journal's.
var limitPrefix = []byte("bench-limit/")

// limitKey is the key of event seq of writer w.
func limitKey(w int, seq uint64) []byte {
	k := append(append([]byte(nil), limitPrefix...), entityID(w)...)
	return binary.BigEndian.AppendUint64(append(k, '/'), seq)
}

// pebbleLimit runs op on n goroutines for dur on the Pebble of a fresh
// journal store (persistence.Open's options, its sync policy) and returns
// the load result with events scaled by perOp, the events each op writes.
// Each writer w is given one pre-encoded event, as thatchAppends is.
func pebbleLimit(c *Config, n, perOp int, dur time.Duration, op func(db *pebble.DB, wo *pebble.WriteOptions, w int, i uint64, ev []byte) error) (loadResult, error) {
	dir, remove, err := c.TempDir("journal-limit")
	if err != nil {
		return loadResult{}, err
	}
	defer remove()
	st, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		return loadResult{}, err
	}
	db, wo := st.DB(), st.WriteOptions()
	if !wo.Sync {
		return loadResult{}, errors.Join(errors.New("bench: the journal store does not sync"), st.Close())
	}
	evs := make([][]byte, n)
	for w := range evs {
		evs[w] = encodedEvent(entityID(w), 1)
	}
	res, err := load(n, dur, func(w int, i uint64) error { return op(db, wo, w, i, evs[w]) })
	res.events *= int64(perOp)
	return res, errors.Join(err, st.Close())
}

// setSyncLimit is raw Set with the store's sync policy, one event per
// commit, from n goroutines.
func setSyncLimit(c *Config, n int, dur time.Duration) (loadResult, error) {
	return pebbleLimit(c, n, 1, dur, func(db *pebble.DB, wo *pebble.WriteOptions, w int, i uint64, ev []byte) error {
		return db.Set(limitKey(w, i+1), ev, wo)
	})
}

// batchedLimit is synced batches of limitBatch events from
// limitBatchWriters goroutines.
func batchedLimit(c *Config, dur time.Duration) (loadResult, error) {
	return pebbleLimit(c, limitBatchWriters, limitBatch, dur, func(db *pebble.DB, wo *pebble.WriteOptions, w int, i uint64, ev []byte) error {
		b := db.NewBatch()
		defer b.Close()
		for k := range uint64(limitBatch) {
			if err := b.Set(limitKey(w, i*limitBatch+k+1), ev, nil); err != nil {
				return err
			}
		}
		return b.Commit(wo)
	})
}

// limitRecord measures both limits and reports journal.durable.c1000 (th)
// against the batched one.
func limitRecord(c *Config, th loadResult, dur time.Duration) (Record, error) {
	c.Logf("journal: limit, raw Pebble Set+Sync from 1000 goroutines, %v", dur)
	set, err := setSyncLimit(c, 1000, dur)
	if err != nil {
		return Record{}, err
	}
	c.Logf("journal: limit, %d-event synced batches from %d goroutines, %v", limitBatch, limitBatchWriters, dur)
	batched, err := batchedLimit(c, dur)
	if err != nil {
		return Record{}, err
	}
	notes := fmt.Sprintf("journal.durable.c1000 against the journal's limit measured in the same run, not against SQLite: "+
		"baseline is Pebble alone (fresh store, the journal's own options and sync policy) committing synced batches of %d pre-encoded %d B events "+
		"from %d goroutines (%d events in flight, as at c1000), p50 %v p99 %v per batch; target: ratio >= %g; "+
		"raw Pebble Set with pebble.Sync, one event per commit from 1000 goroutines, reached %s events/s (p50 %v p99 %v), so the group commit is %.2fx raw Set+Sync",
		limitBatch, eventBytes, limitBatchWriters, limitBatch*limitBatchWriters, batched.p50, batched.p99, limitTarget,
		formatNumber(set.rate()), set.p50, set.p99, th.rate()/set.rate())
	return newRecord("journal.durable.c1000.vs_batched_limit", th.rate(), "events/s", notes).
		withBaseline(batched.rate()).ratioAtLeast(limitTarget), nil
}
