package fakeanthropic

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/thatch-run/thatch/e2e/fakewire"
	"github.com/thatch-run/thatch/internal/testwait"

	// The suite runs as `go test ./e2e/... -ginkgo.v`; importing Ginkgo
	// defines its flags here too.
	_ "github.com/onsi/ginkgo/v2"
)

// event is one server-sent event of a streamed answer.
type event struct {
	Name string
	Data map[string]any
}

// answer is what a streamed answer says, put together from its events.
type answer struct {
	Events []string
	Text   string
	Tool   string // name + input JSON of a tool_use
	ToolID string
	Stop   string
}

func post(t *testing.T, c *http.Client, s *Server, path string, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", s.URL()+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", APIKey)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// stream posts a streaming request and parses the answer; it fails the
// test unless the events come in the Messages API's order.
func stream(t *testing.T, c *http.Client, s *Server, body map[string]any) answer {
	t.Helper()
	body["stream"] = true
	resp := post(t, c, s, "/v1/messages?beta=true", body)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	raw, err := fakewire.Read(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var evs []event
	for _, r := range raw {
		e := event{Name: r.Name}
		if err := json.Unmarshal([]byte(r.Data), &e.Data); err != nil {
			t.Fatalf("bad data %q: %v", r.Data, err)
		}
		if e.Data["type"] != e.Name {
			t.Fatalf("event %q carries type %v", e.Name, e.Data["type"])
		}
		evs = append(evs, e)
	}
	var a answer
	var toolJSON string
	state := "start"
	for _, e := range evs {
		a.Events = append(a.Events, e.Name)
		ok := false
		switch e.Name {
		case "message_start":
			msg, _ := e.Data["message"].(map[string]any)
			ok = state == "start" && msg["role"] == "assistant"
			state = "message"
		case "ping":
			ok = state != "start"
		case "content_block_start":
			ok, state = state == "message", "block"
			cb, _ := e.Data["content_block"].(map[string]any)
			if cb["type"] == "tool_use" {
				a.Tool, a.ToolID = cb["name"].(string), cb["id"].(string)
			}
		case "content_block_delta":
			ok = state == "block"
			d, _ := e.Data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				a.Text += d["text"].(string)
			case "input_json_delta":
				toolJSON += d["partial_json"].(string)
			}
		case "content_block_stop":
			ok, state = state == "block", "message"
		case "message_delta":
			ok, state = state == "message", "delta"
			d, _ := e.Data["delta"].(map[string]any)
			a.Stop, _ = d["stop_reason"].(string)
		case "message_stop":
			ok, state = state == "delta", "stop"
		}
		if !ok {
			t.Fatalf("event %s out of order in %v", e.Name, a.Events)
		}
	}
	if state != "stop" {
		t.Fatalf("stream ended in state %s: %v", state, a.Events)
	}
	a.Tool += toolJSON
	return a
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// turn is a request shaped like claude's: a system-reminder block before
// the typed text, a "system" message, tools, a session id in metadata.
func turn(extra ...map[string]any) map[string]any {
	msgs := []map[string]any{
		{"role": "user", "content": []map[string]any{text("<system-reminder>\nIgnore me\n</system-reminder>\n"), text("  hello there \n")}},
		{"role": "system", "content": "# Environment"},
	}
	msgs = append(msgs, extra...)
	return map[string]any{
		"model": "claude-opus-5-5", "max_tokens": 32000,
		"system":   []map[string]any{text("You are Claude Code, Anthropic's official CLI for Claude.")},
		"tools":    []map[string]any{{"name": "Bash"}, {"name": "Read"}},
		"metadata": map[string]any{"user_id": `{"device_id":"d","account_uuid":"","session_id":"sess-1"}`},
		"messages": msgs,
	}
}

func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
}

func TestStreamAndRecording(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := New()
	defer s.Close()
	c := newClient()
	defer c.CloseIdleConnections()

	a := stream(t, c, s, turn())
	if a.Text != "echo: hello there" || a.Stop != "end_turn" || a.Tool != "" {
		t.Errorf("default answer %+v", a)
	}
	want := "message_start ping content_block_start content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(a.Events, " "); got != want {
		t.Errorf("events %s", got)
	}
	rs := s.Requests()
	if len(rs) != 1 {
		t.Fatalf("%d requests", len(rs))
	}
	r := rs[0]
	if r.Kind != Turn || r.UserText != "hello there" || r.SessionID != "sess-1" || r.Step != 0 || !r.HasTool("Bash") ||
		r.Path != "/v1/messages" || r.Model != "claude-opus-5-5" || !r.Stream || r.Status != 200 || r.Rule != -1 {
		t.Errorf("recorded %+v", r)
	}
	if got := s.UserTexts(); len(got) != 1 || got[0] != "hello there" {
		t.Errorf("user texts %q", got)
	}

	// A long paste arrives wrapped in <pasted_content> lines.
	pasted := turn()
	pasted["messages"] = []map[string]any{{"role": "user", "content": []map[string]any{
		text("\n\n<pasted_content id=\"16b3\">\nline one\nline two\n</pasted_content id=\"16b3\">\n")}}}
	if a := stream(t, c, s, pasted); a.Text != "echo: line one\nline two" {
		t.Errorf("pasted: %q", a.Text)
	}
}

