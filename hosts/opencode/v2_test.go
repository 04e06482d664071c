package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/internal/testwait"
)

// sessionV2JSON is a SessionV2Info as opencode 1.18.33 answers it.
const sessionV2JSON = `{"id":"ses_b","parentID":"ses_a","projectID":"p1","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},` +
	`"time":{"created":1796027898889,"updated":1796027898890},"title":"probe child","location":{"directory":"/home/user/proj","workspaceID":"wrk_1"},"subpath":"sub"}`

var sessionV2B = Session{ID: "ses_b", ProjectID: "p1", WorkspaceID: "wrk_1", Directory: "/home/user/proj", Path: "sub",
	ParentID: "ses_a", Title: "probe child", Time: SessionTime{Created: 1796027898889, Updated: 1796027898890}}

// contextJSON is a /context answer with every SessionMessage variant, in
// the shapes opencode 1.18.33 sends.
const contextJSON = `{"data":[
 {"id":"msg_1","time":{"created":1},"type":"agent-switched","agent":"build"},
 {"id":"msg_2","time":{"created":2},"text":"hi","type":"user"},
 {"id":"msg_3","time":{"created":3},"sessionID":"ses_a","text":"remember","type":"synthetic"},
 {"id":"msg_4","time":{"created":4,"completed":5},"type":"assistant","agent":"build","model":{"id":"m1","providerID":"fake"},
  "content":[{"type":"reasoning","id":"r-0","text":"thinking"},
             {"type":"tool","id":"call_1","name":"read","state":{"status":"completed","input":{},"content":[],"structured":{}},"time":{"created":4}},
             {"type":"text","id":"text-0","text":"All done."},
             {"type":"text","id":"text-1","text":"DONE-TOKEN"}],
  "finish":"stop","cost":0,"tokens":{"input":5,"output":3,"reasoning":0,"cache":{"read":0,"write":0}}},
 {"id":"msg_5","time":{"created":6},"type":"model-switched","model":{"id":"m2","providerID":"fake"}},
 {"id":"msg_6","time":{"created":7},"type":"shell","callID":"sh_1","command":"ls","output":"a\nb"},
 {"id":"msg_7","time":{"created":8},"type":"system","text":"be brief"},
 {"id":"msg_8","time":{"created":9},"type":"future-kind","text":"?"},
 {"id":"msg_9","time":{"created":10,"completed":11},"type":"assistant","agent":"build","model":{"id":"m1","providerID":"fake"},"content":[],
  "finish":"error","error":{"type":"unknown","message":"HTTP transport failed"}}
]}`

var contextMessages = []Message{
	{Info: MessageInfo{ID: "msg_2", SessionID: "ses_a", Role: "user"}, Parts: []Part{{Type: "text", Text: "hi"}}},
	{Info: MessageInfo{ID: "msg_3", SessionID: "ses_a", Role: "user"}, Parts: []Part{{Type: "text", Text: "remember", Synthetic: true}}},
	{Info: MessageInfo{ID: "msg_4", SessionID: "ses_a", Role: "assistant", Finish: "stop"}, Parts: []Part{
		{ID: "r-0", Type: "reasoning", Text: "thinking"},
		{ID: "call_1", Type: "tool", Tool: "read", CallID: "call_1", State: json.RawMessage(`{"status":"completed","input":{},"content":[],"structured":{}}`)},
		{ID: "text-0", Type: "text", Text: "All done."},
		{ID: "text-1", Type: "text", Text: "DONE-TOKEN"},
	}},
	{Info: MessageInfo{ID: "msg_6", SessionID: "ses_a", Role: "assistant"}, Parts: []Part{
		{Type: "tool", Tool: "bash", CallID: "sh_1", State: json.RawMessage(`{"status":"completed","input":{"command":"ls"},"output":"a\nb"}`)},
	}},
	{Info: MessageInfo{ID: "msg_7", SessionID: "ses_a", Role: "system"}, Parts: []Part{{Type: "text", Text: "be brief"}}},
	{Info: MessageInfo{ID: "msg_9", SessionID: "ses_a", Role: "assistant", Finish: "error",
		Error: json.RawMessage(`{"type":"unknown","message":"HTTP transport failed"}`)}, Parts: []Part{}},
}

