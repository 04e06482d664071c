package fakeanthropic

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/thatch-run/thatch/e2e/fakewire"
)

// Kind tells the main conversation apart from claude's other requests.
type Kind string

const (
	// Turn is a request of the main conversation: it offers tools and is
	// not a compaction.
	Turn Kind = "turn"
	// Compact is the summary request of /compact (or of auto-compaction):
	// shaped like a turn, its last user message asks for "a detailed
	// summary of the conversation".
	Compact Kind = "compact"
	// Title is a request for structured JSON output (output_config.format
	// json_schema), as for the session title.
	Title Kind = "title"
	// Side is any other /v1/messages request (no tools).
	Side Kind = "side"
	// CountTokens is a POST /v1/messages/count_tokens.
	CountTokens Kind = "count_tokens"
)

// APIKey is a key for ANTHROPIC_API_KEY; the server accepts any key.
const APIKey = "sk-ant-fake-thatch-e2e-0123456789abcdefghij"

// Texts the server answers with when no rule does.
const (
	// SummaryText is the summary a Compact request gets.
	SummaryText = "Summary: the user and the assistant exchanged a few messages."
	// SideText answers a Side request.
	SideText = "OK"
)

// Block is one content block of a message, flattened.
type Block struct {
	Type string // text, tool_use, tool_result, image, thinking, ...
	Text string // text; for tool_result the result's text
	// ID and Name of a tool_use; Input is its raw JSON input.
	ID    string
	Name  string
	Input json.RawMessage
	// ToolUseID and IsError of a tool_result.
	ToolUseID string
	IsError   bool
}

// Message is one message of a request. Besides user and assistant, claude
// sends messages with role "system" (the environment) in the list.
type Message struct {
	Role   string
	Blocks []Block
}

// Request is one recorded request.
type Request struct {
	Kind      Kind
	Path      string
	Model     string
	MaxTokens int
	Stream    bool
	System    string
	Messages  []Message
	// Tools are the names of the tools offered.
	Tools []string
	// UserText is what the user typed: the last text block of the user
	// messages that is not a <system-reminder>, whitespace-trimmed, with
	// the <pasted_content> lines claude wraps a long paste in removed.
	UserText string
	// ToolResults are the tool_result blocks of the last message that is
	// not a system one, when it carries any (the request that follows a
	// tool_use).
	ToolResults []Block
	// SessionID is claude's session id (metadata.user_id's session_id, or
	// the X-Claude-Code-Session-Id header).
	SessionID string
	// Step is the number of assistant messages after the message with
	// UserText: 0 for the request that starts a turn, 1 after one tool
	// round, ...
	Step int
	// Rule is the index of the rule that answered, in the order of On
	// (-1: none did).
	Rule int
	// Status is the HTTP status answered.
	Status int
	Header http.Header
	Body   []byte
	At     time.Time
}

