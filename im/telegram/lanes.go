package telegram

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/thatch-run/thatch/internal/retry"
)

// stallRepoll is how often Run asks Telegram for more updates while some
// are still being handled and not parked: every getUpdates then answers
// at once with the unconfirmed ones, so asking more often would only
// spin.
const stallRepoll = time.Second

// DefaultParkAfter is how long an update's handler may run before Run
// parks its conversation (Options.ParkAfter).
const DefaultParkAfter = 500 * time.Millisecond

// slowMemory is how long a conversation stays slow after a handler of its
// ran ParkAfter or longer: its updates are parked as they come meanwhile,
// so that a binding that answers slowly again and again does not hold
// Telegram's offset for ParkAfter at each update.
const slowMemory = time.Minute

// Parking keeps the updates Run confirms to Telegram before they are
// handled: those of a conversation whose handler is slow (a binding that
// does not answer), so that Telegram's offset, and with it every other
// conversation's next updates, need not wait for it. Run gives parked
// updates back to their lanes at its next start, before anything newer.
type Parking interface {
	// Park keeps in; it is durable when Park returns.
	Park(in Inbound) error
	// Unpark forgets an update once it is handled.
	Unpark(updateID int64) error
	// Parked is every update kept, in any order.
	Parked() ([]Inbound, error)
}

// lanes hands the updates Run takes to handle: in order within a
// conversation, conversations at once. It owns one goroutine per
// conversation with updates to hand over (its lane), which ends when the
// lane is empty or Run's context ends; wait waits for them all.
type lanes struct {
	ctx     context.Context
	b       *Bot
	handle  func(ctx context.Context, in Inbound) error
	parking Parking // nil: nothing is parked
	after   time.Duration
	wg      sync.WaitGroup

	mu sync.Mutex
	// taken are the ids taken and neither handled nor parked yet,
	// ascending (Telegram answers in order), with those handled or parked
	// in ready until they reach the front: taken[0] is the prefix.
	taken []int64
	known map[int64]bool
	ready map[int64]bool
	// high is the highest id handled or parked: the prefix once nothing
	// is taken.
	high  int64
	lanes map[string]*lane
	// slow holds when each conversation last had a handler run ParkAfter
	// or longer (forgotten after slowMemory).
	slow map[string]time.Time
	// changed is signalled (without blocking) when an update is handled.
	changed chan struct{}
}

// lane is one conversation's updates, the first being handled since
// since; parked says its updates are parked as they come.
type lane struct {
	queue  []Inbound
	since  time.Time
	parked bool
	// isParked holds the ids of queue that are parked, parking those
	// being parked, waiting those in queue.
	isParked, parking, waiting map[int64]bool
}

func newLanes(ctx context.Context, b *Bot, handle func(ctx context.Context, in Inbound) error) *lanes {
	return &lanes{ctx: ctx, b: b, handle: handle, parking: b.parking, after: b.parkAfter, known: map[int64]bool{},
		ready: map[int64]bool{}, high: -1, lanes: map[string]*lane{}, slow: map[string]time.Time{},
		changed: make(chan struct{}, 1)}
}

// laneOf names the conversation of an update; updates of none (an inline
// query, a member change) share one lane.
func laneOf(in Inbound) string {
	return strconv.FormatInt(in.ChatID, 10) + "/" + strconv.FormatInt(in.ThreadID, 10)
}

// unpark gives the updates parked by an earlier Run back to their lanes,
// in update-id order, before anything Telegram sends now.
func (l *lanes) unpark() {
	if l.parking == nil {
		return
	}
	ins, err := l.parking.Parked()
	if err != nil {
		l.b.log.Error("cannot read the updates parked before; they are handled at the next start", "error", err)
		return
	}
	slices.SortFunc(ins, func(a, b Inbound) int { return cmp.Compare(a.UpdateID, b.UpdateID) })
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, in := range ins {
		if l.known[in.UpdateID] {
			continue
		}
		l.known[in.UpdateID] = true
		ln := l.enqueueLocked(in)
		ln.parked, ln.isParked[in.UpdateID] = true, true
	}
	if len(ins) > 0 {
		l.b.log.Info("handling the updates parked before", "count", len(ins))
	}
}

// add takes an update, unless it was taken before. Its lane starts when
// it has nothing else to hand over; a lane that is parked, or of a
// conversation that was slow within slowMemory, parks it.
func (l *lanes) add(in Inbound) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.known[in.UpdateID] || in.UpdateID < l.prefixLocked(0) {
		return // taken already, or handled (a poll made before it was)
	}
	l.known[in.UpdateID] = true
	l.taken = append(l.taken, in.UpdateID)
	ln := l.enqueueLocked(in)
	if l.parking == nil {
		return
	}
	for k, at := range l.slow {
		if time.Since(at) >= slowMemory {
			delete(l.slow, k) // a handful at most: conversations slow within the minute
		}
	}
	if _, slow := l.slow[laneOf(in)]; slow {
		ln.parked = true
	}
	if ln.parked {
		l.parkLocked(ln, in)
	}
}

// enqueueLocked appends in to its lane, starting the lane when it was
// empty.
func (l *lanes) enqueueLocked(in Inbound) *lane {
	key := laneOf(in)
	ln := l.lanes[key]
	if ln == nil {
		ln = &lane{since: time.Now(), isParked: map[int64]bool{}, parking: map[int64]bool{}, waiting: map[int64]bool{}}
		l.lanes[key] = ln
		l.wg.Add(1)
		go l.run(key, ln)
	}
	ln.queue = append(ln.queue, in)
	ln.waiting[in.UpdateID] = true
	return ln
}

