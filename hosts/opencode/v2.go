package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// ErrNotInV2 is returned, wrapped, by V2Client calls whose result the caller
// needs when the v2 API has no way to do what was asked: no route for it,
// a route that says it is "not available yet" (503 ServiceUnavailableError),
// or a route the server does not have (it answers with its web app).
var ErrNotInV2 = errors.New("opencode: not available on the v2 API")

// v2PageSize is the limit sent with each GET /api/session page.
const v2PageSize = 100

// v2MaxPages bounds how many pages FindChild reads, so a server whose
// cursor never ends cannot keep it busy until the timeout.
const v2MaxPages = 50

// V2Client calls the /api/* (v2) surface of an opencode server, with the
// method set the daemon's executor uses on a v1 Client. What v2 cannot do
// degrades as each method's comment says: a call whose result the caller
// needs returns a wrapped ErrNotInV2, a fire-and-forget one is logged and
// returns nil. It never sends a request for a call it cannot map. It
// shares the retry, timeout, auth and redaction of the Client it wraps, and
// is safe for concurrent use.
//
// The v2 session store is not the v1 one (opencode 1.18.33): messages
// posted through v1 routes are not in /api/session/{id}/context and the
// other way round, so one session should be driven through one surface.
type V2Client struct {
	c *Client
}

// NewV2 validates opts as New does and returns a V2Client.
func NewV2(opts Options) (*V2Client, error) {
	c, err := New(opts)
	if err != nil {
		return nil, err
	}
	return c.V2(), nil
}

// V2 returns a V2Client that shares c's settings and connections, so that
// a host's v1 event stream and its v2 calls close together.
func (c *Client) V2() *V2Client { return &V2Client{c: c} }

// Host is the name the client stamps into decoded messages.
func (v *V2Client) Host() string {
	if v == nil || v.c == nil {
		return ""
	}
	return v.c.host
}

// CloseIdleConnections closes the kept-alive connections of the transport
// it shares with its Client.
func (v *V2Client) CloseIdleConnections() {
	if v != nil && v.c != nil {
		v.c.CloseIdleConnections()
	}
}

func (v *V2Client) logger() hclog.Logger {
	if v == nil || v.c == nil || v.c.log == nil {
		return hclog.NewNullLogger()
	}
	return v.c.log
}

// v2Location is LocationRef: where a session runs.
type v2Location struct {
	Directory   string `json:"directory"`
	WorkspaceID string `json:"workspaceID,omitempty"`
}

// v2Session is the part of SessionV2Info that maps to Session.
type v2Session struct {
	ID        string     `json:"id"`
	ParentID  string     `json:"parentID"`
	ProjectID string     `json:"projectID"`
	Title     string     `json:"title"`
	Subpath   string     `json:"subpath"`
	Location  v2Location `json:"location"`
	Time      struct {
		Created  float64 `json:"created"`
		Updated  float64 `json:"updated"`
		Archived float64 `json:"archived"`
	} `json:"time"`
}

func (s v2Session) session() Session {
	return Session{
		ID:          s.ID,
		ProjectID:   s.ProjectID,
		WorkspaceID: s.Location.WorkspaceID,
		Directory:   s.Location.Directory,
		Path:        s.Subpath,
		ParentID:    s.ParentID,
		Title:       s.Title,
		Time: SessionTime{
			Created:  int64(s.Time.Created),
			Updated:  int64(s.Time.Updated),
			Archived: s.Time.Archived,
		},
	}
}

