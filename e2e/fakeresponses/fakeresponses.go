package fakeresponses

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/thatch-run/thatch/e2e/fakewire"
)

// Model is the model name PrepareHome configures and the server reports.
const Model = "fake-model"

// EnvKey is the environment variable the provider PrepareHome writes reads
// its API key from. codex refuses to start a turn when it is unset or
// empty; any value will do (the server ignores it).
const EnvKey = "FAKE_API_KEY"

// TitleText is the title the server gives codex's title requests (the
// side thread that names a session after its first prompt).
const TitleText = "Fake title"

// Kinds of request.
const (
	// KindTurn is a request of a session's own conversation: the first
	// request of a user turn, or a follow-up after tool calls.
	KindTurn = "turn"
	// KindTitle is codex's request for a session title: a side thread
	// with no tools and a JSON schema for its answer.
	KindTitle = "title"
	// KindOther is any other request (a structured-output request that
	// is not a title, a compaction, ...).
	KindOther = "other"
)

// Item is one input item of a request.
type Item struct {
	// Type is "message", "function_call", "function_call_output",
	// "reasoning", ...
	Type string
	// Role is a message's role: "developer", "user" or "assistant".
	Role string
	// Text is a message's text parts joined by newlines, a function
	// call's arguments, or a call output's output.
	Text string
	// Name is a function call's name.
	Name string
	// Namespace is a namespaced function call's namespace (an MCP tool's
	// "mcp__<server>"), "" for a plain one.
	Namespace string
	// CallID ties a function call to its output.
	CallID string
}

// Injected reports whether the item is a user message codex wrote itself:
// context wrapped in one XML-like element (<environment_context>,
// <user_instructions>, <turn_aborted>, ...) or the AGENTS.md preamble.
func (it Item) Injected() bool {
	if it.Type != "message" || it.Role != "user" {
		return false
	}
	return injected(it.Text)
}

func injected(t string) bool {
	t = strings.TrimSpace(t)
	if strings.HasPrefix(t, "# AGENTS.md instructions") {
		return true
	}
	if !strings.HasPrefix(t, "<") || !strings.HasSuffix(t, ">") {
		return false
	}
	name := t[1:]
	if i := strings.IndexAny(name, " >\n\t/"); i > 0 {
		name = name[:i]
	} else {
		return false
	}
	return strings.HasSuffix(t, "</"+name+">")
}

// Request is one recorded POST /v1/responses.
type Request struct {
	Model string
	Input []Item
	// Tools are the names of the tools offered (function tools by name,
	// others by type, e.g. "web_search"); a namespace's tools are
	// "namespace.tool".
	Tools []string
	// Schema is the name of the JSON schema the answer must follow
	// (text.format), "" for free text.
	Schema string
	// SessionID is codex's session (thread) id for the request's
	// conversation, from the Session-Id header or prompt_cache_key. A
	// title request has its own.
	SessionID string
	// Source is thread_source from codex's x-codex-turn-metadata header:
	// "user" for a session's turns, "thread_title" for titles.
	Source string
	// Kind is KindTurn, KindTitle or KindOther.
	Kind string
	// User is the text of the last user message that is not injected
	// context, trimmed: what the user typed (for a title request, codex's
	// title prompt, which ends with the user's first message).
	User string
	// Rule and Step name what answered it ("" and -1 for the default).
	Rule string
	Step int
	// Status is the HTTP status the server answered with.
	Status int
	At     time.Time
	// Body is the raw JSON body.
	Body []byte
}

// step is the index of the rule step this request asks for: 0 at the
// start of a user turn, n after the server's calls of step n-1 were
// answered. The server writes the step into the call ids it makes, so it
// keeps no per-session state.
func (r *Request) step() int {
	n := 0
	for i := r.lastUser() + 1; i < len(r.Input); i++ {
		it := r.Input[i]
		if it.Type != "function_call" {
			continue
		}
		if s, ok := stepOf(it.CallID); ok && s+1 > n {
			n = s + 1
		}
	}
	return n
}

