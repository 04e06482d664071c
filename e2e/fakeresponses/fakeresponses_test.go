package fakeresponses

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	// The suite runs as `go test ./e2e/... -ginkgo.v`; importing Ginkgo
	// defines its flags here too.
	_ "github.com/onsi/ginkgo/v2"

	"github.com/thatch-run/thatch/e2e/fakewire"
	"github.com/thatch-run/thatch/internal/testwait"
)

// event is one server-sent event of a stream.
type event struct {
	Name string // the "event:" line
	Type string `json:"type"`
	// Delta is an output_text.delta's text.
	Delta string `json:"delta"`
	Item  struct {
		Type      string `json:"type"`
		Role      string `json:"role"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		CallID    string `json:"call_id"`
		Arguments string `json:"arguments"`
		Content   []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"item"`
	Response struct {
		ID    string `json:"id"`
		Usage *struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	} `json:"response"`
}

// answer is what a stream said.
type answer struct {
	Status int
	Events []event
	Deltas string // the output_text.delta texts joined
	Text   string // the text of the message item in output_item.done
	Calls  []event
}

// post sends a Responses request with the given input items, as codex
// does, and parses the stream back.
func post(t *testing.T, s *Server, header http.Header, body map[string]any) answer {
	t.Helper()
	b, _ := json.Marshal(body)
	hr, _ := http.NewRequest("POST", s.URL()+"/v1/responses", bytes.NewReader(b))
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	for k, v := range header {
		hr.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := answer{Status: resp.StatusCode}
	if resp.StatusCode != 200 {
		return a
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	raw, err := fakewire.Read(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range raw {
		var ev event
		if err := json.Unmarshal([]byte(r.Data), &ev); err != nil {
			t.Fatalf("bad event %q: %v", r.Data, err)
		}
		ev.Name = r.Name
		if ev.Name != ev.Type {
			t.Errorf("event line %q for type %q", ev.Name, ev.Type)
		}
		a.Events = append(a.Events, ev)
		switch ev.Type {
		case "response.output_text.delta":
			a.Deltas += ev.Delta
		case "response.output_item.done":
			switch ev.Item.Type {
			case "message":
				for _, c := range ev.Item.Content {
					a.Text += c.Text
				}
			case "function_call":
				a.Calls = append(a.Calls, ev)
			}
		}
	}
	if n := len(a.Events); n == 0 || a.Events[0].Type != "response.created" || a.Events[n-1].Type != "response.completed" {
		t.Fatalf("stream does not run from response.created to response.completed: %+v", a.Events)
	}
	if a.Events[len(a.Events)-1].Response.Usage == nil {
		t.Error("response.completed without usage")
	}
	return a
}

func msg(role, text string) map[string]any {
	return map[string]any{"type": "message", "role": role,
		"content": []map[string]any{{"type": "input_text", "text": text}}}
}

// turn is a request body as codex sends it: developer instructions, the
// environment context, then the conversation.
func turn(items ...map[string]any) map[string]any {
	input := []map[string]any{
		msg("developer", "You are a coding agent running in the Codex CLI."),
		msg("user", "<environment_context>\n  <cwd>/p</cwd>\n</environment_context>"),
	}
	return map[string]any{"model": Model, "stream": true, "input": append(input, items...),
		"tools":            []map[string]any{{"type": "function", "name": "exec_command"}, {"type": "web_search"}},
		"prompt_cache_key": "sess-1"}
}

func call(id string) map[string]any {
	return map[string]any{"type": "function_call", "name": "exec_command", "arguments": `{"cmd":"ls"}`, "call_id": id}
}

func output(id, out string) map[string]any {
	return map[string]any{"type": "function_call_output", "call_id": id, "output": out}
}

func userMeta(source string) http.Header {
	return http.Header{"X-Codex-Turn-Metadata": {`{"request_kind":"turn","thread_source":"` + source + `"}`}}
}

func TestEcho(t *testing.T) {
	s := New()
	defer s.Close()
	a := post(t, s, userMeta("user"), turn(msg("user", "  hello codex \n")))
	if a.Text != "echo: hello codex" || a.Deltas != a.Text {
		t.Errorf("text %q, deltas %q", a.Text, a.Deltas)
	}
	rs := s.Requests()
	if len(rs) != 1 {
		t.Fatalf("%d requests", len(rs))
	}
	r := rs[0]
	if r.User != "hello codex" || r.Kind != KindTurn || r.Source != "user" || r.SessionID != "sess-1" || r.Step != -1 {
		t.Errorf("recorded %+v", r)
	}
	if strings.Join(r.Tools, ",") != "exec_command,web_search" {
		t.Errorf("tools %v", r.Tools)
	}
}

func TestTitleAndTurns(t *testing.T) {
	s := New()
	defer s.Close()
	post(t, s, userMeta("user"), turn(msg("user", "first")))
	title := map[string]any{"model": Model, "stream": true, "input": []map[string]any{
		msg("user", "<environment_context>\n</environment_context>"),
		msg("user", "Generate a concise, single-line task title\n\nUser prompt:\nfirst"),
	}, "text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "codex_output_schema",
		"schema": map[string]any{"properties": map[string]any{"title": map[string]any{"type": "string"}}}}}}
	a := post(t, s, userMeta("thread_title"), title)
	var got struct{ Title string }
	if err := json.Unmarshal([]byte(a.Text), &got); err != nil || got.Title != TitleText {
		t.Errorf("title answer %q: %v", a.Text, err)
	}
	// Without codex's header the schema still tells a title request.
	post(t, s, nil, title)
	post(t, s, userMeta("user"), turn(msg("user", "first"), msg("assistant", "echo: first"), msg("user", "second")))
	kinds := []string{}
	for _, r := range s.Requests() {
		kinds = append(kinds, r.Kind)
	}
	if strings.Join(kinds, ",") != "turn,title,title,turn" {
		t.Errorf("kinds %v", kinds)
	}
	if turns := s.UserTurns(); strings.Join(turns, "|") != "first|second" {
		t.Errorf("user turns %q", turns)
	}
}

func TestToolCallSteps(t *testing.T) {
	s := New()
	defer s.Close()
	s.On(Rule{Name: "ls", Match: UserContains("list"), Steps: []Step{
		{Text: "Listing.", Calls: []Call{Shell("ls")}},
		{TextFrom: func(r *Request) string { return "files: " + CommandOutput(r.Outputs()[0]) }},
	}})
	s.On(Rule{Name: "once", Match: UserIs("list"), Times: 1, Steps: []Step{{Status: 500}}})

	if a := post(t, s, nil, turn(msg("user", "list"))); a.Status != 500 {
		t.Errorf("the newer rule answers first: status %d", a.Status)
	}
	a := post(t, s, nil, turn(msg("user", "list")))
	if a.Text != "Listing." || len(a.Calls) != 1 {
		t.Fatalf("step 0: %+v", a)
	}
	c := a.Calls[0].Item
	if c.Name != "exec_command" || c.Arguments != `{"cmd":"ls"}` || c.CallID == "" {
		t.Errorf("call %+v", c)
	}
	out := "Chunk ID: 1\nWall time: 0.0000 seconds\nProcess exited with code 0\nOutput:\na.txt\n"
	a = post(t, s, nil, turn(msg("user", "list"), msg("assistant", "Listing."), call(c.CallID), output(c.CallID, out)))
	if a.Text != "files: a.txt\n" || len(a.Calls) != 0 {
		t.Errorf("step 1: %q %+v", a.Text, a.Calls)
	}
	// A call the server did not make does not advance the script.
	a = post(t, s, nil, turn(msg("user", "list"), call("call_other"), output("call_other", "x")))
	if a.Text != "Listing." {
		t.Errorf("foreign call: %q", a.Text)
	}
	if n := s.Served("ls", 1); n != 1 {
		t.Errorf("served ls/1 %d times", n)
	}
	if turns := s.UserTurns(); len(turns) != 3 {
		t.Errorf("user turns %q", turns)
	}
}

// An MCP tool's call names its namespace, as codex offers the tool; the
// call and its output come back in the next request.
func TestMCPToolCall(t *testing.T) {
	s := New()
	defer s.Close()
	s.On(Rule{Name: "recall", Match: UserContains("RECALL"), Steps: []Step{
		{Calls: []Call{MCPTool("thatch", "memory_recall", map[string]any{"query": "deploy"})}},
		{TextFrom: func(r *Request) string { return "result: " + CommandOutput(r.Outputs()[0]) }},
	}})
	a := post(t, s, nil, turn(msg("user", "RECALL it")))
	if len(a.Calls) != 1 {
		t.Fatalf("step 0: %+v", a)
	}
	c := a.Calls[0].Item
	if c.Namespace != "mcp__thatch" || c.Name != "memory_recall" || c.Arguments != `{"query":"deploy"}` {
		t.Errorf("call %+v", c)
	}
	back := map[string]any{"type": "function_call", "namespace": c.Namespace, "name": c.Name, "arguments": c.Arguments, "call_id": c.CallID}
	a = post(t, s, nil, turn(msg("user", "RECALL it"), back, output(c.CallID, "Wall time: 0.0100 seconds\nOutput:\n{\"hits\":[]}")))
	if a.Text != `result: {"hits":[]}` {
		t.Errorf("step 1: %q", a.Text)
	}
	reqs := s.Requests()
	if it := reqs[len(reqs)-1].Input[3]; it.Namespace != "mcp__thatch" || it.Name != "memory_recall" {
		t.Errorf("recorded call %+v", it)
	}
}

func TestGateAndClose(t *testing.T) {
	s := New()
	gate := make(chan struct{})
	s.On(Rule{Name: "held", Match: UserContains("HOLD"), Steps: []Step{{Text: "released", Gate: gate}}})
	got := make(chan string, 1)
	go func() { got <- post(t, s, nil, turn(msg("user", "HOLD"))).Text }()
	testwait.Until(t, "the held request to be served", func() bool { return s.Served("held", 0) > 0 })
	select {
	case text := <-got:
		t.Fatalf("answered %q before the gate opened", text)
	case <-time.After(50 * time.Millisecond):
	}
	close(gate)
	if text := <-got; text != "released" {
		t.Errorf("got %q", text)
	}

	// Close releases a held answer and returns.
	s.On(Rule{Name: "stuck", Match: UserContains("STUCK"), Steps: []Step{{Text: "never", Gate: make(chan struct{})}}})
	b, _ := json.Marshal(turn(msg("user", "STUCK")))
	errc := make(chan error, 1)
	go func() {
		resp, err := http.Post(s.URL()+"/v1/responses", "application/json", bytes.NewReader(b))
		if err == nil {
			var buf bytes.Buffer
			_, err = buf.ReadFrom(resp.Body)
			resp.Body.Close()
			if err == nil && strings.Contains(buf.String(), "never") {
				err = errAnswered
			}
		}
		errc <- err
	}()
	testwait.Until(t, "the stuck request to be served", func() bool { return s.Served("stuck", 0) > 0 })
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	if err := <-errc; err == errAnswered {
		t.Error("a held answer was sent after Close")
	}
}

var errAnswered = errors.New("answered after Close")

func TestUnknownPath(t *testing.T) {
	s := New()
	defer s.Close()
	resp, err := http.Get(s.URL() + "/v1/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("status %d", resp.StatusCode)
	}
	resp, err = http.Get(s.URL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("models status %d", resp.StatusCode)
	}
	if u := s.Unknown(); len(u) != 1 || u[0] != "GET /v1/nothing" {
		t.Errorf("unknown %q", u)
	}
}

func TestInjected(t *testing.T) {
	for text, want := range map[string]bool{
		"<environment_context>\n  <cwd>/p</cwd>\n</environment_context>":    true,
		"<turn_aborted>\nThe user interrupted.\n</turn_aborted>":            true,
		"# AGENTS.md instructions for /p\n\n<INSTRUCTIONS>x</INSTRUCTIONS>": true,
		"hello":          false,
		"<b>bold</b> hi": false,
		"<a> and <b>":    false,
	} {
		if got := (Item{Type: "message", Role: "user", Text: text}).Injected(); got != want {
			t.Errorf("Injected(%q) = %v", text, got)
		}
	}
}

func TestPrepareHome(t *testing.T) {
	home := t.TempDir()
	if err := PrepareHome(home, "http://127.0.0.1:1234/", "/w/b", "/w/a"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(home, ".codex", "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(b)
	for _, want := range []string{
		`model = "fake-model"`, `model_provider = "fake"`, `[model_providers.fake]`,
		`base_url = "http://127.0.0.1:1234/v1"`, `wire_api = "responses"`, `env_key = "FAKE_API_KEY"`,
		`check_for_update_on_startup = false`, "[projects.\"/w/a\"]\ntrust_level = \"trusted\"",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Index(cfg, `"/w/a"`) > strings.Index(cfg, `"/w/b"`) {
		t.Error("trusted projects are not sorted")
	}
	if err := PrepareHome(home, "http://127.0.0.1:1234/v1"); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(home, ".codex", "config.toml"))
	if !strings.Contains(string(b), `base_url = "http://127.0.0.1:1234/v1"`+"\n") {
		t.Errorf("a URL ending in /v1 is kept:\n%s", b)
	}
}