// HasTool reports whether the request offered a tool named name.
func (r *Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// ToolResultText joins the text of ToolResults.
func (r *Request) ToolResultText() string { return flatten(r.ToolResults) }

// ToolUse is a tool call the scripted model makes.
type ToolUse struct {
	Name string
	// Input is marshaled to the call's JSON input.
	Input any
}

// Reply is what the scripted model answers to a turn.
type Reply struct {
	// Text is streamed as a text block (before the tool_use, if any).
	Text string
	// TextFunc, when set, computes Text from the request.
	TextFunc func(*Request) string
	// Tool, when set, makes the answer a tool_use (stop_reason tool_use).
	// The request that carries its tool_result (Step 1) gets Then.
	Tool *ToolUse
	// Then answers the request after Tool; it may call a tool in turn.
	// Nil: the text "result: " + the tool result's text.
	Then *Reply
	// Delay holds the answer this long and Gate until it is closed; both
	// after message_start, so that claude shows it is working. A held
	// answer ends early when the client goes away or the server closes.
	Delay time.Duration
	Gate  <-chan struct{}
	// Status, when non-zero, answers with this HTTP status and an
	// Anthropic-style error body instead.
	Status int
}

// Text is a Reply with text only.
func Text(s string) Reply { return Reply{Text: s} }

// Bash is a Reply that runs command with claude's Bash tool, then answers
// then once the result comes back.
func Bash(command, then string) Reply {
	return Reply{
		Tool: &ToolUse{Name: "Bash", Input: map[string]any{"command": command, "description": "Run " + command}},
		Then: &Reply{Text: then},
	}
}

// Echo is the default answer to a turn: "echo: " + the user's text.
func Echo(r *Request) string { return "echo: " + r.UserText }

// UserSays matches turns whose user text contains s.
func UserSays(s string) func(*Request) bool {
	return func(r *Request) bool { return strings.Contains(r.UserText, s) }
}

type rule struct {
	match func(*Request) bool
	reply Reply
}

// Server is the fake Messages API. It listens on 127.0.0.1 from New until
// Close.
type Server struct {
	ln       net.Listener
	srv      *http.Server
	served   chan struct{} // closed when Serve returns
	quit     chan struct{} // closed by Close; ends held answers
	handlers sync.WaitGroup
	once     sync.Once

	mu       sync.Mutex
	rules    []rule
	requests []*Request
	// reported is the usage answered, by message id (see Reported).
	reported map[string]Usage
	unknown  []string
	seq      int
}

// New starts a server on a free loopback port. It is ready when New
// returns.
func New() *Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("fakeanthropic: listen: %v", err))
	}
	s := &Server{ln: ln, served: make(chan struct{}), quit: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.messages)
	mux.HandleFunc("POST /v1/messages/count_tokens", s.countTokens)
	// Claude's connectivity check (sent unless
	// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC is set).
	mux.HandleFunc("/api/hello", func(w http.ResponseWriter, _ *http.Request) {})
	mux.HandleFunc("/", s.notFound)
	s.srv = &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
			s.handlers.Add(1)
			defer s.handlers.Done()
			mux.ServeHTTP(w, hr)
		}),
	}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln)
	}()
	return s
}

// URL is the value for ANTHROPIC_BASE_URL (no /v1).
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Env is the environment claude needs to talk to the server and to
// nothing else, as KEY=value lines (apiKey "" means APIKey).
func (s *Server) Env(apiKey string) []string {
	if apiKey == "" {
		apiKey = APIKey
	}
	return []string{
		"ANTHROPIC_BASE_URL=" + s.URL(),
		"ANTHROPIC_API_KEY=" + apiKey,
		"DISABLE_TELEMETRY=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}
}

// Close stops the server: it closes the listener and every connection,
// ends held answers, and returns when no handler runs any more.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.quit)
		_ = s.srv.Close()
		<-s.served
		s.handlers.Wait()
	})
}

// On adds a rule for turns; it is tried before every rule added earlier.
// A rule matches the request that starts a turn and keeps answering the
// turn's follow-ups (the requests carrying tool results) by their Step.
func (s *Server) On(match func(*Request) bool, reply Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, rule{match, reply})
}

// Usage is the usage the server answered for one message.
type Usage struct{ Input, Output int }

// Reported returns the usage answered for each message, by its id
// ("msg_fake000001"): what a transcript of claude's records of it.
func (s *Server) Reported() map[string]Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.reported)
}

// Requests returns a copy of every recorded request, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = *r
	}
	return out
}

// UserTurns returns the requests that start a turn of the main
// conversation (Kind Turn, Step 0), oldest first: compactions, titles,
// side requests and the follow-ups of tool calls are left out.
func (s *Server) UserTurns() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Kind == Turn && r.Step == 0 {
			out = append(out, r)
		}
	}
	return out
}

