package opencode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/messages"
)

// recorded is one request as the fake server saw it.
type recorded struct {
	Method, Path, Query, Body string
	User, Pass                string
	HasAuth                   bool
	Accept                    string
}

// fakeServer is an opencode stand-in on loopback that records every
// request and answers with h (n counts requests from 1).
type fakeServer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func newFake(t *testing.T, h func(n int, w http.ResponseWriter, r *http.Request)) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		_, _ = body.ReadFrom(r.Body)
		user, pass, ok := r.BasicAuth()
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{
			Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Body: body.String(),
			User: user, Pass: pass, HasAuth: ok, Accept: r.Header.Get("Accept"),
		})
		n := len(f.reqs)
		f.mu.Unlock()
		h(n, w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// syncBuffer collects log output from any goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// tWriter sends log lines to the test's log.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testLogger(t *testing.T) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "opencode", Output: tWriter{t}, Level: hclog.Trace})
}

// newTestClient makes a client of f with fast retries; edit adjusts the
// options first.
func newTestClient(t *testing.T, f *fakeServer, edit func(*Options)) *Client {
	t.Helper()
	o := Options{
		BaseURL:    f.srv.URL,
		HTTPClient: f.srv.Client(),
		RetryBase:  time.Millisecond,
		RetryMax:   4 * time.Millisecond,
		Logger:     testLogger(t),
	}
	if edit != nil {
		edit(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func reply(status int, body string) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) {
		if body != "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

// jsonEqual compares two JSON texts by value.
func jsonEqual(t *testing.T, got, want string) bool {
	t.Helper()
	if got == "" || want == "" {
		return got == want
	}
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("request body %q is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad expectation %q: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

const sessionJSON = `{"id":"ses_b","slug":"lucky-planet","version":"1.18.33","projectID":"p1","directory":"/home/user/proj","path":"","parentID":"ses_a","title":"probe child","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"time":{"created":1796021171483,"updated":1796021171490}}`

var sessionB = Session{ID: "ses_b", Slug: "lucky-planet", Version: "1.18.33", ProjectID: "p1", Directory: "/home/user/proj",
	ParentID: "ses_a", Title: "probe child", Time: SessionTime{Created: 1796021171483, Updated: 1796021171490}}

// TestClientCalls checks each call's method, path, query, body, and how it
// reads the answer, against the shapes in opencode's OpenAPI document.
func TestClientCalls(t *testing.T) {
	const dirQuery = "directory=%2Fhome%2Fuser%2Fproj"
	tests := []struct {
		name         string
		call         func(context.Context, *Client) (any, error)
		method, path string
		query        string
		body         string
		status       int
		resp         string
		want         any
	}{
		{
			name:   "ListSessions",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.ListSessions(ctx) },
			method: "GET", path: "/session", query: dirQuery, status: 200,
			resp: `[` + sessionJSON + `,{"id":"ses_a","slug":"s","projectID":"p1","directory":"/d","title":"A","version":"1","time":{"created":1,"updated":2,"archived":3.5}}]`,
			want: []Session{sessionB, {ID: "ses_a", Slug: "s", ProjectID: "p1", Directory: "/d", Title: "A", Version: "1", Time: SessionTime{Created: 1, Updated: 2, Archived: 3.5}}},
		},
		{
			name:   "SessionStatus",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.SessionStatus(ctx) },
			method: "GET", path: "/session/status", query: dirQuery, status: 200,
			resp: `{"ses_a":{"type":"busy"},"ses_b":{"type":"retry","attempt":2,"message":"rate limited","next":1796021171999}}`,
			want: map[string]SessionStatus{"ses_a": {Type: "busy"}, "ses_b": {Type: "retry", Attempt: 2, Message: "rate limited", Next: 1796021171999}},
		},
		{
			name:   "CreateSession child",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.CreateSession(ctx, "ses_a", "probe child") },
			method: "POST", path: "/session", query: dirQuery, body: `{"parentID":"ses_a","title":"probe child"}`,
			status: 200, resp: sessionJSON, want: sessionB,
		},
		{
			name:   "CreateSession top-level sends no parent",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.CreateSession(ctx, "", "") },
			method: "POST", path: "/session", query: dirQuery, body: `{}`,
			status: 200, resp: sessionJSON, want: sessionB,
		},
		{
			name:   "Children",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Children(ctx, "ses_a") },
			method: "GET", path: "/session/ses_a/children", query: dirQuery, status: 200,
			resp: `[` + sessionJSON + `]`, want: []Session{sessionB},
		},
		{
			name: "PromptNoReply",
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.PromptNoReply(ctx, "ses_a", "remember this")
			},
			method: "POST", path: "/session/ses_a/message", query: dirQuery,
			body:   `{"noReply":true,"parts":[{"type":"text","text":"remember this","synthetic":true}]}`,
			status: 200, resp: `{"info":{"id":"msg_1","role":"user"},"parts":[]}`,
		},
		{
			name:   "PromptAsync",
			call:   func(ctx context.Context, c *Client) (any, error) { return nil, c.PromptAsync(ctx, "ses_a", "go on") },
			method: "POST", path: "/session/ses_a/prompt_async", query: dirQuery,
			body: `{"parts":[{"type":"text","text":"go on"}]}`, status: 204,
		},
		{
			name:   "DeleteSession",
			call:   func(ctx context.Context, c *Client) (any, error) { return nil, c.DeleteSession(ctx, "ses_a") },
			method: "DELETE", path: "/session/ses_a", query: dirQuery, status: 200, resp: `true`,
		},
		{
			name:   "DeleteSession escapes the id",
			call:   func(ctx context.Context, c *Client) (any, error) { return nil, c.DeleteSession(ctx, "ses/../x") },
			method: "DELETE", path: "/session/ses%2F..%2Fx", query: dirQuery, status: 200, resp: `true`,
		},
		{
			name:   "Messages",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Messages(ctx, "ses_a") },
			method: "GET", path: "/session/ses_a/message", query: dirQuery, status: 200,
			resp: `[{"info":{"id":"msg_1","sessionID":"ses_a","role":"user","time":{"created":1.5}},"parts":[{"id":"prt_1","type":"text","text":"hi","synthetic":true}]},` +
				`{"info":{"id":"msg_2","sessionID":"ses_a","role":"assistant","parentID":"msg_1","finish":"stop"},"parts":[{"id":"prt_2","type":"tool","tool":"bash","callID":"c1","state":{"status":"completed"}},{"id":"prt_3","type":"text","text":"done"}]}]`,
			want: []Message{
				{Info: MessageInfo{ID: "msg_1", SessionID: "ses_a", Role: "user"}, Parts: []Part{{ID: "prt_1", Type: "text", Text: "hi", Synthetic: true}}},
				{Info: MessageInfo{ID: "msg_2", SessionID: "ses_a", Role: "assistant", ParentID: "msg_1", Finish: "stop"}, Parts: []Part{
					{ID: "prt_2", Type: "tool", Tool: "bash", CallID: "c1", State: json.RawMessage(`{"status":"completed"}`)},
					{ID: "prt_3", Type: "text", Text: "done"},
				}},
			},
		},
		{
			name: "ShowToast",
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.ShowToast(ctx, "thatch", "saved 2 memories", "success")
			},
			method: "POST", path: "/tui/show-toast", query: dirQuery,
			body: `{"title":"thatch","message":"saved 2 memories","variant":"success"}`, status: 200, resp: `true`,
		},
		{
			name:   "ShowToast without title",
			call:   func(ctx context.Context, c *Client) (any, error) { return nil, c.ShowToast(ctx, "", "m", "info") },
			method: "POST", path: "/tui/show-toast", query: dirQuery,
			body: `{"message":"m","variant":"info"}`, status: 200, resp: `true`,
		},
		{
			name: "ExecuteTUICommand",
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.ExecuteTUICommand(ctx, "session_compact")
			},
			method: "POST", path: "/tui/execute-command", query: dirQuery,
			body: `{"command":"session_compact"}`, status: 200, resp: `true`,
		},
		{
			name:   "PublishTUICommand",
			call:   func(ctx context.Context, c *Client) (any, error) { return nil, c.PublishTUICommand(ctx, "app.exit") },
			method: "POST", path: "/tui/publish", query: dirQuery,
			body: `{"type":"tui.command.execute","properties":{"command":"app.exit"}}`, status: 200, resp: `true`,
		},
		{
			name: "Summarize",
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.Summarize(ctx, "ses_a", "anthropic", "claude-sonnet")
			},
			method: "POST", path: "/session/ses_a/summarize", query: dirQuery,
			body: `{"providerID":"anthropic","modelID":"claude-sonnet"}`, status: 200, resp: `true`,
		},
		{
			name: "MoveSession takes no directory parameter",
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.MoveSession(ctx, "ses_a", "/home/user/new")
			},
			method: "POST", path: "/experimental/control-plane/move-session",
			body: `{"sessionID":"ses_a","destination":{"directory":"/home/user/new"}}`, status: 204,
		},
		{
			name:   "CurrentProject",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.CurrentProject(ctx) },
			method: "GET", path: "/project/current", query: dirQuery, status: 200,
			resp: `{"id":"p1","worktree":"/home/user/proj","vcs":"git","sandboxes":["/tmp/s"],"time":{"created":1,"updated":2}}`,
			want: func() Project {
				p := Project{ID: "p1", Worktree: "/home/user/proj", VCS: "git", Sandboxes: []string{"/tmp/s"}}
				p.Time.Created, p.Time.Updated = 1, 2
				return p
			}(),
		},
		{
			name:   "Health",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Health(ctx) },
			method: "GET", path: "/global/health", status: 200,
			resp: `{"healthy":true,"version":"1.18.33"}`, want: Health{Healthy: true, Version: "1.18.33"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, reply(tt.status, tt.resp))
			c := newTestClient(t, f, func(o *Options) { o.Directory = "/home/user/proj" })
			got, err := tt.call(context.Background(), c)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if tt.want != nil && !reflect.DeepEqual(got, tt.want) {
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
			if r.HasAuth {
				t.Errorf("Authorization sent without a password")
			}
		})
	}
}

