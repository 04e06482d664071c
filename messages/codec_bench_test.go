package messages

import (
	"encoding/json"
	"testing"
)

// benchInteraction is a typical journaled tool call.
func benchInteraction() *FamilyInteractionBuffered {
	return &FamilyInteractionBuffered{SessionID: "ses_abcdef123456", Seq: 42, Interaction: Interaction{ID: "call_1234567", SessionID: "ses_abcdef123456",
		Tool: "bash", Args: json.RawMessage(`{"command":"go test ./... -run TestSomething -count=1","timeout":120000}`), Title: "bash call", Output: "ok  \tgithub.com/x/y\t0.123s\nPASS\n"}}
}

// BenchmarkEncodeInteraction is the codec's cost per interaction on the
// write path (it includes the check that raw args are JSON).
func BenchmarkEncodeInteraction(b *testing.B) {
	v := benchInteraction()
	for b.Loop() {
		if _, err := Encode(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeInteraction is the codec's cost per event on replay (it
// includes the check that a body is JSON before goccy reads it).
func BenchmarkDecodeInteraction(b *testing.B) {
	enc, err := Encode(benchInteraction())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}