// messagesEqual compares Messages with RawMessage fields by JSON value.
func messagesEqual(t *testing.T, got, want []Message) bool {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	return jsonEqual(t, string(g), string(w)) && len(got) == len(want)
}

// TestV2Calls checks each v2 call's method, path, query, body, and how it
// reads the answer, against the shapes in opencode's OpenAPI document.
func TestV2Calls(t *testing.T) {
	tests := []struct {
		name         string
		dir          string
		call         func(context.Context, *V2Client) (any, error)
		method, path string
		query        string
		body         string
		status       int
		resp         string
		want         any
	}{
		{
			name: "CreateSession in the client's directory",
			dir:  "/home/user/proj",
			call: func(ctx context.Context, v *V2Client) (any, error) { return v.CreateSession(ctx, "", "dropped title") },
			// The directory goes in the body's location, not the query.
			method: "POST", path: "/api/session", body: `{"location":{"directory":"/home/user/proj"}}`,
			status: 200, resp: `{"data":` + sessionV2JSON + `}`, want: sessionV2B,
		},
		{
			name:   "CreateSession without a directory lets the server choose",
			call:   func(ctx context.Context, v *V2Client) (any, error) { return v.CreateSession(ctx, "", "") },
			method: "POST", path: "/api/session", body: `{}`,
			status: 200, resp: `{"data":` + sessionV2JSON + `}`, want: sessionV2B,
		},
		{
			name:   "ListSessions filters by directory and reads one page",
			dir:    "/home/user/proj",
			call:   func(ctx context.Context, v *V2Client) (any, error) { return v.ListSessions(ctx) },
			method: "GET", path: "/api/session", query: "directory=%2Fhome%2Fuser%2Fproj&limit=100",
			status: 200, resp: `{"data":[` + sessionV2JSON + `],"cursor":{"previous":null,"next":null}}`,
			want: []Session{sessionV2B},
		},
		{
			name:   "PromptAsync",
			dir:    "/home/user/proj",
			call:   func(ctx context.Context, v *V2Client) (any, error) { return nil, v.PromptAsync(ctx, "ses_a", "go on") },
			method: "POST", path: "/api/session/ses_a/prompt", body: `{"prompt":{"text":"go on"}}`,
			status: 200, resp: `{"data":{"admittedSeq":1,"id":"msg_1","sessionID":"ses_a","prompt":{"text":"go on"},"delivery":"steer","timeCreated":1}}`,
		},
		{
			name:   "PromptAsync escapes the id",
			call:   func(ctx context.Context, v *V2Client) (any, error) { return nil, v.PromptAsync(ctx, "ses/../x", "go") },
			method: "POST", path: "/api/session/ses%2F..%2Fx/prompt", body: `{"prompt":{"text":"go"}}`,
			status: 200, resp: `{"data":{}}`,
		},
		{
			name:   "Messages reads the context",
			dir:    "/home/user/proj",
			call:   func(ctx context.Context, v *V2Client) (any, error) { return v.Messages(ctx, "ses_a") },
			method: "GET", path: "/api/session/ses_a/context",
			status: 200, resp: contextJSON, want: contextMessages,
		},
		{
			name:   "Compact",
			dir:    "/home/user/proj",
			call:   func(ctx context.Context, v *V2Client) (any, error) { return nil, v.Compact(ctx, "ses_a") },
			method: "POST", path: "/api/session/ses_a/compact", status: 204,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, reply(tt.status, tt.resp))
			v := newTestClient(t, f, func(o *Options) { o.Directory = tt.dir }).V2()
			got, err := tt.call(context.Background(), v)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if msgs, ok := tt.want.([]Message); ok {
				if !messagesEqual(t, got.([]Message), msgs) {
					t.Errorf("messages = %+v\nwant %+v", got, msgs)
				}
			} else if tt.want != nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("result = %#v\nwant %#v", got, tt.want)
			}
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("server saw %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != tt.method || r.Path != tt.path || r.Query != tt.query {
				t.Errorf("request %s %s?%s, want %s %s?%s", r.Method, r.Path, r.Query, tt.method, tt.path, tt.query)
			}
			if !jsonEqual(t, r.Body, tt.body) {
				t.Errorf("body %s, want %s", r.Body, tt.body)
			}
			if r.Accept != "application/json" {
				t.Errorf("Accept = %q", r.Accept)
			}
		})
	}
}

