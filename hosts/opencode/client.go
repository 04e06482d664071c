package opencode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/internal/retry"
	"github.com/thatch-run/thatch/messages"
)

// Defaults for Options fields left zero.
const (
	DefaultUsername    = "opencode"
	DefaultTimeout     = 10 * time.Second
	DefaultLongTimeout = 5 * time.Minute
	DefaultMaxAttempts = 4
	DefaultRetryBase   = 100 * time.Millisecond
	DefaultRetryMax    = 2 * time.Second
)

// API surfaces that Detect reports.
const (
	APIv1 = "v1"
	APIv2 = "v2"
)

var (
	// ErrInvalidOptions is returned by New; the message lists every problem.
	ErrInvalidOptions = errors.New("opencode: invalid options")
	// ErrNotFound matches an *HTTPError with status 404.
	ErrNotFound = errors.New("opencode: not found")
	// ErrUnauthorized matches an *HTTPError with status 401 or 403: the
	// server wants a password, or a different one.
	ErrUnauthorized = errors.New("opencode: unauthorized")
	// ErrBadRequest matches an *HTTPError with status 400: the server did
	// not accept the request's shape; retrying cannot help.
	ErrBadRequest = errors.New("opencode: bad request")
	// ErrServer matches an *HTTPError with a 5xx status. Idempotent calls
	// have already been retried when a caller sees it.
	ErrServer = errors.New("opencode: server error")
	// ErrUnexpectedStatus matches an *HTTPError with any other status.
	ErrUnexpectedStatus = errors.New("opencode: unexpected status")
	// ErrDecode is returned when a response body is not the JSON the
	// route documents.
	ErrDecode = errors.New("opencode: cannot decode response")
	// ErrRejected is returned when a route that answers with a boolean
	// answers false.
	ErrRejected = errors.New("opencode: request rejected")
	// ErrNotEventStream is returned by Subscribe when /event answers with
	// something other than text/event-stream (for example the web app's
	// HTML, which opencode serves for unknown routes).
	ErrNotEventStream = errors.New("opencode: not an event stream")
	// ErrStreamEnded is returned by Subscribe when the server closes the
	// stream. The caller reconnects and reconciles.
	ErrStreamEnded = errors.New("opencode: event stream ended")
)

// maxBody bounds a JSON response; a session's messages can be large.
const maxBody = 64 << 20

// HTTPError is a response with a status outside 2xx. It matches one of
// ErrNotFound, ErrUnauthorized, ErrBadRequest, ErrServer or
// ErrUnexpectedStatus with errors.Is.
type HTTPError struct {
	Method     string
	Path       string
	StatusCode int
	// Body is the start of the response body (at most 512 bytes), which
	// holds opencode's error name and message.
	Body string
}

func (e *HTTPError) Error() string {
	// do wraps it with "opencode: METHOD PATH", so it does not repeat them.
	s := fmt.Sprintf("status %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Body != "" {
		s += ": " + e.Body
	}
	return s
}

// Unwrap gives the sentinel for the status class.
func (e *HTTPError) Unwrap() error {
	switch {
	case e.StatusCode == http.StatusNotFound:
		return ErrNotFound
	case e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden:
		return ErrUnauthorized
	case e.StatusCode == http.StatusBadRequest:
		return ErrBadRequest
	case e.StatusCode >= 500:
		return ErrServer
	default:
		return ErrUnexpectedStatus
	}
}

