package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/fakemodel"
)

// wrapUpTurn scripts the model's answer to a /thatch/compact or /thatch/exit
// template (matched by its section heading): read a file, flush the
// parent's own payload, save a memory, ack, then end with final.
func wrapUpTurn(w *World, heading, final string) fakemodel.Rule {
	return fakemodel.Rule{
		Name:  "wrapup:" + heading,
		Match: fakemodel.LastUserContains(heading),
		Steps: []fakemodel.Step{
			{ToolCalls: []fakemodel.ToolCall{{Name: "read", Args: map[string]any{"filePath": w.Project + "/README.md"}}}},
			{ToolCalls: []fakemodel.ToolCall{{Name: "thatch_get_extraction_payload", Args: map[string]any{}}}},
			{ToolCalls: []fakemodel.ToolCall{{Name: "memory_remember", Args: map[string]any{
				"label": "wrap-up: readme", "content": "The README documents the build.", "confidence": 6}}}},
			{ToolCalls: []fakemodel.ToolCall{{Name: "thatch_extraction_done", Args: map[string]any{}}}},
			{Text: final},
		},
	}
}

func wrapUp(f Family) string {
	if f.WrapUp == nil {
		return ""
	}
	return f.WrapUp.Kind
}

var _ = Describe("wrap-up commands", Label("opencode"), func() {
	It("/thatch/compact with the token compacts, and extracts nothing until the compaction is over", func() {
		s := StartStack()
		s.Model.On(Extractor())
		s.Model.On(readTurn(s.W, "DURING-COMPACTION"))
		s.Model.On(fakemodel.Rule{Name: "after", Match: fakemodel.LastUserContains("AFTER-COMPACTION"), Steps: []fakemodel.Step{{Text: "Noted."}}})
		s.Model.On(wrapUpTurn(s.W, "# Pre-compact wrap-up", "Flushed and saved; nothing is open.\nTHATCH_COMPACT_READY"))
		parent := s.OC.NewParent()
		idles := s.OC.Idles(parent.ID)

		By("the command arms the wrap-up before its turn runs, and the checklist flushes the parent's own payload")
		s.OC.Command(parent.ID, "thatch/compact", "")
		Eventually(func() int { return s.Model.Served("wrapup:# Pre-compact wrap-up", 4) }).Should(Equal(1))
		Expect(payloadTools(resultOf(s.Model, "wrapup:# Pre-compact wrap-up", 4, 1))).To(Equal([]string{"read"}))

		By("the reply ends with the token: thatch asks the TUI to compact")
		s.OC.WaitIdleAfter(parent.ID, idles)
		Eventually(s.OC.TUICommands).Should(ContainElement("session.compact"))
		Eventually(s.D.FamilyOf(parent.ID)).Should(SatisfyAll(
			WithTransform(func(f Family) bool { return f.Compacting }, BeTrue()),
			WithTransform(wrapUp, BeEmpty()),
			WithTransform(func(f Family) int { return f.Accepted }, Equal(0)),
		))

		By("while compacting, an idle starts no extraction")
		idles = s.OC.Idles(parent.ID)
		s.OC.Prompt(parent.ID, "DURING-COMPACTION: read it")
		s.OC.WaitIdleAfter(parent.ID, idles)
		s.Settle(parent.ID)
		Expect(s.OC.ChildrenTitled(parent.ID, "thatch-extraction")()).To(BeEmpty())
		Expect(s.D.Family(parent.ID).Pending).To(BeNumerically(">=", 1))

		By("opencode compacts (the TUI would run /compact): session.compacted clears the flag")
		s.OC.Summarize(parent.ID)
		Eventually(func() []Event { return s.OC.Events("session.compacted") }).ShouldNot(BeEmpty())
		Eventually(s.D.FamilyOf(parent.ID)).Should(WithTransform(func(f Family) bool { return f.Compacting }, BeFalse()))

		By("the next idle (the compaction's own, or a later one) extracts what was buffered meanwhile")
		s.OC.Prompt(parent.ID, "AFTER-COMPACTION: thanks")
		Eventually(s.OC.ExtractionChildren(parent.ID)).ShouldNot(BeEmpty())
		Eventually(func() int { return s.Model.Served(ExtractorName, stepFinal) }).Should(BeNumerically(">=", 1))
		Expect(payloadTools(resultOf(s.Model, ExtractorName, stepRemember, 1))).To(ContainElement("read"))
		Eventually(s.D.FamilyOf(parent.ID)).Should(Satisfy(drained))
	})

	It("/thatch/compact without the token warns, and extracts as after any idle", func() {
		s := StartStack()
		s.Model.On(Extractor())
		s.Model.On(fakemodel.Rule{Name: "blocked", Match: fakemodel.LastUserContains("# Pre-compact wrap-up"), Steps: []fakemodel.Step{
			{ToolCalls: []fakemodel.ToolCall{{Name: "read", Args: map[string]any{"filePath": s.W.Project + "/README.md"}}}},
			// The token in the middle of the text does not count.
			{Text: "THATCH_COMPACT_READY would be next, but first: which branch should I use?"},
		}})
		parent := s.OC.NewParent()
		s.OC.Command(parent.ID, "thatch/compact", "")

		By("a warning toast points at the blockers, and nothing is compacted")
		Eventually(s.OC.Toasts).Should(ContainElement(ContainSubstring("/thatch/compact is waiting")))
		Expect(s.OC.TUICommands()).NotTo(ContainElement("session.compact"))

		By("the idle falls through to extraction of the buffered call")
		Eventually(s.OC.ExtractionChildren(parent.ID)).Should(HaveLen(1))
		Eventually(func() int { return s.Model.Served(ExtractorName, stepFinal) }).Should(Equal(1))
		Expect(payloadTools(resultOf(s.Model, ExtractorName, stepFinal, 1))).To(Equal([]string{"read"}))
		Eventually(s.D.FamilyOf(parent.ID)).Should(SatisfyAll(Satisfy(drained),
			WithTransform(func(f Family) bool { return f.Compacting }, BeFalse())))
	})

	It("/thatch/exit with the token closes the TUI; without it, it warns", func() {
		s := StartStack()
		s.Model.On(Extractor())
		s.Model.On(wrapUpTurn(s.W, "# Pre-exit wrap-up", "All saved.\nTHATCH_EXIT_READY"))
		s.Model.On(fakemodel.Rule{Name: "exit-blocked", Match: fakemodel.LastUserContains("BLOCKED-EXIT"), Steps: []fakemodel.Step{
			{Text: "I cannot finish yet: the memory write failed."},
		}})

		By("without the token: a warning toast, and the wrap-up stays armed for the next reply")
		blocked := s.OC.NewParent()
		s.OC.Command(blocked.ID, "thatch/exit", "BLOCKED-EXIT")
		Eventually(s.OC.Toasts).Should(ContainElement(ContainSubstring("/thatch/exit is waiting")))
		Eventually(s.D.FamilyOf(blocked.ID)).Should(SatisfyAll(
			WithTransform(wrapUp, Equal("exit")),
			WithTransform(func(f Family) bool { return f.WrapUp.Checking }, BeFalse()),
		))
		Expect(s.OC.TUICommands()).NotTo(ContainElement("app.exit"))

		By("with the token: thatch publishes app.exit to the TUI")
		parent := s.OC.NewParent()
		s.OC.Command(parent.ID, "thatch/exit", "")
		Eventually(func() int { return s.Model.Served("wrapup:# Pre-exit wrap-up", 4) }).Should(Equal(1))
		Eventually(s.OC.TUICommands).Should(ContainElement("app.exit"))
		Eventually(s.D.FamilyOf(parent.ID)).Should(SatisfyAll(
			WithTransform(wrapUp, BeEmpty()),
			WithTransform(func(f Family) int { return f.Accepted }, Equal(0)),
		))
	})
})
