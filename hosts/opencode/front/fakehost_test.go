package front_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/thatch-run/thatch/hosts/opencode"
	"github.com/thatch-run/thatch/hosts/opencode/front"
)

// errFakeHost is what a scripted failure of the fake host returns.
var errFakeHost = errors.New("fakehost: scripted failure")

// Names of the fake host's methods, as recorded in hostCall.Method.
const (
	mCreate  = "CreateSession"
	mFind    = "FindChild"
	mNoReply = "PromptNoReply"
	mAsync   = "PromptAsync"
	mDelete  = "DeleteSession"
	mMsgs    = "Messages"
	mToast   = "ShowToast"
	mExecTUI = "ExecuteTUICommand"
	mPubTUI  = "PublishTUICommand"
)

// hostCall is one call the executor made on the fake host, with its
// arguments. Err is what the call returned.
type hostCall struct {
	Method  string
	Session string // the session the call is about (the new one for CreateSession)
	Parent  string // CreateSession, FindChild
	Title   string // CreateSession, FindChild, ShowToast
	Text    string // prompts and toasts: the text or message
	Variant string // ShowToast
	Command string // TUI commands
	Err     error
}

func (c hostCall) String() string {
	return fmt.Sprintf("%s(session=%q parent=%q title=%q cmd=%q variant=%q err=%v)",
		c.Method, c.Session, c.Parent, c.Title, c.Command, c.Variant, c.Err)
}

// gate blocks one call of a method: the call announces itself on entered and
// waits for release or for its context to end (the runtime stopping). With
// after set, the host carries the call out before it blocks, so that only
// the answer is lost.
type gate struct {
	after   bool
	entered chan struct{}
	release chan struct{}
}

// Release lets the blocked call return.
func (g *gate) Release() { close(g.release) }

// fakeHost is a recording stand-in for an opencode server: it implements
// front.HostClient, records every call in order, and is scriptable. It
// keeps the sessions it created, so FindChild answers the way a real host
// would after a crash. It outlives the runtimes of a restart story, as a
// real host outlives thatch.
type fakeHost struct {
	mu       sync.Mutex
	calls    []hostCall
	next     int
	ids      []string // scripted ids for the next CreateSession calls
	sessions []opencode.Session
	deleted  map[string]bool
	fail     map[string]int // method -> how many of its next calls fail
	final    map[string]string
	gates    map[string]*gate
	onCall   func(hostCall)
	// listing, when set, is what the next listings show instead of the
	// sessions the host keeps, with busy naming the busy ones.
	listing []opencode.Session
	busy    map[string]bool
}

var _ front.HostClient = (*fakeHost)(nil)

func newFakeHost() *fakeHost {
	return &fakeHost{deleted: map[string]bool{}, fail: map[string]int{}, final: map[string]string{}, gates: map[string]*gate{}}
}

// ScriptIDs makes the next CreateSession calls return these ids, in order.
func (h *fakeHost) ScriptIDs(ids ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ids = append(h.ids, ids...)
}

// FailNext makes the next n calls of method fail with errFakeHost.
func (h *fakeHost) FailNext(method string, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fail[method] += n
}

// SetFinalText makes Messages of session end with an assistant message
// whose text is text.
func (h *fakeHost) SetFinalText(session, text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.final[session] = text
}

// Block arms a one-shot gate on the next call of method.
func (h *fakeHost) Block(method string, after bool) *gate {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := &gate{after: after, entered: make(chan struct{}), release: make(chan struct{})}
	h.gates[method] = g
	return g
}

// OnCall sets a hook run synchronously at every call, before the call is
// recorded and returns: a test uses it to look at the world at the moment
// of a host call.
func (h *fakeHost) OnCall(f func(hostCall)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.onCall = f
}

// Calls returns every call so far, in order.
func (h *fakeHost) Calls() []hostCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