func TestBooleanFalseIsRejected(t *testing.T) {
	f := newFake(t, reply(200, `false`))
	c := newTestClient(t, f, nil)
	err := c.ExecuteTUICommand(context.Background(), "session_compact")
	if !errors.Is(err, ErrRejected) {
		t.Fatalf("err = %v, want ErrRejected", err)
	}
}

func TestDecodeErrorIsNotRetried(t *testing.T) {
	f := newFake(t, reply(200, `{"not":"a list"}`))
	c := newTestClient(t, f, nil)
	_, err := c.ListSessions(context.Background())
	if !errors.Is(err, ErrDecode) {
		t.Fatalf("err = %v, want ErrDecode", err)
	}
	if n := len(f.requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

// failTimes answers 503 for the first n requests, then ok.
func failTimes(n int, ok func(int, http.ResponseWriter, *http.Request)) func(int, http.ResponseWriter, *http.Request) {
	return func(i int, w http.ResponseWriter, r *http.Request) {
		if i <= n {
			http.Error(w, `{"name":"UnknownError","data":{"message":"try later"}}`, http.StatusServiceUnavailable)
			return
		}
		ok(i, w, r)
	}
}

func TestIdempotentCallsRetry5xx(t *testing.T) {
	tests := []struct {
		name string
		resp string
		call func(context.Context, *Client) error
	}{
		{"GET /session", `[]`, func(ctx context.Context, c *Client) error { _, err := c.ListSessions(ctx); return err }},
		{"GET /session/status", `{}`, func(ctx context.Context, c *Client) error { _, err := c.SessionStatus(ctx); return err }},
		{"GET messages", `[]`, func(ctx context.Context, c *Client) error { _, err := c.Messages(ctx, "ses_a"); return err }},
		{"DELETE", `true`, func(ctx context.Context, c *Client) error { return c.DeleteSession(ctx, "ses_a") }},
		{"toast", `true`, func(ctx context.Context, c *Client) error { return c.ShowToast(ctx, "", "m", "info") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, failTimes(2, reply(200, tt.resp)))
			c := newTestClient(t, f, nil)
			if err := tt.call(context.Background(), c); err != nil {
				t.Fatalf("call failed after retries: %v", err)
			}
			reqs := f.requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests, want 3 (two 503s, then success)", len(reqs))
			}
			for _, r := range reqs[1:] {
				if r != reqs[0] {
					t.Errorf("retry differs: %+v vs %+v", r, reqs[0])
				}
			}
		})
	}
}

