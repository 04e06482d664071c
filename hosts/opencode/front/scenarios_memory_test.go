package front_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/messages"
)

// postStatus sends body to path and returns the status code and answer,
// for calls that are expected to fail.
func (w *world) postStatus(path string, body any) (int, string) {
	GinkgoHelper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, "http://"+w.rt.ControlAddr()+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+w.token)
	res, err := w.http.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw)
}

// remindersTo lists the noReply prompts (session-start reminders) to id.
func (w *world) remindersTo(id string) func() []hostCall {
	return func() []hostCall {
		var out []hostCall
		for _, c := range w.host.CallsOf(mNoReply) {
			if c.Session == id {
				out = append(out, c)
			}
		}
		return out
	}
}

// gitRepo makes a repository whose origin is remote, with branches.
func gitRepo(remote string, branches ...string) string {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "git %v: %s", args, out)
	}
	run("init", "-q", "-b", "main")
	run("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init")
	run("remote", "add", "origin", remote)
	for _, b := range branches {
		run("branch", b)
	}
	return dir
}

var _ = Describe("The memory tools", func() {
	var w *world
	BeforeEach(func() { w = newWorld() })

	It("save to the session's project store, recall it, and refuse a silent duplicate label", func() {
		repo := gitRepo("git@github.com:acme/api.git")
		w.deliver(&messages.SessionCreated{Host: hostName, SessionID: "ses_p", Title: "work", Directory: repo})

		var saved struct{ Slug, Store, Op string }
		w.post("/v1/memory/remember", map[string]any{"sessionID": "ses_p", "label": "Test command",
			"content": "Run go test -race ./... before pushing"}, &saved)
		Expect(saved.Store).To(Equal("acme/api"), "the project store comes from the git remote")
		Expect(saved.Op).To(Equal("new"))

		code, body := w.postStatus("/v1/memory/remember", map[string]any{"sessionID": "ses_p", "label": "Test command", "content": "other"})
		Expect(code).To(Equal(http.StatusBadRequest))
		Expect(body).To(ContainSubstring("overwrite"), "the error says how to replace it")

		w.post("/v1/memory/remember", map[string]any{"sessionID": "ses_p", "label": "Test command", "overwrite": true,
			"content": "Run make test before pushing"}, &saved)
		Expect(saved.Op).To(Equal("updated"))

		var rec struct {
			Hits []struct {
				Entry struct {
					Slug        string `json:"slug"`
					Content     string `json:"content"`
					RecallCount int    `json:"recall_count"`
				}
			}
		}
		w.post("/v1/memory/recall", map[string]any{"sessionID": "ses_p", "query": "how do I run the tests"}, &rec)
		Expect(rec.Hits).NotTo(BeEmpty())
		Expect(rec.Hits[0].Entry.Content).To(Equal("Run make test before pushing"))
		Expect(rec.Hits[0].Entry.RecallCount).To(Equal(1))

		By("the payload names the same stores")
		w.tools("ses_p", "t", 1)
		p := w.fetch("ses_p", "")
		Expect(p.ProjectStore).To(Equal("acme/api"))
		Expect(p.GlobalStore).To(Equal("global"))
	})

	It("keep the times an import sends, and write a memory sent without them now", func() {
		created, updated := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), time.Date(2025, 2, 3, 4, 5, 6, 0, time.UTC)
		w.post("/v1/memory/remember", map[string]any{"store": "acme/app", "label": "Deploy", "content": "make deploy",
			"created": created, "updated": updated}, nil)
		w.post("/v1/memory/remember", map[string]any{"store": "acme/app", "label": "Build", "content": "make all"}, nil)
		var e struct{ Created, Updated time.Time }
		w.post("/v1/memory/show", map[string]any{"store": "acme/app", "label": "Deploy"}, &e)
		Expect(e.Created).To(BeTemporally("==", created))
		Expect(e.Updated).To(BeTemporally("==", updated))
		w.post("/v1/memory/show", map[string]any{"store": "acme/app", "label": "Build"}, &e)
		Expect(e.Created).To(BeTemporally(">", updated), "written now, not at a zero time")
	})

	It("warn about a near duplicate, report it in the next reminder, and stop once it is judged", func() {
		w.post("/v1/memory/remember", map[string]any{"label": "Build command",
			"content": "Run make test to build and test everything", "store": "global"}, nil)
		var res struct {
			Warning string
			Similar []struct{ Slug string }
		}
		w.post("/v1/memory/remember", map[string]any{"label": "Build cmd",
			"content": "Run make test to build and test everything!", "store": "global"}, &res)
		Expect(res.Warning).To(ContainSubstring("build-command"), "the warning names the similar entry")

		w.parentCreated("ses_one")
		Eventually(w.remindersTo("ses_one")).Should(HaveLen(1))
		Expect(w.remindersTo("ses_one")()[0].Text).To(ContainSubstring(`Store "global": 1 dedup pair`))

		w.post("/v1/memory/resolve", map[string]any{"store": "global", "a": "build-cmd", "b": "build-command", "verdict": "distinct"}, nil)
		w.parentCreated("ses_two")
		Eventually(w.remindersTo("ses_two")).Should(HaveLen(1))
		Expect(w.remindersTo("ses_two")()[0].Text).NotTo(ContainSubstring("dedup"), "a judged pair is never reported again")
	})

	It("report memories on deleted branches as orphaned", func() {
		repo := gitRepo("https://github.com/acme/web.git", "feature-x")
		w.deliver(&messages.SessionCreated{Host: hostName, SessionID: "ses_a", Title: "a", Directory: repo})
		Eventually(w.remindersTo("ses_a")).Should(HaveLen(1))
		w.post("/v1/memory/remember", map[string]any{"sessionID": "ses_a", "label": "Flag name",
			"content": "feature-x hides the new checkout behind NEW_CHECKOUT", "branch": "feature-x"}, nil)
		out, err := exec.Command("git", "-C", repo, "branch", "-D", "feature-x").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))

		w.deliver(&messages.SessionCreated{Host: hostName, SessionID: "ses_b", Title: "b", Directory: repo})
		Eventually(w.remindersTo("ses_b")).Should(HaveLen(1))
		Expect(w.remindersTo("ses_b")()[0].Text).To(ContainSubstring(`Store "acme/web": 1 orphaned branch memory`))
	})
})