// lastUser returns the index of the last user message that is not
// injected context, -1 if there is none.
func (r *Request) lastUser() int {
	for i := len(r.Input) - 1; i >= 0; i-- {
		it := r.Input[i]
		if it.Type == "message" && it.Role == "user" && !it.Injected() {
			return i
		}
	}
	return -1
}

// Outputs returns the outputs of the function calls after the last user
// message, oldest first.
func (r *Request) Outputs() []string {
	var out []string
	for _, it := range r.Input[r.lastUser()+1:] {
		if strings.HasSuffix(it.Type, "_call_output") {
			out = append(out, it.Text)
		}
	}
	return out
}

// Matcher selects the requests a Rule answers.
type Matcher func(*Request) bool

// UserContains matches when the user's text contains s.
func UserContains(s string) Matcher {
	return func(r *Request) bool { return strings.Contains(r.User, s) }
}

// UserIs matches when the user's text is s.
func UserIs(s string) Matcher {
	return func(r *Request) bool { return r.User == s }
}

// Call is one function call the scripted model makes.
type Call struct {
	Name string
	// Namespace, when set, is the namespace of the tool called: codex
	// offers some tools in namespaces (Request.Tools lists them as
	// "namespace.tool"), and the model calls one by its namespace and
	// name (MCPTool).
	Namespace string
	// Args is marshaled to the call's JSON arguments.
	Args any
	// ArgsFrom, when set, computes Args from the request.
	ArgsFrom func(*Request) any
}

// Shell is a call of codex's shell tool (exec_command in codex 0.169)
// running cmd. codex runs it (after asking for approval when its policy
// says so) and sends the output back in the next request.
func Shell(cmd string) Call {
	return Call{Name: "exec_command", Args: map[string]any{"cmd": cmd}}
}

// MCPTool is a call of tool of the MCP server named server in codex's
// configuration (mcp_servers.<server>): codex 0.169 offers a server's
// tools in a namespace "mcp__<server>" (Request.Tools lists them as
// "mcp__<server>.<tool>"), calls the server's tool (after asking for
// approval when its policy says so) and sends its result back as the
// call's output.
func MCPTool(server, tool string, args any) Call {
	return Call{Namespace: "mcp__" + server, Name: tool, Args: args}
}

// EscalatedShell is a shell call that asks to run outside codex's
// sandbox: codex shows an approval prompt with justification as the
// reason (unless its approval policy is "never").
func EscalatedShell(cmd, justification string) Call {
	return Call{Name: "exec_command", Args: map[string]any{
		"cmd": cmd, "sandbox_permissions": "require_escalated", "justification": justification,
	}}
}

// CommandOutput returns what a command printed, from the output codex
// sends back for an exec_command call: the text after its "Output:" line
// (codex puts the chunk id, wall time and exit code before it), or out
// itself when there is no such line.
func CommandOutput(out string) string {
	if _, after, ok := strings.Cut(out, "\nOutput:\n"); ok {
		return after
	}
	if after, ok := strings.CutPrefix(out, "Output:\n"); ok {
		return after
	}
	return out
}

// Step is one answer of a rule.
type Step struct {
	// Text is the assistant message streamed (before any calls).
	Text string
	// TextFrom, when set, computes Text from the request.
	TextFrom func(*Request) string
	Calls    []Call
	// Status, when non-zero, answers with this HTTP status and an
	// OpenAI-style error body instead of a stream. codex retries 5xx and
	// 429 answers (request_max_retries, 4 by default).
	Status int
	// Delay holds the answer this long after response.created, so that
	// codex shows its busy state.
	Delay time.Duration
	// Gate, when set, holds the answer after response.created until it
	// is closed (or the client gives up, or the server closes).
	Gate <-chan struct{}
}

// Rule is a script for the requests that Match selects.
type Rule struct {
	Name  string
	Match Matcher
	// Steps are indexed by the request's step (0 for a user's message,
	// n after the calls of step n-1 came back); past the end, the last
	// step repeats.
	Steps []Step
	// Times, when > 0, is how many requests the rule answers before it is
	// spent.
	Times int
	// AnyKind makes the rule answer title and other side requests too;
	// by default rules answer only KindTurn requests.
	AnyKind bool
}