// parkLocked parks in (of ln, not handled yet) in a goroutine of its own,
// since Park is a synced write and neither Run's polling nor the other
// lanes wait for it: once Park returned, the prefix may pass the update.
// One handled meanwhile is unparked at once.
func (l *lanes) parkLocked(ln *lane, in Inbound) {
	id := in.UpdateID
	if ln.isParked[id] || ln.parking[id] || !ln.waiting[id] {
		return
	}
	ln.parking[id] = true
	l.wg.Go(func() {
		err := l.parking.Park(in)
		l.mu.Lock()
		delete(ln.parking, id)
		switch {
		case err != nil:
			l.mu.Unlock()
			l.b.log.Warn("cannot park an update; Telegram's offset waits for it", "update_id", id, "error", err)
			return
		case !ln.waiting[id]:
			l.mu.Unlock() // handled already
			if err := l.parking.Unpark(id); err != nil {
				l.b.log.Warn("cannot unpark a handled update", "update_id", id, "error", err)
			}
			return
		}
		ln.isParked[id] = true
		l.readyLocked(id)
		l.mu.Unlock()
		l.signal()
	})
}

// signal tells waitIdle that an update was handled or parked.
func (l *lanes) signal() {
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// readyLocked counts id as handled or parked, and moves the prefix past
// every such id at its front.
func (l *lanes) readyLocked(id int64) {
	l.ready[id] = true
	l.high = max(l.high, id)
	for len(l.taken) > 0 && l.ready[l.taken[0]] {
		delete(l.ready, l.taken[0])
		delete(l.known, l.taken[0])
		l.taken = l.taken[1:]
	}
}

// parkStalled parks every update of each lane whose first update has been
// handled for ParkAfter or longer; it reports whether it parked any.
func (l *lanes) parkStalled() bool {
	if l.parking == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	parked := false
	for _, ln := range l.lanes {
		if ln.parked || time.Since(ln.since) < l.after {
			continue
		}
		ln.parked = true
		for _, in := range ln.queue {
			l.parkLocked(ln, in)
		}
		l.slow[laneOf(ln.queue[0])] = time.Now()
		parked = true
		l.b.log.Warn("an update's handler is slow; its conversation's updates are parked so that the others go on",
			"update_id", ln.queue[0].UpdateID, "for", time.Since(ln.since).Round(time.Millisecond))
	}
	return parked
}

// run hands over the updates of one conversation until it has none left
// or Run's context ends.
func (l *lanes) run(key string, ln *lane) {
	defer l.wg.Done()
	failures := 0
	for {
		l.mu.Lock()
		in := ln.queue[0]
		// Once this update is handled, everything before the prefix is
		// too; and if nothing before it is still being handled, so is
		// everything up to it.
		in.Cursor = l.prefixLocked(0)
		if in.Cursor == in.UpdateID {
			in.Cursor++
		}
		l.mu.Unlock()
		began := time.Now()
		if err := l.handle(l.ctx, in); err != nil {
			if l.ctx.Err() != nil {
				return
			}
			failures++
			wait := nextBackoff(failures, nil)
			l.b.log.Warn("update handler failed; retrying the same update", "update_id", in.UpdateID, "error", l.b.redact(err), "wait", wait)
			retry.Sleep(l.ctx, wait)
			if l.ctx.Err() != nil {
				return
			}
			continue
		}
		failures = 0
		l.mu.Lock()
		// A park still being written sees the update is no longer
		// waiting and unparks it itself; one written is unparked below.
		wasParked := ln.isParked[in.UpdateID]
		if l.parking != nil && time.Since(began) >= l.after {
			l.slow[key] = time.Now()
		}
		if !ln.isParked[in.UpdateID] {
			l.readyLocked(in.UpdateID)
		}
		delete(ln.isParked, in.UpdateID)
		delete(ln.waiting, in.UpdateID)
		ln.queue = ln.queue[1:]
		ln.since = time.Now()
		empty := len(ln.queue) == 0
		if empty {
			delete(l.lanes, key)
		} else if len(ln.isParked) == 0 && len(ln.parking) == 0 {
			ln.parked = false // caught up: what comes next is not parked
		}
		l.mu.Unlock()
		if wasParked {
			if err := l.parking.Unpark(in.UpdateID); err != nil {
				// Kept: it is handed over again at the next start, and its
				// binding drops an id it handled.
				l.b.log.Warn("cannot unpark a handled update", "update_id", in.UpdateID, "error", err)
			}
		}
		l.signal()
		if empty {
			return
		}
	}
}

// busy reports whether an update taken is neither handled nor parked.
func (l *lanes) busy() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.taken) > 0
}

// prefix is the first update id neither handled nor parked: every one
// below it is. cur is Run's, kept when no update was handled since it
// was set.
func (l *lanes) prefix(cur int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.prefixLocked(cur)
}

func (l *lanes) prefixLocked(cur int64) int64 {
	if len(l.taken) > 0 {
		return l.taken[0]
	}
	return max(cur, l.high+1)
}

// renumbered forgets the highest id handled: Telegram numbers anew.
func (l *lanes) renumbered() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.high = -1
}

// waitIdle returns when nothing taken is left to handle or park, at
// until, or when ctx ends, whichever comes first; a lane stalled for
// ParkAfter meanwhile is parked.
func (l *lanes) waitIdle(ctx context.Context, until time.Time) {
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	tick := time.NewTicker(max(l.after/4, 10*time.Millisecond))
	defer tick.Stop()
	if l.parking == nil {
		tick.Stop()
	}
	for l.busy() {
		select {
		case <-l.changed:
		case <-tick.C:
			l.parkStalled()
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// wait waits for every lane to return (Run's context has ended).
func (l *lanes) wait() { l.wg.Wait() }
