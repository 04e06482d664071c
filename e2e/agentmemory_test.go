package e2e

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/fakeanthropic"
)

// Memory for every agent: the agents thatch launches for the chat get
// thatch's memory as an MCP server (thatch mcp) and its reminder at
// their start. The model is scripted: these prove that the real claude
// starts the server, calls its tools and gets the daemon's answers, not
// anything about what a model would choose to remember.
var _ = Describe("Memory for the agents thatch launches", Label("im", "real-agents", "memory"), func() {
	// loaded is the ToolSearch call that loads an MCP tool: claude
	// defers MCP tools until the model asks for them by name.
	loaded := func(tool string) *fakeanthropic.ToolUse {
		return &fakeanthropic.ToolUse{Name: "ToolSearch", Input: map[string]any{"query": "select:mcp__thatch__" + tool, "max_results": 1}}
	}

	It("claude: remembers over MCP in one session and recalls it in another, told how at its start, with no permission asked", func() {
		iw := NewRealIMWorld("claude")
		d := StartDaemon(iw.World)
		fact := "The web app deploys with make ship, to the staging cluster first"
		iw.Claude.On(fakeanthropic.UserSays("REMEMBER"), fakeanthropic.Reply{Tool: loaded("memory_remember"),
			Then: &fakeanthropic.Reply{Tool: &fakeanthropic.ToolUse{Name: "mcp__thatch__memory_remember",
				Input: map[string]any{"label": "Deploy path", "content": fact}},
				Then: &fakeanthropic.Reply{Text: "Saved it."}}})
		// No Then after the recall: the model answers "result: " and the
		// tool's result, so the chat shows what the memory gave back.
		iw.Claude.On(fakeanthropic.UserSays("RECALL"), fakeanthropic.Reply{Tool: loaded("memory_recall"),
			Then: &fakeanthropic.Reply{Tool: &fakeanthropic.ToolUse{Name: "mcp__thatch__memory_recall",
				Input: map[string]any{"query": "how does the web app deploy"}}}})

		one := iw.Setup("mem one", "claude", "web", "REMEMBER how we deploy")
		Eventually(iw.Said(one)).Should(ContainElement("Saved it."))
		var results []string
		for _, r := range iw.Claude.Requests() {
			results = append(results, r.ToolResultText())
		}
		Expect(results).To(ContainElement(MatchRegexp(`"op":\s*"new"`)), "the remember call reached the daemon and its answer came back to the model")

		two := iw.Setup("mem two", "claude", "api", "RECALL how we deploy")
		Eventually(iw.Said(two)).Should(ContainElement(And(HavePrefix("result: "), ContainSubstring(fact))),
			"a session in another directory recalls it (neither is a git checkout: both use the global store)")

		By("each session was told at its start how to use the memory")
		told := 0
		for _, r := range iw.Claude.Requests() {
			if strings.Contains(string(r.Body), "memory_recall(query)") {
				told++
			}
		}
		Expect(told).To(BeNumerically(">", 0))
		Expect(iw.Said(one)()).NotTo(ContainElement(ContainSubstring("Do you want")), "the memory's tools ran without a permission prompt")

		By("the store holds it")
		var list struct {
			Entries []struct{ Label, Content, Store string }
		}
		Expect(d.Post("/v1/memory/list", map[string]any{"store": "global"}, &list)).To(Succeed())
		Expect(list.Entries).To(ContainElement(And(HaveField("Label", "Deploy path"), HaveField("Content", fact))))
	})
})
