package e2e

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/fakemodel"
)

// Made-up secrets of real shapes (none is a real key): what an agent reads
// from a project's .env and passes in a tool's args.
var e2eSecrets = map[string]string{
	"github":   "ghp_Qw7eR3tY9uI1oP5aS2dF8gH4jK6lZ0xC3vB7",
	"aws":      "AKIAZ7XK2MQ3EGRT4WNP",
	"password": "tr0ub4dor-and-3",
	"private":  "keep-this-off-the-record-4411",
	"glob":     "glpat-Wm3Kd9LqP2xV7bN1cT4y",
}

var _ = Describe("redaction", Label("opencode"), func() {
	It("keeps a secret the agent read out of every file under the data directory, the payload and the memory store", func() {
		s := StartStack()
		env := "GITHUB_TOKEN=" + e2eSecrets["github"] + "\nAWS_ACCESS_KEY_ID=" + e2eSecrets["aws"] +
			"\nDB_PASSWORD=" + e2eSecrets["password"] + "\n<private>" + e2eSecrets["private"] + "</private>\n"
		Expect(os.WriteFile(filepath.Join(s.W.Project, "deploy-notes.txt"), []byte(env), 0o600)).To(Succeed())

		s.Model.On(fakemodel.Rule{
			Name:  "parent:SECRET-TURN",
			Match: fakemodel.LastUserContains("SECRET-TURN"),
			Steps: []fakemodel.Step{
				{ToolCalls: []fakemodel.ToolCall{{Name: "read", Args: map[string]any{"filePath": filepath.Join(s.W.Project, "deploy-notes.txt")}}}},
				{ToolCalls: []fakemodel.ToolCall{{Name: "glob", Args: map[string]any{"pattern": e2eSecrets["glob"] + "*.md", "path": s.W.Project}}}},
				{Text: "The project's secrets live in deploy-notes.txt."},
			},
		})
		s.Model.On(fakemodel.Rule{Name: ExtractorName, Match: fakemodel.FirstUserContains(extractionMarker), Steps: []fakemodel.Step{
			{ToolCalls: []fakemodel.ToolCall{{Name: "skill", Args: map[string]any{"name": "thatch-fact-extractor"}}}},
			{ToolCalls: []fakemodel.ToolCall{{Name: "thatch_get_extraction_payload", ArgsFrom: func(r *fakemodel.Request) any {
				return map[string]any{"session_id": promptedParent(r)}
			}}}},
			// A memory holding a secret is refused with the reason...
			{ToolCalls: []fakemodel.ToolCall{{Name: "memory_remember", Args: map[string]any{"label": "github token",
				"content": "The CI uses GITHUB_TOKEN=" + e2eSecrets["github"], "confidence": 8}}}},
			// ...and said again without it, it is stored.
			{ToolCalls: []fakemodel.ToolCall{{Name: "memory_remember", Args: map[string]any{"label": "github token",
				"content": "The CI's GitHub token is GITHUB_TOKEN in deploy-notes.txt", "confidence": 8}}}},
			{ToolCalls: []fakemodel.ToolCall{{Name: "thatch_extraction_done", Args: map[string]any{}}}},
			{Text: "Extraction complete."},
		}})

		parent := s.OC.NewParent()
		s.OC.Prompt(parent.ID, "SECRET-TURN: where are the secrets?")
		Eventually(s.OC.ExtractionChildren(parent.ID)).Should(HaveLen(1))
		Eventually(func() int { return s.Model.Served(ExtractorName, 5) }).Should(Equal(1))
		var final fakemodel.Request
		for _, r := range s.Model.Requests() {
			if r.Rule == ExtractorName && r.Step == 5 {
				final = r
			}
		}
		results := final.ToolResults()
		Expect(results).To(HaveLen(5), "skill, payload, two remembers and done")

		By("the payload the extractor read holds markers, not secrets")
		Expect(payloadTools(results[1])).To(Equal([]string{"read", "glob"}))
		Expect(results[1]).To(ContainSubstring("[redacted:github_token]"))
		for name, secret := range e2eSecrets {
			Expect(results[1]).NotTo(ContainSubstring(secret), "the payload holds the %s secret", name)
		}

		By("the memory with the secret was refused with the reason; the rephrased one saved")
		Expect(results[2]).To(And(ContainSubstring("refused"), ContainSubstring("github_token")))
		Expect(results[2]).NotTo(ContainSubstring(e2eSecrets["github"]))
		Expect(results[3]).To(ContainSubstring(`"slug"`))
		Eventually(func() Family { return StatusCLI(s.W)[parent.ID] }).Should(Satisfy(drained))

		By("after a clean stop, no file under the data directory holds a secret")
		s.D.Stop()
		checked := 0
		Expect(filepath.WalkDir(s.W.DataDir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			checked++
			for name, secret := range e2eSecrets {
				Expect(bytes.Contains(data, []byte(secret))).To(BeFalse(), "%s holds the %s secret", path, name)
			}
			return nil
		})).To(Succeed())
		Expect(checked).To(BeNumerically(">", 3), "the data directory holds the journal and the memory store")
	})
})