func TestRetriesAreBounded(t *testing.T) {
	f := newFake(t, failTimes(1000, nil))
	c := newTestClient(t, f, func(o *Options) { o.MaxAttempts = 3 })
	_, err := c.ListSessions(context.Background())
	if !errors.Is(err, ErrServer) {
		t.Fatalf("err = %v, want ErrServer", err)
	}
	var he *HTTPError
	if !errors.As(err, &he) || he.StatusCode != 503 || !strings.Contains(he.Body, "try later") {
		t.Fatalf("err = %#v, want an *HTTPError 503 with the body", err)
	}
	if !strings.Contains(err.Error(), "after 3 attempts") || !strings.Contains(err.Error(), "GET /session") {
		t.Errorf("error %q does not say what was tried", err)
	}
	if n := len(f.requests()); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
}

// TestNonIdempotentCallsAreTriedOnce: a repeat could create a second
// session or post a prompt twice, so none of these is retried on a 5xx.
func TestNonIdempotentCallsAreTriedOnce(t *testing.T) {
	tests := []struct {
		name string
		call func(context.Context, *Client) error
	}{
		{"CreateSession", func(ctx context.Context, c *Client) error { _, err := c.CreateSession(ctx, "ses_a", "x"); return err }},
		{"PromptNoReply", func(ctx context.Context, c *Client) error { return c.PromptNoReply(ctx, "ses_a", "x") }},
		{"PromptAsync", func(ctx context.Context, c *Client) error { return c.PromptAsync(ctx, "ses_a", "x") }},
		{"ExecuteTUICommand", func(ctx context.Context, c *Client) error { return c.ExecuteTUICommand(ctx, "session_compact") }},
		{"PublishTUICommand", func(ctx context.Context, c *Client) error { return c.PublishTUICommand(ctx, "app.exit") }},
		{"Summarize", func(ctx context.Context, c *Client) error { return c.Summarize(ctx, "ses_a", "p", "m") }},
		{"MoveSession", func(ctx context.Context, c *Client) error { return c.MoveSession(ctx, "ses_a", "/d") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, failTimes(1, reply(200, `true`)))
			c := newTestClient(t, f, nil)
			err := tt.call(context.Background(), c)
			if !errors.Is(err, ErrServer) {
				t.Fatalf("err = %v, want ErrServer", err)
			}
			if n := len(f.requests()); n != 1 {
				t.Fatalf("%d requests, want 1", n)
			}
		})
	}
}

