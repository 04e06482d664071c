package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/thatch-run/thatch/e2e/fakemodel"
	"github.com/thatch-run/thatch/e2e/ocenv"
	"github.com/thatch-run/thatch/hosts/opencode"
)

// OpenCode is one `opencode serve` of a World, with a recorder of its
// event stream.
type OpenCode struct {
	w    *World
	Sess *gexec.Session
	// URL is the server's base URL; HostPort its host:port.
	URL      string
	HostPort string
	Dir      string
	Port     int
	hc       *http.Client

	mu     sync.Mutex
	events []Event
	stop   context.CancelFunc
	done   chan struct{}
}

// Event is one frame of the server's /event stream.
type Event struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
}

// Prop returns a top-level string property of the event.
func (e Event) Prop(name string) string {
	var m map[string]any
	_ = json.Unmarshal(e.Properties, &m)
	s, _ := m[name].(string)
	return s
}

// WriteOpenCodeConfig gives the world's project an opencode.json whose only
// provider is the fake model, with every tool allowed.
func WriteOpenCodeConfig(w *World, model *fakemodel.Server) {
	WriteOpenCodeConfigIn(w.Project, model)
}

// WriteOpenCodeConfigIn is WriteOpenCodeConfig for any project folder.
func WriteOpenCodeConfigIn(project string, model *fakemodel.Server) {
	Expect(ocenv.WriteProjectConfig(project, model.BaseURL(), fakemodel.ModelID)).To(Succeed())
}

var listening = regexp.MustCompile(`opencode server listening on (http://[0-9.]+:(\d+))`)

// StartOpenCode runs `opencode serve` on port (0: a free one) in the
// world's project, waits until it listens, loads the project's instance
// (which loads the plugin) and starts recording its events. Cleanup kills
// it by its PID.
func StartOpenCode(w *World, port int) *OpenCode {
	return StartOpenCodeIn(w, w.Project, port)
}

