package agents_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// testdata/copilot holds a Copilot CLI session directory in the shape of
// a real 1.0.78 run (events.jsonl and workspace.yaml; field names and
// event order from such a log, published by a third party, and from the
// event schema of github/copilot-sdk), written by hand with its own
// content, plus one sub-agent message (agentId), which the schema
// describes but the real log held none of.
const copilotFixtureID = "7c0f3a52-9d4e-4b1a-8f63-2e5d0c9a1b47"

func TestCopilotReadsARealShapedSession(t *testing.T) {
	home := t.TempDir()
	src := filepath.Join("testdata", "copilot", "session-state", copilotFixtureID)
	dst := filepath.Join(home, ".copilot", "session-state", copilotFixtureID)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"events.jsonl", "workspace.yaml"} {
		if err := os.WriteFile(filepath.Join(dst, f), readFile(t, filepath.Join(src, f)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a := agent(t, newRegistry(t, home, nil), "copilot")
	list, err := a.Sessions("/home/u/shop", 0)
	if err != nil || len(list) != 1 {
		t.Fatalf("Sessions(/home/u/shop) = %+v, %v; want the one session", list, err)
	}
	// The prompt as typed (content), not as sent to the model
	// (transformedContent, wrapped in tags).
	if s := list[0]; s.ID != copilotFixtureID || s.FirstPrompt != "In shop/cart.py make total() return 0 when the cart is empty." {
		t.Errorf("session = %+v", s)
	}
	if list, err := a.Sessions("/home/u/other", 0); err != nil || len(list) != 0 {
		t.Errorf("Sessions(/home/u/other) = %+v, %v; want none", list, err)
	}
	var replies []string
	for _, l := range readTestLines(t, filepath.Join(dst, "events.jsonl")) {
		replies = append(replies, a.Replies(l)...)
	}
	// Neither the tool-only message (content ""), the reasoning, the
	// system prompt nor the sub-agent's message is a reply.
	if want := []string{"`total()` now returns 0 for an empty cart."}; !reflect.DeepEqual(replies, want) {
		t.Errorf("replies = %q, want %q", replies, want)
	}
	// Without the cwd in session.start, workspace.yaml tells it.
	events := filepath.Join(dst, "events.jsonl")
	lines := readTestLines(t, events)
	var rest []byte
	for _, l := range lines[1:] {
		rest = append(append(rest, l...), '\n')
	}
	if err := os.WriteFile(events, append([]byte(`{"type":"session.start","data":{"sessionId":"`+copilotFixtureID+`","version":1,"producer":"copilot-agent","copilotVersion":"1.0.78","startTime":"2026-08-05T20:40:13.471Z"},"id":"e1","timestamp":"2026-08-05T20:40:13.490Z","parentId":null}`+"\n"), rest...), 0o644); err != nil {
		t.Fatal(err)
	}
	if list, err := a.Sessions("/home/u/shop", 0); err != nil || len(list) != 1 {
		t.Errorf("Sessions from workspace.yaml = %+v, %v; want the one session", list, err)
	}
}