// CreateSession creates a top-level session (POST /api/session) in the
// client's Directory, or the server's own when it is empty. The v2 body has
// no parentID and no title (opencode 1.18.33 silently drops both), so:
//   - with a parentID it sends nothing and returns a wrapped ErrNotInV2: a
//     session created without its parent would route as a new family, and
//     v2 cannot delete it again;
//   - a title is dropped (logged); the server names the session itself.
//
// It is tried once, like the v1 call.
func (v *V2Client) CreateSession(ctx context.Context, parentID, title string) (Session, error) {
	if parentID != "" {
		v.logger().Warn("cannot create a child session on the v2 API: it has no parentID", "parent", parentID, "title", title)
		return Session{}, fmt.Errorf("%w: POST /api/session cannot create a child of %s (no parentID in the v2 body)", ErrNotInV2, parentID)
	}
	if title != "" {
		v.logger().Debug("v2 API drops the session title", "title", title)
	}
	body := struct {
		Location *v2Location `json:"location,omitempty"`
	}{}
	if v != nil && v.c != nil && v.c.directory != "" {
		body.Location = &v2Location{Directory: v.c.directory}
	}
	var out v2Session
	err := v.do(ctx, call{method: http.MethodPost, path: "/api/session", body: body, noDirectory: true}, &out)
	if err != nil {
		return Session{}, err
	}
	if out.ID == "" {
		return Session{}, fmt.Errorf("%w: POST /api/session: created session has no id", ErrDecode)
	}
	return out.session(), nil
}

