package actors

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFakeClockFiresDueTimersAndHonoursStop(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	c := NewFakeClock(start)
	var mu sync.Mutex
	var fired []string
	var wg sync.WaitGroup
	add := func(name string, d time.Duration) Timer {
		wg.Add(1)
		return c.AfterFunc(d, func() {
			defer wg.Done()
			mu.Lock()
			fired = append(fired, name)
			mu.Unlock()
		})
	}
	add("b", 2*time.Minute)
	add("a", time.Minute)
	stopped := add("never", 30*time.Second)
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer reported false")
	}
	wg.Done() // the stopped timer will not run
	if stopped.Stop() {
		t.Fatal("second Stop reported true")
	}
	c.Advance(59 * time.Second)
	if c.Pending() != 2 {
		t.Fatalf("pending %d, want 2", c.Pending())
	}
	c.Advance(2 * time.Minute)
	wg.Wait()
	if got := c.Now(); !got.Equal(start.Add(179 * time.Second)) {
		t.Fatalf("now %v", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(fired) != 2 {
		t.Fatalf("fired %v", fired)
	}
	if c.Pending() != 0 {
		t.Fatalf("pending after firing: %d", c.Pending())
	}
}
