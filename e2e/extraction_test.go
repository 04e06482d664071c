package e2e

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/fakemodel"
)

var _ = Describe("extraction", Label("opencode"), func() {
	It("turns a parent's tool calls into a memory through a child it then deletes", func() {
		s := StartStack()
		s.Model.On(ParentTurn(s.W, "PARENT-ONE"))
		s.Model.On(Extractor())

		By("a new parent gets the session-start reminder, which starts no turn")
		parent := s.OC.NewParent()
		Expect(s.OC.LastUserText(parent.ID)).To(ContainSubstring("memory_recall"))
		for _, r := range s.Model.Requests() {
			Expect(r.Tools).To(BeEmpty(), "no turn ran: only tool-less requests (a title) so far")
		}

		By("a parent turn whose model calls two tools")
		s.OC.Prompt(parent.ID, "PARENT-ONE: how do I build this project?")

		By("idle starts an extraction child with the parent's id and the title thatch-extraction")
		Eventually(s.OC.ExtractionChildren(parent.ID)).Should(HaveLen(1))
		child := s.OC.ExtractionChildren(parent.ID)()[0]

		By("the child loads the skill, fetches the payload, saves a memory and acks")
		Eventually(func() int { return s.Model.Served(ExtractorName, stepFinal) }).Should(Equal(1))
		var final fakemodel.Request
		for _, r := range s.Model.Requests() {
			if r.Rule == ExtractorName && r.Step == stepFinal {
				final = r
			}
		}
		results := final.ToolResults()
		Expect(results).To(HaveLen(4), "skill, payload, remember and done results")
		Expect(results[0]).To(ContainSubstring("thatch fact extractor"), "the installed skill reached the child")
		Expect(payloadTools(results[1])).To(Equal([]string{"read", "glob"}), "the payload holds the parent's two tool calls")
		Expect(results[2]).To(And(ContainSubstring(`"slug"`), Not(ContainSubstring("failed"))), "memory_remember: %s", results[2])
		Expect(results[3]).To(ContainSubstring("Acknowledged"))

		By("the child goes idle, a toast reports the memory, and the child is deleted")
		Eventually(s.OC.Deleted(child)).Should(BeTrue())
		Eventually(s.OC.Toasts).Should(ContainElement(ContainSubstring("1 new")))
		Expect(s.OC.Sessions()).NotTo(HaveKey(child))

		By("thatch status --json shows the parent's buffer empty")
		Eventually(func() Family { return StatusCLI(s.W)[parent.ID] }).Should(Satisfy(drained))
		Expect(s.OC.Sessions()).To(HaveKey(parent.ID), "the parent itself stays")

		By("thatch memory list shows the saved memory")
		Expect(MemoryListCLI(s.W)).To(ContainSubstring("build: make build"))
	})

	It("never deletes a task sub-agent, and keeps its calls out of the parent's queue", func() {
		s := StartStack()
		s.Model.On(Extractor())
		// The parent dispatches a sub-agent with the task tool; the
		// sub-agent reads the README and answers.
		s.Model.On(fakemodel.Rule{Name: "subagent", Match: fakemodel.FirstUserContains("SUBAGENT-WORK"), Steps: []fakemodel.Step{
			{ToolCalls: []fakemodel.ToolCall{{Name: "read", Args: map[string]any{"filePath": s.W.Project + "/README.md"}}}},
			{Text: "The README says to use make."},
		}})
		s.Model.On(fakemodel.Rule{Name: "dispatcher", Match: fakemodel.LastUserContains("PARENT-TASK"), Steps: []fakemodel.Step{
			{ToolCalls: []fakemodel.ToolCall{{Name: "task", Args: map[string]any{
				"description": "read the readme", "prompt": "SUBAGENT-WORK: read README.md and report", "subagent_type": "general"}}}},
			{ToolCalls: []fakemodel.ToolCall{{Name: "glob", Args: map[string]any{"pattern": "*.md", "path": s.W.Project}}}},
			{Text: "Done."},
		}})

		parent := s.OC.NewParent()
		s.OC.Prompt(parent.ID, "PARENT-TASK: ask a sub-agent")

		By("the task tool creates a child that is not an extraction child")
		Eventually(func() []childCreated { return s.OC.CreatedChildren(parent.ID) }).ShouldNot(BeEmpty())
		task := s.OC.CreatedChildren(parent.ID)[0]
		Expect(task.Title).NotTo(Equal("thatch-extraction"))
		Eventually(func() string { return s.D.Family(parent.ID).ChildKind(task.ID) }).Should(Equal("task"))

		By("the parent's idle extracts only the parent's own call (glob), not the task or the sub-agent's read")
		Eventually(func() int { return s.Model.Served(ExtractorName, stepFinal) }).Should(Equal(1))
		Expect(payloadTools(resultOf(s.Model, ExtractorName, stepFinal, 1))).To(Equal([]string{"glob"}))

		By("the extraction child is deleted, the task child never is")
		ext := s.OC.ExtractionChildren(parent.ID)()
		Expect(ext).To(HaveLen(1))
		Eventually(s.OC.Deleted(ext[0])).Should(BeTrue())
		s.D.Quiesce()
		Expect(s.OC.Exists(task.ID)()).To(BeTrue())
		Expect(s.OC.Deleted(task.ID)()).To(BeFalse())
	})
})

// resultOf returns the idx-th tool result the model saw in the last
// request rule answered at step.
func resultOf(m *fakemodel.Server, rule string, step, idx int) string {
	var last *fakemodel.Request
	for _, r := range m.Requests() {
		if r.Rule == rule && r.Step == step {
			r := r
			last = &r
		}
	}
	Expect(last).NotTo(BeNil(), "no request of %s at step %d", rule, step)
	res := last.ToolResults()
	Expect(len(res)).To(BeNumerically(">", idx), "tool results: %s", strings.Join(res, "\n---\n"))
	return res[idx]
}
