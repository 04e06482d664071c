package front

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/thatch-run/thatch/supervisor"
)

// TestClassify: only a call that may succeed when sent again is
// retryable; a message its family refused is final.
func TestClassify(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("supervisor: request session/ses_p: %w", err) }
	for _, tc := range []struct {
		name      string
		err       error
		status    int
		retryable bool
	}{
		{"journal timed out", wrap(fmt.Errorf("%w after 30s", supervisor.ErrTimeout)), http.StatusServiceUnavailable, true},
		{"request deadline", wrap(context.DeadlineExceeded), http.StatusServiceUnavailable, true},
		{"caller went away", wrap(context.Canceled), http.StatusServiceUnavailable, true},
		{"front end not started", errNotStarted, http.StatusServiceUnavailable, true},
		{"tree stopped", wrap(supervisor.ErrStopped), http.StatusServiceUnavailable, true},
		{"poison", wrap(&supervisor.Rejected{Reason: "message *messages.ToolExecuted failed session/ses_p 2 times"}), http.StatusUnprocessableEntity, false},
		{"unhandled", wrap(&supervisor.Rejected{Reason: "session/ses_p does not handle messages.ToolExecuted"}), http.StatusUnprocessableEntity, false},
		{"anything else", errors.New("front: no route for *int"), http.StatusInternalServerError, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, retryable := classify(tc.err)
			if status != tc.status || retryable != tc.retryable {
				t.Errorf("classify(%v) = %d, %v; want %d, %v", tc.err, status, retryable, tc.status, tc.retryable)
			}
		})
	}
}