// UserTexts returns the UserText of each of UserTurns.
func (s *Server) UserTexts() []string {
	var out []string
	for _, r := range s.UserTurns() {
		out = append(out, r.UserText)
	}
	return out
}

// Unknown returns "METHOD path" for each request to a path the server
// does not serve (answered 404).
func (s *Server) Unknown() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.unknown...)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	_, _ = w.Write(b)
}

func (s *Server) notFound(w http.ResponseWriter, hr *http.Request) {
	s.mu.Lock()
	s.unknown = append(s.unknown, hr.Method+" "+hr.URL.Path)
	s.mu.Unlock()
	writeError(w, http.StatusNotFound, "not_found_error", "fakeanthropic: no route for "+hr.Method+" "+hr.URL.Path)
}

// wire types of the Messages API request.
type wireRequest struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	Stream    bool            `json:"stream"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Metadata struct {
		UserID string `json:"user_id"`
	} `json:"metadata"`
	OutputConfig struct {
		Format struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
}

type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// blocks decodes a content that is a string or a list of blocks.
func blocks(raw json.RawMessage) []Block {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []Block{{Type: "text", Text: s}}
	}
	var wb []wireBlock
	if json.Unmarshal(raw, &wb) != nil {
		return []Block{{Type: "text", Text: string(raw)}}
	}
	out := make([]Block, 0, len(wb))
	for _, b := range wb {
		blk := Block{Type: b.Type, Text: b.Text, ID: b.ID, Name: b.Name, Input: b.Input, ToolUseID: b.ToolUseID, IsError: b.IsError}
		if b.Type == "tool_result" {
			blk.Text = flatten(blocks(b.Content))
		}
		out = append(out, blk)
	}
	return out
}

func flatten(bs []Block) string {
	var parts []string
	for _, b := range bs {
		if b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func isReminder(text string) bool {
	return strings.HasPrefix(strings.TrimSpace(text), "<system-reminder>")
}

// unpaste drops the <pasted_content id="..."> and </pasted_content ...>
// lines claude wraps a long paste in, and trims the text.
func unpaste(text string) string {
	if !strings.Contains(text, "<pasted_content") {
		return strings.TrimSpace(text)
	}
	var keep []string
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "<pasted_content") || strings.HasPrefix(t, "</pasted_content") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}

// parse decodes a request body and derives what the scripts look at.
func parse(body []byte, hr *http.Request) (*Request, json.RawMessage, error) {
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		return nil, nil, err
	}
	r := &Request{
		Path: hr.URL.Path, Model: wr.Model, MaxTokens: wr.MaxTokens, Stream: wr.Stream,
		System: flatten(blocks(wr.System)), Header: hr.Header.Clone(), Body: body, At: time.Now(), Rule: -1,
	}
	for _, m := range wr.Messages {
		r.Messages = append(r.Messages, Message{Role: m.Role, Blocks: blocks(m.Content)})
	}
	for _, t := range wr.Tools {
		r.Tools = append(r.Tools, t.Name)
	}
	var meta struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal([]byte(wr.Metadata.UserID), &meta) == nil && meta.SessionID != "" {
		r.SessionID = meta.SessionID
	} else {
		r.SessionID = hr.Header.Get("X-Claude-Code-Session-Id")
	}
	// The user's text, and how many assistant messages follow it.
	found := false
	for i := len(r.Messages) - 1; i >= 0 && !found; i-- {
		m := r.Messages[i]
		if m.Role == "assistant" {
			r.Step++
			continue
		}
		if m.Role != "user" || carriesToolResult(m) {
			// A tool's result is no text of the user's, whatever text
			// comes with it (ToolSearch's "Tool loaded.").
			continue
		}
		for j := len(m.Blocks) - 1; j >= 0; j-- {
			if b := m.Blocks[j]; b.Type == "text" && !isReminder(b.Text) {
				r.UserText, found = unpaste(b.Text), true
				break
			}
		}
	}
	if !found {
		r.Step = 0
	}
	if last := lastTurn(r.Messages); last != nil && last.Role == "user" {
		for _, b := range last.Blocks {
			if b.Type == "tool_result" {
				r.ToolResults = append(r.ToolResults, b)
			}
		}
	}
	var schema json.RawMessage
	switch {
	case strings.HasSuffix(r.Path, "/count_tokens"):
		r.Kind = CountTokens
	case wr.OutputConfig.Format.Type == "json_schema":
		r.Kind, schema = Title, wr.OutputConfig.Format.Schema
	case len(r.Tools) == 0:
		r.Kind = Side
	case strings.Contains(r.UserText, "create a detailed summary of the conversation"):
		r.Kind = Compact
	default:
		r.Kind = Turn
	}
	return r, schema, nil
}

// lastTurn is the last message that is not a system one: claude appends
// a system message after a tool_result when an MCP server connected
// meanwhile (the deferred tools it brings), so the results are not
// always in the last message.
func lastTurn(ms []Message) *Message {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role != "system" {
			return &ms[i]
		}
	}
	return nil
}

// carriesToolResult reports whether m answers a tool call.
func carriesToolResult(m Message) bool {
	for _, b := range m.Blocks {
		if b.Type == "tool_result" {
			return true
		}
	}
	return false
}

// fromSchema answers a json_schema request with an object that has every
// property: strings are "Fake <name>" (a title is "Fake title").
func fromSchema(raw json.RawMessage) string {
	var schema struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(raw, &schema)
	out := map[string]any{}
	for name, p := range schema.Properties {
		switch p.Type {
		case "string":
			out[name] = "Fake " + name
		case "boolean":
			out[name] = false
		case "number", "integer":
			out[name] = 0
		case "array":
			out[name] = []any{}
		default:
			out[name] = map[string]any{}
		}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

func (s *Server) countTokens(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(io.LimitReader(hr.Body, 64<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	r, _, err := parse(body, hr)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	r.Status = http.StatusOK
	s.mu.Lock()
	s.requests = append(s.requests, r)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"input_tokens":%d}`, 1+len(body)/4)
}

