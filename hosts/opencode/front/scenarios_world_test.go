package front_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/thatch-run/thatch"
	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/opencode/front"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// hostName is the name the fake host is registered under; every host event
// and plugin call names it.
const hostName = "fake"

// epoch is where every story's clock starts.
var epoch = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// world is one story: a data directory, the fake host (which outlives
// restarts, as a real opencode server outlives thatch), and the runtime
// currently running on that directory with its fake clock.
type world struct {
	dir   string
	cfg   *config.Config
	host  *fakeHost
	clock *actors.FakeClock
	rt    *thatch.Runtime
	oc    *front.FrontEnd
	// runtimes are every runtime started, stopped at cleanup.
	runtimes []*thatch.Runtime
	token    string
	http     *http.Client
	// configure, when set, changes each runtime's config before it starts.
	configure func(*config.Config)
}

// withParent is a new world whose parent ses_p is created and buffered n
// tool calls, a-1..a-n.
func withParent(n int) *world {
	GinkgoHelper()
	w := newWorld()
	w.parentCreated("ses_p")
	w.tools("ses_p", "a", n)
	return w
}

// fetchingExtraction starts an extraction of ses_p and has its child fetch
// the payload, which must hold n calls; it returns the child id.
func (w *world) fetchingExtraction(n int) string {
	GinkgoHelper()
	x := w.extraction("ses_p")
	Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(n))
	return x
}

// newWorld starts a runtime on a fresh data directory.
func newWorld() *world { return newWorldIn(GinkgoT().TempDir()) }

// newWorldIn starts a runtime on the data directory dir.
func newWorldIn(dir string) *world { return newWorldWith(dir, nil) }

// newWorldWith starts a runtime on the data directory dir whose config
// configure changes (nil: none).
func newWorldWith(dir string, configure func(*config.Config)) *world {
	w := &world{dir: dir, host: newFakeHost(), http: &http.Client{Timeout: 30 * time.Second}, configure: configure}
	w.clock = actors.NewFakeClock(epoch)
	// One cleanup for every runtime the story starts: a restart inside an
	// It of an Ordered story must not stop the runtime when that It ends.
	DeferCleanup(func() {
		for _, rt := range w.runtimes {
			_ = rt.Stop(context.Background())
		}
	})
	w.start()
	return w
}

// start runs a new runtime on the world's directory. The runtime is
// stopped when the world's spec (or Ordered story) ends, whatever happens.
func (w *world) start() {
	GinkgoHelper()
	w.start2(map[string]front.HostInfo{hostName: {Client: w.host, API: "v1"}})
}

