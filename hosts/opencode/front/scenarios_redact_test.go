package front_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/internal/redact"
)

// Made-up secrets of real shapes; none is a real key.
const (
	fakeGitHub   = "ghp_Zq8pL2mN4vX7bC1dF6gH9jK3lQ5rS0tU2wY4"
	fakeAWS      = "AKIAQ3EGRT7XK2MZP4WN"
	fakePassword = "c0rrect-h0rse-b4ttery"
	fakeDBPass   = "pgS3cretPass77"
	fakePrivate  = "only-for-my-eyes-7d1f"
	fakeTitle    = "sk_live_Ab3dEf6hIj9kLm2nOp5qRs8t"
	fakeCommand  = "glpat-x9Kd3LmQ2pX7vB1nC4tW"
)

var allFakeSecrets = []string{fakeGitHub, fakeAWS, fakePassword, fakeDBPass, fakePrivate, fakeTitle, fakeCommand}

// sendSecrets reports tool calls and a command of ses_p that carry every
// fake secret: in args (nested too), the title, the output and a <private>
// span.
func (w *world) sendSecrets() {
	GinkgoHelper()
	w.parentCreated("ses_p")
	w.post("/v1/opencode/tool", map[string]any{
		"host": hostName, "sessionID": "ses_p", "callID": "s-1", "tool": "bash",
		"args":   json.RawMessage(`{"env":{"l":["AWS_ACCESS_KEY_ID=` + fakeAWS + `"]},"cmd":"git push https://x:` + fakeGitHub + `@gh/a"}`),
		"title":  "deploy with " + fakeTitle,
		"output": "DB_PASSWORD=" + fakePassword + "\nconnect postgres://app:" + fakeDBPass + "@db:5432/app\n<private>" + fakePrivate + "</private>done\n",
	}, nil)
	w.post("/v1/opencode/command", map[string]any{"host": hostName, "sessionID": "ses_p", "command": "/deploy", "arguments": "--token " + fakeCommand}, nil)
}

// filesHolding walks every file under dir and returns the ones holding one
// of secrets (as written, or JSON-escaped), with the secret found.
func filesHolding(dir string, secrets []string) []string {
	GinkgoHelper()
	var found []string
	Expect(filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				found = append(found, filepath.Base(path)+": "+s)
			}
		}
		return nil
	})).To(Succeed())
	return found
}

var _ = Describe("Secrets at the edge", func() {
	It("never reach the journal, the payload or any file of the data directory, and status counts them by kind", func() {
		w := newWorld()
		w.sendSecrets()

		By("the extractor's payload holds markers, not secrets")
		p := w.fetch(w.extraction("ses_p"), "ses_p")
		Expect(p.Interactions).To(HaveLen(1))
		raw, err := json.Marshal(p.Interactions)
		Expect(err).NotTo(HaveOccurred())
		for _, s := range allFakeSecrets {
			Expect(string(raw)).NotTo(ContainSubstring(s))
		}
		in := p.Interactions[0]
		Expect(string(in.Args)).To(ContainSubstring(redact.Marker("github_token")))
		Expect(string(in.Args)).To(ContainSubstring(redact.Marker("aws_access_key")))
		Expect(in.Title).To(Equal("deploy with " + redact.Marker("stripe_key")))
		Expect(in.Output).To(Equal("DB_PASSWORD=" + redact.Marker("password") +
			"\nconnect postgres://app:" + redact.Marker("url_credentials") + "@db:5432/app\ndone\n"))
		Expect(json.Valid(in.Args)).To(BeTrue(), "the args stay JSON: %s", in.Args)

		By("status counts them per kind, and shows none of them")
		rep := w.oc.Report(0)
		counts, ok := rep.Details["redactions"].(map[string]uint64)
		Expect(ok).To(BeTrue(), "details: %v", rep.Details)
		Expect(counts).To(Equal(map[string]uint64{"github_token": 1, "aws_access_key": 1, "stripe_key": 1,
			"password": 1, "url_credentials": 1, "gitlab_token": 1}))

		By("after a stop, no file under the data directory holds one")
		w.stop()
		Expect(filesHolding(w.dir, allFakeSecrets)).To(BeEmpty())
	})

	It("reach the files when redaction is off, so the scan above can see them (except <private> spans, always dropped)", func() {
		w := newWorldWith(GinkgoT().TempDir(), func(c *config.Config) { c.Memory.Redact.Enabled = false })
		w.sendSecrets()
		w.stop()
		found := filesHolding(w.dir, allFakeSecrets)
		for _, s := range allFakeSecrets {
			if s == fakeCommand {
				continue // a command's arguments are not journaled at all
			}
			if s == fakePrivate {
				Expect(slices.ContainsFunc(found, func(f string) bool { return strings.HasSuffix(f, s) })).To(BeFalse())
				continue
			}
			Expect(slices.ContainsFunc(found, func(f string) bool { return strings.HasSuffix(f, s) })).To(BeTrue(),
				"the unredacted %s is in some file (found: %v)", s, found)
		}
		Expect(w.oc.Report(0).Details).NotTo(HaveKey("redactions"))
	})

	It("follow the config: a switched-off kind passes, an extra pattern is redacted", func() {
		w := newWorldWith(GinkgoT().TempDir(), func(c *config.Config) {
			c.Memory.Redact.Disable = []string{"aws_access_key"}
			c.Memory.Redact.Patterns = []string{`acme=acme_[a-z0-9]{12}`}
		})
		w.parentCreated("ses_p")
		w.tool("ses_p", "c-1", "bash", `{"command":"env"}`, "AWS_KEY_ID "+fakeAWS+" ACME acme_0a1b2c3d4e5f")
		p := w.fetch(w.extraction("ses_p"), "ses_p")
		Expect(p.Interactions[0].Output).To(Equal("AWS_KEY_ID " + fakeAWS + " ACME " + redact.Marker("acme")))
	})

	It("in a memory are refused with the reason, and nothing is stored", func() {
		w := newWorld()
		code, body := w.postStatus("/v1/memory/remember", map[string]any{"label": "Deploy token",
			"content": "Deploy with GITLAB_TOKEN=" + fakeCommand})
		Expect(code).To(Equal(http.StatusBadRequest))
		Expect(body).To(ContainSubstring("gitlab_token"))
		Expect(body).To(ContainSubstring("without the secret"))
		Expect(body).NotTo(ContainSubstring(fakeCommand))

		var list struct {
			Entries []any `json:"entries"`
		}
		w.post("/v1/memory/list", map[string]any{"store": "global"}, &list)
		Expect(list.Entries).To(BeEmpty())

		var saved struct{ Op string }
		w.post("/v1/memory/remember", map[string]any{"label": "Deploy token",
			"content": "The deploy token is GITLAB_TOKEN in the CI settings"}, &saved)
		Expect(saved.Op).To(Equal("new"), "said without the secret, it is stored")
	})
})