// ListSessions returns the sessions in the client's Directory (every
// session when it is empty), most recently updated first, reading every
// page of GET /api/session (at most v2MaxPages of v2PageSize).
func (v *V2Client) ListSessions(ctx context.Context) ([]Session, error) {
	var all []Session
	cursor := ""
	for page := 0; ; page++ {
		if page == v2MaxPages {
			v.logger().Warn("v2 session list cut short", "pages", page, "sessions", len(all))
			return all, nil
		}
		q := url.Values{"limit": {strconv.Itoa(v2PageSize)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		// GET /api/session takes directory as a filter.
		var out []v2Session
		var pg v2Page
		err := v.do(ctx, call{method: http.MethodGet, path: "/api/session", idempotent: true, query: q}, &out, &pg)
		if err != nil {
			return nil, err
		}
		for _, s := range out {
			all = append(all, s.session())
		}
		if len(out) == 0 || pg.Cursor.Next == "" {
			return all, nil
		}
		cursor = pg.Cursor.Next
	}
}

// FindChild looks for a session whose parent is parentID and whose title
// is title in the full session list (v2 has no children route), so that a
// child made before a crash (by a v1 client or by opencode itself) is
// reused. When several match, the oldest wins, as on v1.
func (v *V2Client) FindChild(ctx context.Context, parentID, title string) (Session, bool, error) {
	sessions, err := v.ListSessions(ctx)
	if err != nil {
		return Session{}, false, err
	}
	child, ok := oldest(sessions, func(s Session) bool { return s.ParentID == parentID && s.Title == title })
	return child, ok, nil
}

// PromptNoReply is a logged no-op that returns nil: v2 has no noReply
// prompt. The nearest thing, POST /api/session/{id}/prompt with
// "resume": false, admits a plain (not synthetic) user message that stays
// out of the context until the next turn starts, which is not the same
// contract. The executor already skips the start reminder on v2; a lost
// note is the documented degrade, not a failure of the caller.
func (v *V2Client) PromptNoReply(_ context.Context, sessionID, _ string) error {
	v.logger().Debug("noReply prompt dropped: the v2 API has none", "session", sessionID)
	return nil
}

// PromptAsync starts a turn with text (POST /api/session/{id}/prompt) and
// returns once the server has admitted the input. It is tried once.
func (v *V2Client) PromptAsync(ctx context.Context, sessionID, text string) error {
	type prompt struct {
		Text string `json:"text"`
	}
	body := struct {
		Prompt prompt `json:"prompt"`
	}{prompt{text}}
	return v.do(ctx, call{method: http.MethodPost, path: "/api/session/" + url.PathEscape(sessionID) + "/prompt", body: body, noDirectory: true}, nil)
}

// DeleteSession is a logged no-op that returns nil: v2 has no route to
// delete a session, and the executor only logs the outcome. The session
// stays on the server.
func (v *V2Client) DeleteSession(_ context.Context, sessionID string) error {
	v.logger().Warn("session not deleted: the v2 API has no delete route", "session", sessionID)
	return nil
}

// Messages returns the session's active context (GET
// /api/session/{id}/context: every message since the last compaction),
// oldest first, mapped to v1 Messages so that FinalAssistantText reads it:
//   - user: role "user", one text part;
//   - synthetic: role "user", one synthetic text part;
//   - assistant: role "assistant" with Finish and Error; its text,
//     reasoning and tool content become parts of those types (a tool's id is
//     its CallID, its name its Tool);
//   - compaction: role "assistant" with the summary as its text part, as v1
//     stores a compaction summary;
//   - shell: role "assistant" with one completed "bash" tool part, as v1
//     stores a shell command;
//   - system: role "system", one text part;
//   - agent-switched, model-switched and unknown types are left out.
func (v *V2Client) Messages(ctx context.Context, sessionID string) ([]Message, error) {
	var out []v2Message
	err := v.do(ctx, call{method: http.MethodGet, path: "/api/session/" + url.PathEscape(sessionID) + "/context", idempotent: true, noDirectory: true}, &out)
	if err != nil {
		return nil, err
	}
	msgs := make([]Message, 0, len(out))
	for _, m := range out {
		if msg, ok := m.message(sessionID); ok {
			msgs = append(msgs, msg)
		} else if !ignoredV2Types[m.Type] {
			v.logger().Debug("v2 message type not mapped", "session", sessionID, "type", m.Type)
		}
	}
	return msgs, nil
}

// Compact compacts the session (POST /api/session/{id}/compact, 204),
// bounded by LongTimeout because compaction runs a model turn. opencode
// 1.18.33 answers 503 "Session compact is not available yet"; that, like a
// missing route, returns a wrapped ErrNotInV2. It is tried once. It is not
// part of the executor's HostClient: the executor compacts through
// ExecuteTUICommand, which has no session to name here.
func (v *V2Client) Compact(ctx context.Context, sessionID string) error {
	return v.do(ctx, call{method: http.MethodPost, path: "/api/session/" + url.PathEscape(sessionID) + "/compact", long: true, noDirectory: true}, nil)
}

// ShowToast is a logged no-op that returns nil: v2 has no TUI routes, and a
// toast is a courtesy.
func (v *V2Client) ShowToast(_ context.Context, title, message, _ string) error {
	v.logger().Debug("toast not shown: the v2 API has no TUI routes", "title", title, "message", message)
	return nil
}

// ExecuteTUICommand is a logged no-op that returns nil: v2 has no TUI
// routes, and the command ("session_compact") names no session for Compact
// to use. The caller's effect is fire-and-forget.
func (v *V2Client) ExecuteTUICommand(_ context.Context, command string) error {
	v.logger().Warn("TUI command not run: the v2 API has no TUI routes", "command", command)
	return nil
}

// PublishTUICommand is a logged no-op that returns nil: v2 has no TUI
// routes, so "app.exit" cannot close the host. The caller's effect is
// fire-and-forget.
func (v *V2Client) PublishTUICommand(_ context.Context, command string) error {
	v.logger().Warn("TUI command not published: the v2 API has no TUI routes", "command", command)
	return nil
}

// v2Page is the cursor of a paged v2 answer.
type v2Page struct {
	Cursor struct {
		Next string `json:"next"`
	} `json:"cursor"`
}

// do performs cl and decodes the "data" member of the JSON answer into
// data (nil: any 2xx answer will do) and the whole answer into page (for
// the cursor), when given. A web-app page instead of JSON (a route the
// server lacks) and a 503 ServiceUnavailableError become ErrNotInV2.
func (v *V2Client) do(ctx context.Context, cl call, data any, page ...*v2Page) error {
	if v == nil || v.c == nil {
		return fmt.Errorf("%w: V2Client not built with NewV2 or Client.V2", ErrInvalidOptions)
	}
	var raw rawBody
	if err := v.c.do(ctx, cl, &raw); err != nil {
		var he *HTTPError
		if errors.As(err, &he) && he.StatusCode == http.StatusServiceUnavailable && strings.Contains(he.Body, "ServiceUnavailableError") {
			v.c.log.Warn("v2 route not available on this server", "method", cl.method, "path", cl.path)
			return fmt.Errorf("%w: %w", ErrNotInV2, err)
		}
		return err
	}
	if len(raw.data) > 0 {
		if mt, _, _ := mime.ParseMediaType(raw.contentType); mt != "application/json" {
			v.c.log.Warn("v2 route missing on this server", "method", cl.method, "path", cl.path, "content_type", mt)
			return fmt.Errorf("%w: %s %s answered with Content-Type %q, not JSON", ErrNotInV2, cl.method, cl.path, mt)
		}
	}
	if data == nil && len(page) == 0 {
		return nil
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw.data, &env); err != nil || len(env.Data) == 0 {
		return fmt.Errorf("%w: %s %s: no data member in the answer", ErrDecode, cl.method, cl.path)
	}
	if data != nil {
		if err := json.Unmarshal(env.Data, data); err != nil {
			return fmt.Errorf("%w: %s %s: %v", ErrDecode, cl.method, cl.path, err)
		}
	}
	for _, p := range page {
		if err := json.Unmarshal(raw.data, p); err != nil {
			return fmt.Errorf("%w: %s %s: cursor: %v", ErrDecode, cl.method, cl.path, err)
		}
	}
	return nil
}

// ignoredV2Types are context entries with nothing for a v1 Message: they
// record a switch, not conversation.
var ignoredV2Types = map[string]bool{"agent-switched": true, "model-switched": true}

// v2Message is the union of the SessionMessage variants' fields that map to
// a Message.
type v2Message struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	SessionID string          `json:"sessionID"`
	Text      string          `json:"text"`
	Finish    string          `json:"finish"`
	Error     json.RawMessage `json:"error"`
	Content   []v2Content     `json:"content"`
	Summary   string          `json:"summary"`
	CallID    string          `json:"callID"`
	Command   string          `json:"command"`
	Output    string          `json:"output"`
}

// v2Content is one item of an assistant message's content.
type v2Content struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Text  string          `json:"text"`
	Name  string          `json:"name"`
	State json.RawMessage `json:"state"`
}