// answer picks the reply for a parsed request; called with s.mu held.
func (s *Server) answer(r *Request, schema json.RawMessage) Reply {
	switch r.Kind {
	case Title:
		return Text(fromSchema(schema))
	case Side:
		return Text(SideText)
	case Compact:
		return Text("<analysis>Nothing to analyse.</analysis>\n<summary>" + SummaryText + "</summary>")
	}
	reply := Reply{TextFunc: Echo}
	for i := len(s.rules) - 1; i >= 0; i-- {
		if s.rules[i].match(r) {
			reply, r.Rule = s.rules[i].reply, i
			break
		}
	}
	// Step n of a turn answers with the n-th Then of a tool chain.
	for n := 0; n < r.Step && reply.Tool != nil; n++ {
		if reply.Then != nil {
			reply = *reply.Then
			continue
		}
		reply = Reply{TextFunc: func(r *Request) string { return "result: " + strings.TrimSpace(r.ToolResultText()) }}
	}
	return reply
}

func (s *Server) messages(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(io.LimitReader(hr.Body, 64<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	r, schema, err := parse(body, hr)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	s.mu.Lock()
	reply := s.answer(r, schema)
	s.seq++
	seq := s.seq
	r.Status = http.StatusOK
	if reply.Status != 0 {
		r.Status = reply.Status
	}
	s.requests = append(s.requests, r)
	s.mu.Unlock()

	if reply.Status != 0 {
		typ := "api_error"
		switch reply.Status {
		case 400:
			typ = "invalid_request_error"
		case 401:
			typ = "authentication_error"
		case 429:
			typ = "rate_limit_error"
		case 529:
			typ = "overloaded_error"
		}
		writeError(w, reply.Status, typ, fmt.Sprintf("fakeanthropic: scripted error %d", reply.Status))
		return
	}
	text := reply.Text
	if reply.TextFunc != nil {
		text = reply.TextFunc(r)
	}
	var content []map[string]any
	if text != "" || reply.Tool == nil {
		content = append(content, map[string]any{"type": "text", "text": text})
	}
	stop := "end_turn"
	if reply.Tool != nil {
		input := reply.Tool.Input
		if input == nil {
			input = map[string]any{}
		}
		content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_fake%06d", seq), "name": reply.Tool.Name, "input": input})
		stop = "tool_use"
	}
	id := fmt.Sprintf("msg_fake%06d", seq)
	model := r.Model
	if model == "" {
		model = "claude-fake"
	}
	inTokens, outTokens := 1+len(body)/4, 1+len(text)/4
	s.mu.Lock()
	if s.reported == nil {
		s.reported = map[string]Usage{}
	}
	s.reported[id] = Usage{Input: inTokens, Output: outTokens}
	s.mu.Unlock()
	if !r.Stream {
		if !fakewire.Hold(hr.Context(), s.quit, reply.Delay, reply.Gate) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": inTokens, "output_tokens": outTokens}})
		_, _ = w.Write(b)
		return
	}
	st := fakewire.Open(w)
	send := func(event string, data map[string]any) {
		data["type"] = event
		st.Event(event, data)
	}
	send("message_start", map[string]any{"message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": inTokens, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}})
	send("ping", map[string]any{})
	if !fakewire.Hold(hr.Context(), s.quit, reply.Delay, reply.Gate) {
		return
	}
	for i, c := range content {
		switch c["type"] {
		case "text":
			send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": c["text"]}})
		case "tool_use":
			send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use", "id": c["id"], "name": c["name"], "input": map[string]any{}}})
			in, _ := json.Marshal(c["input"])
			send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		}
		send("content_block_stop", map[string]any{"index": i})
	}
	send("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": outTokens}})
	send("message_stop", map[string]any{})
}