// CallsOf returns the calls of method, in order.
func (h *fakeHost) CallsOf(method string) []hostCall {
	var out []hostCall
	for _, c := range h.Calls() {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Methods returns the method names of the calls so far, in order, leaving
// out the ones listed in skip.
func (h *fakeHost) Methods(skip ...string) []string {
	var out []string
	for _, c := range h.Calls() {
		if !slices.Contains(skip, c.Method) {
			out = append(out, c.Method)
		}
	}
	return out
}

// Remove deletes a session on the host without recording a call: it is
// the user (or the task tool) deleting it, not thatch.
func (h *fakeHost) Remove(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.deleted[id] = true
}

// Children lists the live sessions the host holds under parent with title.
func (h *fakeHost) Children(parent, title string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, s := range h.sessions {
		if s.ParentID == parent && s.Title == title && !h.deleted[s.ID] {
			out = append(out, s.ID)
		}
	}
	return out
}

// begin records a call and decides its fate: the scripted failure, and the
// gate to wait at (nil when none).
func (h *fakeHost) begin(c hostCall) (fail bool, g *gate) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fail[c.Method] > 0 {
		h.fail[c.Method]--
		fail = true
	}
	if g = h.gates[c.Method]; g != nil {
		delete(h.gates, c.Method)
	}
	return fail, g
}

// finish runs the hook, then records the call: whoever sees the call in
// Calls also sees what the hook wrote.
func (h *fakeHost) finish(c hostCall) {
	h.mu.Lock()
	hook := h.onCall
	h.mu.Unlock()
	if hook != nil {
		hook(c)
	}
	h.mu.Lock()
	h.calls = append(h.calls, c)
	h.mu.Unlock()
}

// wait blocks at g until it is released or ctx ends.
func wait(ctx context.Context, g *gate) error {
	close(g.entered)
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// do runs one call: scripted failure, gate, effect, record.
func (h *fakeHost) do(ctx context.Context, c hostCall, effect func(*hostCall)) error {
	fail, g := h.begin(c)
	if g != nil && !g.after {
		if err := wait(ctx, g); err != nil {
			c.Err = err
			h.finish(c)
			return err
		}
	}
	if fail {
		c.Err = errFakeHost
		h.finish(c)
		return c.Err
	}
	if effect != nil {
		effect(&c)
	}
	if g != nil && g.after {
		if err := wait(ctx, g); err != nil {
			c.Err = err // carried out, but the answer is lost
			h.finish(c)
			return err
		}
	}
	h.finish(c)
	return nil
}

func (h *fakeHost) CreateSession(ctx context.Context, parentID, title string) (opencode.Session, error) {
	var s opencode.Session
	err := h.do(ctx, hostCall{Method: mCreate, Parent: parentID, Title: title}, func(c *hostCall) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.next++
		id := fmt.Sprintf("ses_child%02d", h.next)
		if len(h.ids) > 0 {
			id, h.ids = h.ids[0], h.ids[1:]
		}
		s = opencode.Session{ID: id, ParentID: parentID, Title: title, Time: opencode.SessionTime{Created: int64(h.next)}}
		h.sessions = append(h.sessions, s)
		c.Session = id
	})
	if err != nil {
		return opencode.Session{}, err
	}
	return s, nil
}

func (h *fakeHost) FindChild(ctx context.Context, parentID, title string) (opencode.Session, bool, error) {
	var found opencode.Session
	var ok bool
	err := h.do(ctx, hostCall{Method: mFind, Parent: parentID, Title: title}, func(c *hostCall) {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, s := range h.sessions {
			if s.ParentID == parentID && s.Title == title && !h.deleted[s.ID] {
				found, ok = s, true
				c.Session = s.ID
				return
			}
		}
	})
	return found, ok, err
}

func (h *fakeHost) PromptNoReply(ctx context.Context, sessionID, text string) error {
	return h.do(ctx, hostCall{Method: mNoReply, Session: sessionID, Text: text}, nil)
}

func (h *fakeHost) PromptAsync(ctx context.Context, sessionID, text string) error {
	return h.do(ctx, hostCall{Method: mAsync, Session: sessionID, Text: text}, nil)
}

func (h *fakeHost) DeleteSession(ctx context.Context, sessionID string) error {
	return h.do(ctx, hostCall{Method: mDelete, Session: sessionID}, func(*hostCall) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.deleted[sessionID] = true
	})
}

func (h *fakeHost) Messages(ctx context.Context, sessionID string) ([]opencode.Message, error) {
	var out []opencode.Message
	err := h.do(ctx, hostCall{Method: mMsgs, Session: sessionID}, func(*hostCall) {
		h.mu.Lock()
		defer h.mu.Unlock()
		out = []opencode.Message{
			{Info: opencode.MessageInfo{ID: "msg_1", SessionID: sessionID, Role: "user"},
				Parts: []opencode.Part{{ID: "prt_1", Type: "text", Text: "/thatch/wrap-up checklist"}}},
		}
		if text, ok := h.final[sessionID]; ok {
			out = append(out, opencode.Message{Info: opencode.MessageInfo{ID: "msg_2", SessionID: sessionID, Role: "assistant"},
				Parts: []opencode.Part{{ID: "prt_2", Type: "text", Text: text}}})
		}
	})
	return out, err
}

func (h *fakeHost) ShowToast(ctx context.Context, title, message, variant string) error {
	return h.do(ctx, hostCall{Method: mToast, Title: title, Text: message, Variant: variant}, nil)
}

func (h *fakeHost) ExecuteTUICommand(ctx context.Context, command string) error {
	return h.do(ctx, hostCall{Method: mExecTUI, Command: command}, nil)
}

func (h *fakeHost) PublishTUICommand(ctx context.Context, command string) error {
	return h.do(ctx, hostCall{Method: mPubTUI, Command: command}, nil)
}

// AddSession makes the host list s, as a session that exists on it
// without thatch having created it (or seen it created).
func (h *fakeHost) AddSession(s opencode.Session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sessions = append(h.sessions, s)
}

// ListSessions lists the sessions the host has and has not deleted, for a
// reconcile. It is not recorded as a call.
func (h *fakeHost) ListSessions(context.Context) ([]opencode.Session, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.listing != nil {
		return append([]opencode.Session(nil), h.listing...), nil
	}
	var out []opencode.Session
	for _, s := range h.sessions {
		if !h.deleted[s.ID] {
			out = append(out, s)
		}
	}
	return out, nil
}

// SessionStatus reports the sessions a scripted listing marks busy; every
// other session is idle: the fake runs no model.
func (h *fakeHost) SessionStatus(context.Context) (map[string]opencode.SessionStatus, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]opencode.SessionStatus{}
	for id, busy := range h.busy {
		if busy {
			out[id] = opencode.SessionStatus{Type: "busy"}
		}
	}
	return out, nil
}

// ListOnly scripts the host's listings: from now on it lists exactly
// sessions, with the busy ones marked, as a reconnecting host would show
// them.
func (h *fakeHost) ListOnly(sessions []opencode.Session, busy map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.listing, h.busy = sessions, busy
}
