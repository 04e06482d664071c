package persistence

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// fillWait bounds how long the committer waits for a group to fill: after
// a group of n appends was acknowledged, their writers (a thousand entities
// appending one event each) come back within a scheduling round or two,
// and a group that waits for them commits them in one batch instead of
// several small ones, each paying its own way through Pebble's commit
// pipeline and its own fsync. Under light load (a group of one) there is
// no wait at all.
const fillWait = 300 * time.Microsecond

// fillYields is how many times at most the committer yields to the
// writers it waits for, within fillWait.
const fillYields = 4

// committer merges the journal appends of many entities into one Pebble
// batch per fsync. Its one goroutine takes every append queued while the
// previous group was written and synced, waits (at most fillWait) for the
// writers of that group to come back, and commits them all as one synced
// batch; so the group grows with the load and the disk's latency, each
// append stays atomic (its entries are in one batch), and an append is
// acknowledged only after its sync. (Several committers in parallel, or
// capped groups, measured slower on the 2-core bench machine: the groups
// fragment and each fragment pays the per-commit cost.)
//
// An append only queues a small record under the lock; the batch is built
// by the committer, so the lock a thousand writers contend for is held for
// a slice append, not for the copying.
type committer struct {
	s     *Store
	mu    sync.Mutex
	queue []appendReq
	// spare is an emptied queue to swap in, so that steady load
	// allocates no queue.
	spare  []appendReq
	closed bool
	// last is how many appends the group acknowledged last held: the
	// writers the next group waits for.
	last int
	// groups and appends count what was committed, for the benchmark's
	// appends per commit.
	groups, appends atomic.Int64
	// flying is the group being written, if any; the failure watcher
	// answers it when the store fails while Pebble holds it (see watch).
	flying *group
	kick   chan struct{}
	quit   chan struct{}
	done   chan struct{}
	// watched is closed when the failure watcher has stopped.
	watched chan struct{}
}

// group is the appends of one batch, answered once: by the committer when
// the batch is written, or by the failure watcher when the store failed
// while Pebble still held the batch.
type group struct {
	reqs []appendReq
	once sync.Once
}

// answer calls every append's done, in key order, the first time only; a
// later call returns once the first has finished.
func (g *group) answer(err error) {
	g.once.Do(func() {
		for i := range g.reqs {
			r := &g.reqs[i]
			if err != nil {
				last := r.first + uint64(len(r.events)) - 1
				r.done(fmt.Errorf("persistence: append %s seq %d..%d: %w", r.id, r.first, last, err))
				continue
			}
			r.done(nil)
		}
	})
}

// appendReq is one queued append.
type appendReq struct {
	id     Identity
	first  uint64
	events [][]byte
	mark   ActiveMark
	// done is called once the group is durable (or failed); it must not
	// block.
	done func(error)
}

func newCommitter(s *Store) *committer {
	c := &committer{s: s, kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}), watched: make(chan struct{})}
	go c.run()
	go c.watch()
	return c
}

// watch waits for the store to fail or the committer to stop. A failure
// can leave the committer inside Pebble for good: a commit that waits for a
// memtable flush (a write stall) waits for ever when the flush cannot
// write (a full disk), as Pebble retries it without end. The appends of
// that group were never acknowledged; they are answered with the failure
// here, so that nobody waits on a store that will not write again.
func (c *committer) watch() {
	defer close(c.watched)
	select {
	case <-c.s.failedCh:
	case <-c.done:
		return
	}
	c.mu.Lock()
	g := c.flying
	c.mu.Unlock()
	if g != nil {
		g.answer(c.s.failure())
	}
}

// add queues r for the next group and returns; r.done is called, on the
// committer goroutine, once the group is durable or failed.
func (c *committer) add(r appendReq) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		r.done(ErrClosed)
		return
	}
	c.queue = append(c.queue, r)
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *committer) run() {
	defer close(c.done)
	for {
		select {
		case <-c.kick:
		case <-c.quit:
			c.flushAll(false)
			return
		}
		c.flushAll(true)
	}
}

// flushAll commits groups until none is waiting; wait lets each group
// fill first.
func (c *committer) flushAll(wait bool) {
	for {
		if wait {
			c.fill()
		}
		c.mu.Lock()
		g := c.queue
		if len(g) == 0 {
			c.mu.Unlock()
			return
		}
		c.queue, c.spare = c.spare[:0], nil
		c.mu.Unlock()
		c.commit(g)
		c.last = len(g)
		c.groups.Add(1)
		c.appends.Add(int64(len(g)))
		clear(g) // drop the events' and callbacks' references
		c.mu.Lock()
		if c.spare == nil || cap(g) > cap(c.spare) {
			c.spare = g[:0]
		}
		c.mu.Unlock()
	}
}

