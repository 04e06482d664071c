package telegram

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/thatch-run/thatch/internal/retry"
)

// stallRepoll is how often Run asks Telegram for more updates while some
// are still being handled (a slow or failing conversation): every
// getUpdates then answers at once with the unconfirmed ones, so asking
// more often would only spin.
const stallRepoll = time.Second

// lanes hands the updates Run takes to handle: in order within a
// conversation, conversations at once. It owns one goroutine per
// conversation with updates to hand over (its lane), which ends when the
// lane is empty or Run's context ends; wait waits for them all.
type lanes struct {
	ctx    context.Context
	b      *Bot
	handle func(ctx context.Context, in Inbound) error
	wg     sync.WaitGroup

	mu sync.Mutex
	// taken are the ids taken and not yet below the prefix, ascending
	// (Telegram answers in order); done those of them handled.
	taken []int64
	known map[int64]bool
	done  map[int64]bool
	// high is the highest id handled: the prefix once nothing is taken.
	high  int64
	queue map[string][]Inbound // conversation -> its updates, the first being handled
	// changed is signalled (without blocking) when an update is handled.
	changed chan struct{}
}

func newLanes(ctx context.Context, b *Bot, handle func(ctx context.Context, in Inbound) error) *lanes {
	return &lanes{ctx: ctx, b: b, handle: handle, known: map[int64]bool{}, done: map[int64]bool{}, high: -1,
		queue: map[string][]Inbound{}, changed: make(chan struct{}, 1)}
}

// laneOf names the conversation of an update; updates of none (an inline
// query, a member change) share one lane.
func laneOf(in Inbound) string {
	return strconv.FormatInt(in.ChatID, 10) + "/" + strconv.FormatInt(in.ThreadID, 10)
}

// add takes an update, unless it was taken before; its lane starts when
// it has nothing else to hand over.
func (l *lanes) add(in Inbound) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.known[in.UpdateID] || in.UpdateID < l.prefixLocked(0) {
		return // taken already, or handled (a poll made before it was)
	}
	l.known[in.UpdateID] = true
	l.taken = append(l.taken, in.UpdateID)
	key := laneOf(in)
	q := l.queue[key]
	l.queue[key] = append(q, in)
	if len(q) == 0 {
		l.wg.Add(1)
		go l.run(key)
	}
}

// run hands over the updates of one conversation until it has none left
// or Run's context ends.
func (l *lanes) run(key string) {
	defer l.wg.Done()
	failures := 0
	for {
		l.mu.Lock()
		in := l.queue[key][0]
		// Once this update is handled, everything before the prefix is
		// too; and if nothing before it is still being handled, so is
		// everything up to it.
		in.Cursor = l.prefixLocked(0)
		if in.Cursor == in.UpdateID {
			in.Cursor++
		}
		l.mu.Unlock()
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
		l.done[in.UpdateID] = true
		l.high = max(l.high, in.UpdateID)
		for len(l.taken) > 0 && l.done[l.taken[0]] {
			delete(l.done, l.taken[0])
			delete(l.known, l.taken[0])
			l.taken = l.taken[1:]
		}
		q := l.queue[key][1:]
		if len(q) == 0 {
			delete(l.queue, key)
		} else {
			l.queue[key] = q
		}
		l.mu.Unlock()
		select {
		case l.changed <- struct{}{}:
		default:
		}
		if len(q) == 0 {
			return
		}
	}
}

// busy reports whether an update taken is not handled yet.
func (l *lanes) busy() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.taken) > 0
}

// prefix is the first update id not handled: every one below it was.
// cur is Run's, kept when no update was handled since it was set.
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

// waitIdle returns when nothing taken is left to handle, at until, or
// when ctx ends, whichever comes first.
func (l *lanes) waitIdle(ctx context.Context, until time.Time) {
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	for l.busy() {
		select {
		case <-l.changed:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// wait waits for every lane to return (Run's context has ended).
func (l *lanes) wait() { l.wg.Wait() }
