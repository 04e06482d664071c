package supervisor

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/persistence"
)

// rigConfig is what a test changes about the tree startRig builds. Zero
// values give a tree on an in-memory Pebble store, a fake clock, a null
// logger, a fast restart policy, no snapshots and quarantines kept in
// memory only. A test that restarts the tree closes the rig and starts
// another on the same fs.
type rigConfig struct {
	fs      vfs.FS
	kinds   []Spec
	env     Env
	policy  Policy
	effects []Handler
	logger  hclog.Logger
	// rows keeps the quarantined entities in the store's rows, so that a
	// quarantine outlives a restart.
	rows bool
}

// rig is one tree on a real Pebble store, with a journal the test controls.
type rig struct {
	t     *testing.T
	store *persistence.Store
	tree  *Tree
	clock *actors.FakeClock
	jr    *ctlJournal
	once  sync.Once
}

func startRig(t *testing.T, c rigConfig) *rig {
	t.Helper()
	if c.fs == nil {
		c.fs = vfs.NewMem()
	}
	st, err := persistence.Open("db", persistence.Options{FS: c.fs})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, store: st, clock: actors.NewFakeClock(time.Unix(1_700_000_000, 0))}
	r.jr = newCtlJournal(st.Journal())
	env := c.env
	env.Journal = r.jr
	if env.Clock == nil {
		env.Clock = r.clock
	}
	if env.Logger == nil {
		env.Logger = hclog.NewNullLogger()
	}
	if c.policy == (Policy{}) {
		c.policy = Policy{MaxRestarts: 10, Window: time.Minute, BackoffBase: time.Millisecond, BackoffMax: 4 * time.Millisecond}
	}
	opts := Options{Journal: st.Journal(), Env: env, Kinds: c.kinds,
		Policy: c.policy, Effects: c.effects, Logger: c.logger}
	if c.rows {
		opts.Rows = st.Rows()
	}
	r.tree, err = Start(opts)
	if err != nil {
		_ = st.Close()
		t.Fatal(err)
	}
	t.Cleanup(r.close)
	return r
}

// close stops the tree (and with it its actor system) and the store; it runs once, at
// cleanup unless a test called it to check what Stop leaves behind.
func (r *rig) close() {
	r.once.Do(func() {
		r.jr.releaseAll()
		if err := r.tree.Stop(5 * time.Second); err != nil && !errors.Is(err, ErrStopped) {
			r.t.Errorf("stop: %v", err)
		}
		if err := r.store.Close(); err != nil {
			r.t.Errorf("close store: %v", err)
		}
	})
}

func counterID(id string) actors.Identity { return actors.Identity{Kind: "counter", ID: id} }

// ask sends msg and waits for the answer; a test fails if there is none.
func (r *rig) ask(to actors.Identity, msg any) any {
	r.t.Helper()
	got, err := r.tree.Request(to, msg, 10*time.Second)
	if err != nil {
		r.t.Fatalf("request %T to %s: %v", msg, to, err)
	}
	return got
}

// send sends msg like Request but returns at once, with the channel its
// answer arrives on. Messages sent one after the other this way reach
// their entity in that order.
func (r *rig) send(to actors.Identity, msg any) <-chan any {
	r.t.Helper()
	answer, err := r.tree.startCall(to, msg, false)
	if err != nil {
		r.t.Fatal(err)
	}
	return answer
}

// failures are the tree's last errors with the given action.
func (r *rig) failures(action string) []Failure {
	r.t.Helper()
	_, errs, err := r.tree.Stats(5 * time.Second)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []Failure
	for _, f := range errs {
		if f.Action == action {
			out = append(out, f)
		}
	}
	return out
}

func (r *rig) live() []string {
	r.t.Helper()
	ids, err := r.tree.LiveIDs("counter", 5*time.Second)
	if err != nil {
		r.t.Fatal(err)
	}
	return ids
}

// receive waits for a value on ch; it fails the test after 10 s, which
// only a hang reaches.
func receive[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// empty reports whether nothing waits on ch right now.
func empty[T any](ch <-chan T) bool {
	select {
	case v := <-ch:
		_ = v
		return false
	default:
		return true
	}
}

// ctlJournal wraps the Pebble journal so that a test can fail the next
// appends or hold asynchronous appends until it releases them.
type ctlJournal struct {
	*persistence.Journal
	// failNext is how many of the next appends fail.
	failNext atomic.Int32
	// hold parks every asynchronous append in held until released.
	hold atomic.Bool
	held chan *heldAppend

	mu     sync.Mutex
	parked []*heldAppend
	// beforeReplay, when set, runs (once) before the next Replay reads.
	beforeReplay atomic.Pointer[func()]
}

func newCtlJournal(j *persistence.Journal) *ctlJournal {
	return &ctlJournal{Journal: j, held: make(chan *heldAppend, 64)}
}

// heldAppend is one asynchronous append that has not reached Pebble yet.
type heldAppend struct {
	j      *ctlJournal
	id     actors.Identity
	first  uint64
	events [][]byte
	mark   persistence.ActiveMark
	done   func(error)
	once   sync.Once
}

// release hands the append to Pebble.
func (h *heldAppend) release() {
	h.once.Do(func() { h.j.Journal.AppendAsync(h.id, h.first, h.events, h.mark, h.done) })
}

func (c *ctlJournal) AppendAsync(id actors.Identity, first uint64, evs [][]byte, mark persistence.ActiveMark, done func(error)) {
	if c.shouldFail() {
		done(errors.New("injected journal failure"))
		return
	}
	if c.hold.Load() {
		h := &heldAppend{j: c, id: id, first: first, events: evs, mark: mark, done: done}
		c.mu.Lock()
		c.parked = append(c.parked, h)
		c.mu.Unlock()
		c.held <- h
		return
	}
	c.Journal.AppendAsync(id, first, evs, mark, done)
}

func (c *ctlJournal) Append(id actors.Identity, first uint64, evs [][]byte, mark persistence.ActiveMark) error {
	if c.shouldFail() {
		return errors.New("injected journal failure")
	}
	return c.Journal.Append(id, first, evs, mark)
}

func (c *ctlJournal) Replay(id actors.Identity, from, to, max uint64, fn func(seq uint64, ev []byte) error) error {
	if f := c.beforeReplay.Swap(nil); f != nil {
		(*f)()
	}
	return c.Journal.Replay(id, from, to, max, fn)
}

// shouldFail uses up one of the appends that are to fail, if any are left.
func (c *ctlJournal) shouldFail() bool {
	for {
		n := c.failNext.Load()
		if n <= 0 {
			return false
		}
		if c.failNext.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// nextHeld waits for the next append the journal holds.
func (c *ctlJournal) nextHeld(t *testing.T) *heldAppend {
	t.Helper()
	return receive(t, "a held append", c.held)
}

// releaseAll stops holding and releases every append still held, so that
// no entity waits for one at Stop.
func (c *ctlJournal) releaseAll() {
	c.hold.Store(false)
	c.mu.Lock()
	parked := c.parked
	c.parked = nil
	c.mu.Unlock()
	for _, h := range parked {
		h.release()
	}
}
