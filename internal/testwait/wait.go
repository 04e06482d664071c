package testwait

import "time"

// Limit is how long Until and UntilReason wait before they fail the test:
// long enough that only a hang reaches it on a loaded machine.
const Limit = 30 * time.Second

// The pause between two checks starts at firstPause and doubles up to
// maxPause: a condition that is true at once costs nothing, and one that
// takes seconds costs a few checks a second.
const (
	firstPause = time.Millisecond
	maxPause   = 50 * time.Millisecond
)

// TB is the part of testing.TB the waits use; *testing.T, *testing.B and
// rapid's *T have it.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Until polls cond until it is true, and fails the test if it is not
// within Limit. what names the awaited thing after "waiting for", as in
// "timed out after 30s waiting for the entity to passivate".
func Until(tb TB, what string, cond func() bool) {
	tb.Helper()
	wait(tb, Limit, what, func() (bool, string) { return cond(), "" })
}

// UntilReason is Until for a condition that says what it saw when it is
// not true yet; a timeout shows the last thing it saw.
func UntilReason(tb TB, what string, cond func() (ok bool, saw string)) {
	tb.Helper()
	wait(tb, Limit, what, cond)
}

// Within is Until with a limit of its own, for what takes longer than
// Limit on purpose (a real program that installs itself, say).
func Within(tb TB, limit time.Duration, what string, cond func() bool) {
	tb.Helper()
	wait(tb, limit, what, func() (bool, string) { return cond(), "" })
}

func wait(tb TB, limit time.Duration, what string, cond func() (bool, string)) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	pause := firstPause
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if !time.Now().Before(deadline) {
			if saw != "" {
				tb.Fatalf("timed out after %v waiting for %s; last saw: %s", limit, what, saw)
			} else {
				tb.Fatalf("timed out after %v waiting for %s", limit, what)
			}
			return // a TB whose Fatalf returns
		}
		time.Sleep(min(pause, time.Until(deadline)))
		pause = min(2*pause, maxPause)
	}
}