// TestV2FinalAssistantText checks that the wrap-up check reads the last
// assistant reply out of a v2 context as it does out of v1 messages.
func TestV2FinalAssistantText(t *testing.T) {
	tests := []struct {
		name string
		data string
		want string
	}{
		{"last reply ends with the token",
			`[{"id":"msg_1","time":{"created":1},"text":"go","type":"user"},` +
				`{"id":"msg_2","time":{"created":2},"type":"assistant","agent":"a","model":{"id":"m","providerID":"p"},"content":[{"type":"reasoning","id":"r","text":"hmm"},{"type":"text","id":"t0","text":"All done.\nDONE-TOKEN"}],"finish":"stop"}]`,
			"All done.\nDONE-TOKEN"},
		{"a user message after the reply does not hide it",
			`[{"id":"msg_2","time":{"created":2},"type":"assistant","agent":"a","model":{"id":"m","providerID":"p"},"content":[{"type":"text","id":"t0","text":"first"}]},` +
				`{"id":"msg_3","time":{"created":3},"text":"more?","type":"user"},{"id":"msg_4","time":{"created":4},"type":"model-switched","model":{"id":"m","providerID":"p"}}]`,
			"first"},
		{"a compaction summary reads as the last reply",
			`[{"id":"msg_2","time":{"created":2},"type":"assistant","agent":"a","model":{"id":"m","providerID":"p"},"content":[{"type":"text","id":"t0","text":"old"}]},` +
				`{"id":"msg_5","time":{"created":5},"type":"compaction","reason":"manual","summary":"We fixed the bug.","recent":""}]`,
			"We fixed the bug."},
		{"no assistant message", `[{"id":"msg_1","time":{"created":1},"text":"go","type":"user"}]`, ""},
		{"empty context", `[]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, reply(200, `{"data":`+tt.data+`}`))
			v := newTestClient(t, f, nil).V2()
			msgs, err := v.Messages(context.Background(), "ses_a")
			if err != nil {
				t.Fatal(err)
			}
			if got := FinalAssistantText(msgs); got != tt.want {
				t.Errorf("FinalAssistantText = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestV2FindChildPages checks that FindChild follows the list's cursor to
// the end, filters by parent and title, and picks the oldest match.
func TestV2FindChildPages(t *testing.T) {
	sess := func(id, parent, title string, created int64) string {
		b, _ := json.Marshal(map[string]any{"id": id, "parentID": parent, "projectID": "p", "title": title,
			"time": map[string]any{"created": created, "updated": created}, "location": map[string]any{"directory": "/d"}})
		return string(b)
	}
	pages := map[string]string{
		"":   `{"data":[` + sess("ses_new", "ses_p", "kid", 300) + `,` + sess("ses_other", "ses_q", "kid", 10) + `],"cursor":{"next":"c1"}}`,
		"c1": `{"data":[` + sess("ses_wrongtitle", "ses_p", "other", 5) + `],"cursor":{"previous":"c0","next":"c2"}}`,
		"c2": `{"data":[` + sess("ses_old", "ses_p", "kid", 100) + `],"cursor":{"next":"c3"}}`,
		// opencode ends the list with an empty page that still may carry a
		// cursor; FindChild must stop there.
		"c3": `{"data":[],"cursor":{"previous":"c2","next":"c4"}}`,
	}
	f := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Query().Get("cursor")]
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	})
	v := newTestClient(t, f, nil).V2()
	got, ok, err := v.FindChild(context.Background(), "ses_p", "kid")
	if err != nil || !ok {
		t.Fatalf("FindChild = %v, %v, %v", got, ok, err)
	}
	if got.ID != "ses_old" {
		t.Errorf("FindChild picked %s, want the oldest match ses_old", got.ID)
	}
	var cursors []string
	for _, r := range f.requests() {
		q, _ := url.ParseQuery(r.Query)
		if r.Method != "GET" || r.Path != "/api/session" || q.Get("limit") != "100" {
			t.Errorf("request %s %s?%s", r.Method, r.Path, r.Query)
		}
		cursors = append(cursors, q.Get("cursor"))
	}
	if want := []string{"", "c1", "c2", "c3"}; !reflect.DeepEqual(cursors, want) {
		t.Errorf("cursors sent %q, want %q", cursors, want)
	}

	if _, ok, err := v.FindChild(context.Background(), "ses_p", "absent"); err != nil || ok {
		t.Errorf("FindChild(absent) = %v, %v; want not found", ok, err)
	}
}

// TestV2FindChildStopsAtNullCursor checks the other end of a list: a page
// whose next cursor is null.
func TestV2FindChildStopsAtNullCursor(t *testing.T) {
	f := newFake(t, reply(200, `{"data":[{"id":"ses_k","parentID":"ses_p","title":"kid","projectID":"p","time":{"created":1,"updated":1},"location":{"directory":"/d"}}],"cursor":{"previous":null,"next":null}}`))
	v := newTestClient(t, f, nil).V2()
	got, ok, err := v.FindChild(context.Background(), "ses_p", "kid")
	if err != nil || !ok || got.ID != "ses_k" {
		t.Fatalf("FindChild = %v, %v, %v", got, ok, err)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

// TestV2NoOpsSendNothing checks every call v2 cannot map: it sends no
// request, says so in the log, and returns ErrNotInV2 only where the
// caller needs a result.
func TestV2NoOpsSendNothing(t *testing.T) {
	tests := []struct {
		name    string
		call    func(context.Context, *V2Client) error
		wantErr error
	}{
		{"CreateSession child", func(ctx context.Context, v *V2Client) error {
			_, err := v.CreateSession(ctx, "ses_a", "extract")
			return err
		}, ErrNotInV2},
		{"PromptNoReply", func(ctx context.Context, v *V2Client) error { return v.PromptNoReply(ctx, "ses_a", "note") }, nil},
		{"DeleteSession", func(ctx context.Context, v *V2Client) error { return v.DeleteSession(ctx, "ses_a") }, nil},
		{"ShowToast", func(ctx context.Context, v *V2Client) error { return v.ShowToast(ctx, "thatch", "m", "info") }, nil},
		{"ExecuteTUICommand", func(ctx context.Context, v *V2Client) error { return v.ExecuteTUICommand(ctx, "session_compact") }, nil},
		{"PublishTUICommand", func(ctx context.Context, v *V2Client) error { return v.PublishTUICommand(ctx, "app.exit") }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
				t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
				w.WriteHeader(http.StatusTeapot)
			})
			var logs syncBuffer
			v := newTestClient(t, f, func(o *Options) {
				o.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})
			}).V2()
			err := tt.call(context.Background(), v)
			if tt.wantErr == nil && err != nil {
				t.Errorf("err = %v, want nil", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("server saw %d requests, want none", n)
			}
			if !strings.Contains(logs.String(), "v2") {
				t.Errorf("no log line says the call was dropped: %q", logs.String())
			}
		})
	}
}

// TestV2ZeroClientNeverPanics checks that a V2Client that was not built
// properly degrades to errors and no-ops rather than crashing the daemon.
func TestV2ZeroClientNeverPanics(t *testing.T) {
	ctx := context.Background()
	for _, v := range []*V2Client{nil, {}} {
		if err := v.PromptNoReply(ctx, "s", "t"); err != nil {
			t.Error(err)
		}
		if err := v.DeleteSession(ctx, "s"); err != nil {
			t.Error(err)
		}
		if err := v.ShowToast(ctx, "", "m", "info"); err != nil {
			t.Error(err)
		}
		if err := v.ExecuteTUICommand(ctx, "c"); err != nil {
			t.Error(err)
		}
		if err := v.PublishTUICommand(ctx, "c"); err != nil {
			t.Error(err)
		}
		if _, err := v.CreateSession(ctx, "p", "t"); !errors.Is(err, ErrNotInV2) {
			t.Errorf("CreateSession child = %v", err)
		}
		for name, err := range map[string]error{
			"CreateSession": func() error { _, err := v.CreateSession(ctx, "", ""); return err }(),
			"FindChild":     func() error { _, _, err := v.FindChild(ctx, "p", "t"); return err }(),
			"Messages":      func() error { _, err := v.Messages(ctx, "s"); return err }(),
			"PromptAsync":   v.PromptAsync(ctx, "s", "t"),
			"Compact":       v.Compact(ctx, "s"),
		} {
			if !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("%s on an unbuilt client = %v, want ErrInvalidOptions", name, err)
			}
		}
		v.CloseIdleConnections()
		_ = v.Host()
	}
}

// TestV2MissingSurface checks that a server without a v2 route (it serves
// its web app for unknown paths) or one that says the route is not
// available yet degrades to ErrNotInV2, while real errors keep their
// meaning.
func TestV2MissingSurface(t *testing.T) {
	webApp := func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!doctype html><html><title>OpenCode</title></html>"))
	}
	calls := map[string]func(context.Context, *V2Client) error{
		"CreateSession": func(ctx context.Context, v *V2Client) error { _, err := v.CreateSession(ctx, "", ""); return err },
		"ListSessions":  func(ctx context.Context, v *V2Client) error { _, err := v.ListSessions(ctx); return err },
		"FindChild":     func(ctx context.Context, v *V2Client) error { _, _, err := v.FindChild(ctx, "p", "t"); return err },
		"Messages":      func(ctx context.Context, v *V2Client) error { _, err := v.Messages(ctx, "ses_a"); return err },
		"PromptAsync":   func(ctx context.Context, v *V2Client) error { return v.PromptAsync(ctx, "ses_a", "x") },
		"Compact":       func(ctx context.Context, v *V2Client) error { return v.Compact(ctx, "ses_a") },
	}
	for name, call := range calls {
		t.Run("web app answers "+name, func(t *testing.T) {
			f := newFake(t, webApp)
			v := newTestClient(t, f, nil).V2()
			if err := call(context.Background(), v); !errors.Is(err, ErrNotInV2) {
				t.Errorf("err = %v, want ErrNotInV2", err)
			}
		})
	}

	t.Run("compact not available yet", func(t *testing.T) {
		f := newFake(t, reply(503, `{"_tag":"ServiceUnavailableError","message":"Session compact is not available yet","service":"session.compact"}`))
		v := newTestClient(t, f, nil).V2()
		err := v.Compact(context.Background(), "ses_a")
		if !errors.Is(err, ErrNotInV2) || !errors.Is(err, ErrServer) {
			t.Errorf("err = %v, want ErrNotInV2 and ErrServer", err)
		}
		if n := len(f.requests()); n != 1 {
			t.Errorf("compact tried %d times, want once", n)
		}
	})

	t.Run("an unknown session stays ErrNotFound", func(t *testing.T) {
		f := newFake(t, reply(404, `{"_tag":"SessionNotFoundError","sessionID":"ses_a","message":"Session not found: ses_a"}`))
		v := newTestClient(t, f, nil).V2()
		_, err := v.Messages(context.Background(), "ses_a")
		if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotInV2) {
			t.Errorf("err = %v, want ErrNotFound only", err)
		}
	})

	t.Run("a plain 503 is a server error", func(t *testing.T) {
		f := newFake(t, reply(503, `overloaded`))
		v := newTestClient(t, f, nil).V2()
		err := v.PromptAsync(context.Background(), "ses_a", "x")
		if !errors.Is(err, ErrServer) || errors.Is(err, ErrNotInV2) {
			t.Errorf("err = %v, want ErrServer only", err)
		}
	})

	t.Run("JSON without data is a decode error", func(t *testing.T) {
		f := newFake(t, reply(200, `[]`))
		v := newTestClient(t, f, nil).V2()
		if _, err := v.Messages(context.Background(), "ses_a"); !errors.Is(err, ErrDecode) {
			t.Errorf("err = %v, want ErrDecode", err)
		}
	})
}

// TestV2SharesAuth checks that v2 calls carry the Client's credentials and
// keep the password out of errors.
func TestV2SharesAuth(t *testing.T) {
	const pw = "s3cret-pw"
	f := newFake(t, reply(401, `{"_tag":"UnauthorizedError","message":"bad `+pw+`"}`))
	v := newTestClient(t, f, func(o *Options) { o.Password = pw }).V2()
	_, err := v.ListSessions(context.Background())
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("err = %v, want ErrUnauthorized", err)
	}
	if strings.Contains(err.Error(), pw) {
		t.Errorf("error leaks the password: %v", err)
	}
	r := f.requests()[0]
	if !r.HasAuth || r.User != DefaultUsername || r.Pass != pw {
		t.Errorf("auth = %v %q %q", r.HasAuth, r.User, r.Pass)
	}
}

// opencodeBinary finds the pinned opencode for TestV2RealServer: $OPENCODE_BIN,
// else the e2e cache that e2e/install-opencode.sh fills. It does not look on
// PATH, where another version may answer differently.
func opencodeBinary(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("OPENCODE_BIN"); b != "" {
		return b
	}
	v, err := os.ReadFile(filepath.Join("..", "..", "e2e", "opencode.version"))
	if err != nil {
		return ""
	}
	cache := os.Getenv("THATCH_E2E_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		cache = filepath.Join(home, ".cache", "thatch-e2e")
	}
	b := filepath.Join(cache, "opencode-"+strings.TrimSpace(string(v)), "node_modules", ".bin", "opencode")
	if _, err := os.Stat(b); err != nil {
		return ""
	}
	return b
}

// freeLoopbackPort returns a port that was free a moment ago; opencode
// treats --port 0 as its default port, so it cannot pick one itself.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestV2RealServer runs the v2 calls against the pinned opencode serve, in
// a temp home whose only model provider is a refused loopback port.
func TestV2RealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts opencode")
	}
	bin := opencodeBinary(t)
	if bin == "" {
		t.Skip("opencode is not installed (run e2e/install-opencode.sh or set OPENCODE_BIN)")
	}
	root := t.TempDir()
	dirs := map[string]string{}
	for _, d := range []string{"home", "config", "data", "cache", "state", "project"} {
		dirs[d] = filepath.Join(root, d)
		if err := os.MkdirAll(dirs[d], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	project, err := filepath.EvalSymlinks(dirs["project"])
	if err != nil {
		t.Fatal(err)
	}
	cfg := `{"$schema":"https://opencode.ai/config.json","autoupdate":false,"share":"disabled","model":"fake/m1","small_model":"fake/m1",
"provider":{"fake":{"npm":"@ai-sdk/openai-compatible","name":"Fake","options":{"baseURL":"http://127.0.0.1:1/v1","apiKey":"x"},"models":{"m1":{"name":"m1"}}}}}`
	if err := os.WriteFile(filepath.Join(project, "opencode.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(root, "opencode.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()

	port := freeLoopbackPort(t)
	cmd := exec.Command(bin, "serve", "--hostname", "127.0.0.1", "--port", strconv.Itoa(port))
	cmd.Dir = project
	cmd.Env = []string{
		"PATH=/usr/bin:/bin", "HOME=" + dirs["home"], "LANG=C.UTF-8", "TMPDIR=" + root,
		"XDG_CONFIG_HOME=" + dirs["config"], "XDG_DATA_HOME=" + dirs["data"],
		"XDG_CACHE_HOME=" + dirs["cache"], "XDG_STATE_HOME=" + dirs["state"],
		"npm_config_cache=" + filepath.Join(dirs["cache"], "npm"),
		"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1", "OPENCODE_DISABLE_CLAUDE_CODE=1",
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // only the PID this test started
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("opencode output:\n%s", b)
		}
	})
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	testwait.Within(t, 90*time.Second, "opencode to listen", func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "listening on "+base)
	})

	c, err := New(Options{BaseURL: base, Directory: project, Timeout: 30 * time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	v := c.V2()
	ctx := context.Background()
	// The first request for the project boots its instance.
	testwait.Within(t, 2*time.Minute, "the session list", func() bool { _, err := v.ListSessions(ctx); return err == nil })

	if api, err := c.Detect(ctx); err != nil || api != APIv2 {
		t.Errorf("Detect = %q, %v; want v2", api, err)
	}

	s, err := v.CreateSession(ctx, "", "title is dropped")
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	if !strings.HasPrefix(s.ID, "ses") || s.Directory != project || s.ParentID != "" || s.Time.Created == 0 {
		t.Errorf("created %+v, want a top-level ses* session in %s", s, project)
	}
	if _, err := v.CreateSession(ctx, s.ID, "kid"); !errors.Is(err, ErrNotInV2) {
		t.Errorf("CreateSession child = %v, want ErrNotInV2", err)
	}

	// A child made through v1 is found through the v2 list.
	kid, err := c.CreateSession(ctx, s.ID, "kid")
	if err != nil {
		t.Fatalf("v1 CreateSession: %v", err)
	}
	found, ok, err := v.FindChild(ctx, s.ID, "kid")
	if err != nil || !ok || found.ID != kid.ID || found.ParentID != s.ID {
		t.Errorf("FindChild = %+v, %v, %v; want %s", found, ok, err, kid.ID)
	}
	if _, ok, err := v.FindChild(ctx, s.ID, "nobody"); err != nil || ok {
		t.Errorf("FindChild(nobody) = %v, %v", ok, err)
	}
	list, err := v.ListSessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, x := range list {
		ids[x.ID] = true
	}
	if !ids[s.ID] || !ids[kid.ID] {
		t.Errorf("ListSessions misses %s or %s: %v", s.ID, kid.ID, ids)
	}

	msgs, err := v.Messages(ctx, s.ID)
	if err != nil || len(msgs) != 0 {
		t.Errorf("Messages of a new session = %v, %v; want none", msgs, err)
	}
	if err := v.PromptAsync(ctx, s.ID, "hello v2"); err != nil {
		t.Fatalf("PromptAsync: %v", err)
	}
	// The model is unreachable, so how the turn ends depends on the
	// server's retry policy; the prompt itself must show in the context at
	// once. (Mapping a failed assistant reply is covered by the fakes.)
	testwait.Until(t, "the prompt in the context", func() bool {
		msgs, err = v.Messages(ctx, s.ID)
		return err == nil && len(msgs) >= 1
	})
	if m := msgs[0]; m.Info.Role != "user" || len(m.Parts) != 1 || m.Parts[0].Text != "hello v2" {
		t.Errorf("first context message = %+v, want the user prompt", m)
	}

	// 1.18.33 routes compact but answers "not available yet"; a later
	// version may compact. Any other answer means a wrong path or body.
	if err := v.Compact(ctx, s.ID); err != nil && !errors.Is(err, ErrNotInV2) {
		t.Errorf("Compact = %v, want nil or ErrNotInV2", err)
	} else {
		t.Logf("Compact: %v", err)
	}
	if _, err := v.Messages(ctx, "ses_nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Messages(unknown) = %v, want ErrNotFound", err)
	}
}
