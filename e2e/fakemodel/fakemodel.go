package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/thatch-run/thatch/e2e/fakewire"
)

// ModelID is the model name the server reports and that opencode configs
// in the suite use.
const ModelID = "fake-1"

// Message is one chat message of a request, with its content flattened to
// text.
type Message struct {
	Role string
	Text string
	// ToolCalls are the names of the tools an assistant message called.
	ToolCalls []string
	// ToolCallID is set on tool result messages.
	ToolCallID string
}

// Request is one recorded chat-completions request.
type Request struct {
	Messages []Message
	// Tools are the names of the tools offered to the model.
	Tools []string
	// Rule and Step name what answered it ("" and -1 for the fallback).
	Rule string
	Step int
	// Status is the HTTP status the server answered with.
	Status int
	At     time.Time
}

// System returns the concatenated system messages.
func (r *Request) System() string {
	var b strings.Builder
	for _, m := range r.Messages {
		if m.Role == "system" {
			b.WriteString(m.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// LastUser returns the text of the last user message.
func (r *Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text
		}
	}
	return ""
}

// FirstUser returns the text of the first user message: the prompt that
// started the conversation.
func (r *Request) FirstUser() string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			return m.Text
		}
	}
	return ""
}

// Step returns how many assistant messages follow the last user message:
// 0 for the first call of a turn, 1 after one round of tool calls, ...
func (r *Request) step() int {
	n := 0
	for i := len(r.Messages) - 1; i >= 0; i-- {
		switch r.Messages[i].Role {
		case "user":
			return n
		case "assistant":
			n++
		}
	}
	return n
}

// HasTool reports whether the request offered the model a tool named name.
func (r *Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// ToolResults returns the contents of the tool result messages after the
// last user message, oldest first.
func (r *Request) ToolResults() []string {
	start := 0
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			start = i
			break
		}
	}
	var out []string
	for _, m := range r.Messages[start:] {
		if m.Role == "tool" {
			out = append(out, m.Text)
		}
	}
	return out
}

// Matcher selects the requests a Rule answers.
type Matcher func(*Request) bool

// LastUserContains matches when the last user message contains s.
func LastUserContains(s string) Matcher {
	return func(r *Request) bool { return strings.Contains(r.LastUser(), s) }
}

// FirstUserContains matches when the first user message contains s; it
// keeps matching a conversation after later user messages were added.
func FirstUserContains(s string) Matcher {
	return func(r *Request) bool { return strings.Contains(r.FirstUser(), s) }
}

// SystemContains matches when a system message contains s.
func SystemContains(s string) Matcher {
	return func(r *Request) bool { return strings.Contains(r.System(), s) }
}

// AnyContains matches when any message contains s.
func AnyContains(s string) Matcher {
	return func(r *Request) bool {
		for _, m := range r.Messages {
			if strings.Contains(m.Text, s) {
				return true
			}
		}
		return false
	}
}

// ToolCall is one call the scripted model makes.
type ToolCall struct {
	Name string
	// Args is marshaled to the call's JSON arguments.
	Args any
	// ArgsFrom, when set, computes Args from the request (for ids that
	// only the conversation knows).
	ArgsFrom func(*Request) any
}

// Step is one answer of a rule.
type Step struct {
	// Text is streamed as content (before any tool calls).
	Text string
	// TextFrom, when set, computes Text from the request.
	TextFrom  func(*Request) string
	ToolCalls []ToolCall
	// Status, when non-zero, answers with this HTTP status and an
	// OpenAI-style error body instead of a stream.
	Status int
	// Gate, when set, holds the answer until it is closed (or the client
	// gives up).
	Gate <-chan struct{}
}

// Rule is a script for the requests that Match selects.
type Rule struct {
	Name  string
	Match Matcher
	// Steps are indexed by the request's step; past the end, the last
	// step repeats.
	Steps []Step
	// Times, when > 0, is how many requests the rule answers before it is
	// spent.
	Times int
	// ToolLess makes the rule also answer requests that offer no tools.
	// opencode sends those for titles and compaction summaries; by default
	// they get plain text (TitleText, SummaryText) so that a rule written
	// for a session's turns does not answer them with tool calls.
	ToolLess bool
}

// Answers to requests that offer no tools and that no ToolLess rule takes.
const (
	TitleText   = "Fake title"
	SummaryText = "Summary: the user and the assistant looked at the project's README."
)