// StartOpenCodeIn is StartOpenCode for another project folder of the
// world; env entries are added to the world's environment.
func StartOpenCodeIn(w *World, project string, port int, env ...string) *OpenCode {
	Expect(bins.OpenCode).NotTo(BeEmpty(), "opencode is not installed: %s", bins.OpenCodeErr)
	if port == 0 {
		port = freePort()
	}
	cmd := exec.Command(bins.OpenCode, "serve", "--hostname", "127.0.0.1", "--port", strconv.Itoa(port), "--print-logs", "--log-level", "INFO")
	cmd.Env = withEnv(w.Env, env...)
	cmd.Dir = project
	prefix := fmt.Sprintf("[opencode:%d] ", port)
	sess, err := gexec.Start(cmd, gexec.NewPrefixedWriter(prefix, GinkgoWriter), gexec.NewPrefixedWriter(prefix, GinkgoWriter))
	Expect(err).NotTo(HaveOccurred())
	oc := &OpenCode{w: w, Sess: sess, Dir: project, hc: &http.Client{Timeout: 60 * time.Second}}
	DeferCleanup(oc.Kill)
	Eventually(sess.Out, 90*time.Second).Should(gbytes.Say(`opencode server listening on http://`))
	m := listening.FindStringSubmatch(string(sess.Out.Contents()))
	Expect(m).NotTo(BeNil())
	oc.URL = m[1]
	oc.Port, _ = strconv.Atoi(m[2])
	oc.HostPort = strings.TrimPrefix(oc.URL, "http://")
	Expect(oc.Port).To(Equal(port))
	oc.record()
	// The first request for the project's directory boots its instance,
	// which loads the plugin (and so registers this server).
	Eventually(func() error { return oc.call("GET", "/session", nil, nil) }, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
	return oc
}

// Kill stops the server with SIGKILL (by its PID) and its event recorder.
func (oc *OpenCode) Kill() {
	if oc.stop != nil {
		oc.stop()
		<-oc.done
		oc.stop = nil
	}
	if oc.Sess.ExitCode() == -1 {
		oc.Sess.Kill()
		Eventually(oc.Sess, 30*time.Second).Should(gexec.Exit())
	}
}

// record subscribes to /event and keeps every frame until Kill.
func (oc *OpenCode) record() {
	ctx, cancel := context.WithCancel(context.Background())
	oc.stop, oc.done = cancel, make(chan struct{})
	connected := make(chan struct{})
	var once sync.Once
	go func() {
		defer close(oc.done)
		ocenv.Follow(ctx, http.DefaultTransport, oc.url("/event"), func(data []byte) {
			var ev Event
			if json.Unmarshal(data, &ev) != nil {
				return
			}
			if ev.Type == "server.connected" {
				once.Do(func() { close(connected) })
			}
			oc.mu.Lock()
			oc.events = append(oc.events, ev)
			oc.mu.Unlock()
		})
	}()
	Eventually(connected, 2*time.Minute).Should(BeClosed())
}

// Events returns the recorded events of the given types (all when none).
func (oc *OpenCode) Events(types ...string) []Event {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	var out []Event
	for _, e := range oc.events {
		if len(types) == 0 || contains(types, e.Type) {
			out = append(out, e)
		}
	}
	return out
}

// Toasts returns the messages of the toasts shown so far.
func (oc *OpenCode) Toasts() []string {
	var out []string
	for _, e := range oc.Events("tui.toast.show") {
		out = append(out, e.Prop("message"))
	}
	return out
}

// TUICommands returns the TUI commands published so far.
func (oc *OpenCode) TUICommands() []string {
	var out []string
	for _, e := range oc.Events("tui.command.execute") {
		out = append(out, e.Prop("command"))
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (oc *OpenCode) url(path string) string {
	return oc.URL + path + "?" + url.Values{"directory": {oc.Dir}}.Encode()
}

// call sends a REST call to the server; out may be nil.
func (oc *OpenCode) call(method, path string, in, out any) error {
	return ocenv.CallJSON(oc.hc, method, oc.url(path), in, out)
}

// Session is a session as opencode lists it.
type Session struct {
	ID       string `json:"id"`
	ParentID string `json:"parentID"`
	Title    string `json:"title"`
}

// CreateSession creates a session (a child when parentID is set).
func (oc *OpenCode) CreateSession(parentID, title string) Session {
	in := map[string]any{}
	if parentID != "" {
		in["parentID"] = parentID
	}
	if title != "" {
		in["title"] = title
	}
	var s Session
	Expect(oc.call("POST", "/session", in, &s)).To(Succeed())
	Expect(s.ID).NotTo(BeEmpty())
	return s
}

// Prompt starts a turn in session id with text (prompt_async).
func (oc *OpenCode) Prompt(id, text string) {
	in := map[string]any{"parts": []map[string]any{{"type": "text", "text": text}}}
	Expect(oc.call("POST", "/session/"+id+"/prompt_async", in, nil)).To(Succeed())
}

// Command runs a slash command in session id, as the TUI does, without
// waiting for the turn it starts.
func (oc *OpenCode) Command(id, command, arguments string) {
	go func() {
		defer GinkgoRecover()
		err := oc.call("POST", "/session/"+id+"/command", map[string]any{"command": command, "arguments": arguments}, nil)
		if err != nil {
			fmt.Fprintf(GinkgoWriter, "command %s: %v\n", command, err)
		}
	}()
}

// Delete deletes session id.
func (oc *OpenCode) Delete(id string) {
	Expect(oc.call("DELETE", "/session/"+id, nil, nil)).To(Succeed())
}

// Summarize compacts session id with the fake model, as /compact does.
func (oc *OpenCode) Summarize(id string) {
	go func() {
		defer GinkgoRecover()
		err := oc.call("POST", "/session/"+id+"/summarize", map[string]any{"providerID": "fake", "modelID": fakemodel.ModelID}, nil)
		if err != nil {
			fmt.Fprintf(GinkgoWriter, "summarize: %v\n", err)
		}
	}()
}

// Sessions lists the project's sessions by id.
func (oc *OpenCode) Sessions() map[string]Session {
	var list []Session
	Expect(oc.call("GET", "/session", nil, &list)).To(Succeed())
	out := map[string]Session{}
	for _, s := range list {
		out[s.ID] = s
	}
	return out
}

// Children lists the children of parent.
func (oc *OpenCode) Children(parent string) []Session {
	var out []Session
	for _, s := range oc.Sessions() {
		if s.ParentID == parent {
			out = append(out, s)
		}
	}
	return out
}

// ChildrenTitled is a polling function: the ids of parent's children
// with title.
func (oc *OpenCode) ChildrenTitled(parent, title string) func() []string {
	return func() []string {
		var ids []string
		for _, s := range oc.Children(parent) {
			if s.Title == title {
				ids = append(ids, s.ID)
			}
		}
		return ids
	}
}

// Busy reports whether the server lists session id as busy.
func (oc *OpenCode) Busy(id string) bool {
	var st map[string]struct {
		Type string `json:"type"`
	}
	Expect(oc.call("GET", "/session/status", nil, &st)).To(Succeed())
	s, ok := st[id]
	return ok && s.Type != "idle"
}

// Idle is a polling function: session id is idle.
func (oc *OpenCode) Idle(id string) func() bool {
	return func() bool { return !oc.Busy(id) }
}

// Exists is a polling function: the server lists session id.
func (oc *OpenCode) Exists(id string) func() bool {
	return func() bool { _, ok := oc.Sessions()[id]; return ok }
}

// Idles counts the session.idle events of session id so far.
func (oc *OpenCode) Idles(id string) int {
	n := 0
	for _, e := range oc.Events("session.idle") {
		if e.Prop("sessionID") == id {
			n++
		}
	}
	return n
}

// WaitIdleAfter waits for a session.idle of id beyond the first n.
func (oc *OpenCode) WaitIdleAfter(id string, n int) {
	Eventually(func() int { return oc.Idles(id) }, 2*time.Minute, 100*time.Millisecond).Should(BeNumerically(">", n),
		"session %s never went idle", id)
}

// LastAssistantText returns the text of session id's final assistant
// message.
func (oc *OpenCode) LastAssistantText(id string) string {
	text, err := oc.lastText(id, "assistant")
	Expect(err).To(Succeed())
	return text
}

// LastUserText returns the text of session id's last user message, or ""
// while the messages cannot be read.
func (oc *OpenCode) LastUserText(id string) string {
	text, _ := oc.lastText(id, "user")
	return text
}

// lastText is the text of session id's last message of role, read the way
// thatch reads the final assistant text.
func (oc *OpenCode) lastText(id, role string) (string, error) {
	var msgs []opencode.Message
	if err := oc.call("GET", "/session/"+id+"/message", nil, &msgs); err != nil {
		return "", err
	}
	return opencode.LastText(msgs, role), nil
}

// withEnv returns base with the KEY=value entries of extra replacing those
// of the same key.
func withEnv(base []string, extra ...string) []string {
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		replaced := false
		for _, e := range extra {
			if ek, _, _ := strings.Cut(e, "="); ek == k {
				replaced = true
			}
		}
		if !replaced {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}
