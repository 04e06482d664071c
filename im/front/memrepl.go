package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/thatch-run/thatch/internal/redact"
	"github.com/thatch-run/thatch/internal/retry"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/persistence/memory"
)

// memoryOutbox is the row table of this node's memory changes not yet on
// the cluster's stream: a change is kept here in the store's own commit
// of it (memory.Store.LogChanges) and deleted once the stream took it,
// so that a crash at any point or a cluster without a quorum loses none.
const memoryOutbox = "im.cluster.memory_out"

// memoryApplied is the row table of the newest change applied here of
// each node's (key: the node, value: its outbox key): a change published
// again after the stream's hour of deduplication (published, then a
// crash before its row was deleted, and more than an hour down) is
// skipped, not applied over what came after it.
const memoryApplied = "im.cluster.memory_applied"

// clusterTable holds the cluster's rows of this node: its store's id, the
// memory's last outbox key (memorySeqKey), whether it seeded.
const (
	clusterTable  = "im.cluster"
	memorySeqKey  = "memory_seq"
	memorySeedKey = "memory_seeded"
)

// memoryEnvelope is a change on the stream: the node that made it and
// its outbox key (which increases with each change the node makes). A
// change published before thatch named them is the bare change.
type memoryEnvelope struct {
	Origin string          `json:"origin"`
	Seq    uint64          `json:"seq"`
	Change json.RawMessage `json:"change"`
}

// memoryReplica replicates the memory store over the cluster: every
// change made here goes to the stream (through the outbox), and every
// change on the stream, this node's too, is applied here in the stream's
// order, so that every node's store ends the same (the last write of a
// label in the stream's order wins).
type memoryReplica struct {
	f    *FrontEnd
	seq  atomic.Uint64
	wake chan struct{}
	// applied is memoryApplied as read at open and written since; only
	// the consumer's goroutine uses it after open.
	applied map[string]uint64
}