// Server is the fake Responses API server. It listens on 127.0.0.1 from
// New until Close.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	rules    []*rule
	requests []*Request
	unknown  []string
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
		panic(fmt.Sprintf("fakeresponses: listen: %v", err))
	}
	s := &Server{ln: ln, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/responses", s.responses)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("/", func(w http.ResponseWriter, hr *http.Request) {
		s.mu.Lock()
		s.unknown = append(s.unknown, hr.Method+" "+hr.URL.Path)
		s.mu.Unlock()
		http.NotFound(w, hr)
	})
	s.srv = &http.Server{Handler: s.track(mux), ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.srv.Serve(ln)
	}()
	return s
}

// track counts the running handlers so that Close can wait for them.
func (s *Server) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			http.Error(w, "fakeresponses: closed", http.StatusServiceUnavailable)
			return
		}
		s.wg.Add(1)
		s.mu.Unlock()
		defer s.wg.Done()
		h.ServeHTTP(w, hr)
	})
}

// URL is the server's base URL, http://127.0.0.1:PORT, without /v1: a
// codex provider's base_url is URL()+"/v1" (PrepareHome appends it).
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the server: it releases held answers, closes every
// connection and returns when all its goroutines have ended.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	close(s.done)
	_ = s.srv.Close()
	s.wg.Wait()
}

// On adds a rule; it is tried before every rule added earlier.
func (s *Server) On(r Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &rule{Rule: r})
}

// Requests returns a copy of the recorded /v1/responses requests, oldest
// first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = *r
	}
	return out
}

// UserTurns returns what the user typed, one entry per user turn of the
// sessions' own conversations (KindTurn requests at step 0), oldest
// first. Title requests and the follow-ups after tool calls are left out.
func (s *Server) UserTurns() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.requests {
		if r.Kind == KindTurn && r.step() == 0 {
			out = append(out, r.User)
		}
	}
	return out
}

// Unknown returns the requests to paths the server does not serve, as
// "METHOD /path", oldest first; they were answered 404.
func (s *Server) Unknown() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.unknown...)
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

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","owned_by":"fake"}]}`, Model)
}