// hangUp closes the connection without answering, as a crashing server
// would.
func hangUp(t *testing.T, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	conn.Close()
}

func TestNetworkErrors(t *testing.T) {
	t.Run("GET is retried", func(t *testing.T) {
		f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				hangUp(t, w)
				return
			}
			reply(200, `[`+sessionJSON+`]`)(n, w, r)
		})
		c := newTestClient(t, f, nil)
		got, err := c.ListSessions(context.Background())
		if err != nil || len(got) != 1 {
			t.Fatalf("got %v, %v; want the retry to succeed", got, err)
		}
		if n := len(f.requests()); n < 2 {
			t.Fatalf("%d requests, want a retry", n)
		}
	})
	t.Run("create is not retried", func(t *testing.T) {
		f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) { hangUp(t, w) })
		c := newTestClient(t, f, nil)
		_, err := c.CreateSession(context.Background(), "ses_a", "x")
		if err == nil {
			t.Fatal("create succeeded on a dropped connection")
		}
		if n := len(f.requests()); n != 1 {
			t.Fatalf("%d requests, want 1: the server may have created the session", n)
		}
	})
}

func TestClientErrorsMatchSentinels(t *testing.T) {
	tests := []struct {
		status int
		want   error
	}{
		{400, ErrBadRequest}, {401, ErrUnauthorized}, {403, ErrUnauthorized}, {404, ErrNotFound}, {409, ErrUnexpectedStatus}, {500, ErrServer},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			f := newFake(t, reply(tt.status, `{"name":"X","data":{"message":"m"}}`))
			c := newTestClient(t, f, func(o *Options) { o.MaxAttempts = 1 })
			_, err := c.Messages(context.Background(), "ses_a")
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if tt.status < 500 && len(f.requests()) != 1 {
				t.Errorf("a %d was retried", tt.status)
			}
		})
	}
}