// start2 is start with the hosts given.
func (w *world) start2(hosts map[string]front.HostInfo) {
	GinkgoHelper()
	cfg := config.Defaults()
	cfg.Data.Dir = w.dir
	cfg.Control.TokenFile = filepath.Join(w.dir, "control.token")
	cfg.Control.StateFile = filepath.Join(w.dir, "control.json")
	cfg.Log.Level = "debug"
	// No strand sweep unless a story arms it: a sweep must never act on a
	// real opencode database by mistake.
	cfg.Sweep.Strand = false
	if w.configure != nil {
		w.configure(cfg)
	}
	Expect(cfg.Validate()).To(Succeed())
	w.cfg = cfg
	logger := hclog.New(&hclog.LoggerOptions{Name: "thatch", Level: hclog.Debug, Output: GinkgoWriter})
	oc := front.New(cfg, front.Options{Hosts: hosts})
	rt, err := thatch.New(cfg, thatch.Options{
		Clock:     w.clock,
		Logger:    logger,
		FrontEnds: []frontend.FrontEnd{oc},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(rt.Start(context.Background())).To(Succeed())
	w.runtimes = append(w.runtimes, rt)
	w.rt, w.oc = rt, oc
	tok, err := os.ReadFile(cfg.Control.TokenFile)
	Expect(err).NotTo(HaveOccurred())
	w.token = strings.TrimSpace(string(tok))
}

// stop stops the running runtime: everything it acknowledged is durable.
func (w *world) stop() {
	GinkgoHelper()
	Expect(w.rt.Stop(context.Background())).To(Succeed())
}

// restart stops the runtime and starts a new one on the same directory,
// with a fresh clock that carries on from the old one's time (timers do not
// survive a restart).
func (w *world) restart() {
	GinkgoHelper()
	w.restartWith(map[string]front.HostInfo{hostName: {Client: w.host, API: "v1"}})
}

// restartWith is restart with the hosts given.
func (w *world) restartWith(hosts map[string]front.HostInfo) {
	GinkgoHelper()
	w.stop()
	w.clock = actors.NewFakeClock(w.clock.Now())
	w.start2(hosts)
}

// idleBlocked delivers session's idle while the host holds the call of
// method (before it takes effect, or after when after is set), and returns
// once the call is held: a crash now falls between journal and host call.
func (w *world) idleBlocked(session, method string, after bool) *gate {
	GinkgoHelper()
	g := w.host.Block(method, after)
	w.idle(session)
	Eventually(g.entered).Should(BeClosed())
	return g
}

// Host events, delivered as the host's event stream would. Each returns
// once the family journaled the event.

func (w *world) deliver(msg any) {
	GinkgoHelper()
	Expect(w.oc.DeliverHostEvent(msg)).To(Succeed())
}

func (w *world) parentCreated(id string) {
	GinkgoHelper()
	w.deliver(&messages.SessionCreated{Host: hostName, SessionID: id, Title: "a parent", Directory: "/src/project"})
}

func (w *world) childCreated(id, parent, title string) {
	GinkgoHelper()
	w.deliver(&messages.SessionCreated{Host: hostName, SessionID: id, ParentID: parent, Title: title})
}

func (w *world) idle(id string) {
	GinkgoHelper()
	w.deliver(&messages.SessionIdle{Host: hostName, SessionID: id})
}

func (w *world) errored(id string) {
	GinkgoHelper()
	w.deliver(&messages.SessionErrored{Host: hostName, SessionID: id, Error: "provider error"})
}

func (w *world) deleted(id string) {
	GinkgoHelper()
	w.deliver(&messages.SessionDeleted{Host: hostName, SessionID: id})
}

func (w *world) compacted(id string) {
	GinkgoHelper()
	w.deliver(&messages.SessionCompacted{Host: hostName, SessionID: id})
}

// memory reports a successful memory_remember / memory_forget in caller.
func (w *world) memory(caller string, op messages.MemoryOp) {
	GinkgoHelper()
	w.deliver(&messages.MemoryWritten{CallerID: caller, Op: op})
}

// Plugin calls, through the control API with the bearer token.

// post sends body to path and decodes the JSON answer into out (when not
// nil); it returns the raw answer.
func (w *world) post(path string, body any, out any) []byte {
	GinkgoHelper()
	b, err := json.Marshal(body)
	Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequest(http.MethodPost, "http://"+w.rt.ControlAddr()+path, bytes.NewReader(b))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+w.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := w.http.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(res.StatusCode).To(Equal(http.StatusOK), "POST %s answered %s", path, raw)
	if out != nil {
		Expect(json.Unmarshal(raw, out)).To(Succeed(), "answer %s", raw)
	}
	return raw
}

// tool reports one executed tool call of session (tool.execute.after).
func (w *world) tool(sessionID, callID, tool, args, output string) {
	GinkgoHelper()
	w.post("/v1/opencode/tool", map[string]any{
		"host": hostName, "sessionID": sessionID, "callID": callID, "tool": tool,
		"args": json.RawMessage(args), "title": tool + " " + callID, "output": output,
	}, nil)
}

// tools reports n ordinary tool calls of session, with call ids
// prefix-1 .. prefix-n.
func (w *world) tools(sessionID, prefix string, n int) {
	GinkgoHelper()
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		w.tool(sessionID, id, "bash", `{"command":"make test"}`, "output of "+id)
	}
}

// command reports a slash command about to run (command.execute.before).
func (w *world) command(sessionID, cmd string) {
	GinkgoHelper()
	w.post("/v1/opencode/command", map[string]any{"host": hostName, "sessionID": sessionID, "command": cmd}, nil)
}

// payload is what thatch_get_extraction_payload returns.
type payload struct {
	Interactions []messages.Interaction `json:"interactions"`
	ProjectStore string                 `json:"projectStore"`
	GlobalStore  string                 `json:"globalStore"`
	// Note says the extractor sees only a tail of the session.
	Note string `json:"note"`
}

// callIDs lists the interactions' call ids, in payload order.
func (p *payload) callIDs() []string {
	if p == nil {
		return nil
	}
	out := make([]string, 0, len(p.Interactions))
	for _, in := range p.Interactions {
		out = append(out, in.ID)
	}
	return out
}

// fetch calls thatch_get_extraction_payload from caller with the optional
// session_id target; nil means the tool returned null.
func (w *world) fetch(caller, target string) *payload {
	GinkgoHelper()
	var p *payload
	raw := w.post("/v1/opencode/payload", map[string]string{"sessionID": caller, "target": target}, &p)
	if p != nil {
		Expect(p.Interactions).NotTo(BeEmpty(), "a non-null payload must hold interactions: %s", raw)
	}
	return p
}

// done calls thatch_extraction_done from caller and returns how many
// entries it completed.
func (w *world) done(caller string) int {
	GinkgoHelper()
	var ack messages.ExtractionAcked
	w.post("/v1/opencode/done", map[string]string{"sessionID": caller}, &ack)
	return ack.Completed
}

// view is the family's status view, as `thatch status --json` shows it.
func (w *world) view(parent string) ocfamily.StatusView {
	GinkgoHelper()
	v, err := w.tryView(parent)
	Expect(err).NotTo(HaveOccurred())
	return v
}

func (w *world) tryView(parent string) (ocfamily.StatusView, error) {
	var v ocfamily.StatusView
	view, err := w.oc.Inspect(parent)
	if err != nil {
		return v, err
	}
	if view == nil {
		return v, fmt.Errorf("family %s shows no status view", parent)
	}
	b, err := json.Marshal(view)
	if err != nil {
		return v, err
	}
	return v, json.Unmarshal(b, &v)
}

// child returns the view of one child of parent, and whether it is known.
func (w *world) child(parent, id string) (ocfamily.ChildView, bool) {
	GinkgoHelper()
	for _, c := range w.view(parent).Children {
		if c.SessionID == id {
			return c, true
		}
	}
	return ocfamily.ChildView{}, false
}

// Polled observations, for Eventually/Consistently.

func (w *world) callsOf(method string) func() []hostCall {
	return func() []hostCall { return w.host.CallsOf(method) }
}

func (w *world) countOf(method string) func() int {
	return func() int { return len(w.host.CallsOf(method)) }
}

// never asserts that f matches m once the runtime is quiescent: every
// effect released so far has run and every result was handled, so nothing
// more happens without new input (a timer the fake clock has not reached
// is input). It is the way a spec says that something did NOT happen,
// without a time window that would prove nothing on a loaded machine.
// f is a function of no arguments with one result.
func (w *world) never(f any, m types.GomegaMatcher, why string) {
	GinkgoHelper()
	Expect(w.rt.Quiesce(30 * time.Second)).To(Succeed())
	Expect(reflect.ValueOf(f).Call(nil)[0].Interface()).To(m, why)
}

// createsFor lists the successful CreateSession calls under parent.
func (w *world) createsFor(parent string) []hostCall {
	var out []hostCall
	for _, c := range w.host.CallsOf(mCreate) {
		if c.Parent == parent && c.Err == nil {
			out = append(out, c)
		}
	}
	return out
}

// promptsTo lists the PromptAsync calls to session.
func (w *world) promptsTo(id string) func() []hostCall {
	return func() []hostCall {
		var out []hostCall
		for _, c := range w.host.CallsOf(mAsync) {
			if c.Session == id {
				out = append(out, c)
			}
		}
		return out
	}
}

// extraction drives the parent's idle to an extraction: it waits until an
// extraction child is prompted. A child the host newly created is reported
// with its session.created, as a real host's event stream would (a child
// reused through FindChild was reported when it was made). It returns the
// child id.
func (w *world) extraction(parent string) string {
	GinkgoHelper()
	before := len(w.host.CallsOf(mAsync))
	w.idle(parent)
	var child string
	Eventually(func() string {
		for _, c := range w.host.CallsOf(mAsync)[before:] {
			if c.Err == nil && c.Session != parent {
				child = c.Session
			}
		}
		return child
	}).ShouldNot(BeEmpty(), "the parent's idle prompts an extraction child")
	for _, c := range w.createsFor(parent) {
		if c.Session == child {
			Expect(c.Title).To(Equal(ocfamily.ExtractionTitle))
			w.childCreated(child, parent, ocfamily.ExtractionTitle)
		}
	}
	Expect(w.promptsTo(child)()[len(w.promptsTo(child)())-1].Text).To(ContainSubstring(parent))
	return child
}

// hostDeletes deletes a session on the host, which reports session.deleted.
func (w *world) hostDeletes(id string) {
	GinkgoHelper()
	w.host.Remove(id)
	w.deleted(id)
}
