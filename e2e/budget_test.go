package e2e

import (
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("extraction budget", Label("opencode"), func() {
	It("pauses extraction past the daily budget with one toast, loses nothing, and resumes on thatch extraction resume", func() {
		s := startStackWith(func(w *World) {
			f, err := os.OpenFile(w.ThatchConfig, os.O_APPEND|os.O_WRONLY, 0)
			Expect(err).NotTo(HaveOccurred())
			_, err = f.WriteString("[memory]\ndaily_budget_tokens = 1\n")
			Expect(err).NotTo(HaveOccurred())
			Expect(f.Close()).To(Succeed())
		})
		s.Model.On(ParentTurn(s.W, "PARENT-ONE"))
		s.Model.On(ParentTurn(s.W, "PARENT-TWO"))
		s.Model.On(ParentTurn(s.W, "PARENT-THREE"))
		s.Model.On(Extractor())
		parent := s.OC.NewParent()

		By("the first extraction runs and spends the budget")
		s.OC.Prompt(parent.ID, "PARENT-ONE: how do I build this project?")
		Eventually(func() int { return s.Model.Served(ExtractorName, stepFinal) }).Should(Equal(1))
		Eventually(func() Family { return StatusCLI(s.W)[parent.ID] }).Should(Satisfy(drained))

		By("the next turn's idle pauses instead: one toast, no child, everything still pending")
		s.OC.Prompt(parent.ID, "PARENT-TWO: and the tests?")
		paused := func() int {
			n := 0
			for _, t := range s.OC.Toasts() {
				if strings.Contains(t, "extraction paused for store") {
					n++
				}
			}
			return n
		}
		Eventually(paused).Should(Equal(1))
		s.D.Quiesce()
		Expect(s.OC.ExtractionChildren(parent.ID)()).To(HaveLen(1), "no second extraction child while paused")
		Expect(StatusCLI(s.W)[parent.ID].Pending).To(Equal(2), "the second turn's calls wait")
		Expect(runCLI(s.W, "status")).To(ContainSubstring("budget 1 tokens/day reached"))

		By("thatch extraction resume lifts the pause; the next idle extracts everything kept")
		Expect(runCLI(s.W, "extraction", "resume")).To(ContainSubstring("extraction resumed"))
		s.OC.Prompt(parent.ID, "PARENT-THREE: anything else?")
		Eventually(func() int { return s.Model.Served(ExtractorName, stepFinal) }).Should(Equal(2))
		Expect(payloadTools(resultOf(s.Model, ExtractorName, stepFinal, 1))).To(Equal([]string{"read", "glob", "read", "glob"}))
		Expect(paused()).To(Equal(1), "one toast per store and day")
	})
})

// runCLI runs a thatch command against the world's daemon and returns its
// output; it must succeed.
func runCLI(w *World, args ...string) string {
	code, out, errOut := thatchCLI(w, "", append(args, "--config", w.ThatchConfig)...)
	Expect(code).To(Equal(0), "thatch %s: %s%s", strings.Join(args, " "), out, errOut)
	return out
}