func TestDeleteNotFoundIsSuccess(t *testing.T) {
	f := newFake(t, reply(404, `{"name":"NotFoundError","data":{"message":"Session not found: ses_gone"}}`))
	c := newTestClient(t, f, nil)
	if err := c.DeleteSession(context.Background(), "ses_gone"); err != nil {
		t.Fatalf("DeleteSession of a gone session: %v", err)
	}
	if n := len(f.requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	// Elsewhere a 404 is an error.
	if _, err := c.Messages(context.Background(), "ses_gone"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Messages: %v, want ErrNotFound", err)
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	f := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	// within runs call and fails the test if it is still waiting on the
	// server, which never answers, after a generous deadline.
	within := func(call func() error) error {
		t.Helper()
		errc := make(chan error, 1)
		go func() { errc <- call() }()
		select {
		case err := <-errc:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("call still waiting for a server that never answers")
			return nil
		}
	}
	c := newTestClient(t, f, func(o *Options) { o.Timeout = 50 * time.Millisecond })
	err := within(func() error { _, err := c.ListSessions(context.Background()); return err })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	// A POST is bounded the same way.
	err = within(func() error { _, err := c.CreateSession(context.Background(), "", "x"); return err })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("create: err = %v, want context.DeadlineExceeded", err)
	}
	// The caller's own deadline wins when it is shorter.
	c2 := newTestClient(t, f, func(o *Options) { o.Timeout = time.Hour })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := within(func() error { return c2.DeleteSession(ctx, "ses_a") }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
}

func TestBasicAuth(t *testing.T) {
	t.Run("password set", func(t *testing.T) {
		f := newFake(t, reply(200, `[]`))
		c := newTestClient(t, f, func(o *Options) { o.Password = "s3cret" })
		if _, err := c.ListSessions(context.Background()); err != nil {
			t.Fatal(err)
		}
		r := f.requests()[0]
		if !r.HasAuth || r.User != "opencode" || r.Pass != "s3cret" {
			t.Fatalf("auth = %v %q %q, want opencode/s3cret", r.HasAuth, r.User, r.Pass)
		}
	})
	t.Run("custom username", func(t *testing.T) {
		f := newFake(t, reply(200, `[]`))
		c := newTestClient(t, f, func(o *Options) { o.Username, o.Password = "thatch", "pw" })
		if _, err := c.ListSessions(context.Background()); err != nil {
			t.Fatal(err)
		}
		if r := f.requests()[0]; r.User != "thatch" || r.Pass != "pw" {
			t.Fatalf("auth = %q %q", r.User, r.Pass)
		}
	})
	t.Run("credentials in the URL", func(t *testing.T) {
		f := newFake(t, reply(200, `[]`))
		c := newTestClient(t, f, func(o *Options) {
			o.BaseURL = strings.Replace(f.srv.URL, "http://", "http://opencode:url%20pw@", 1)
		})
		if _, err := c.ListSessions(context.Background()); err != nil {
			t.Fatal(err)
		}
		if r := f.requests()[0]; !r.HasAuth || r.User != "opencode" || r.Pass != "url pw" {
			t.Fatalf("auth = %v %q %q", r.HasAuth, r.User, r.Pass)
		}
		if c.Host() != strings.TrimPrefix(f.srv.URL, "http://") {
			t.Errorf("Host() = %q", c.Host())
		}
	})
	t.Run("wrong password is not retried", func(t *testing.T) {
		f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if _, p, _ := r.BasicAuth(); p != "right" {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			reply(200, `[]`)(n, w, r)
		})
		c := newTestClient(t, f, func(o *Options) { o.Password = "wrong" })
		_, err := c.ListSessions(context.Background())
		if !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("err = %v, want ErrUnauthorized", err)
		}
		if n := len(f.requests()); n != 1 {
			t.Fatalf("%d requests, want 1", n)
		}
	})
}

