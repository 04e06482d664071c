package e2e

import (
	"context"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/ocenv"
	"github.com/thatch-run/thatch/messages"
)

// strandedWorld is what the strand specs set up: the world's project as
// a git repository with a second worktree, and in that worktree a real
// top-level session with history, a thatch-extraction child and a task
// child.
type strandedWorld struct {
	s                  *Stack
	worktree           string
	top, machine, task Session
}

const historyMarker = "HISTORY-KEPT-7Q"

// git runs git in dir.
func git(w *World, dir string, args ...string) {
	GinkgoHelper()
	cmd := exec.Command("git", append([]string{"-c", "user.email=e2e@example.invalid", "-c", "user.name=e2e"}, args...)...)
	cmd.Dir, cmd.Env = dir, w.Env
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "git %v: %s", args, out)
}

// strandSessions starts the stack (env is added to the world's, after its
// THATCH_STRAND_SWEEP=off) and makes the sessions in a worktree.
func strandSessions(env ...string) *strandedWorld {
	GinkgoHelper()
	sw := &strandedWorld{}
	sw.s = startStackWith(func(w *World) {
		w.Env = append(w.Env, env...)
		git(w, w.Project, "init", "-q", "-b", "main")
		git(w, w.Project, "add", "README.md")
		git(w, w.Project, "commit", "-q", "-m", "init")
		sw.worktree = filepath.Join(w.Root, "wt-feature")
		git(w, w.Project, "worktree", "add", "-q", "-b", "feature", sw.worktree)
	})
	oc := sw.s.OC
	in := func(path string) string {
		return oc.URL + path + "?" + url.Values{"directory": {sw.worktree}}.Encode()
	}
	create := func(parent, title string) Session {
		body := map[string]any{"title": title}
		if parent != "" {
			body["parentID"] = parent
		}
		var s Session
		Expect(ocenv.CallJSON(oc.hc, "POST", in("/session"), body, &s)).To(Succeed())
		Expect(s.ID).NotTo(BeEmpty())
		return s
	}
	sw.top = create("", "my feature work")
	note := map[string]any{"noReply": true, "parts": []map[string]any{{"type": "text", "text": historyMarker + ": notes of the user"}}}
	Expect(ocenv.CallJSON(oc.hc, "POST", in("/session/"+sw.top.ID+"/message"), note, nil)).To(Succeed())
	sw.machine = create(sw.top.ID, "thatch-extraction")
	sw.task = create(sw.top.ID, "explore the code (@explore subagent)")
	return sw
}

// removeWorktree removes the worktree as a merged branch's cleanup does.
func (sw *strandedWorld) removeWorktree() {
	GinkgoHelper()
	git(sw.s.W, sw.s.W.Project, "worktree", "remove", "--force", sw.worktree)
	Expect(sw.worktree).NotTo(BeADirectory())
}

// sessionDir is the directory opencode records for id ("" once deleted).
func (sw *strandedWorld) sessionDir(id string) func() string {
	return func() string {
		var s struct {
			Directory string `json:"directory"`
		}
		if err := sw.s.OC.call("GET", "/session/"+id, nil, &s); err != nil {
			return ""
		}
		return s.Directory
	}
}

// sweeperView is one sweeper in GET /v1/status.
type sweeperView struct {
	Sweeper  string                `json:"sweeper"`
	Disarmed bool                  `json:"disarmed"`
	Runs     int64                 `json:"runs"`
	LastRun  *time.Time            `json:"lastRun"`
	Last     *messages.SweepReport `json:"last"`
}

func sweepers(d *Daemon) map[string]sweeperView {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var st struct {
		FrontEnds struct {
			OpenCode struct {
				Details struct {
					Sweepers []sweeperView `json:"sweepers"`
				} `json:"details"`
			} `json:"opencode"`
		} `json:"frontEnds"`
	}
	Expect(d.Client().Do(ctx, "GET", "/v1/status", nil, &st)).To(Succeed())
	out := map[string]sweeperView{}
	for _, v := range st.FrontEnds.OpenCode.Details.Sweepers {
		out[v.Sweeper] = v
	}
	return out
}

var _ = Describe("strand sweep", Label("opencode"), func() {
	It("deletes the machinery, moves the real session to the main checkout with its history, and leaves the task child", func() {
		sw := strandSessions("THATCH_STRAND_SWEEP=on", "THATCH_STRAND_SWEEP_MS=500")
		Expect(sw.sessionDir(sw.top.ID)()).To(Equal(sw.worktree))
		sw.removeWorktree()

		Eventually(sw.sessionDir(sw.top.ID), 60*time.Second).Should(Equal(sw.s.W.Project), "moved to the main checkout")
		Eventually(sw.sessionDir(sw.machine.ID), 60*time.Second).Should(BeEmpty(), "the machinery is deleted")
		Expect(sw.sessionDir(sw.task.ID)()).To(Equal(sw.worktree), "the task child is left alone")

		var msgs []struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		}
		Expect(sw.s.OC.call("GET", "/session/"+sw.top.ID+"/message", nil, &msgs)).To(Succeed())
		var texts []string
		for _, m := range msgs {
			for _, p := range m.Parts {
				texts = append(texts, p.Text)
			}
		}
		Expect(strings.Join(texts, "\n")).To(ContainSubstring(historyMarker), "the history moved with the session")

		By("status names what the sweep did and why it skipped the task child")
		Eventually(func() []string {
			var got []string
			if r := sweepers(sw.s.D)[messages.SweepStrand].Last; r != nil {
				for _, it := range r.Skipped {
					got = append(got, "skipped "+it.ID+": "+it.Reason)
				}
			}
			return got
		}, 30*time.Second).Should(ContainElement(HavePrefix("skipped " + sw.task.ID + ": task child")))
		Eventually(func() []string { return sw.s.OC.Toasts() }, 30*time.Second).Should(
			ContainElement(ContainSubstring("Healed")), "a summary toast, since something was healed")
	})

	It("touches nothing when disarmed", func() {
		sw := strandSessions("THATCH_SWEEP_INTERVAL=300ms")
		sw.removeWorktree()
		removed := time.Now()

		By("a runtime-state round starts after the removal; the strand sweep never runs")
		Eventually(func() bool {
			v := sweepers(sw.s.D)[messages.SweepRuntime]
			return v.LastRun != nil && v.LastRun.After(removed.Add(time.Second))
		}, 60*time.Second).Should(BeTrue())
		strand := sweepers(sw.s.D)[messages.SweepStrand]
		Expect(strand.Disarmed).To(BeTrue())
		Expect(strand.Runs).To(BeZero())
		Expect(sw.sessionDir(sw.top.ID)()).To(Equal(sw.worktree), "not moved")
		Expect(sw.sessionDir(sw.machine.ID)()).To(Equal(sw.worktree), "not deleted")
		Expect(sw.sessionDir(sw.task.ID)()).To(Equal(sw.worktree), "not touched")
	})
})
