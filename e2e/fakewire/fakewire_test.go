package fakewire

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestStreamReadsBack(t *testing.T) {
	rec := httptest.NewRecorder()
	st := Open(rec)
	st.Event("ping", map[string]any{"type": "ping"})
	st.Event("", map[string]any{"n": 1})
	st.Raw("", "[DONE]")
	if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream" || rec.Code != http.StatusOK || !rec.Flushed {
		t.Fatalf("content type %q, code %d, flushed %v", ct, rec.Code, rec.Flushed)
	}
	evs, err := Read(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{{"ping", `{"type":"ping"}`}, {"", `{"n":1}`}, {"", "[DONE]"}}
	if len(evs) != len(want) {
		t.Fatalf("read %+v", evs)
	}
	for i := range want {
		if evs[i] != want[i] {
			t.Errorf("event %d: %+v, want %+v", i, evs[i], want[i])
		}
	}
}

func TestReadFraming(t *testing.T) {
	in := ": comment\n\nevent: a\ndata: one\ndata: two\nid: 7\n\n\n\ndata:tight\nevent: last"
	evs, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{{"a", "one\ntwo"}, {"last", "tight"}}
	if len(evs) != 2 || evs[0] != want[0] || evs[1] != want[1] {
		t.Errorf("read %+v, want %+v", evs, want)
	}
}

func TestHold(t *testing.T) {
	bg := context.Background()
	if !Hold(bg, nil, 0, nil) {
		t.Error("nothing to wait for: not held")
	}
	if !Hold(bg, nil, time.Millisecond, nil) {
		t.Error("a delay that ran out: not held")
	}
	open := make(chan struct{})
	close(open)
	if !Hold(bg, nil, 0, open) {
		t.Error("an open gate: not held")
	}

	// A gate that never opens: the client leaving or the server closing
	// ends the wait, and the answer is not to be sent.
	shut := make(chan struct{})
	ctx, cancel := context.WithCancel(bg)
	done := make(chan bool)
	go func() { done <- Hold(ctx, nil, 0, shut) }()
	cancel()
	if <-done {
		t.Error("the client left, yet the answer is to be sent")
	}
	quit := make(chan struct{})
	go func() { done <- Hold(bg, quit, time.Hour, nil) }()
	close(quit)
	if <-done {
		t.Error("the server closed, yet the answer is to be sent")
	}
	quit = make(chan struct{})
	go func() { done <- Hold(bg, quit, 0, shut) }()
	close(quit)
	if <-done {
		t.Error("the server closed at the gate, yet the answer is to be sent")
	}
}

func TestText(t *testing.T) {
	for raw, want := range map[string]string{
		``:        "",
		`null`:    "",
		`"plain"`: "plain",
		`[{"type":"input_text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]`: "a\nb",
		`[]`: "",
		`42`: "42",
	} {
		if got := Text(json.RawMessage(raw)); got != want {
			t.Errorf("Text(%s) = %q, want %q", raw, got, want)
		}
	}
}
