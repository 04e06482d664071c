package front

import "sync"

// holds keeps the stream events of each family whose reconcile with a new
// host is under way (the registry's ReconcileFamily effect, run by the
// dispatcher). They wait, in the order their streams handed them over,
// until the reconcile is done: a session the reconcile shows to be a child
// is then routed to its family, and a family resumed on its new host hears
// its events after that. No stream goroutine waits for a reconcile: it
// queues the event and reads on, and the events of every other family go
// on being delivered.
//
// A hold is opened by the stream event that moves its family, before the
// registry hears of the move, so that the reconcile cannot end before it
// exists; it is released by the reconcile, or by the event's own stream
// when the registry did not move the family (then no reconcile comes).
// Held events are in memory only, like an event a stream has read and not
// yet delivered: the stream has no replay, and a restart's reconcile makes
// up for both.
type holds struct {
	mu   sync.Mutex
	last uint64 // the id of the newest hold; ids start at 1
	m    map[string]*hold
}

// hold is the queue of one family's held events.
type hold struct {
	id     uint64
	events []heldEvent
	// taken is set once a releaser took the hold: a second one (a late
	// effect of a command the router gave up waiting for) leaves it.
	taken bool
}

// heldEvent is one stream event waiting for its family's reconcile.
type heldEvent struct {
	msg any
	// taught is set for the event that opened the hold: it told the
	// registry what it teaches before it was held.
	taught bool
	// done gets the outcome of its delivery; it is buffered, so nobody
	// need wait for it.
	done chan error
}

func newHolds() *holds { return &holds{m: map[string]*hold{}} }

// join queues msg behind the hold on family fam, if there is one.
func (hs *holds) join(fam string, msg any) (<-chan error, bool) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h := hs.m[fam]
	if h == nil {
		return nil, false
	}
	ev := heldEvent{msg: msg, done: make(chan error, 1)}
	h.events = append(h.events, ev)
	return ev.done, true
}

// open puts a hold on family fam with msg, which has told the registry
// what it teaches, as its first event, and returns the hold's id. When
// another hold was opened on fam since the caller looked, msg joins that
// one (it has not told the registry anything then) and id is 0.
func (hs *holds) open(fam string, msg any) (id uint64, done <-chan error) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if h := hs.m[fam]; h != nil {
		ev := heldEvent{msg: msg, done: make(chan error, 1)}
		h.events = append(h.events, ev)
		return 0, ev.done
	}
	hs.last++
	ev := heldEvent{msg: msg, taught: true, done: make(chan error, 1)}
	hs.m[fam] = &hold{id: hs.last, events: []heldEvent{ev}}
	return hs.last, ev.done
}

// take makes the caller the releaser of hold id on family fam. It reports
// false when that hold is gone or another releaser has it.
func (hs *holds) take(fam string, id uint64) bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h := hs.m[fam]
	if h == nil || h.id != id || h.taken {
		return false
	}
	h.taken = true
	return true
}

// next takes the oldest event of hold id on family fam. When none is
// left, it lifts the hold, so that later events are delivered directly,
// and reports false.
func (hs *holds) next(fam string, id uint64) (heldEvent, bool) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h := hs.m[fam]
	if h == nil || h.id != id {
		return heldEvent{}, false
	}
	if len(h.events) == 0 {
		delete(hs.m, fam)
		return heldEvent{}, false
	}
	ev := h.events[0]
	h.events = h.events[1:]
	return ev, true
}

// abandon lifts every hold without delivering its events; whoever waits
// for one of them hears err.
func (hs *holds) abandon(err error) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for fam, h := range hs.m {
		for _, ev := range h.events {
			ev.done <- err
		}
		delete(hs.m, fam)
	}
}
