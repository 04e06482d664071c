package fakemodel

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	// The suite runs as `go test ./e2e/... -ginkgo.v`; importing Ginkgo
	// defines its flags here too.
	_ "github.com/onsi/ginkgo/v2"

	"github.com/thatch-run/thatch/e2e/fakewire"
	"github.com/thatch-run/thatch/internal/testwait"
)

// post sends a chat request and returns the tool calls and text streamed
// back, or the HTTP status of an error.
func post(t *testing.T, s *Server, body map[string]any) (tools []string, text string, status int) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, "", resp.StatusCode
	}
	evs, err := fakewire.Read(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	done := false
	for _, ev := range evs {
		data := ev.Data
		if data == "[DONE]" {
			done = true
			break
		}
		var chunk struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Function struct{ Name, Arguments string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil || chunk.Object != "chat.completion.chunk" {
			t.Fatalf("bad chunk %q: %v", data, err)
		}
		for _, c := range chunk.Choices {
			text += c.Delta.Content
			for _, tc := range c.Delta.ToolCalls {
				tools = append(tools, tc.Function.Name+tc.Function.Arguments)
			}
		}
	}
	if !done {
		t.Fatal("stream did not end with [DONE]")
	}
	return tools, text, 200
}

func msgs(m ...map[string]any) map[string]any {
	return map[string]any{"model": ModelID, "stream": true, "messages": m,
		"tools": []map[string]any{{"type": "function", "function": map[string]any{"name": "read"}}}}
}

func user(s string) map[string]any { return map[string]any{"role": "user", "content": s} }
func assistant() map[string]any {
	return map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"function": map[string]any{"name": "read"}}}}
}
func toolResult(s string) map[string]any {
	return map[string]any{"role": "tool", "tool_call_id": "c", "content": s}
}

func TestScripts(t *testing.T) {
	s := New()
	defer s.Close()
	s.On(Rule{Name: "turn", Match: LastUserContains("GO"), Steps: []Step{
		{ToolCalls: []ToolCall{{Name: "read", Args: map[string]any{"filePath": "a"}}}},
		{TextFrom: func(r *Request) string { return "saw " + r.ToolResults()[0] }},
	}})
	s.On(Rule{Name: "once", Match: LastUserContains("GO"), Times: 1, Steps: []Step{{Status: 400}}})

	if _, _, st := post(t, s, msgs(user("GO"))); st != 400 {
		t.Errorf("the newer rule answers first: status %d", st)
	}
	tools, _, _ := post(t, s, msgs(user("GO")))
	if len(tools) != 1 || tools[0] != `read{"filePath":"a"}` {
		t.Errorf("spent rule falls through: %v", tools)
	}
	_, text, _ := post(t, s, msgs(user("GO"), assistant(), toolResult("file a")))
	if text != "saw file a" {
		t.Errorf("step 1: %q", text)
	}
	_, text, _ = post(t, s, msgs(user("GO"), assistant(), toolResult("x"), assistant(), toolResult("y")))
	if text != "saw x" {
		t.Errorf("past the last step the last repeats: %q", text)
	}
	_, text, _ = post(t, s, msgs(user("other")))
	if text != "OK." {
		t.Errorf("fallback %q", text)
	}
	_, text, _ = post(t, s, map[string]any{"messages": []map[string]any{{"role": "system", "content": "You are a title generator."}, user("GO")}})
	if text != TitleText {
		t.Errorf("a tool-less title request got %q", text)
	}
	if n := s.Served("turn", 1); n != 2 {
		t.Errorf("served turn/1 %d times", n)
	}
	if n := len(s.Requests()); n != 6 {
		t.Errorf("%d requests recorded", n)
	}
}

func TestGate(t *testing.T) {
	s := New()
	defer s.Close()
	gate := make(chan struct{})
	s.On(Rule{Name: "held", Match: AnyContains("HOLD"), Steps: []Step{{Text: "released", Gate: gate}}})
	got := make(chan string, 1)
	go func() { _, text, _ := post(t, s, msgs(user("HOLD"))); got <- text }()
	testwait.Until(t, "the held request to be served", func() bool { return s.Served("held", 0) > 0 })
	select {
	case text := <-got:
		t.Fatalf("answered %q before the gate opened", text)
	default:
	}
	close(gate)
	if text := <-got; text != "released" {
		t.Errorf("got %q", text)
	}
}