// Options configures a Client. Only BaseURL is required.
type Options struct {
	// BaseURL is the server's address, e.g. "http://127.0.0.1:4096". A
	// path prefix is kept. Credentials written into the URL are moved to
	// Username and Password (unless those are set) and never sent in it.
	BaseURL string
	// Host names this server in the messages the client decodes (the
	// Host field). Default: the host:port of BaseURL.
	Host string
	// Directory is sent as the "directory" query parameter on every route
	// that takes one; opencode uses it to pick the project instance.
	// Default: empty, so the server uses its own working directory.
	Directory string
	// Username for HTTP Basic auth. Default: "opencode", the server's
	// default user.
	Username string
	// Password enables HTTP Basic auth when set (OPENCODE_SERVER_PASSWORD
	// on the server). It is redacted from every error and log line.
	Password string
	// Timeout bounds each call, retries included, and the wait for the
	// /event response headers. Default: 10 s.
	Timeout time.Duration
	// LongTimeout bounds Summarize, which runs a model turn before it
	// answers. Default: 5 min.
	LongTimeout time.Duration
	// MaxAttempts bounds the tries of an idempotent call (GET, DELETE,
	// toast) on network errors and 5xx. Other calls are tried once.
	// Default: 4.
	MaxAttempts int
	// RetryBase and RetryMax shape the exponential backoff between tries
	// (each wait is jittered within its upper half). Defaults: 100 ms, 2 s.
	RetryBase, RetryMax time.Duration
	// MaxLine bounds one line and one frame of the event stream.
	// Default: DefaultMaxLine.
	MaxLine int
	// Logger receives debug lines for calls and warnings for retries.
	// Default: a null logger.
	Logger hclog.Logger
	// HTTPClient sends the requests. Its Timeout should be zero, or the
	// event stream will be cut after it. Default: a client of its own
	// with a transport cloned from http.DefaultTransport.
	HTTPClient *http.Client
}

// Client calls one opencode server's v1 HTTP API. It is safe for
// concurrent use.
type Client struct {
	base        string // scheme://host[:port][/prefix], no trailing slash
	host        string
	directory   string
	username    string
	password    string
	timeout     time.Duration
	longTimeout time.Duration
	maxAttempts int
	retryBase   time.Duration
	retryMax    time.Duration
	maxLine     int
	log         hclog.Logger
	hc          *http.Client
}

// New validates opts and returns a Client. It reports every problem with
// opts at once, wrapped in ErrInvalidOptions.
func New(opts Options) (*Client, error) {
	var problems []string
	c := &Client{
		host:        opts.Host,
		directory:   opts.Directory,
		username:    opts.Username,
		password:    opts.Password,
		timeout:     opts.Timeout,
		longTimeout: opts.LongTimeout,
		maxAttempts: opts.MaxAttempts,
		retryBase:   opts.RetryBase,
		retryMax:    opts.RetryMax,
		maxLine:     opts.MaxLine,
		log:         opts.Logger,
		hc:          opts.HTTPClient,
	}
	problems = append(problems, c.setBase(opts.BaseURL)...)
	if c.username == "" {
		c.username = DefaultUsername
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"Timeout", &c.timeout, DefaultTimeout},
		{"LongTimeout", &c.longTimeout, DefaultLongTimeout},
		{"RetryBase", &c.retryBase, DefaultRetryBase},
		{"RetryMax", &c.retryMax, DefaultRetryMax},
	} {
		switch {
		case *d.v < 0:
			problems = append(problems, d.name+" must not be negative")
		case *d.v == 0:
			*d.v = d.def
		}
	}
	switch {
	case c.maxAttempts < 0:
		problems = append(problems, "MaxAttempts must not be negative")
	case c.maxAttempts == 0:
		c.maxAttempts = DefaultMaxAttempts
	}
	if c.retryMax < c.retryBase {
		problems = append(problems, "RetryMax must not be less than RetryBase")
	}
	if c.maxLine < 0 {
		problems = append(problems, "MaxLine must not be negative")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalidOptions, strings.Join(problems, "; "))
	}
	if c.log == nil {
		c.log = hclog.NewNullLogger()
	}
	if c.hc == nil {
		c.hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	return c, nil
}

// setBase checks the base URL and takes from it what the options leave
// out (credentials, the host name); it returns the problems it found.
func (c *Client) setBase(raw string) []string {
	var problems []string
	if raw == "" {
		problems = append(problems, "BaseURL is required")
	} else if u, err := url.Parse(raw); err != nil {
		// The parse error quotes the URL, which may hold a password.
		problems = append(problems, "BaseURL is not a valid URL")
	} else {
		if u.Scheme != "http" && u.Scheme != "https" {
			problems = append(problems, "BaseURL scheme must be http or https")
		}
		if u.Host == "" {
			problems = append(problems, "BaseURL has no host")
		}
		if u.User != nil {
			if c.username == "" {
				c.username = u.User.Username()
			}
			if p, ok := u.User.Password(); ok && c.password == "" {
				c.password = p
			}
		}
		if c.host == "" {
			c.host = u.Host
		}
		clean := url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimRight(u.Path, "/")}
		c.base = clean.String()
	}
	return problems
}