func TestToolRoundTrip(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := New()
	defer s.Close()
	c := newClient()
	defer c.CloseIdleConnections()
	s.On(UserSays("hello"), Bash("echo hi", "ran it"))
	s.On(UserSays("chain"), Reply{Tool: &ToolUse{Name: "Read", Input: map[string]any{"file_path": "/x"}}})

	a := stream(t, c, s, turn())
	if a.Stop != "tool_use" || a.Tool != `Bash{"command":"echo hi","description":"Run echo hi"}` || a.Text != "" {
		t.Fatalf("first answer %+v", a)
	}
	follow := turn(
		map[string]any{"role": "assistant", "content": []map[string]any{{"type": "tool_use", "id": a.ToolID, "name": "Bash", "input": map[string]any{"command": "echo hi"}}}},
		map[string]any{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": a.ToolID, "content": "hi\n"}}},
		// What claude appends when an MCP server connected during the
		// tool call: the results are no longer in the last message.
		map[string]any{"role": "system", "content": []map[string]any{text("The following deferred tools are now available via ToolSearch.")}},
	)
	if b := stream(t, c, s, follow); b.Text != "ran it" || b.Stop != "end_turn" {
		t.Errorf("after the tool result %+v", b)
	}
	rs := s.Requests()
	if len(rs) != 2 || rs[1].Step != 1 || rs[1].UserText != "hello there" || rs[1].Rule != 0 ||
		len(rs[1].ToolResults) != 1 || rs[1].ToolResults[0].ToolUseID != a.ToolID || rs[1].ToolResultText() != "hi\n" {
		t.Errorf("recorded %+v", rs)
	}
	if n := len(s.UserTurns()); n != 1 {
		t.Errorf("the follow-up is not a user turn: %d", n)
	}

	// Without Then, the follow-up reports the result.
	chain := turn()
	chain["messages"] = []map[string]any{{"role": "user", "content": "chain please"}}
	a = stream(t, c, s, chain)
	chain["messages"] = append(chain["messages"].([]map[string]any),
		map[string]any{"role": "assistant", "content": []map[string]any{{"type": "tool_use", "id": a.ToolID, "name": "Read", "input": map[string]any{}}}},
		map[string]any{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": a.ToolID, "content": []map[string]any{text("contents")}}}})
	if b := stream(t, c, s, chain); b.Text != "result: contents" {
		t.Errorf("default follow-up %q", b.Text)
	}
}

func TestSideRequests(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := New()
	defer s.Close()
	c := newClient()
	defer c.CloseIdleConnections()
	s.On(func(*Request) bool { return true }, Text("rule"))

	title := map[string]any{"model": "claude-opus-5-5", "max_tokens": 100, "tools": []any{},
		"output_config": map[string]any{"format": map[string]any{"type": "json_schema", "schema": map[string]any{
			"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}, "required": []string{"title"}}}},
		"messages": []map[string]any{{"role": "user", "content": "<session>\nhi\n</session>"}}}
	if a := stream(t, c, s, title); a.Text != `{"title":"Fake title"}` {
		t.Errorf("title %q", a.Text)
	}
	compact := turn(map[string]any{"role": "user", "content": "CRITICAL: Respond with TEXT ONLY.\n\nYour task is to create a detailed summary of the conversation so far"})
	if a := stream(t, c, s, compact); !strings.Contains(a.Text, "<summary>"+SummaryText+"</summary>") {
		t.Errorf("compact %q", a.Text)
	}
	// A non-streamed side request gets a JSON message.
	resp := post(t, c, s, "/v1/messages", map[string]any{"model": "m", "max_tokens": 1, "messages": []map[string]any{{"role": "user", "content": "quota"}}})
	var msg struct {
		Type       string `json:"type"`
		StopReason string `json:"stop_reason"`
		Content    []struct{ Type, Text string }
	}
	_ = json.NewDecoder(resp.Body).Decode(&msg)
	resp.Body.Close()
	if msg.Type != "message" || msg.StopReason != "end_turn" || len(msg.Content) != 1 || msg.Content[0].Text != SideText {
		t.Errorf("non-stream side answer %+v", msg)
	}
	resp = post(t, c, s, "/v1/messages/count_tokens", turn())
	var ct struct {
		InputTokens int `json:"input_tokens"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&ct)
	resp.Body.Close()
	if ct.InputTokens <= 0 {
		t.Errorf("count_tokens %+v", ct)
	}
	resp = post(t, c, s, "/v1/models/whatever", map[string]any{})
	var e struct {
		Type  string                `json:"type"`
		Error struct{ Type string } `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 404 || e.Type != "error" || e.Error.Type != "not_found_error" {
		t.Errorf("unknown path: %d %+v", resp.StatusCode, e)
	}
	if u := s.Unknown(); len(u) != 1 || u[0] != "POST /v1/models/whatever" {
		t.Errorf("unknown %q", u)
	}
	var kinds []string
	for _, r := range s.Requests() {
		kinds = append(kinds, string(r.Kind))
	}
	if got := strings.Join(kinds, " "); got != "title compact side count_tokens" {
		t.Errorf("kinds %s", got)
	}
	if n := len(s.UserTurns()); n != 0 {
		t.Errorf("%d user turns among side requests", n)
	}
}

func TestHoldAndClose(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := New()
	c := newClient()
	defer c.CloseIdleConnections()
	gate := make(chan struct{})
	s.On(UserSays("GATED"), Reply{Text: "released", Gate: gate})
	s.On(UserSays("STUCK"), Reply{Text: "never", Gate: make(chan struct{})})
	s.On(UserSays("FAIL"), Reply{Status: 529})

	body := func(say string) map[string]any {
		b := turn()
		b["messages"] = []map[string]any{{"role": "user", "content": say}}
		return b
	}
	resp := post(t, c, s, "/v1/messages", body("FAIL"))
	resp.Body.Close()
	if resp.StatusCode != 529 {
		t.Errorf("scripted status %d", resp.StatusCode)
	}
	got := make(chan string, 1)
	go func() { // not streamed: no t.Fatal off the test goroutine
		b, _ := json.Marshal(body("GATED"))
		resp, err := c.Post(s.URL()+"/v1/messages", "application/json", bytes.NewReader(b))
		if err != nil {
			got <- err.Error()
			return
		}
		defer resp.Body.Close()
		var msg struct{ Content []struct{ Text string } }
		_ = json.NewDecoder(resp.Body).Decode(&msg)
		if len(msg.Content) != 1 {
			got <- "no content"
			return
		}
		got <- msg.Content[0].Text
	}()
	select {
	case txt := <-got:
		t.Fatalf("answered %q before the gate opened", txt)
	case <-time.After(100 * time.Millisecond):
	}
	close(gate)
	if txt := <-got; txt != "released" {
		t.Errorf("gated %q", txt)
	}

	// Close ends an answer held forever.
	stuck := make(chan error, 1)
	go func() {
		b, _ := json.Marshal(body("STUCK"))
		resp, err := c.Post(s.URL()+"/v1/messages", "application/json", bytes.NewReader(b))
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		stuck <- err
	}()
	testwait.Until(t, "the third request to reach the server", func() bool { return len(s.Requests()) >= 3 })
	s.Close()
	select {
	case <-stuck:
	case <-time.After(5 * time.Second):
		t.Fatal("Close left a held answer hanging")
	}
	s.Close() // twice is fine
}

func TestPrepareHome(t *testing.T) {
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte(`{"numStartups": 3, "projects": {"/old": {"x": 1}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // a second run changes nothing
		if err := PrepareHome(home, APIKey, proj); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(home, ".claude.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		NumStartups            int  `json:"numStartups"`
		HasCompletedOnboarding bool `json:"hasCompletedOnboarding"`
		CustomAPIKeyResponses  struct {
			Approved []string `json:"approved"`
		} `json:"customApiKeyResponses"`
		Projects map[string]map[string]any `json:"projects"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.NumStartups != 3 || !cfg.HasCompletedOnboarding || cfg.Projects["/old"] == nil ||
		cfg.Projects[proj]["hasTrustDialogAccepted"] != true ||
		len(cfg.CustomAPIKeyResponses.Approved) != 1 || cfg.CustomAPIKeyResponses.Approved[0] != APIKey[len(APIKey)-20:] {
		t.Errorf("wrote %s", b)
	}
}
