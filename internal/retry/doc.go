// Package retry holds the one backoff thatch waits between tries: the
// supervisor's restarts, the opencode client's retried calls and its event
// stream's reconnects, and the Telegram adapter's polling all draw their
// waits from Backoff, each with its own Base and Max.
//
// It is a leaf: it imports the standard library only, so that every layer
// (decision cores excepted, which know no time but the clock's ticks) may
// use it. boundaries_test.go keeps it so.
//
// # Example
//
//	b := retry.Backoff{Base: 100 * time.Millisecond, Max: 2 * time.Second}
//	for attempt := 1; ; attempt++ {
//		if err := try(); err == nil {
//			break
//		}
//		time.Sleep(b.Delay(attempt)) // 50-100 ms, 100-200 ms, ... 1-2 s
//	}
package retry