// Host is the name the client stamps into decoded messages.
func (c *Client) Host() string { return c.host }

// WithDirectory returns a client that sends dir as the "directory" query
// parameter, for sessions that belong to another project instance than the
// server's own. It shares the HTTP client and all other settings.
func (c *Client) WithDirectory(dir string) *Client {
	cp := *c
	cp.directory = dir
	return &cp
}

// CloseIdleConnections closes the kept-alive connections of the client's
// transport, so that nothing lingers after the owner stops.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// Session is the part of opencode's Session that thatch uses.
type Session struct {
	ID          string      `json:"id"`
	Slug        string      `json:"slug,omitempty"`
	ProjectID   string      `json:"projectID,omitempty"`
	WorkspaceID string      `json:"workspaceID,omitempty"`
	Directory   string      `json:"directory,omitempty"`
	Path        string      `json:"path,omitempty"`
	ParentID    string      `json:"parentID,omitempty"`
	Title       string      `json:"title,omitempty"`
	Version     string      `json:"version,omitempty"`
	Time        SessionTime `json:"time"`
}

// SessionTime holds a session's times in Unix milliseconds.
type SessionTime struct {
	Created    int64   `json:"created"`
	Updated    int64   `json:"updated"`
	Compacting int64   `json:"compacting,omitempty"`
	Archived   float64 `json:"archived,omitempty"`
}

// Status types in SessionStatus.Type.
const (
	StatusIdle  = "idle"
	StatusBusy  = "busy"
	StatusRetry = "retry"
)

// SessionStatus is one entry of GET /session/status. Attempt, Message and
// Next are set for "retry" only.
type SessionStatus struct {
	Type    string `json:"type"`
	Attempt int    `json:"attempt,omitempty"`
	Message string `json:"message,omitempty"`
	Next    int64  `json:"next,omitempty"`
}

// Project is the part of opencode's Project that thatch uses.
type Project struct {
	ID        string   `json:"id"`
	Worktree  string   `json:"worktree"`
	VCS       string   `json:"vcs,omitempty"`
	Name      string   `json:"name,omitempty"`
	Sandboxes []string `json:"sandboxes"`
	Time      struct {
		Created     int64 `json:"created"`
		Updated     int64 `json:"updated"`
		Initialized int64 `json:"initialized,omitempty"`
	} `json:"time"`
}

// Health is GET /global/health.
type Health struct {
	Healthy bool   `json:"healthy"`
	Version string `json:"version"`
}

// Message is one entry of GET /session/{id}/message.
type Message struct {
	Info  MessageInfo `json:"info"`
	Parts []Part      `json:"parts"`
}

// MessageInfo is the part of a user or assistant message's info that
// thatch uses. Error is set on an assistant message that failed.
type MessageInfo struct {
	ID        string          `json:"id"`
	SessionID string          `json:"sessionID"`
	Role      string          `json:"role"`
	ParentID  string          `json:"parentID,omitempty"`
	Finish    string          `json:"finish,omitempty"`
	Error     json.RawMessage `json:"error,omitempty"`
}