// wire types of the Responses API request.
type wireRequest struct {
	Model          string     `json:"model"`
	Input          []wireItem `json:"input"`
	Tools          []wireTool `json:"tools"`
	PromptCacheKey string     `json:"prompt_cache_key"`
	Text           struct {
		Format struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"format"`
	} `json:"text"`
}

type wireTool struct {
	Type  string     `json:"type"`
	Name  string     `json:"name"`
	Tools []wireTool `json:"tools"`
}

type wireItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
}

func toolNames(ts []wireTool, prefix string) []string {
	var out []string
	for _, t := range ts {
		name := t.Name
		if name == "" {
			name = t.Type
		}
		if t.Type == "namespace" {
			out = append(out, toolNames(t.Tools, prefix+name+".")...)
			continue
		}
		out = append(out, prefix+name)
	}
	return out
}

// parse reads a request body and codex's headers into a Request.
func parse(body []byte, h http.Header) (*Request, error) {
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		return nil, err
	}
	req := &Request{Model: wr.Model, Body: body, Step: -1, At: time.Now(), Tools: toolNames(wr.Tools, "")}
	for _, wi := range wr.Input {
		it := Item{Type: wi.Type, Role: wi.Role, Name: wi.Name, Namespace: wi.Namespace, CallID: wi.CallID}
		switch {
		case wi.Type == "message":
			it.Text = fakewire.Text(wi.Content)
		case strings.HasSuffix(wi.Type, "_call_output"):
			it.Text = fakewire.Text(wi.Output)
		case wi.Arguments != "":
			it.Text = wi.Arguments
		default:
			it.Text = wi.Input
		}
		req.Input = append(req.Input, it)
	}
	if i := req.lastUser(); i >= 0 {
		req.User = strings.TrimSpace(req.Input[i].Text)
	}
	if wr.Text.Format.Type == "json_schema" {
		req.Schema = wr.Text.Format.Name
		if req.Schema == "" {
			req.Schema = "json_schema"
		}
	}
	req.SessionID = h.Get("Session-Id")
	if req.SessionID == "" {
		req.SessionID = wr.PromptCacheKey
	}
	var meta struct {
		ThreadSource string `json:"thread_source"`
	}
	if m := h.Get("X-Codex-Turn-Metadata"); m != "" && json.Unmarshal([]byte(m), &meta) == nil {
		req.Source = meta.ThreadSource
	}
	switch {
	case req.Source == "thread_title" || (req.Schema != "" && strings.Contains(string(body), `"title"`) && len(req.Tools) == 0):
		req.Kind = KindTitle
	case req.Schema != "" || (req.Source != "" && req.Source != "user"):
		req.Kind = KindOther
	default:
		req.Kind = KindTurn
	}
	return req, nil
}

func (s *Server) responses(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(io.LimitReader(hr.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, err := parse(body, hr.Header)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}

	s.mu.Lock()
	var step Step
	switch req.Kind {
	case KindTitle:
		step.Text = `{"title":"` + TitleText + `"}`
	case KindOther:
		step.Text = "{}"
	default:
		step.Text = "echo: " + req.User
	}
	for i := len(s.rules) - 1; i >= 0; i-- {
		r := s.rules[i]
		if r.Times > 0 && r.used >= r.Times {
			continue
		}
		if req.Kind != KindTurn && !r.AnyKind {
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
	seq := s.seq
	req.Status = http.StatusOK
	if step.Status != 0 {
		req.Status = step.Status
	}
	s.requests = append(s.requests, req)
	s.mu.Unlock()

	if step.Status != 0 {
		if !fakewire.Hold(hr.Context(), s.done, step.Delay, step.Gate) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(step.Status)
		fmt.Fprintf(w, `{"error":{"message":"fakeresponses: scripted error %d","type":"invalid_request_error","code":"scripted"}}`, step.Status)
		return
	}
	txt := step.Text
	if step.TextFrom != nil {
		txt = step.TextFrom(req)
	}
	s.stream(w, hr, seq, req, step, txt)
}

// stream answers with the Responses API's server-sent events: one
// assistant message with txt (when not empty), then one function_call
// item per call, then response.completed with usage.
func (s *Server) stream(w http.ResponseWriter, hr *http.Request, seq int, req *Request, step Step, txt string) {
	st := fakewire.Open(w)
	n := 0
	send := func(ev map[string]any) {
		ev["sequence_number"] = n
		n++
		st.Event(ev["type"].(string), ev)
	}
	respID := fmt.Sprintf("resp_fake_%d", seq)
	response := func(status string, output []any) map[string]any {
		r := map[string]any{"id": respID, "object": "response", "created_at": req.At.Unix(), "status": status, "model": Model, "output": output}
		if status == "completed" {
			r["usage"] = map[string]any{
				"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
				"total_tokens": 15,
			}
		}
		return r
	}
	send(map[string]any{"type": "response.created", "response": response("in_progress", []any{})})
	if !fakewire.Hold(hr.Context(), s.done, step.Delay, step.Gate) {
		return
	}

	var output []any
	if txt != "" {
		idx := len(output)
		msgID := fmt.Sprintf("msg_fake_%d", seq)
		part := func(t string) map[string]any {
			return map[string]any{"type": "output_text", "text": t, "annotations": []any{}}
		}
		item := func(status string, content []any) map[string]any {
			return map[string]any{"type": "message", "id": msgID, "status": status, "role": "assistant", "content": content}
		}
		send(map[string]any{"type": "response.output_item.added", "output_index": idx, "item": item("in_progress", []any{})})
		send(map[string]any{"type": "response.content_part.added", "item_id": msgID, "output_index": idx, "content_index": 0, "part": part("")})
		for _, d := range chunks(txt) {
			send(map[string]any{"type": "response.output_text.delta", "item_id": msgID, "output_index": idx, "content_index": 0, "delta": d})
		}
		send(map[string]any{"type": "response.output_text.done", "item_id": msgID, "output_index": idx, "content_index": 0, "text": txt})
		send(map[string]any{"type": "response.content_part.done", "item_id": msgID, "output_index": idx, "content_index": 0, "part": part(txt)})
		done := item("completed", []any{part(txt)})
		send(map[string]any{"type": "response.output_item.done", "output_index": idx, "item": done})
		output = append(output, done)
	}
	for i, c := range step.Calls {
		idx := len(output)
		args := c.Args
		if c.ArgsFrom != nil {
			args = c.ArgsFrom(req)
		}
		if args == nil {
			args = map[string]any{}
		}
		ab, _ := json.Marshal(args)
		callID := callIDFor(req.step(), seq, i)
		item := func(status, a string) map[string]any {
			it := map[string]any{"type": "function_call", "id": "fc_" + callID, "status": status, "name": c.Name, "call_id": callID, "arguments": a}
			if c.Namespace != "" {
				it["namespace"] = c.Namespace
			}
			return it
		}
		send(map[string]any{"type": "response.output_item.added", "output_index": idx, "item": item("in_progress", "")})
		send(map[string]any{"type": "response.function_call_arguments.delta", "item_id": "fc_" + callID, "output_index": idx, "delta": string(ab)})
		send(map[string]any{"type": "response.function_call_arguments.done", "item_id": "fc_" + callID, "output_index": idx, "arguments": string(ab)})
		done := item("completed", string(ab))
		send(map[string]any{"type": "response.output_item.done", "output_index": idx, "item": done})
		output = append(output, done)
	}
	send(map[string]any{"type": "response.completed", "response": response("completed", output)})
}

// chunks splits txt into a few deltas, at spaces, as a model streams.
func chunks(txt string) []string {
	var out []string
	for len(txt) > 0 {
		i := strings.IndexByte(txt[min(len(txt)-1, 8):], ' ')
		if i < 0 {
			out = append(out, txt)
			break
		}
		i += min(len(txt)-1, 8) + 1
		out = append(out, txt[:i])
		txt = txt[i:]
	}
	return out
}

// callIDFor names the i-th call of an answer at step: the step can be read
// back from the id when codex sends the call in a later request.
func callIDFor(step, seq, i int) string {
	return fmt.Sprintf("call_fr_s%d_%d_%d", step, seq, i)
}

func stepOf(callID string) (int, bool) {
	rest, ok := strings.CutPrefix(callID, "call_fr_s")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, "_")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(num)
	return n, err == nil
}

// PrepareHome writes home/.codex/config.toml so that codex runs against
// the fake at baseURL (Server.URL(); "/v1" is appended unless present)
// with no question at start. trusted are the project directories codex
// should trust without asking (the directories the test starts codex in).
//
// A test must run codex with HOME=home (or CODEX_HOME=home/.codex) and
// FAKE_API_KEY set to any non-empty value.
func PrepareHome(home, baseURL string, trusted ...string) error {
	base := strings.TrimRight(baseURL, "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	dir := filepath.Join(home, ".codex")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "model = %q\n", Model)
	b.WriteString(`model_provider = "fake"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.fake]
name = "Fake"
`)
	fmt.Fprintf(&b, "base_url = %q\n", base)
	fmt.Fprintf(&b, "env_key = %q\n", EnvKey)
	b.WriteString(`wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[tui]
screen_reader_detection_done = true
`)
	dirs := append([]string(nil), trusted...)
	sort.Strings(dirs)
	for _, t := range dirs {
		fmt.Fprintf(&b, "\n[projects.%q]\ntrust_level = \"trusted\"\n", t)
	}
	return os.WriteFile(filepath.Join(dir, "config.toml"), []byte(b.String()), 0o644)
}
