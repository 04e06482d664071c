package fakewire

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Hold waits delay (none when it is not positive), then until gate is
// closed (no wait when gate is nil). It reports false when ctx (the
// request's context: the client left) is done or quit (the server is
// closing; nil for never) is closed first: the answer must then not be
// sent.
func Hold(ctx context.Context, quit <-chan struct{}, delay time.Duration, gate <-chan struct{}) bool {
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		case <-quit:
			return false
		}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return false
		case <-quit:
			return false
		}
	}
	return true
}

// Stream writes server-sent events to one response. It is not safe for
// concurrent use, as a ResponseWriter is not.
type Stream struct {
	w  io.Writer
	fl http.Flusher
}

// Open answers 200 with the headers of an event stream (Content-Type
// text/event-stream, Cache-Control no-cache) and returns the stream to
// write the events to.
func Open(w http.ResponseWriter) *Stream {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	return &Stream{w: w, fl: fl}
}

// Event writes one event whose data is v as JSON, and flushes it. An empty
// name writes no "event:" line (the chat-completions stream has none).
func (s *Stream) Event(name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fakewire: event %q: %v", name, err))
	}
	s.Raw(name, string(b))
}

// Raw writes one event whose data is data as it is (a single line, such as
// the chat-completions stream's closing "[DONE]"), and flushes it.
func (s *Stream) Raw(name, data string) {
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", data)
	if s.fl != nil {
		s.fl.Flush()
	}
}

// Event is one server-sent event read back by Read.
type Event struct {
	// Name is the "event:" line's value, "" when the event had none.
	Name string
	// Data is the event's "data:" lines, joined by newlines.
	Data string
}

// Read reads server-sent events from r until it ends, in order. An event
// ends at an empty line (or at the end of r); comment lines (":") and
// fields other than event and data are skipped. The error is r's, or a
// line longer than 1 MiB.
func Read(r io.Reader) ([]Event, error) {
	var out []Event
	var cur Event
	var data []string
	started := false
	flush := func() {
		if started {
			cur.Data = strings.Join(data, "\n")
			out = append(out, cur)
		}
		cur, data, started = Event{}, nil, false
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			flush()
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			cur.Name, started = value, true
		case "data":
			data, started = append(data, value), true
		}
	}
	flush()
	return out, sc.Err()
}

// Text flattens a message content that is a string, or a list of parts
// whose text fields are joined by newlines (parts without text, such as
// images, are left out). Null or empty is "", and anything else is
// returned as its raw JSON, so that a test still sees it.
func Text(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return string(raw)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String()
}
