package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/thatch-run/thatch/internal/redact"
	"github.com/thatch-run/thatch/internal/retry"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/persistence/memory"
)

// memoryOutbox is the row table of this node's memory changes not yet on
// the cluster's stream: a change is kept here (synced) as it is made and
// deleted once the stream took it, so that a crash or a cluster without
// a quorum loses none.
const memoryOutbox = "im.cluster.memory_out"

// memoryReplica replicates the memory store over the cluster: every
// change made here goes to the stream (through the outbox), and every
// change on the stream, this node's too, is applied here in the stream's
// order, so that every node's store ends the same (the last write of a
// label in the stream's order wins).
type memoryReplica struct {
	f    *FrontEnd
	seq  atomic.Uint64
	wake chan struct{}
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
	r := &memoryReplica{f: f, wake: make(chan struct{}, 1)}
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
	r.seq.Store(last)
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

// changed keeps a change made here in the outbox and wakes the publisher.
func (r *memoryReplica) changed(c memory.Change) {
	b, err := json.Marshal(c)
	if err == nil {
		err = r.f.rows.Put(memoryOutbox, fmt.Sprintf("%020d", r.seq.Add(1)), b)
	}
	if err != nil {
		r.f.log.Error("a memory change is not replicated to the other machines", "store", c.Store, "slug", c.Slug, "error", err)
		return
	}
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
			if err := node.PublishMemory(ctx, node.Name()+"/"+row.Key, row.Value); err != nil {
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

// apply applies one change of the stream. A change this store refuses
// for good (a secret its guard finds, an entry it cannot read) is logged
// and passed, or it would hold up every change after it.
func (r *memoryReplica) apply(ctx context.Context, data []byte) error {
	var c memory.Change
	if err := json.Unmarshal(data, &c); err != nil {
		r.f.log.Error("a memory change on the stream cannot be read; passed", "error", err)
		return nil
	}
	err := r.f.mem.Apply(ctx, c)
	if errors.Is(err, redact.ErrSecret) || errors.Is(err, memory.ErrInvalid) {
		r.f.log.Error("a memory change from another machine is refused here; passed", "store", c.Store, "slug", c.Slug, "error", err)
		return nil
	}
	return err
}
