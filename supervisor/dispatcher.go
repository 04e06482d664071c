package supervisor

import (
	"runtime"
	"sync"
)

// poolDispatcher runs actor mailboxes on a fixed set of long-lived
// goroutines. protoactor's default dispatcher starts a new goroutine each
// time a mailbox has work; a fresh goroutine starts with a small stack, and
// an entity's work (encoding an event, a Pebble read) grows it again every
// time, which profiling showed as a quarter of the CPU under load. The pool
// keeps grown stacks and saves the goroutine starts.
type poolDispatcher struct {
	work       chan func()
	quit       chan struct{}
	wg         sync.WaitGroup
	throughput int
	once       sync.Once
}

// newPoolDispatcher starts workers goroutines (default 4 per CPU).
func newPoolDispatcher(workers, throughput int) *poolDispatcher {
	if workers <= 0 {
		workers = 4 * runtime.GOMAXPROCS(0)
	}
	d := &poolDispatcher{work: make(chan func(), 1<<16), quit: make(chan struct{}), throughput: throughput}
	d.wg.Add(workers)
	for range workers {
		go d.run()
	}
	return d
}

func (d *poolDispatcher) run() {
	defer d.wg.Done()
	for {
		select {
		case fn := <-d.work:
			fn()
		case <-d.quit:
			return
		}
	}
}

// Schedule queues a mailbox run. When the queue is full, or the pool has
// stopped, the run gets a goroutine of its own: a mailbox is never lost.
func (d *poolDispatcher) Schedule(fn func()) {
	select {
	case <-d.quit:
		go fn()
		return
	default:
	}
	select {
	case d.work <- fn:
	default:
		go fn()
	}
}

// Throughput is how many messages a mailbox handles per run.
func (d *poolDispatcher) Throughput() int { return d.throughput }

// stop ends the workers once they finish the run in hand; mailbox runs
// still queued get goroutines of their own.
func (d *poolDispatcher) stop() {
	d.once.Do(func() {
		close(d.quit)
		d.wg.Wait()
		for {
			select {
			case fn := <-d.work:
				go fn()
			default:
				return
			}
		}
	})
}
