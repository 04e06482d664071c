package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/fakemodel"
)

// readTurn scripts a parent turn that reads one file and answers: one
// buffered interaction.
func readTurn(w *World, marker string) fakemodel.Rule {
	return fakemodel.Rule{
		Name:  "read:" + marker,
		Match: fakemodel.LastUserContains(marker),
		Steps: []fakemodel.Step{
			{ToolCalls: []fakemodel.ToolCall{{Name: "read", Args: map[string]any{"filePath": w.Project + "/README.md"}}}},
			{Text: "Read it."},
		},
	}
}

var _ = Describe("session lifecycle", Label("opencode"), func() {
	It("hands a failed child's claim back, and the next idle extracts it again", func() {
		s := StartStack()
		s.Model.On(ParentTurn(s.W, "PARENT-ERR"))
		s.Model.On(readTurn(s.W, "PARENT-AGAIN"))
		s.Model.On(Extractor())
		// The first extraction child fetches, then its model fails with
		// HTTP 400 (three answers: skill, fetch, error).
		s.Model.On(fakemodel.Rule{Name: "failing-extractor", Match: fakemodel.FirstUserContains(extractionMarker), Times: 3, Steps: []fakemodel.Step{
			Extractor().Steps[stepSkill], Extractor().Steps[stepFetch], {Status: 400},
		}})

		parent := s.OC.NewParent()
		s.OC.Prompt(parent.ID, "PARENT-ERR: look around")

		By("the first child fetches two interactions, then its model answers 400")
		Eventually(s.OC.ExtractionChildren(parent.ID)).Should(HaveLen(1))
		first := s.OC.ExtractionChildren(parent.ID)()[0]
		Eventually(s.OC.Errored(first)).Should(BeTrue(), "opencode reports session.error for the child")

		By("the claim is requeued and the extracting flag cleared")
		Eventually(s.D.FamilyOf(parent.ID)).Should(SatisfyAll(
			WithTransform(func(f Family) int { return f.Pending }, Equal(2)),
			WithTransform(func(f Family) int { return f.Accepted }, Equal(0)),
			WithTransform(func(f Family) bool { return f.Extracting }, BeFalse()),
			WithTransform(func(f Family) bool { return f.HasChild(first) }, BeFalse()),
		))

		By("the next idle extracts the requeued calls ahead of the new one")
		s.OC.Prompt(parent.ID, "PARENT-AGAIN: read it once more")
		Eventually(func() int { return s.Model.Served(ExtractorName, stepFinal) }).Should(Equal(1))
		Expect(payloadTools(resultOf(s.Model, ExtractorName, stepFinal, 1))).To(Equal([]string{"read", "glob", "read"}))

		By("no extraction child is left on the host, and the family holds nothing")
		Eventually(s.OC.ChildrenTitled(parent.ID, "thatch-extraction")).Should(BeEmpty())
		Eventually(s.D.FamilyOf(parent.ID)).Should(Satisfy(drained))
	})

	It("requeues the claim of an extraction child deleted mid-extraction", func() {
		s := StartStack()
		s.Model.On(ParentTurn(s.W, "PARENT-DEL"))
		s.Model.On(readTurn(s.W, "PARENT-AFTER"))
		hold := make(chan struct{})
		DeferCleanup(func() { closeOnce(hold) })
		s.Model.On(fakemodel.Rule{Name: "held-extractor", Match: fakemodel.FirstUserContains(extractionMarker), Times: 3, Steps: []fakemodel.Step{
			Extractor().Steps[stepSkill], Extractor().Steps[stepFetch], {Text: "never sent", Gate: hold},
		}})

		parent := s.OC.NewParent()
		s.OC.Prompt(parent.ID, "PARENT-DEL: look around")
		Eventually(s.OC.ExtractionChildren(parent.ID)).Should(HaveLen(1))
		child := s.OC.ExtractionChildren(parent.ID)()[0]

		By("the child holds a claim on both calls while its model is busy")
		Eventually(func() int { return s.Model.Served("held-extractor", 2) }).Should(Equal(1))
		Eventually(s.D.FamilyOf(parent.ID)).Should(WithTransform(func(f Family) int { return f.Claims[child] }, Equal(2)))

		By("deleting the child hands its claim back")
		s.OC.Delete(child)
		Eventually(s.D.FamilyOf(parent.ID)).Should(SatisfyAll(
			WithTransform(func(f Family) int { return f.Pending }, Equal(2)),
			WithTransform(func(f Family) int { return f.Accepted }, Equal(0)),
			WithTransform(func(f Family) bool { return f.Extracting }, BeFalse()),
		))
		closeOnce(hold)

		By("the next idle extracts everything with a new child")
		s.Model.On(Extractor())
		s.OC.Prompt(parent.ID, "PARENT-AFTER: and again")
		Eventually(func() int { return s.Model.Served(ExtractorName, stepFinal) }).Should(Equal(1))
		Expect(payloadTools(resultOf(s.Model, ExtractorName, stepFinal, 1))).To(Equal([]string{"read", "glob", "read"}),
			"the requeued calls come back ahead of the new one")
		Eventually(s.D.FamilyOf(parent.ID)).Should(Satisfy(drained))
	})

	It("drops a deleted parent's queue and its children's records", func() {
		s := StartStack()
		s.Model.On(ParentTurn(s.W, "PARENT-GONE"))
		hold := make(chan struct{})
		DeferCleanup(func() { closeOnce(hold) })
		s.Model.On(fakemodel.Rule{Name: "held-extractor", Match: fakemodel.FirstUserContains(extractionMarker), Steps: []fakemodel.Step{
			Extractor().Steps[stepSkill], Extractor().Steps[stepFetch], {Text: "never sent", Gate: hold},
		}})

		parent := s.OC.NewParent()
		s.OC.Prompt(parent.ID, "PARENT-GONE: look around")
		Eventually(s.OC.ExtractionChildren(parent.ID)).Should(HaveLen(1))
		child := s.OC.ExtractionChildren(parent.ID)()[0]
		Eventually(s.D.FamilyOf(parent.ID)).Should(WithTransform(func(f Family) int { return f.Claims[child] }, Equal(2)))

		By("deleting the parent deletes the child first, then the parent")
		s.OC.Delete(parent.ID)
		Eventually(s.OC.Deleted(parent.ID)).Should(BeTrue())
		Expect(s.OC.Deleted(child)()).To(BeTrue())

		By("the family becomes a tombstone that holds nothing")
		Eventually(s.D.FamilyOf(parent.ID)).Should(SatisfyAll(
			WithTransform(func(f Family) bool { return f.Deleted }, BeTrue()),
			WithTransform(func(f Family) int { return f.Pending + f.Accepted + len(f.Claims) + len(f.Children) }, Equal(0)),
		))

		By("a late tool call from the dead child is answered with nothing")
		var payload any
		Expect(s.D.Post("/v1/opencode/payload", map[string]string{"sessionID": child}, &payload)).To(Succeed())
		Expect(payload).To(BeNil())
		s.D.Quiesce()
		Expect(s.D.Sess.ExitCode()).To(Equal(-1), "the daemon runs on")
	})
})

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}
