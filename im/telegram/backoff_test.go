package telegram

import (
	"fmt"
	"testing"
	"time"
)

// A 429 is waited out for exactly the retry_after Telegram gave, however
// many failures came before; a refusal waits longer than other failures,
// and both grow with the failures in a row up to their caps.
func TestNextBackoff(t *testing.T) {
	tooMany := &apiError{Method: "getUpdates", Code: 429, Description: "Too Many Requests", RetryAfter: 7}
	refused := fmt.Errorf("poll: %w", &apiError{Method: "getUpdates", Code: 401, Description: "Unauthorized"})
	failed := &apiError{Method: "getUpdates", Code: 502, Description: "Bad Gateway"}
	for _, c := range []struct {
		name      string
		failures  int
		err       error
		low, high time.Duration
	}{
		{"429, first failure", 1, tooMany, 7 * time.Second, 7 * time.Second},
		{"429, after many", 30, tooMany, 7 * time.Second, 7 * time.Second},
		{"refused, first", 1, refused, refusedBackoff / 2, refusedBackoff},
		{"refused, capped", 30, refused, maxRefusedBackoff / 2, maxRefusedBackoff},
		{"getUpdates failed, first", 1, failed, minBackoff / 2, minBackoff},
		{"handle failed, third", 3, nil, 2 * minBackoff, 4 * minBackoff},
		{"handle failed, capped", 30, nil, maxBackoff / 2, maxBackoff},
	} {
		for range 20 {
			if d := nextBackoff(c.failures, c.err); d < c.low || d > c.high {
				t.Fatalf("%s: nextBackoff(%d) = %v, want within [%v, %v]", c.name, c.failures, d, c.low, c.high)
			}
		}
	}
}