// message maps m as Messages documents; ok is false for entries it leaves
// out.
func (m v2Message) message(sessionID string) (msg Message, ok bool) {
	if m.SessionID != "" {
		sessionID = m.SessionID
	}
	info := MessageInfo{ID: m.ID, SessionID: sessionID}
	switch m.Type {
	case "user":
		info.Role = "user"
		return Message{Info: info, Parts: []Part{{Type: "text", Text: m.Text}}}, true
	case "synthetic":
		info.Role = "user"
		return Message{Info: info, Parts: []Part{{Type: "text", Text: m.Text, Synthetic: true}}}, true
	case "system":
		info.Role = "system"
		return Message{Info: info, Parts: []Part{{Type: "text", Text: m.Text}}}, true
	case "compaction":
		info.Role = "assistant"
		return Message{Info: info, Parts: []Part{{Type: "text", Text: m.Summary}}}, true
	case "shell":
		info.Role = "assistant"
		state, _ := json.Marshal(struct {
			Status string            `json:"status"`
			Input  map[string]string `json:"input"`
			Output string            `json:"output"`
		}{"completed", map[string]string{"command": m.Command}, m.Output})
		return Message{Info: info, Parts: []Part{{Type: "tool", Tool: "bash", CallID: m.CallID, State: state}}}, true
	case "assistant":
		info.Role = "assistant"
		info.Finish = m.Finish
		if len(m.Error) > 0 && string(m.Error) != "null" {
			info.Error = m.Error
		}
		parts := make([]Part, 0, len(m.Content))
		for _, c := range m.Content {
			switch c.Type {
			case "text", "reasoning":
				parts = append(parts, Part{ID: c.ID, Type: c.Type, Text: c.Text})
			case "tool":
				parts = append(parts, Part{ID: c.ID, Type: "tool", Tool: c.Name, CallID: c.ID, State: c.State})
			}
		}
		return Message{Info: info, Parts: parts}, true
	}
	return Message{}, false
}