// fill waits until the queue holds nearly as many appends as the group
// acknowledged last, for at most fillYields yields and fillWait.
func (c *committer) fill() {
	want := c.last * 9 / 10
	if want < 2 {
		return
	}
	deadline := time.Now().Add(fillWait)
	for range fillYields {
		c.mu.Lock()
		n := len(c.queue)
		c.mu.Unlock()
		if n >= want || time.Now().After(deadline) {
			return
		}
		// The writers just acknowledged are runnable: yielding lets them
		// run and queue their next appends (a thousand of them take a few
		// yields on two cores). Nothing runnable: this returns at once.
		runtime.Gosched()
	}
}

// commit builds one batch of the group's appends, commits it synced and
// calls every append's done, in key order (an entity's appends in the order
// they were queued).
func (c *committer) commit(g []appendReq) {
	sortGroup(g)
	grp := &group{reqs: g}
	c.mu.Lock()
	c.flying = grp
	c.mu.Unlock()
	err := c.write(g)
	c.mu.Lock()
	c.flying = nil
	c.mu.Unlock()
	grp.answer(err)
}

func (c *committer) write(g []appendReq) (err error) {
	b := c.s.db.NewBatch()
	defer b.Close()
	defer func() {
		// Pebble panics (through the store's fatal logger) when the WAL
		// cannot be written or synced; the store is failed from then on.
		if r := recover(); r != nil {
			c.s.fail(fmt.Errorf("%w: %v", ErrFailed, r))
			err = c.s.failure()
		}
	}()
	if c.s.failed.Load() {
		return c.s.failure()
	}
	var key []byte
	for i := range g {
		if key, err = fillAppend(b, key, &g[i]); err != nil {
			// A half-filled append would commit with the group: fail the
			// whole group rather than make part of one append durable.
			return fmt.Errorf("persistence: build batch: %w", err)
		}
	}
	return b.Commit(c.s.wo)
}

// fillAppend adds one append's keys to b; key is a scratch buffer, returned
// for the next append (b copies what it is given).
func fillAppend(b *pebble.Batch, key []byte, r *appendReq) ([]byte, error) {
	key = appendEntityPrefix(key[:0], prefixEvent, r.id)
	n := len(key)
	key = append(key, make([]byte, 8)...)
	for i, ev := range r.events {
		binary.BigEndian.PutUint64(key[n:], r.first+uint64(i))
		if err := b.Set(key, ev, nil); err != nil {
			return key, err
		}
	}
	// The highest-seq key is written on an entity's first append (it is
	// also the entity index) and whenever events are deleted; otherwise
	// the last event key is the highest, and HighestSeq takes the larger
	// of the two. Writing it on every append would double the journal's
	// writes.
	if len(r.events) > 0 && r.first == 1 {
		key = appendEntityPrefix(key[:0], prefixHighest, r.id)
		if err := b.Set(key, seqBytes(r.first+uint64(len(r.events))-1), nil); err != nil {
			return key, err
		}
	}
	switch r.mark {
	case MarkActive:
		key = appendEntityPrefix(key[:0], prefixActive, r.id)
		return key, b.Set(key, nil, nil)
	case MarkIdle:
		key = appendEntityPrefix(key[:0], prefixActive, r.id)
		return key, b.Delete(key, nil)
	}
	return key, nil
}

// stuckGrace is how long close waits, on a failed store, for a committer
// that is still inside Pebble: a failure is usually the committer's own
// write failing, and it comes back at once; one held in a write stall
// behind a flush that cannot write never does.
const stuckGrace = 2 * time.Second

// close commits what is waiting and stops the goroutine; later adds fail
// with ErrClosed. It reports false when the store failed and the committer
// did not come back out of Pebble within stuckGrace (see watch): then it
// stops waiting for it.
func (c *committer) close() bool {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	close(c.quit)
	select {
	case <-c.done:
		<-c.watched
		return true
	case <-c.s.failedCh:
	}
	<-c.watched
	grace := time.NewTimer(stuckGrace)
	defer grace.Stop()
	select {
	case <-c.done:
		return true
	case <-grace.C:
		return false
	}
}

// sortGroup puts a group in key order, entity by entity; the sort is
// stable, so an entity's appends keep the order they were queued in (and
// its later mark wins). A batch whose keys come in order makes Pebble's
// memtable inserts walk nearly the same skiplist path one after another,
// with its nodes still in the CPU's cache: BenchmarkAppendC1000 measured
// about 14% more appends per second than in queue order, where each insert
// starts from cold nodes. The queue is nearly sorted already (the writers
// of a group are woken in its order and queue again in about that order),
// so the sort took 0.08 s of the committer's 5.65 s in a CPU profile.
func sortGroup(g []appendReq) {
	slices.SortStableFunc(g, func(a, b appendReq) int {
		if c := strings.Compare(a.id.Kind, b.id.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.id.ID, b.id.ID)
	})
}
