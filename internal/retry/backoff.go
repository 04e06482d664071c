package retry

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is a jittered exponential backoff. The nominal wait before retry
// n is Base doubled n-1 times, capped at Max; the wait returned is drawn
// from the nominal wait's upper half ("equal jitter"), so that many callers
// that failed together (entities on one journal, clients of one server) do
// not come back together, and none comes back sooner than half the
// nominal wait.
type Backoff struct {
	// Base is the nominal wait before the first retry. A Base of zero or
	// less makes every nominal wait Max.
	Base time.Duration
	// Max caps the nominal wait. Required: a Max of zero or less makes
	// every wait zero.
	Max time.Duration
	// Rand draws the jitter, a number in [0, 1); tests pin it. Default:
	// math/rand/v2's Float64.
	Rand func() float64
}

// Delay is the wait before retry attempt (1-based: the wait after the
// first failure is Delay(1)); an attempt below 1 counts as 1. It lies in
// [nominal/2, nominal].
func (b Backoff) Delay(attempt int) time.Duration {
	d := b.nominal(attempt)
	if d <= 0 {
		return 0
	}
	rnd := b.Rand
	if rnd == nil {
		rnd = rand.Float64
	}
	half := d / 2
	return half + time.Duration(rnd()*float64(d-half))
}

// nominal is Base * 2^(attempt-1), capped at Max without overflowing.
func (b Backoff) nominal(attempt int) time.Duration {
	if b.Max <= 0 {
		return 0
	}
	d := b.Base
	if d <= 0 {
		return b.Max
	}
	for i := 1; i < attempt && d < b.Max; i++ {
		if d > b.Max/2 {
			return b.Max
		}
		d *= 2
	}
	return min(d, b.Max)
}

// Sleep waits d, or less when ctx ends first; it reports whether it
// waited the whole d.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
