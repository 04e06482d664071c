package ocfamily

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/thatch-run/thatch/messages"
)

func init() {
	messages.Register[IncidentRecorded]("session.incident_recorded", 1)
	messages.Register[PayloadMeasured]("session.payload_measured", 1)
}

// Incident kinds: what went wrong with the family's extraction.
const (
	// IncidentStartFailed is an extraction that could not start: its
	// child's create or prompt failed.
	IncidentStartFailed = "start_failed"
	// IncidentNoChild is an extraction whose child never came within the
	// stale window (its host is gone).
	IncidentNoChild = "no_child"
	// IncidentChildError is an extraction child that errored.
	IncidentChildError = "child_error"
	// IncidentChildHung is an extraction child given up on: it did nothing
	// within the stale window.
	IncidentChildHung = "child_hung"
	// IncidentBufferDrop is interactions the buffer limit dropped before an
	// extractor fetched them.
	IncidentBufferDrop = "buffer_drop"
)

// maxIncidents is how many incidents a family keeps for its status, newest
// last; older ones are forgotten.
const maxIncidents = 5

// IncidentRecorded is a family event: an extraction incident the user is
// told about once, with a toast decided together with the event. While an
// incident of a kind is open (State.OpenIncidents), a repeat of that kind
// (a retry failing the same way) records nothing and shows no toast. The
// incidents of a failed extraction close when an extraction completes; a
// buffer drop closes when the next payload is fetched.
type IncidentRecorded struct {
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
	// Kept says what was kept of the buffered interactions.
	Kept string    `json:"kept,omitempty"`
	At   time.Time `json:"at"`
}

// PayloadMeasured is a family event: the size of the payload FetcherID
// received. Its cost in tokens is estimated from it (EstimateTokens).
type PayloadMeasured struct {
	FetcherID string `json:"fetcherID"`
	Bytes     int64  `json:"bytes"`
}

// RecordExtractionCost is an effect: add a payload's size (fetched by
// FetcherID at At) to the cost of the family's memory store, which the
// front end keeps per store and hour for the daily budget and status. It
// is at most once: a cost lost in a crash is not counted.
type RecordExtractionCost struct {
	FetcherID string    `json:"fetcherID"`
	Bytes     int64     `json:"bytes"`
	At        time.Time `json:"at"`
}

// Incident is one incident in a family's state and status.
type Incident struct {
	Kind   string    `json:"kind"`
	Reason string    `json:"reason"`
	Kept   string    `json:"kept,omitempty"`
	At     time.Time `json:"at"`
}

// EstimateTokens estimates the tokens of a payload of n bytes as n/4: a
// rough average for English text and JSON, not a tokenizer's count.
func EstimateTokens(n int64) int64 { return n / 4 }

// payloadBytes is the size of the interactions as the extractor receives
// them (their JSON encoding).
func payloadBytes(payload []messages.Interaction) int64 {
	b, err := json.Marshal(payload)
	if err != nil {
		return 0
	}
	return int64(len(b))
}

// tailNote tells an extractor that it sees only the newest interactions,
// or is empty when nothing was dropped since the last fetch.
func tailNote(seen int, dropped uint64) string {
	if dropped == 0 {
		return ""
	}
	return fmt.Sprintf("you see the last %d of %d interactions (%d older ones were dropped by the buffer limit)",
		seen, uint64(seen)+dropped, dropped)
}

// applyIncident folds an IncidentRecorded into s.
func (s *State) applyIncident(e *IncidentRecorded) {
	if s.OpenIncidents == nil {
		s.OpenIncidents = map[string]bool{}
	}
	s.OpenIncidents[e.Kind] = true
	s.Incidents = append(s.Incidents, Incident{Kind: e.Kind, Reason: e.Reason, Kept: e.Kept, At: e.At})
	if n := len(s.Incidents); n > maxIncidents {
		s.Incidents = append([]Incident(nil), s.Incidents[n-maxIncidents:]...)
	}
}

// closeIncidents closes the open incidents of kinds.
func (s *State) closeIncidents(kinds ...string) {
	for _, k := range kinds {
		delete(s.OpenIncidents, k)
	}
	if len(s.OpenIncidents) == 0 {
		s.OpenIncidents = nil
	}
}

// failureKinds are the incidents of an extraction that failed; a completed
// extraction closes them.
var failureKinds = []string{IncidentStartFailed, IncidentNoChild, IncidentChildError, IncidentChildHung}

// kept says what the family keeps after an extraction failed: everything
// buffered waits for the next one.
func (s *State) kept() string {
	n := len(s.Pending)
	for _, c := range s.Claims {
		n += len(c.Entries)
	}
	return fmt.Sprintf("%d interactions kept for the next extraction", n)
}

// incident records an incident of kind and shows its toast, unless one of
// that kind is open already.
func (d *decider) incident(kind, reason, kept string) {
	if d.S.OpenIncidents[kind] {
		return
	}
	d.Event(&IncidentRecorded{Kind: kind, Reason: reason, Kept: kept, At: d.now})
	msg := reason
	if kept != "" {
		msg += "; " + kept
	}
	d.warn(msg)
}