// TestPasswordIsRedacted: a server that echoes the password (a proxy
// error page, say) must not get it into thatch's errors or logs.
func TestPasswordIsRedacted(t *testing.T) {
	const pw = "hunter2-s3cret"
	var logs syncBuffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Trace})
	f := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		_, p, _ := r.BasicAuth()
		http.Error(w, "upstream rejected credentials "+p, http.StatusBadGateway)
	})
	c := newTestClient(t, f, func(o *Options) { o.Password, o.Logger = pw, logger })
	_, err := c.ListSessions(context.Background())
	if err == nil {
		t.Fatal("want an error")
	}
	if strings.Contains(err.Error(), pw) {
		t.Fatalf("error leaks the password: %v", err)
	}
	if !strings.Contains(err.Error(), "upstream rejected credentials "+redacted) {
		t.Errorf("error %q lost the server's message", err)
	}
	if !errors.Is(err, ErrServer) {
		t.Errorf("redaction broke errors.Is: %v", err)
	}
	if !strings.Contains(logs.String(), "retrying") {
		t.Errorf("no retry was logged: %s", logs.String())
	}
	if strings.Contains(logs.String(), pw) {
		t.Fatalf("log leaks the password:\n%s", logs.String())
	}

	// A dead server: the transport's error quotes the URL.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	c2, err := New(Options{BaseURL: strings.Replace(deadURL, "http://", "http://opencode:"+pw+"@", 1), MaxAttempts: 2,
		RetryBase: time.Millisecond, RetryMax: time.Millisecond, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.CloseIdleConnections()
	if _, err := c2.ListSessions(context.Background()); err == nil || strings.Contains(err.Error(), pw) {
		t.Fatalf("err = %v", err)
	}
	if err := c2.Subscribe(context.Background(), func(any) {}); err == nil || strings.Contains(err.Error(), pw) {
		t.Fatalf("Subscribe err = %v", err)
	}
	if strings.Contains(logs.String(), pw) {
		t.Fatalf("log leaks the password:\n%s", logs.String())
	}

	// A URL that does not parse is not quoted back.
	_, err = New(Options{BaseURL: "http://opencode:" + pw + "@[::1"})
	if !errors.Is(err, ErrInvalidOptions) || strings.Contains(err.Error(), pw) {
		t.Fatalf("New: %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	_, err := New(Options{BaseURL: "ftp://", Timeout: -1, MaxAttempts: -2, RetryBase: time.Second, RetryMax: time.Millisecond})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"scheme", "no host", "Timeout", "MaxAttempts", "RetryMax"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if _, err := New(Options{}); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "BaseURL is required") {
		t.Fatalf("err = %v", err)
	}
}

