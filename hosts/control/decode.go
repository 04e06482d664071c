package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// DefaultBodyLimit is the request body size DecodeJSON allows when its
// caller passes no limit: 8 MiB, ample for a tool call's output.
const DefaultBodyLimit = 8 << 20

// errTrailing marks a body with more than its one value; DecodeJSON turns
// it into its answer and never returns it.
var errTrailing = errors.New("control: trailing data")

// DecodeJSON decodes a request body that must hold exactly one JSON value
// into v. Whitespace may surround the value; anything else after it (a
// second value, stray bytes) makes the body bad, because a client that
// sends it is not sending what it thinks and half-reading it would accept
// a request nobody meant. The body may hold at most limit bytes (limit <= 0
// means DefaultBodyLimit). Unknown object fields are ignored, so that an
// older daemon still understands a newer plugin.
//
// On failure it answers 400 with a JSON error naming the problem ("bad
// JSON body: trailing data after the value", "bad JSON body: larger than N
// bytes", ...) and returns false; the handler must then return without
// using v, which may be partly filled.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any, limit int64) bool {
	if limit <= 0 {
		limit = DefaultBodyLimit
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	err := dec.Decode(v)
	if err == nil {
		// Token skips whitespace; only the end of the body may follow. What
		// else it meets, a token or a syntax error, is trailing data.
		_, err = dec.Token()
		if err == io.EOF {
			return true
		}
		if err == nil || !errors.As(err, new(*http.MaxBytesError)) {
			err = errTrailing
		}
	}
	var tooLarge *http.MaxBytesError
	var msg string
	switch {
	case errors.As(err, &tooLarge):
		msg = fmt.Sprintf("larger than %d bytes", tooLarge.Limit)
	case err == errTrailing:
		msg = "trailing data after the value"
	case errors.Is(err, io.EOF):
		msg = "empty"
	default:
		msg = err.Error()
	}
	WriteError(w, http.StatusBadRequest, "bad JSON body: "+msg)
	return false
}
