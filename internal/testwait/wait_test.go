package testwait

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeTB records Fatalf instead of ending the goroutine.
type fakeTB struct{ fatal []string }

func (*fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = append(f.fatal, fmt.Sprintf(format, args...))
}

// Until returns as soon as the condition holds, checked again and again
// until then, and does not fail the test.
func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	tb := &fakeTB{}
	Until(tb, "the fifth check", func() bool { return calls.Add(1) >= 5 })
	if n := calls.Load(); n != 5 {
		t.Fatalf("the condition was checked %d times, want 5 (until it held, and no more)", n)
	}
	if len(tb.fatal) != 0 {
		t.Fatalf("failed: %v", tb.fatal)
	}

	// A condition made true by another goroutine is seen.
	var done atomic.Bool
	time.AfterFunc(20*time.Millisecond, func() { done.Store(true) })
	Until(t, "the other goroutine", done.Load)
}

// A condition that never holds fails the test once the limit has passed,
// saying what it waited for, and with UntilReason's form what it last saw.
func TestAWaitThatTimesOutFailsAndSaysWhy(t *testing.T) {
	tb := &fakeTB{}
	begin := time.Now()
	Within(tb, 100*time.Millisecond, "the impossible", func() bool { return false })
	if took := time.Since(begin); took < 100*time.Millisecond {
		t.Fatalf("gave up after %v, before the limit", took)
	}
	if len(tb.fatal) != 1 || !strings.Contains(tb.fatal[0], "waiting for the impossible") || !strings.Contains(tb.fatal[0], "100ms") {
		t.Fatalf("failures %q, want one naming what and the limit", tb.fatal)
	}

	tb = &fakeTB{}
	n := 0
	wait(tb, 50*time.Millisecond, "the pane", func() (bool, string) { n++; return false, fmt.Sprintf("screen %d", n) })
	if len(tb.fatal) != 1 || !strings.Contains(tb.fatal[0], fmt.Sprintf("last saw: screen %d", n)) {
		t.Fatalf("failures %q, want one showing the last screen, %d", tb.fatal, n)
	}
}

// The pause between checks grows: a wait of 300 ms checks a dozen times or
// so, not hundreds (a fixed 1 ms poll would), which on a shared machine
// leaves the CPU to what is being waited for.
func TestThePauseBetweenChecksBacksOff(t *testing.T) {
	tb := &fakeTB{}
	calls := 0
	wait(tb, 300*time.Millisecond, "nothing", func() (bool, string) { calls++; return false, "" })
	if calls < 3 || calls > 30 {
		t.Fatalf("%d checks in 300 ms, want between 3 and 30", calls)
	}
}
