package persistence

import (
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// commitWorkers is how many groups may be in Pebble's commit pipeline at
// once. Pebble's WAL writer already shares one fsync among the commits that
// wait for it, so a group that forms while another waits for its sync must
// enter the pipeline at once to ride the next sync; with too few workers it
// would wait for a worker first, a whole sync later.
const commitWorkers = 4

// committer merges the journal appends of many entities into one Pebble
// batch per fsync. Pebble already shares one WAL sync among concurrent
// synced commits, but each commit still pays its own way through the
// commit pipeline; with a thousand entities appending one event each, that
// per-commit cost, not the disk, becomes the limit. The committer's one
// goroutine takes whatever accumulated while the previous sync ran and
// commits it as a single synced batch, so the group grows with the load
// and the disk's latency, and each Append stays atomic (its entries are
// in one batch) and is acknowledged only after the sync.
type committer struct {
	s    *Store
	mu   sync.Mutex
	cur  *commitGroup
	kick chan struct{}
	quit chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

type commitGroup struct {
	b   *pebble.Batch
	err error
	// cbs are the adds' callbacks, called in order once the group is
	// durable (or failed).
	cbs []func(error)
}

func newCommitter(s *Store) *committer {
	c := &committer{s: s, kick: make(chan struct{}, commitWorkers), quit: make(chan struct{}), done: make(chan struct{})}
	c.cur = c.newGroup()
	c.wg.Add(commitWorkers)
	for range commitWorkers {
		go c.run()
	}
	go func() {
		c.wg.Wait()
		close(c.done)
	}()
	return c
}

func (c *committer) newGroup() *commitGroup {
	return &commitGroup{b: c.s.db.NewBatch()}
}

// addAsync runs fill on the open group's batch (fill must only add to it)
// and returns; cb is called, on a committer goroutine, once the group is
// durable or failed. cb must not block.
func (c *committer) addAsync(fill func(b *pebble.Batch) error, cb func(error)) {
	if err := c.enqueue(fill, cb); err != nil {
		cb(err)
	}
}

func (c *committer) enqueue(fill func(b *pebble.Batch) error, cb func(error)) error {
	c.mu.Lock()
	if c.cur == nil {
		c.mu.Unlock()
		return ErrClosed
	}
	g := c.cur
	if err := fill(g.b); err != nil {
		// A half-filled append would commit with the group: fail the whole
		// group rather than make part of one append durable.
		g.err = fmt.Errorf("persistence: build batch: %w", err)
	}
	g.cbs = append(g.cbs, cb)
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return nil
}

func (c *committer) run() {
	defer c.wg.Done()
	for {
		select {
		case <-c.kick:
		case <-c.quit:
			c.flushAll()
			return
		}
		c.flushAll()
	}
}

// flushAll commits groups until none is waiting.
func (c *committer) flushAll() {
	for {
		c.mu.Lock()
		g := c.cur
		if g == nil || len(g.cbs) == 0 {
			c.mu.Unlock()
			return
		}
		c.cur = c.newGroup()
		c.mu.Unlock()
		c.commit(g)
	}
}

func (c *committer) commit(g *commitGroup) {
	defer func() {
		for _, cb := range g.cbs {
			cb(g.err)
		}
	}()
	defer g.b.Close()
	defer func() {
		// Pebble panics (through the store's fatal logger) when the WAL
		// cannot be written or synced; the store is failed from then on.
		if r := recover(); r != nil {
			c.s.fail(fmt.Errorf("%w: %v", ErrFailed, r))
			g.err = c.s.failure()
		}
	}()
	if g.err != nil {
		return
	}
	if c.s.failed.Load() {
		g.err = c.s.failure()
		return
	}
	if err := g.b.Commit(c.s.wo); err != nil {
		g.err = err
	}
}

// close commits what is waiting and stops the goroutine; later adds fail
// with ErrClosed.
func (c *committer) close() {
	close(c.quit)
	<-c.done
	c.mu.Lock()
	if c.cur != nil {
		c.cur.b.Close()
		c.cur = nil
	}
	c.mu.Unlock()
}
