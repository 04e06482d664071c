package retry

import (
	"context"
	"math"
	"testing"
	"time"
)

func TestDelayDoublesUpToMaxWithinTheUpperHalf(t *testing.T) {
	const ms = time.Millisecond
	for _, c := range []struct {
		name      string
		b         Backoff
		attempt   int
		low, high time.Duration // the draws at Rand 0 and Rand 0.999...
	}{
		{"first retry", Backoff{Base: 100 * ms, Max: 2 * time.Second}, 1, 50 * ms, 100 * ms},
		{"an attempt below 1 counts as 1", Backoff{Base: 100 * ms, Max: 2 * time.Second}, 0, 50 * ms, 100 * ms},
		{"doubled", Backoff{Base: 100 * ms, Max: 2 * time.Second}, 2, 100 * ms, 200 * ms},
		{"doubled three times", Backoff{Base: 100 * ms, Max: 2 * time.Second}, 4, 400 * ms, 800 * ms},
		{"capped", Backoff{Base: 100 * ms, Max: 2 * time.Second}, 6, time.Second, 2 * time.Second},
		{"capped far out", Backoff{Base: 100 * ms, Max: 2 * time.Second}, 1 << 20, time.Second, 2 * time.Second},
		{"no overflow near the largest duration", Backoff{Base: time.Nanosecond, Max: math.MaxInt64}, 200, math.MaxInt64 / 2, math.MaxInt64},
		{"Max below Base caps at Max", Backoff{Base: time.Second, Max: 100 * ms}, 1, 50 * ms, 100 * ms},
		{"no Base waits Max", Backoff{Max: 2 * time.Second}, 1, time.Second, 2 * time.Second},
		{"no Max waits nothing", Backoff{Base: 100 * ms}, 3, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range []struct {
				rnd  float64
				want time.Duration
			}{{0, c.low}, {math.Nextafter(1, 0), c.high}} {
				b := c.b
				b.Rand = func() float64 { return r.rnd }
				got := b.Delay(c.attempt)
				// The top draw rounds through a float64: allow a part
				// in 2^50 below the nominal wait.
				if got > r.want || got < r.want-r.want>>50-1 {
					t.Errorf("Delay(%d) at Rand %v = %v, want %v", c.attempt, r.rnd, got, r.want)
				}
			}
		})
	}
}

// Without a pinned Rand the waits spread over the upper half: callers that
// failed together do not retry together.
func TestDelayIsJitteredByDefault(t *testing.T) {
	b := Backoff{Base: time.Second, Max: time.Minute}
	seen := map[time.Duration]bool{}
	for range 100 {
		d := b.Delay(3)
		if d < 2*time.Second || d > 4*time.Second {
			t.Fatalf("Delay(3) = %v, want within [2s, 4s]", d)
		}
		seen[d] = true
	}
	if len(seen) < 50 {
		t.Fatalf("100 draws gave %d distinct waits: not jittered", len(seen))
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("a sleep nothing ended did not wait")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("a sleep whose context had ended waited")
	}
}