// openMemoryReplica tells the memory store, from Open on, to keep every
// change made here in the outbox (also those made before the cluster is
// up, or after the front end stopped, until the store closes: they are
// published at the next start). The outbox's keys go on from its largest,
// whatever the clock does.
func (f *FrontEnd) openMemoryReplica() error {
	if f.mem == nil || !f.cfg.Cluster.Enabled() {
		return nil
	}
	r := &memoryReplica{f: f, wake: make(chan struct{}, 1), applied: map[string]uint64{}}
	last := uint64(time.Now().UnixNano())
	err := f.rows.Scan(memoryOutbox, func(row persistence.Row) error {
		if n, err := strconv.ParseUint(row.Key, 10, 64); err == nil && n > last {
			last = n
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("im: read the memory's outbox: %w", err)
	}
	err = f.rows.Scan(memoryApplied, func(row persistence.Row) error {
		if n, err := strconv.ParseUint(string(row.Value), 10, 64); err == nil {
			r.applied[row.Key] = n
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("im: read the memory changes applied: %w", err)
	}
	// The keys go on from the largest given out, whatever the clock
	// did meanwhile: the other nodes skip a key at or below one they
	// applied of this node's.
	last = max(last, r.applied[f.cfg.Cluster.Node])
	if row, ok, err := f.rows.Get(clusterTable, memorySeqKey); err != nil {
		return fmt.Errorf("im: read the memory's last key: %w", err)
	} else if n, perr := strconv.ParseUint(string(row.Value), 10, 64); ok && perr == nil {
		last = max(last, n)
	}
	r.seq.Store(last)
	if err := r.seed(); err != nil {
		return err
	}
	f.mem.LogChanges(r.keep)
	f.mem.OnChange(r.changed)
	f.memRepl = r
	return nil
}

// startMemoryReplica starts publishing the outbox and applying the
// stream; its goroutines end with ctx.
func (f *FrontEnd) startMemoryReplica(ctx context.Context) {
	r := f.memRepl
	if r == nil || f.cl == nil {
		return
	}
	f.wg.Add(2)
	go func() {
		defer f.wg.Done()
		r.publish(ctx)
	}()
	go func() {
		defer f.wg.Done()
		f.cl.node.ConsumeMemory(ctx, r.apply)
	}()
}

// seed puts every memory this store held before it took part in the
// cluster in the outbox, once (marked as seeds: a node that has a write of
// one as new or newer keeps its own). A node that applied changes of the
// cluster before, or seeded before, does not.
func (r *memoryReplica) seed() error {
	// A store that was a cluster's before (its id was made then), or
	// applied its changes, shares nothing as new.
	for _, key := range []string{memorySeedKey, instanceKey} {
		if _, done, err := r.f.rows.Get(clusterTable, key); err != nil || done {
			return err
		}
	}
	if len(r.applied) > 0 {
		return nil
	}
	var keys []string
	var values [][]byte
	for _, store := range r.f.mem.Stores() {
		entries, err := r.f.mem.List(store, "")
		if err != nil {
			return fmt.Errorf("im: read the memories to share with the cluster: %w", err)
		}
		for _, e := range entries {
			body, err := json.Marshal(memory.Change{Store: e.Store, Slug: e.Slug, Entry: &e, Seed: true})
			if err != nil {
				return err
			}
			keys, values = append(keys, fmt.Sprintf("%020d", r.seq.Add(1))), append(values, body)
		}
	}
	if err := r.f.rows.PutMany(memoryOutbox, keys, values); err != nil {
		return fmt.Errorf("im: share the memories with the cluster: %w", err)
	}
	if err := r.f.rows.Put(clusterTable, memorySeqKey, []byte(strconv.FormatUint(r.seq.Load(), 10))); err != nil {
		return fmt.Errorf("im: keep the memory's last key: %w", err)
	}
	if len(keys) > 0 {
		r.f.log.Info("the memories this node held before it joined the cluster go to the others", "memories", len(keys))
	}
	return r.f.rows.Put(clusterTable, memorySeedKey, []byte(strconv.Itoa(len(keys))))
}

// keep adds a change made here to the outbox, in b: the store's commit
// of the change.
func (r *memoryReplica) keep(b *pebble.Batch, c memory.Change) error {
	body, err := json.Marshal(c)
	if err != nil {
		return err
	}
	seq := r.seq.Add(1)
	if err := r.f.rows.PutIn(b, clusterTable, memorySeqKey, []byte(strconv.FormatUint(seq, 10))); err != nil {
		return err
	}
	return r.f.rows.PutIn(b, memoryOutbox, fmt.Sprintf("%020d", seq), body)
}

// changed wakes the publisher once a change made here is committed.
func (r *memoryReplica) changed(memory.Change) {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// publish puts the outbox's changes on the stream, in order, each deleted
// once the stream took it; a failure waits and tries again.
func (r *memoryReplica) publish(ctx context.Context) {
	node := r.f.cl.node
	if !node.Wait(ctx) {
		return
	}
	for {
		err := r.f.rows.Scan(memoryOutbox, func(row persistence.Row) error {
			seq, err := strconv.ParseUint(row.Key, 10, 64)
			if err != nil {
				r.f.log.Error("a memory outbox row with a bad key; dropped", "key", row.Key)
				return r.f.rows.Delete(memoryOutbox, row.Key)
			}
			body, err := json.Marshal(memoryEnvelope{Origin: node.Name(), Seq: seq, Change: row.Value})
			if err != nil {
				return err
			}
			if err := node.PublishMemory(ctx, node.Name()+"/"+row.Key, body); err != nil {
				return err
			}
			return r.f.rows.Delete(memoryOutbox, row.Key)
		})
		if err != nil {
			r.f.log.Warn("memory changes wait to be replicated; trying again", "error", err)
			if !retry.Sleep(ctx, time.Second) {
				return
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
	}
}

// apply applies one change of the stream, unless it is one of a node's
// changes applied here before (published again). A change this store
// refuses for good (a secret its guard finds, an entry it cannot read) is
// logged and passed, or it would hold up every change after it.
func (r *memoryReplica) apply(ctx context.Context, data []byte) error {
	var env memoryEnvelope
	if err := json.Unmarshal(data, &env); err != nil || env.Origin == "" {
		env = memoryEnvelope{Change: data} // published before envelopes
	}
	if env.Origin != "" && env.Seq <= r.applied[env.Origin] {
		r.f.log.Debug("a memory change applied before is on the stream again; skipped", "origin", env.Origin, "seq", env.Seq)
		return nil
	}
	var c memory.Change
	if err := json.Unmarshal(env.Change, &c); err != nil {
		r.f.log.Error("a memory change on the stream cannot be read; passed", "error", err)
		return nil
	}
	err := r.f.mem.Apply(ctx, c)
	if errors.Is(err, redact.ErrSecret) || errors.Is(err, memory.ErrInvalid) {
		r.f.log.Error("a memory change from another machine is refused here; passed", "store", c.Store, "slug", c.Slug, "error", err)
		err = nil
	}
	if err != nil || env.Origin == "" {
		return err
	}
	// Kept after the change: a crash between the two applies it again
	// when the stream offers it again, which changes nothing.
	if err := r.f.rows.Put(memoryApplied, env.Origin, []byte(strconv.FormatUint(env.Seq, 10))); err != nil {
		return fmt.Errorf("im: keep the memory changes applied: %w", err)
	}
	r.applied[env.Origin] = env.Seq
	return nil
}
