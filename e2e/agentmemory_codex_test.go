package e2e

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/fakeresponses"
)

// Memory for every agent, with the real codex: thatch launches codex with
// its memory server on the launch line (-c mcp_servers.thatch.*). codex
// 0.169 offers an MCP server's tools to the model in a namespace named
// mcp__<server> (the model calls memory_remember in namespace
// mcp__thatch), the server's instructions as the namespace's description,
// and runs the memory's reading and saving tools without asking (they are
// not annotated destructive; memory_forget, which is, makes it ask). The
// model is scripted: these prove that the real codex starts the server,
// calls its tools and gets the daemon's answers, not anything about what a
// model would choose to remember.
var _ = Describe("Memory for the codex thatch launches", Label("im", "real-agents", "memory"), func() {
	It("codex: remembers over MCP in one session and recalls it in another, told how at its start, with no approval asked", func() {
		iw := NewRealIMWorld("codex")
		d := StartDaemon(iw.World)
		fact := "The web app deploys with make ship, to the staging cluster first"
		iw.Codex.On(fakeresponses.Rule{Name: "remember", Match: fakeresponses.UserContains("REMEMBER"), Steps: []fakeresponses.Step{
			{Calls: []fakeresponses.Call{fakeresponses.MCPTool("thatch", "memory_remember", map[string]any{"label": "Deploy path", "content": fact})}},
			{Text: "Saved it."},
		}})
		// The answer after the recall is "result: " and the tool's result,
		// so the chat shows what the memory gave back.
		iw.Codex.On(fakeresponses.Rule{Name: "recall", Match: fakeresponses.UserContains("RECALL"), Steps: []fakeresponses.Step{
			{Calls: []fakeresponses.Call{fakeresponses.MCPTool("thatch", "memory_recall", map[string]any{"query": "how does the web app deploy"})}},
			{TextFrom: func(r *fakeresponses.Request) string {
				return "result: " + fakeresponses.CommandOutput(strings.Join(r.Outputs(), "\n"))
			}},
		}})

		one := iw.Setup("mem one", "codex", "web", "REMEMBER how we deploy")
		Eventually(iw.Said(one)).Should(ContainElement("Saved it."))
		var results []string
		for _, r := range iw.Codex.Requests() {
			if r.Rule == "remember" && r.Step == 1 {
				results = append(results, r.Outputs()...)
			}
		}
		Expect(results).To(ContainElement(MatchRegexp(`"op":\s*"new"`)), "the remember call reached the daemon and its answer came back to the model")

		two := iw.Setup("mem two", "codex", "api", "RECALL how we deploy")
		Eventually(iw.Said(two)).Should(ContainElement(And(HavePrefix("result: "), ContainSubstring(fact))),
			"a session in another directory recalls it (neither is a git checkout: both use the global store)")

		By("each session was offered the tools, told how to use them, and was a session of its own")
		sessions := map[string]bool{}
		for _, r := range iw.Codex.Requests() {
			if r.Kind != fakeresponses.KindTurn {
				continue
			}
			sessions[r.SessionID] = true
			Expect(r.Tools).To(ContainElements("mcp__thatch.memory_remember", "mcp__thatch.memory_recall", "mcp__thatch.memory_forget", "mcp__thatch.memory_list"))
			Expect(string(r.Body)).To(ContainSubstring("memory_recall(query)"))
		}
		Expect(sessions).To(HaveLen(2))

		By("no approval was asked in the chat")
		for _, thread := range []int64{one, two} {
			msgs := iw.TG.Messages(imChat, thread)
			ready := -1
			for i, m := range msgs {
				if visible(m) == "Session ready!" {
					ready = i
				}
			}
			Expect(ready).To(BeNumerically(">=", 0))
			for _, m := range msgs[ready+1:] {
				Expect(m.Buttons).To(BeEmpty(), "thread %d was asked %q", thread, m.Text)
			}
		}

		By("the store holds it")
		var list struct {
			Entries []struct{ Label, Content, Store string }
		}
		Expect(d.Post("/v1/memory/list", map[string]any{"store": "global"}, &list)).To(Succeed())
		Expect(list.Entries).To(ContainElement(And(HaveField("Label", "Deploy path"), HaveField("Content", fact))))
	})
})
