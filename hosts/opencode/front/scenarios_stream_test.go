package front_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/opencode"
)

// streamHost is an opencode server on loopback with a real event stream,
// for what the recording fake cannot show: what a stream's own goroutine
// waits for. It serves GET /event (server.connected, then the frames a
// story pushes, and a heartbeat every 100 ms so that the stream's
// watchdog never reconnects), lists the sessions it was given, can hold
// its next listing, and answers every other call with success.
type streamHost struct {
	srv    *httptest.Server
	frames chan string

	mu       sync.Mutex
	sessions []opencode.Session
	calls    []string // "METHOD path" of every call but the stream's
	hold     *gate    // holds the next listing
}

func newStreamHost(sessions ...opencode.Session) *streamHost {
	h := &streamHost{frames: make(chan string, 16), sessions: sessions}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	return h
}

func (h *streamHost) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/event" {
		h.stream(w, r)
		return
	}
	h.mu.Lock()
	h.calls = append(h.calls, r.Method+" "+r.URL.Path)
	var hold *gate
	if r.Method == http.MethodGet && r.URL.Path == "/session" {
		hold, h.hold = h.hold, nil
	}
	sessions := append([]opencode.Session(nil), h.sessions...)
	h.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/session":
		if hold != nil {
			close(hold.entered)
			select {
			case <-hold.release:
			case <-r.Context().Done():
				return
			}
		}
		_ = json.NewEncoder(w).Encode(sessions)
	case r.Method == http.MethodGet && r.URL.Path == "/session/status":
		fmt.Fprint(w, "{}") // every session idle
	default:
		fmt.Fprint(w, "true")
	}
}

func (h *streamHost) stream(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	write := func(data string) bool {
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write(`{"type":"server.connected","properties":{}}`) {
		return
	}
	beat := time.NewTicker(100 * time.Millisecond)
	defer beat.Stop()
	for {
		select {
		case f := <-h.frames:
			if !write(f) {
				return
			}
		case <-beat.C:
			if !write(`{"type":"server.heartbeat","properties":{}}`) {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

// push sends one event frame down the stream.
func (h *streamHost) push(typ, props string) {
	h.frames <- fmt.Sprintf(`{"type":%q,"properties":%s}`, typ, props)
}

// holdNextListing makes the next GET /session wait until released.
func (h *streamHost) holdNextListing() *gate {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hold = &gate{entered: make(chan struct{}), release: make(chan struct{})}
	return h.hold
}

// Calls lists the calls made so far, but the stream's.
func (h *streamHost) Calls() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.calls...)
}

var _ = Describe("A host's event stream", func() {
	It("reads on while a session it moved to the host is reconciled there, and the session's events wait for that", func() {
		sh := newStreamHost(
			opencode.Session{ID: "ses_old", Title: "from before thatch", Directory: "/src/old"},
			opencode.Session{ID: "ses_old_task", ParentID: "ses_old", Title: "explore", Directory: "/src/old"},
		)
		DeferCleanup(sh.srv.Close) // after the runtime stops: cleanups run last first
		w := newWorldWith(GinkgoT().TempDir(), func(cfg *config.Config) {
			cfg.OpenCode.Servers = []config.Server{{Name: "live", URL: sh.srv.URL, API: config.APIV1, Username: config.DefaultServerUsername}}
			// A reconcile on the stream's goroutine would hold the stream
			// up for as long as this: far longer than any wait here.
			cfg.OpenCode.RequestTimeout = 10 * time.Minute
		})
		// The connect's own reconcile (a listing, then the statuses) runs
		// on the stream before any event; the hold must not catch it.
		Eventually(sh.Calls).Should(ContainElement("GET /session/status"))

		By("the first event of a session thatch never met moves it to the host: its reconcile starts and hangs")
		listing := sh.holdNextListing()
		sh.push("session.idle", `{"sessionID":"ses_old"}`)
		Eventually(listing.entered).Should(BeClosed())

		By("the stream reads on: another session's creation reaches its family, which sends its reminder")
		sh.push("session.idle", `{"sessionID":"ses_old"}`) // waits with the first
		sh.push("session.created", `{"sessionID":"ses_new","info":{"id":"ses_new","title":"new","directory":"/src/new"}}`)
		Eventually(sh.Calls).Should(ContainElement("POST /session/ses_new/message"))
		Expect(w.view("ses_new").Host).To(Equal("live"))
		_, host, dir := w.oc.RoutingForTest("ses_new")
		Expect([]string{host, dir}).To(Equal([]string{"live", "/src/new"}))

		By("the moved session's own events wait for its reconcile")
		seq, err := w.oc.JournalForTest().HighestSeq(actors.Identity{Kind: ocfamily.KindName, ID: "ses_old"})
		Expect(err).NotTo(HaveOccurred())
		Expect(seq).To(BeZero(), "nothing of ses_old is journaled while its listing is held")

		By("once the listing answers, the reconcile (an effect the quiescence barrier waits for) records the child it shows")
		listing.Release()
		Expect(w.rt.Quiesce(30 * time.Second)).To(Succeed())
		c, ok := w.child("ses_old", "ses_old_task")
		Expect(ok).To(BeTrue(), "the reconcile recorded the task child its listing shows")
		Expect(c.Kind).To(Equal(ocfamily.ChildTask))
		Expect(w.view("ses_old").Host).To(Equal("live"))
	})
})