func TestBaseURLPrefixIsKept(t *testing.T) {
	f := newFake(t, reply(200, `[]`))
	c := newTestClient(t, f, func(o *Options) { o.BaseURL = f.srv.URL + "/oc/" })
	if _, err := c.ListSessions(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := f.requests()[0].Path; p != "/oc/session" {
		t.Fatalf("path = %q, want /oc/session", p)
	}
}

func TestWithDirectory(t *testing.T) {
	f := newFake(t, reply(200, `true`))
	c := newTestClient(t, f, nil)
	if err := c.WithDirectory("/wt/a b").DeleteSession(context.Background(), "ses_a"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteSession(context.Background(), "ses_b"); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if reqs[0].Query != "directory=%2Fwt%2Fa+b" || reqs[1].Query != "" {
		t.Fatalf("queries = %q, %q", reqs[0].Query, reqs[1].Query)
	}
}

func TestFindChild(t *testing.T) {
	children := `[
		{"id":"ses_c3","directory":"/d","title":"other","time":{"created":1,"updated":1}},
		{"id":"ses_c2","directory":"/d","title":"thatch extraction","time":{"created":300,"updated":300}},
		{"id":"ses_c1","directory":"/d","title":"thatch extraction","time":{"created":200,"updated":400}}
	]`
	f := newFake(t, reply(200, children))
	c := newTestClient(t, f, nil)
	got, ok, err := c.FindChild(context.Background(), "ses_p", "thatch extraction")
	if err != nil || !ok || got.ID != "ses_c1" {
		t.Fatalf("FindChild = %+v, %v, %v; want the oldest match ses_c1", got, ok, err)
	}
	if p := f.requests()[0].Path; p != "/session/ses_p/children" {
		t.Errorf("path = %q", p)
	}
	_, ok, err = c.FindChild(context.Background(), "ses_p", "missing")
	if err != nil || ok {
		t.Fatalf("FindChild(missing) = %v, %v", ok, err)
	}

	gone := newFake(t, reply(404, `{"name":"NotFoundError","data":{"message":"x"}}`))
	_, _, err = newTestClient(t, gone, nil).FindChild(context.Background(), "ses_p", "x")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("FindChild on a gone parent: %v", err)
	}
}

func TestFinalAssistantText(t *testing.T) {
	user := func(text string) Message {
		return Message{Info: MessageInfo{Role: "user"}, Parts: []Part{{Type: "text", Text: text}}}
	}
	asst := func(parts ...Part) Message { return Message{Info: MessageInfo{Role: "assistant"}, Parts: parts} }
	text := func(s string) Part { return Part{Type: "text", Text: s} }
	tests := []struct {
		name string
		msgs []Message
		want string
	}{
		{"none", nil, ""},
		{"only user", []Message{user("hi")}, ""},
		{"last assistant wins", []Message{user("a"), asst(text("first")), user("b"), asst(text("second"))}, "second"},
		{"assistant before a later user message", []Message{asst(text("reply")), user("next")}, "reply"},
		{"parts joined, non-text skipped", []Message{asst(text("one"), Part{Type: "tool", Tool: "bash"}, Part{Type: "reasoning", Text: "hmm"}, text("two"))}, "one\ntwo"},
		{"ignored parts skipped", []Message{asst(text("keep"), Part{Type: "text", Text: "drop", Ignored: true})}, "keep"},
		{"last assistant without text", []Message{asst(text("old")), asst(Part{Type: "step-finish"})}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FinalAssistantText(tt.msgs); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestToHostSessions(t *testing.T) {
	got := ToHostSessions(
		[]Session{{ID: "ses_a", Title: "A", Directory: "/d"}, {ID: "ses_b", ParentID: "ses_a"}, {ID: "ses_c"}},
		map[string]SessionStatus{"ses_a": {Type: StatusBusy}, "ses_c": {Type: StatusRetry}, "ses_x": {Type: StatusBusy}},
	)
	want := []messages.HostSession{
		{SessionID: "ses_a", Title: "A", Directory: "/d", Busy: true},
		{SessionID: "ses_b", ParentID: "ses_a"},
		{SessionID: "ses_c", Busy: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		want        string
	}{
		{"v2 health", 200, "application/json", `{"healthy":true}`, APIv2},
		{"no such route", 404, "text/plain", "Not Found", APIv1},
		{"web app HTML for unknown routes", 200, "text/html; charset=utf-8", "<!doctype html><html></html>", APIv1},
		{"JSON but not healthy", 200, "application/json", `{"healthy":false}`, APIv1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/health" {
					t.Errorf("path %q", r.URL.Path)
				}
				w.Header().Set("Content-Type", tt.contentType)
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			})
			got, err := newTestClient(t, f, nil).Detect(context.Background())
			if err != nil || got != tt.want {
				t.Fatalf("Detect = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	t.Run("server error is an error", func(t *testing.T) {
		f := newFake(t, reply(500, ""))
		if got, err := newTestClient(t, f, func(o *Options) { o.MaxAttempts = 1 }).Detect(context.Background()); !errors.Is(err, ErrServer) {
			t.Fatalf("Detect = %q, %v", got, err)
		}
	})
}
