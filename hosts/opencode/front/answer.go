package front

import (
	"context"
	"errors"
	"net/http"

	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/supervisor"
)

// How a plugin call that thatch did not carry out is answered. Every
// answer is the JSON body {"error": "...", "retryable": bool}, with the
// status saying what happened:
//
//	400  the body, or one of its fields, is invalid (final)
//	404  a memory the call names does not exist (final); a payload fetch by
//	     a session no family knows is not refused: it gets nothing (null)
//	422  the session's family refused the message: it was dropped as poison
//	     (it made the family fail repeatedly), the family does not handle
//	     it, or the family could not be started (final)
//	500  anything else that went wrong inside thatch (final)
//	502  the opencode server being registered cannot be reached (retryable)
//	503  thatch is not ready, or the family did not journal the call in
//	     time; the call may still be carried out later (retryable)
//
// Retryable means that the same call, sent again a moment later, may
// succeed; the plugin retries those (a call it repeats is safe: the family
// recognizes a tool call it already holds by its call id). A final answer
// is not sent again: it would be refused the same way.

// failure is the body of a refused call.
type failure struct {
	Error     string `json:"error"`
	Retryable bool   `json:"retryable"`
}

// writeError answers a refused call.
func writeError(w http.ResponseWriter, status int, msg string, retryable bool) {
	control.WriteJSON(w, status, failure{Error: msg, Retryable: retryable})
}

// badRequest answers a call whose body or fields are invalid.
func badRequest(w http.ResponseWriter, msg string) {
	writeError(w, http.StatusBadRequest, msg, false)
}

// writeCallError answers a call whose delivery to its family failed.
func writeCallError(w http.ResponseWriter, err error) {
	status, retryable := classify(err)
	writeError(w, status, err.Error(), retryable)
}

// classify maps the failure of a delivery or request into the
// supervision tree to the status and retryability of its answer.
func classify(err error) (status int, retryable bool) {
	var rej *supervisor.Rejected
	switch {
	case errors.Is(err, supervisor.ErrTimeout), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, context.Canceled), errors.Is(err, errNotStarted), errors.Is(err, supervisor.ErrStopped):
		// The journal did not answer in time, the caller went away, or
		// the daemon is starting or stopping: the same call may succeed
		// in a moment.
		return http.StatusServiceUnavailable, true
	case errors.As(err, &rej):
		return http.StatusUnprocessableEntity, false
	default:
		return http.StatusInternalServerError, false
	}
}