// Part is the part of a message part that thatch uses. Text is set for
// text and reasoning parts; Tool, CallID and State for tool parts.
type Part struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Synthetic bool            `json:"synthetic,omitempty"`
	Ignored   bool            `json:"ignored,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	CallID    string          `json:"callID,omitempty"`
	State     json.RawMessage `json:"state,omitempty"`
}

// FinalAssistantText returns the text parts of the last assistant message
// in msgs, joined with "\n", or "" when there is no assistant message.
// Ignored parts are left out; synthetic ones are kept.
func FinalAssistantText(msgs []Message) string { return LastText(msgs, "assistant") }

// LastText joins, one per line, the text parts (ignored ones left out) of
// the last message of role in msgs; "" when there is none.
func LastText(msgs []Message, role string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Info.Role != role {
			continue
		}
		var texts []string
		for _, p := range msgs[i].Parts {
			if p.Type == "text" && !p.Ignored {
				texts = append(texts, p.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	return ""
}

// ToHostSessions turns a session list and the status map into the view a
// reconcile message carries. A session is busy when the map lists it as
// busy or retrying; idle sessions are absent from the map.
func ToHostSessions(sessions []Session, statuses map[string]SessionStatus) []messages.HostSession {
	out := make([]messages.HostSession, 0, len(sessions))
	for _, s := range sessions {
		st, ok := statuses[s.ID]
		out = append(out, messages.HostSession{
			SessionID: s.ID,
			ParentID:  s.ParentID,
			Title:     s.Title,
			Directory: s.Directory,
			Busy:      ok && st.Type != StatusIdle,
		})
	}
	return out
}

// ListSessions returns the sessions of the client's project instance
// (GET /session), most recently updated first.
func (c *Client) ListSessions(ctx context.Context) ([]Session, error) {
	var out []Session
	err := c.do(ctx, call{method: http.MethodGet, path: "/session", idempotent: true}, &out)
	return out, err
}

// SessionStatus returns the status of every session that is not idle
// (GET /session/status).
func (c *Client) SessionStatus(ctx context.Context) (map[string]SessionStatus, error) {
	out := map[string]SessionStatus{}
	err := c.do(ctx, call{method: http.MethodGet, path: "/session/status", idempotent: true}, &out)
	return out, err
}

// CreateSession creates a session (POST /session); parentID and title may
// be empty. It is tried once: a repeat could create a second session, so
// after a failure the caller checks with FindChild first.
func (c *Client) CreateSession(ctx context.Context, parentID, title string) (Session, error) {
	body := struct {
		ParentID string `json:"parentID,omitempty"`
		Title    string `json:"title,omitempty"`
	}{parentID, title}
	var out Session
	err := c.do(ctx, call{method: http.MethodPost, path: "/session", body: body}, &out)
	if err == nil && out.ID == "" {
		err = fmt.Errorf("%w: POST /session: created session has no id", ErrDecode)
	}
	return out, err
}

// Children returns the sessions whose parent is parentID
// (GET /session/{id}/children).
func (c *Client) Children(ctx context.Context, parentID string) ([]Session, error) {
	var out []Session
	err := c.do(ctx, call{method: http.MethodGet, path: "/session/" + url.PathEscape(parentID) + "/children", idempotent: true}, &out)
	return out, err
}

// FindChild looks for a child of parentID titled title, so that a child
// created before a crash is reused rather than created again. When several
// match, the oldest wins, so repeated calls agree. ok is false when none
// matches.
func (c *Client) FindChild(ctx context.Context, parentID, title string) (child Session, ok bool, err error) {
	children, err := c.Children(ctx, parentID)
	if err != nil {
		return Session{}, false, err
	}
	child, ok = oldest(children, func(s Session) bool { return s.Title == title })
	return child, ok, nil
}

// oldest picks the oldest session in list that match accepts (the lowest
// id among equally old ones), so that repeated lookups agree. ok is false
// when none matches.
func oldest(list []Session, match func(Session) bool) (child Session, ok bool) {
	for _, s := range list {
		if !match(s) {
			continue
		}
		if !ok || s.Time.Created < child.Time.Created || s.Time.Created == child.Time.Created && s.ID < child.ID {
			child, ok = s, true
		}
	}
	return child, ok
}

type textPart struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	Synthetic bool   `json:"synthetic,omitempty"`
}

// PromptNoReply adds text to the session as a synthetic part without
// starting a turn (POST /session/{id}/message with noReply). It is tried
// once: a repeat would add the text twice.
func (c *Client) PromptNoReply(ctx context.Context, sessionID, text string) error {
	body := struct {
		NoReply bool       `json:"noReply"`
		Parts   []textPart `json:"parts"`
	}{true, []textPart{{Type: "text", Text: text, Synthetic: true}}}
	return c.do(ctx, call{method: http.MethodPost, path: "/session/" + url.PathEscape(sessionID) + "/message", body: body}, nil)
}

// PromptAsync starts a turn with text and returns once the server has
// accepted it (POST /session/{id}/prompt_async, 204). It is tried once.
func (c *Client) PromptAsync(ctx context.Context, sessionID, text string) error {
	body := struct {
		Parts []textPart `json:"parts"`
	}{[]textPart{{Type: "text", Text: text}}}
	return c.do(ctx, call{method: http.MethodPost, path: "/session/" + url.PathEscape(sessionID) + "/prompt_async", body: body}, nil)
}

// DeleteSession deletes a session and its children (DELETE /session/{id}).
// A session that is already gone counts as deleted, so a repeat after a
// crash succeeds.
func (c *Client) DeleteSession(ctx context.Context, sessionID string) error {
	err := c.doBool(ctx, call{method: http.MethodDelete, path: "/session/" + url.PathEscape(sessionID), idempotent: true})
	if errors.Is(err, ErrNotFound) {
		c.log.Debug("session already deleted", "session", sessionID)
		return nil
	}
	return err
}

// Messages returns a session's messages with their parts
// (GET /session/{id}/message), oldest first.
func (c *Client) Messages(ctx context.Context, sessionID string) ([]Message, error) {
	var out []Message
	err := c.do(ctx, call{method: http.MethodGet, path: "/session/" + url.PathEscape(sessionID) + "/message", idempotent: true}, &out)
	return out, err
}

// ShowToast shows a toast in the server's TUI (POST /tui/show-toast).
// variant is info, success, warning or error; title may be empty. A toast
// shown twice is harmless, so it is retried like a GET.
func (c *Client) ShowToast(ctx context.Context, title, message, variant string) error {
	body := struct {
		Title   string `json:"title,omitempty"`
		Message string `json:"message"`
		Variant string `json:"variant"`
	}{title, message, variant}
	return c.doBool(ctx, call{method: http.MethodPost, path: "/tui/show-toast", body: body, idempotent: true})
}

// ExecuteTUICommand runs a TUI command such as "session_compact"
// (POST /tui/execute-command). It is tried once.
func (c *Client) ExecuteTUICommand(ctx context.Context, command string) error {
	body := struct {
		Command string `json:"command"`
	}{command}
	return c.doBool(ctx, call{method: http.MethodPost, path: "/tui/execute-command", body: body})
}

// PublishTUICommand publishes a tui.command.execute event with command,
// such as "app.exit", on the server's bus (POST /tui/publish). It is tried
// once.
func (c *Client) PublishTUICommand(ctx context.Context, command string) error {
	type props struct {
		Command string `json:"command"`
	}
	body := struct {
		Type       string `json:"type"`
		Properties props  `json:"properties"`
	}{"tui.command.execute", props{command}}
	return c.doBool(ctx, call{method: http.MethodPost, path: "/tui/publish", body: body})
}

// Summarize compacts a session with the given model
// (POST /session/{id}/summarize). The server answers when the summary is
// written, so the call is bounded by LongTimeout. It is tried once.
func (c *Client) Summarize(ctx context.Context, sessionID, providerID, modelID string) error {
	body := struct {
		ProviderID string `json:"providerID"`
		ModelID    string `json:"modelID"`
	}{providerID, modelID}
	return c.doBool(ctx, call{method: http.MethodPost, path: "/session/" + url.PathEscape(sessionID) + "/summarize", body: body, long: true})
}

// MoveSession moves a session to another directory
// (POST /experimental/control-plane/move-session, 204), which heals a
// session whose worktree was deleted. It is tried once.
func (c *Client) MoveSession(ctx context.Context, sessionID, directory string) error {
	type dest struct {
		Directory string `json:"directory"`
	}
	body := struct {
		SessionID   string `json:"sessionID"`
		Destination dest   `json:"destination"`
	}{sessionID, dest{directory}}
	return c.do(ctx, call{method: http.MethodPost, path: "/experimental/control-plane/move-session", body: body, noDirectory: true}, nil)
}

// CurrentProject returns the project of the client's instance
// (GET /project/current).
func (c *Client) CurrentProject(ctx context.Context) (Project, error) {
	var out Project
	err := c.do(ctx, call{method: http.MethodGet, path: "/project/current", idempotent: true}, &out)
	return out, err
}

// Health returns the server's health and version (GET /global/health).
func (c *Client) Health(ctx context.Context) (Health, error) {
	var out Health
	err := c.do(ctx, call{method: http.MethodGet, path: "/global/health", idempotent: true, noDirectory: true}, &out)
	return out, err
}

// Detect reports which API surface the server offers: APIv2 when
// GET /api/health answers {"healthy":true}, APIv1 when it answers 404 or
// anything that is not that JSON (a v1 server hands unknown routes to its
// web app).
func (c *Client) Detect(ctx context.Context) (string, error) {
	var raw rawBody
	err := c.do(ctx, call{method: http.MethodGet, path: "/api/health", idempotent: true, noDirectory: true}, &raw)
	if errors.Is(err, ErrNotFound) {
		return APIv1, nil
	}
	if err != nil {
		return "", err
	}
	var h struct {
		Healthy bool `json:"healthy"`
	}
	if json.Unmarshal(raw.data, &h) == nil && h.Healthy && strings.HasPrefix(raw.contentType, "application/json") {
		return APIv2, nil
	}
	return APIv1, nil
}

// Subscribe reads GET /event and calls handler, on the calling goroutine
// and in stream order, with each message the Decoder produces (frames
// thatch does not follow are skipped). It returns when ctx ends (with
// ctx's error) or the stream breaks: ErrStreamEnded when the server closes
// it, a wrapped ErrMalformedEvent for a frame it cannot read, or the read
// error. The stream has no replay: after a reconnect the caller reconciles.
func (c *Client) Subscribe(ctx context.Context, handler func(msg any)) error {
	return c.subscribe(ctx, nil, handler)
}

// subscribe is Subscribe with onFrame, called for every frame read,
// followed or not, so a watchdog can see that the stream is alive.
func (c *Client) subscribe(ctx context.Context, onFrame func(), handler func(msg any)) error {
	u := c.url("/event", true, nil)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, u, nil)
	if err != nil {
		return c.redactErr(fmt.Errorf("opencode: GET /event: %w", err))
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	c.auth(req)
	// Bound only the wait for the response headers; the body is endless.
	headerTimer := time.AfterFunc(c.timeout, cancel)
	resp, err := c.hc.Do(req)
	if !headerTimer.Stop() {
		if err == nil {
			resp.Body.Close()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("opencode: GET /event: no response within %v: %w", c.timeout, context.DeadlineExceeded)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return c.redactErr(fmt.Errorf("opencode: GET /event: %w", err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return c.redactErr(fmt.Errorf("opencode: GET /event: %w", statusError(http.MethodGet, "/event", resp)))
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return fmt.Errorf("%w: GET /event answered with Content-Type %q", ErrNotEventStream, mt)
	}
	c.log.Debug("event stream open", "url", c.redact(u))
	dec := NewDecoder(c.host)
	rd := NewSSEReader(resp.Body, c.maxLine)
	for {
		frame, err := rd.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				return ErrStreamEnded
			}
			return c.redactErr(fmt.Errorf("opencode: reading /event: %w", err))
		}
		if onFrame != nil {
			onFrame()
		}
		if len(bytes.TrimSpace(frame)) == 0 {
			continue
		}
		msg, err := dec.Decode(frame)
		if err != nil {
			return fmt.Errorf("opencode: reading /event: %w", err)
		}
		if msg != nil {
			handler(msg)
		}
	}
}

// call describes one REST request.
type call struct {
	method string
	path   string // escaped
	body   any    // sent as JSON when non-nil
	// idempotent calls are retried on network errors and 5xx.
	idempotent bool
	// long calls are bounded by LongTimeout instead of Timeout.
	long bool
	// noDirectory leaves out the directory query parameter, for routes
	// that do not take it.
	noDirectory bool
	// query holds further query parameters (the v2 list's cursor and
	// limit); nil for none.
	query url.Values
}

// rawBody receives a response body as is, with its content type.
type rawBody struct {
	data        []byte
	contentType string
}

// doBool performs cl on a route that answers a JSON boolean.
func (c *Client) doBool(ctx context.Context, cl call) error {
	var ok bool
	if err := c.do(ctx, cl, &ok); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s %s answered false", ErrRejected, cl.method, cl.path)
	}
	return nil
}

// do performs cl within the call's timeout, retrying idempotent calls, and
// decodes a 2xx body into out (nil: the body is drained and dropped). Its
// errors are redacted.
func (c *Client) do(ctx context.Context, cl call, out any) error {
	timeout := c.timeout
	if cl.long {
		timeout = c.longTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body []byte
	if cl.body != nil {
		b, err := json.Marshal(cl.body)
		if err != nil {
			return fmt.Errorf("opencode: %s %s: encode body: %w", cl.method, cl.path, err)
		}
		body = b
	}
	attempts := 1
	if cl.idempotent {
		attempts = c.maxAttempts
	}
	for attempt := 1; ; attempt++ {
		retry, err := c.once(ctx, cl, body, out)
		if err == nil {
			return nil
		}
		if !retry || attempt >= attempts || ctx.Err() != nil {
			if attempt > 1 {
				err = fmt.Errorf("after %d attempts: %w", attempt, err)
			}
			return c.redactErr(fmt.Errorf("opencode: %s %s: %w", cl.method, cl.path, err))
		}
		delay := backoff(c.retryBase, c.retryMax, attempt)
		c.log.Warn("opencode call failed; retrying", "method", cl.method, "path", cl.path,
			"attempt", attempt, "delay", delay, "error", c.redact(err.Error()))
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return c.redactErr(fmt.Errorf("opencode: %s %s: after %d attempts: %w (last error: %v)", cl.method, cl.path, attempt, ctx.Err(), err))
		case <-t.C:
		}
	}
}

// once performs one try of cl. retry says whether another try may help:
// the request failed in transit or the server answered 5xx.
func (c *Client) once(ctx context.Context, cl call, body []byte, out any) (retry bool, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, c.url(cl.path, !cl.noDirectory, cl.query), rd)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.auth(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return ctx.Err() == nil, err
	}
	defer resp.Body.Close()
	c.log.Debug("opencode call", "method", cl.method, "path", cl.path, "status", resp.StatusCode)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode >= 500, statusError(cl.method, cl.path, resp)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return false, nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return ctx.Err() == nil, fmt.Errorf("read response: %w", err)
	}
	if len(data) > maxBody {
		return false, fmt.Errorf("%w: response larger than %d bytes", ErrDecode, maxBody)
	}
	if raw, ok := out.(*rawBody); ok {
		raw.data, raw.contentType = data, resp.Header.Get("Content-Type")
		return false, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return false, fmt.Errorf("%w: %v", ErrDecode, err)
	}
	return false, nil
}

// statusError builds the *HTTPError for resp, reading the start of its body.
func statusError(method, path string, resp *http.Response) *HTTPError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return &HTTPError{Method: method, Path: path, StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(b))}
}

// url joins the base, an escaped path, the query and, when withDir, the
// directory.
func (c *Client) url(path string, withDir bool, query url.Values) string {
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	if withDir && c.directory != "" {
		q.Set("directory", c.directory)
	}
	if len(q) == 0 {
		return c.base + path
	}
	return c.base + path + "?" + q.Encode()
}

func (c *Client) auth(req *http.Request) {
	if c.password != "" {
		req.SetBasicAuth(c.username, c.password)
	}
}

// redacted replaces the password wherever it appears in text.
const redacted = "[REDACTED]"

func (c *Client) redact(s string) string {
	if c.password == "" {
		return s
	}
	for _, p := range []string{c.password, url.QueryEscape(c.password), url.PathEscape(c.password)} {
		s = strings.ReplaceAll(s, p, redacted)
	}
	return s
}

// redactErr returns err with the password removed from its message. The
// result still matches err's chain with errors.Is and errors.As.
func (c *Client) redactErr(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if r := c.redact(msg); r != msg {
		return &redactedError{msg: r, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// backoff returns the wait before try attempt+1: base doubled per attempt,
// capped at max, then drawn from the upper half so that many clients that
// failed together do not come back together (retry.Backoff, the one
// backoff of thatch).
func backoff(base, max time.Duration, attempt int) time.Duration {
	return retry.Backoff{Base: base, Max: max}.Delay(attempt)
}