// PrepareHome writes home/.claude.json so that an interactive claude,
// started with HOME=home, ANTHROPIC_API_KEY=apiKey and its working
// directory in (or under) one of projects, goes straight to its input
// prompt: onboarding done (no theme picker), the API key approved (no
// "Detected a custom API key" question; claude stores the key's last 20
// characters), each project trusted (no "trust this folder" dialog; a
// trusted folder covers its subfolders), and the auto-mode notice seen.
// Keys already in the file are kept.
func PrepareHome(home, apiKey string, projects ...string) error {
	path := filepath.Join(home, ".claude.json")
	cfg := map[string]any{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &cfg); err != nil {
			return fmt.Errorf("fakeanthropic: %s: %w", path, err)
		}
	} else if !os.IsNotExist(err) {
		return err
	}
	cfg["hasCompletedOnboarding"] = true
	cfg["hasSeenAutoDefaultNotice"] = true
	key := apiKey
	if len(key) > 20 {
		key = key[len(key)-20:]
	}
	resp, _ := cfg["customApiKeyResponses"].(map[string]any)
	if resp == nil {
		resp = map[string]any{}
	}
	approved, _ := resp["approved"].([]any)
	if !containsAny(approved, key) {
		approved = append(approved, key)
	}
	resp["approved"] = approved
	if resp["rejected"] == nil {
		resp["rejected"] = []any{}
	}
	cfg["customApiKeyResponses"] = resp
	projs, _ := cfg["projects"].(map[string]any)
	if projs == nil {
		projs = map[string]any{}
	}
	for _, p := range projects {
		abs, err := filepath.Abs(p)
		if err != nil {
			return err
		}
		entry, _ := projs[abs].(map[string]any)
		if entry == nil {
			entry = map[string]any{}
		}
		entry["hasTrustDialogAccepted"] = true
		projs[abs] = entry
	}
	cfg["projects"] = projs
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

func containsAny(list []any, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