// Server is the fake model server. It listens on 127.0.0.1 from New until
// Close.
type Server struct {
	ln  net.Listener
	srv *http.Server

	mu       sync.Mutex
	rules    []*rule
	requests []*Request
	fallback string
	seq      int
}

type rule struct {
	Rule
	used int
}

// New starts a server on a free loopback port. It is ready when New
// returns.
func New() *Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("fakemodel: listen: %v", err))
	}
	s := &Server{ln: ln, fallback: "OK."}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.complete)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","owned_by":"fake"}]}`, ModelID)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s
}

// BaseURL is the value for the provider's options.baseURL.
func (s *Server) BaseURL() string { return "http://" + s.ln.Addr().String() + "/v1" }

// Close stops the server and releases held answers.
func (s *Server) Close() {
	_ = s.srv.Close()
}

// On adds a rule; it is tried before every rule added earlier.
func (s *Server) On(r Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &rule{Rule: r})
}

// Fallback sets the text answered when no rule matches. Default "OK.".
func (s *Server) Fallback(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = text
}

// Requests returns a copy of the recorded requests, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = *r
	}
	return out
}

// Served counts the requests rule name answered at step (any step when
// step < 0).
func (s *Server) Served(name string, step int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if r.Rule == name && (step < 0 || r.Step == step) {
			n++
		}
	}
	return n
}

// wire types of the chat-completions API.
type wireRequest struct {
	Model    string        `json:"model"`
	Messages []wireMessage `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func (s *Server) complete(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(io.LimitReader(hr.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := &Request{At: time.Now(), Step: -1}
	for _, m := range wr.Messages {
		msg := Message{Role: m.Role, Text: fakewire.Text(m.Content), ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, tc.Function.Name)
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range wr.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}

	s.mu.Lock()
	step := Step{Text: s.fallback}
	toolLess := len(req.Tools) == 0
	if toolLess {
		step.Text = SummaryText
		if strings.Contains(req.System(), "title generator") {
			step.Text = TitleText
		}
	}
	for i := len(s.rules) - 1; i >= 0; i-- {
		r := s.rules[i]
		if r.Times > 0 && r.used >= r.Times {
			continue
		}
		if toolLess && !r.ToolLess {
			continue
		}
		if r.Match == nil || !r.Match(req) || len(r.Steps) == 0 {
			continue
		}
		r.used++
		idx := req.step()
		if idx >= len(r.Steps) {
			idx = len(r.Steps) - 1
		}
		step, req.Rule, req.Step = r.Steps[idx], r.Name, idx
		break
	}
	s.seq++
	id := fmt.Sprintf("chatcmpl-%d", s.seq)
	req.Status = http.StatusOK
	if step.Status != 0 {
		req.Status = step.Status
	}
	s.requests = append(s.requests, req)
	s.mu.Unlock()

	if !fakewire.Hold(hr.Context(), nil, 0, step.Gate) {
		return
	}
	if step.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(step.Status)
		fmt.Fprintf(w, `{"error":{"message":"fakemodel: scripted error %d","type":"invalid_request_error","code":"scripted"}}`, step.Status)
		return
	}
	s.stream(w, id, req, step)
}

func (s *Server) stream(w http.ResponseWriter, id string, req *Request, step Step) {
	st := fakewire.Open(w)
	created := time.Now().Unix()
	send := func(choices []map[string]any, usage map[string]any) {
		chunk := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": ModelID, "choices": choices}
		if usage != nil {
			chunk["usage"] = usage
		}
		st.Event("", chunk)
	}
	delta := func(d map[string]any) []map[string]any {
		return []map[string]any{{"index": 0, "delta": d, "finish_reason": nil}}
	}
	send(delta(map[string]any{"role": "assistant", "content": ""}), nil)
	txt := step.Text
	if step.TextFrom != nil {
		txt = step.TextFrom(req)
	}
	if txt != "" {
		send(delta(map[string]any{"content": txt}), nil)
	}
	for i, tc := range step.ToolCalls {
		args := tc.Args
		if tc.ArgsFrom != nil {
			args = tc.ArgsFrom(req)
		}
		if args == nil {
			args = map[string]any{}
		}
		ab, _ := json.Marshal(args)
		send(delta(map[string]any{"tool_calls": []map[string]any{{
			"index": i, "id": fmt.Sprintf("call_%s_%d", id, i), "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": string(ab)},
		}}}), nil)
	}
	finish := "stop"
	if len(step.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	send([]map[string]any{{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil)
	send([]map[string]any{}, map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})
	st.Raw("", "[DONE]")
}
