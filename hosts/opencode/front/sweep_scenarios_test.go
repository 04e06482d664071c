package front_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch"
	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/actors/sweeper"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/opencode"
	"github.com/thatch-run/thatch/hosts/opencode/front"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// strandHost is the fake host with the strand sweep's endpoints: a
// project listing, the project's checkout, and a recorded move.
type strandHost struct {
	*fakeHost
	mu       sync.Mutex
	rows     []opencode.Session
	checkout string
	moves    map[string]string
}

func (s *strandHost) ListSessionsIn(context.Context, string) ([]opencode.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]opencode.Session(nil), s.rows...), nil
}

func (s *strandHost) Projects(context.Context) ([]opencode.Project, error) {
	return []opencode.Project{{ID: "prj", Worktree: s.checkout}}, nil
}

func (s *strandHost) MoveSession(_ context.Context, id, dir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.moves[id] = dir
	for i := range s.rows {
		if s.rows[i].ID == id {
			s.rows[i].Directory = dir
		}
	}
	return nil
}

// DeleteSession records the call on the fake host and drops the row, as a
// real host would.
func (s *strandHost) DeleteSession(ctx context.Context, id string) error {
	s.mu.Lock()
	for i := range s.rows {
		if s.rows[i].ID == id {
			s.rows = append(s.rows[:i], s.rows[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	return s.fakeHost.DeleteSession(ctx, id)
}

func (s *strandHost) moved() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for k, v := range s.moves {
		out[k] = v
	}
	return out
}

var _ front.StrandHost = (*strandHost)(nil)

// startSweepWorld starts the world's runtime with the config edited (the
// other stories run the defaults) and the given host.
func startSweepWorld(w *world, host front.HostInfo, edit func(*config.Config)) {
	GinkgoHelper()
	cfg := config.Defaults()
	cfg.Data.Dir = w.dir
	cfg.Control.TokenFile = filepath.Join(w.dir, "control.token")
	cfg.Control.StateFile = filepath.Join(w.dir, "control.json")
	edit(cfg)
	Expect(cfg.Validate()).To(Succeed())
	w.cfg = cfg
	logger := hclog.New(&hclog.LoggerOptions{Name: "thatch", Level: hclog.Debug, Output: GinkgoWriter})
	oc := front.New(cfg, front.Options{Hosts: map[string]front.HostInfo{hostName: host}})
	rt, err := thatch.New(cfg, thatch.Options{Clock: w.clock, Logger: logger, FrontEnds: []frontend.FrontEnd{oc}})
	Expect(err).NotTo(HaveOccurred())
	Expect(rt.Start(context.Background())).To(Succeed())
	w.runtimes = append(w.runtimes, rt)
	w.rt, w.oc = rt, oc
	tok, err := os.ReadFile(cfg.Control.TokenFile)
	Expect(err).NotTo(HaveOccurred())
	w.token = strings.TrimSpace(string(tok))
}

// sweepWorld is a world whose runtime runs with edit applied.
func sweepWorld(client func(*fakeHost) front.HostClient, edit func(*config.Config)) *world {
	GinkgoHelper()
	w := &world{dir: GinkgoT().TempDir(), host: newFakeHost(), http: &http.Client{Timeout: 30 * time.Second}}
	w.clock = actors.NewFakeClock(epoch)
	DeferCleanup(func() {
		for _, rt := range w.runtimes {
			_ = rt.Stop(context.Background())
		}
	})
	startSweepWorld(w, front.HostInfo{Client: client(w.host), API: "v1"}, edit)
	return w
}

// restartSweepWorld stops the world's runtime and starts a new one on the
// same directory and config edit, with host, as a daemon restart does
// (timers do not survive it; the clock carries on). The host has not
// reconnected yet: ReconcileHost is its reconnect.
func restartSweepWorld(w *world, host front.HostInfo, edit func(*config.Config)) {
	GinkgoHelper()
	w.stop()
	w.clock = actors.NewFakeClock(w.clock.Now())
	startSweepWorld(w, host, edit)
}

// droppedIDs are the families a runtime-state report dropped.
func droppedIDs(r *messages.SweepReport) []string {
	var ids []string
	if r != nil {
		for _, it := range r.Dropped {
			ids = append(ids, it.ID)
		}
	}
	return ids
}

// skipped are the items a report skipped (or kept), with the reasons.
func skipped(r *messages.SweepReport) []messages.SweepItem {
	if r == nil {
		return nil
	}
	return r.Skipped
}

// passivate lets every effect in flight finish (a family does not
// passivate while one of its effects runs), advances the clock past the
// passivation timeout and waits until no family is awake, so that the next
// sweep round sees them as passivated state rather than state being
// written. (Advancing the clock by hours at once fires the passivation and
// a sweep round together, and the round may come first.)
func passivate(w *world) {
	GinkgoHelper()
	Expect(w.rt.Quiesce(30*time.Second)).To(Succeed(), "the effects in flight finish")
	w.clock.Advance(w.cfg.Actors.PassivateAfter + time.Minute)
	Eventually(w.oc.LiveFamiliesForTest).Should(BeEmpty(), "the families passivate")
}

// sweepViews are the sweeps the opencode front end's status report shows.
func sweepViews(st *thatch.Status) []sweeper.SweepView {
	sweeps, _ := st.FrontEnds[front.Name].Details["sweepers"].([]sweeper.SweepView)
	return sweeps
}

// lastReport is the newest report of a sweep in status.
func lastReport(w *world, sweep string) func() *messages.SweepReport {
	return func() *messages.SweepReport {
		st, err := w.rt.StatusReport()
		if err != nil {
			return nil
		}
		for _, s := range sweepViews(st) {
			if s.Sweeper == sweep {
				return s.Last
			}
		}
		return nil
	}
}

func knownFamily(w *world, id string) func() bool {
	return func() bool {
		found := false
		_ = w.oc.JournalForTest().EntityIDs(ocfamily.KindName, func(e persistence.Identity) error {
			found = found || e.ID == id
			return nil
		})
		return found
	}
}

var _ = Describe("Runtime-state sweep", func() {
	const ttl = 24 * time.Hour
	var w *world
	edit := func(c *config.Config) {
		c.Sweep.Interval = time.Hour
		c.Sweep.RuntimeStateTTL = ttl
		c.Sweep.Strand = false
	}
	BeforeEach(func() {
		w = sweepWorld(func(h *fakeHost) front.HostClient { return h }, edit)
	})

	It("keeps the state a resumed opencode inherited, and ages the same state out under a configured server", func() {
		w.parentCreated("ses_p")
		w.tools("ses_p", "a", 2)
		w.host.AddSession(opencode.Session{ID: "ses_p", Title: "a parent", Directory: "/src/project"})

		By("the daemon restarts, and the opencode process resumed with the session (opencode -s) registers")
		resumed := front.HostInfo{Client: w.host, API: "v1", PID: os.Getpid()}
		restartSweepWorld(w, resumed, edit)
		Expect(w.oc.ReconcileHost(context.Background(), hostName)).To(Succeed())
		passivate(w) // the reconcile woke the family: a live one is kept for that
		w.clock.Advance(ttl + 2*time.Hour)
		Eventually(lastReport(w, messages.SweepRuntime)).Should(WithTransform(skipped,
			ContainElement(HaveField("ID", "ses_p"))))
		r := lastReport(w, messages.SweepRuntime)()
		Expect(r.Skipped[0].Reason).To(ContainSubstring("inherited"))
		Expect(r.Skipped[0].Host).To(Equal(hostName))
		w.never(knownFamily(w, "ses_p"), BeTrue(), "the inherited state stays past the TTL")

		By("the same state under a configured `opencode serve`, which resumes nothing")
		restartSweepWorld(w, front.HostInfo{Client: w.host, API: "v1"}, edit)
		Expect(w.oc.ReconcileHost(context.Background(), hostName)).To(Succeed())
		passivate(w)
		w.clock.Advance(2 * time.Hour)
		Eventually(knownFamily(w, "ses_p")).Should(BeFalse(), "nothing inherited it now: the TTL applies")
	})

	It("keeps a family whose extraction child the journal holds until the reconnect finished the child through the host, then drops it", func() {
		// A TTL shorter than the stale window (15 minutes), so that the
		// round comes while the child still holds its claim.
		short := func(c *config.Config) {
			edit(c)
			c.Sweep.Interval = time.Minute
			c.Sweep.RuntimeStateTTL = 5 * time.Minute
		}
		host := front.HostInfo{Client: w.host, API: "v1"}
		restartSweepWorld(w, host, short)
		w.parentCreated("ses_p")
		w.tools("ses_p", "a", 2)
		x := w.fetchingExtraction(2)      // the child holds the claim; then the daemon dies
		restartSweepWorld(w, host, short) // the host has not reconnected yet
		w.clock.Advance(6 * time.Minute)
		Eventually(lastReport(w, messages.SweepRuntime)).Should(WithTransform(skipped,
			ContainElement(HaveField("Reason", ContainSubstring("unfinished work")))))
		Expect(knownFamily(w, "ses_p")()).To(BeTrue(), "past the TTL, but its child still holds a claim")
		Expect(w.callsOf(mDelete)()).To(BeEmpty())

		By("the host comes back and lists the child idle: the rehydrated family finishes it")
		w.reconcile(false, extractionChild(x, false))
		w.clock.Advance(finishGrace)
		Eventually(w.callsOf(mDelete)).Should(ConsistOf(HaveField("Session", x)), "the child is finished through the host")
		passivate(w)
		w.clock.Advance(time.Minute)
		Eventually(knownFamily(w, "ses_p")).Should(BeFalse(), "with nothing unfinished, the TTL drops it")
	})

	It("drops state nobody wrote for the TTL, and a swept session writes it again on its next tool call", func() {
		w.parentCreated("ses_p")
		w.tools("ses_p", "a", 2)
		w.clock.Advance(ttl - 2*time.Hour)
		w.never(knownFamily(w, "ses_p"), BeTrue(), "state written within the TTL stays")

		// A live family is not swept: the round past the TTL must find it
		// passivated, whichever of its timers fires first.
		passivate(w)
		w.clock.Advance(3 * time.Hour)
		Eventually(knownFamily(w, "ses_p")).Should(BeFalse(), "the sweep dropped the silent family's journal")
		Eventually(lastReport(w, messages.SweepRuntime)).Should(WithTransform(droppedIDs, ContainElement("ses_p")))

		w.tools("ses_p", "b", 1)
		Expect(w.view("ses_p").Pending).To(Equal(1), "the next tool call writes the state again")
		w.clock.Advance(ttl - 2*time.Hour)
		w.never(knownFamily(w, "ses_p"), BeTrue(), "and its TTL starts again from that call")
	})

	It("drops state whose directory no longer exists, and keeps state whose directory never existed here", func() {
		dir := filepath.Join(GinkgoT().TempDir(), "wt")
		Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
		w.deliver(&messages.SessionCreated{Host: hostName, SessionID: "ses_wt", Title: "in a worktree", Directory: dir})
		w.tools("ses_wt", "a", 1)
		w.parentCreated("ses_p") // /src/project is not on this machine
		w.tools("ses_p", "a", 1)
		Expect(os.RemoveAll(dir)).To(Succeed())

		passivate(w)
		w.clock.Advance(time.Hour) // a round runs
		Eventually(knownFamily(w, "ses_wt")).Should(BeFalse(), "the worktree's state goes")
		w.never(knownFamily(w, "ses_p"), BeTrue(), "a directory that never existed here is no evidence")
	})
})

var _ = Describe("Strand sweep", func() {
	var (
		w        *world
		sh       *strandHost
		checkout string
		gone     string
	)
	start := func(on bool) {
		root := GinkgoT().TempDir()
		checkout, gone = filepath.Join(root, "main"), filepath.Join(root, "wt")
		Expect(os.MkdirAll(checkout, 0o755)).To(Succeed())
		Expect(os.MkdirAll(gone, 0o755)).To(Succeed())
		w = sweepWorld(func(h *fakeHost) front.HostClient {
			sh = &strandHost{fakeHost: h, checkout: checkout, moves: map[string]string{}}
			return sh
		}, func(c *config.Config) {
			c.Sweep.Strand = on
			c.Sweep.StrandInterval = 10 * time.Minute
		})
		sh.mu.Lock()
		sh.rows = []opencode.Session{
			{ID: "ses_top", ProjectID: "prj", Directory: gone, Title: "my work"},
			{ID: "ses_x", ProjectID: "prj", ParentID: "ses_top", Directory: gone, Title: ocfamily.ExtractionTitle},
			{ID: "ses_task", ProjectID: "prj", ParentID: "ses_top", Directory: gone, Title: "explore"},
			{ID: "ses_home", ProjectID: "prj", Directory: checkout, Title: ocfamily.ExtractionTitle},
		}
		sh.mu.Unlock()
		Expect(os.RemoveAll(gone)).To(Succeed()) // git worktree remove
	}

	It("deletes the machinery, moves the real session to the checkout, leaves the task child, and toasts once", func() {
		start(true)
		w.clock.Advance(10 * time.Minute)
		Eventually(sh.moved).Should(Equal(map[string]string{"ses_top": checkout}))
		Eventually(w.countOf(mDelete)).Should(Equal(1))
		Expect(w.host.CallsOf(mDelete)[0].Session).To(Equal("ses_x"))
		Eventually(w.countOf(mToast)).Should(Equal(1), "a summary toast, as something was healed")
		r := lastReport(w, messages.SweepStrand)()
		Expect(r).NotTo(BeNil())
		Expect(r.Counts).To(Equal(messages.SweepCounts{Moved: 1, Deleted: 1, Skipped: 1}))
		Expect(r.Skipped[0].ID).To(Equal("ses_task"))

		By("the next round finds nothing to heal, and shows no toast")
		w.clock.Advance(10 * time.Minute)
		w.never(w.countOf(mToast), Equal(1), "no toast when nothing was healed")
		w.never(w.countOf(mDelete), Equal(1), "the machinery in the live checkout is never touched")
	})

	It("touches nothing when disarmed", func() {
		start(false)
		w.clock.Advance(time.Hour)
		w.never(sh.moved, BeEmpty(), "no move with the strand sweep off")
		w.never(w.countOf(mDelete), BeZero(), "no delete with the strand sweep off")
		st, err := w.rt.StatusReport()
		Expect(err).NotTo(HaveOccurred())
		var sv *sweeper.SweepView
		sweeps := sweepViews(st)
		for i := range sweeps {
			if sweeps[i].Sweeper == messages.SweepStrand {
				sv = &sweeps[i]
			}
		}
		Expect(sv).NotTo(BeNil())
		Expect(sv.Disarmed).To(BeTrue())
		Expect(sv.NextRun).To(BeNil())
	})
})
