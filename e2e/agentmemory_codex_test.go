package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

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
			Expect(iw.askedAfterReady(thread)).To(BeEmpty(), "thread %d was asked", thread)
		}

		By("the store holds it")
		Expect(globalMemories(d)).To(ContainElement("Deploy path: " + fact))
	})

	// codex exec runs with approval policy "never": an MCP tool it deems
	// destructive (an MCP tool is, unless annotated otherwise) is refused
	// ("MCP tool call requires approval, but approval policy is never"),
	// so the extraction tools must say they are not.
	It("codex: an idle session's tool calls are extracted by codex exec through thatch's MCP server, its fetch claiming and its completion consuming, with no secret in the payload, the store or the journal", func() {
		iw := NewRealIMWorld("codex")
		iw.Env = append(iw.Env, "THATCH_MEMORY_IDLE_AFTER=2s")
		key := "ghp_" + strings.Repeat("Xy9", 12)
		notes := filepath.Join(iw.Projects, "web", "DEPLOY.md")
		Expect(os.WriteFile(notes, []byte("Deploy with make ship.\nThe deploy token is "+key+"\n"), 0o644)).To(Succeed())
		d := StartDaemon(iw.World)
		// One shell call in the chat session: cat is a command codex
		// knows to be safe, so it runs it without asking.
		iw.Codex.On(fakeresponses.Rule{Name: "look", Match: fakeresponses.UserContains("LOOKAROUND"), Steps: []fakeresponses.Step{
			{Calls: []fakeresponses.Call{fakeresponses.Shell("cat " + notes)}},
			{Text: "Found the deploy notes."},
		}})
		fact := "The web project deploys with make ship (DEPLOY.md)"
		const extractor = "extract"
		iw.Codex.On(fakeresponses.Rule{Name: extractor, Match: fakeresponses.UserContains("thatch's memory extractor"), Steps: []fakeresponses.Step{
			{Calls: []fakeresponses.Call{fakeresponses.MCPTool("thatch", "extraction_payload", map[string]any{})}},
			{Calls: []fakeresponses.Call{fakeresponses.MCPTool("thatch", "memory_remember", map[string]any{"label": "Deploy notes", "content": fact})}},
			{Calls: []fakeresponses.Call{fakeresponses.MCPTool("thatch", "extraction_done", map[string]any{})}},
			{Text: "Extracted."},
		}})

		thread := iw.Setup("extract", "codex", "web", "LOOKAROUND please")
		Eventually(iw.Said(thread)).Should(ContainElement("Found the deploy notes."))
		Expect(iw.Codex.Served("look", 1)).To(Equal(1), "the shell call ran and its output came back to the model")

		By("once the session is idle, codex exec fetches the payload, remembers, and completes")
		// resultOf is what the extraction child's call at step gave back:
		// the last output of the request at step+1, which carries it to
		// the model.
		resultOf := func(step int) func() string {
			return func() string {
				for _, r := range iw.Codex.Requests() {
					if out := r.Outputs(); r.Rule == extractor && r.Step == step+1 && len(out) > 0 {
						return strings.TrimSpace(fakeresponses.CommandOutput(out[len(out)-1]))
					}
				}
				return ""
			}
		}
		Eventually(resultOf(2), 2*time.Minute).Should(Equal("Acknowledged: 1 interaction(s) completed."),
			"the completion consumed the one shell call the fetch claimed (the chat session made no other tool call)")
		payload := resultOf(0)()
		Expect(payload).To(And(ContainSubstring("exec_command"), ContainSubstring("make ship"), ContainSubstring("[redacted:github_token]")))
		Expect(payload).NotTo(ContainSubstring(key), "the payload holds no secret")
		web := filepath.Join(iw.Projects, "web")
		Expect(payload).To(ContainSubstring(`"directory":"`+web+`"`),
			"the session's directory came from its transcript (codex writes it in its first lines, before any tool call)")
		asked := false
		for _, r := range iw.Codex.Requests() {
			asked = asked || (r.Rule == extractor && strings.Contains(r.User, "a codex session that worked in "+web+"."))
		}
		Expect(asked).To(BeTrue(), "the child was told where the session worked")
		Expect(resultOf(1)()).To(MatchRegexp(`"op":\s*"new"`), "the remember call reached the daemon")

		Expect(globalMemories(d)).To(ContainElement("Deploy notes: " + fact))
		Expect(iw.Said(thread)()).NotTo(ContainElement("Extracted."), "the child typed nothing in the chat")
		Expect(iw.askedAfterReady(thread)).To(BeEmpty(), "no approval was asked in the chat")

		By("thatch status shows the session's extraction")
		Eventually(iw.StatusTable).Should(MatchRegexp(`(?m)^\s+codex:\S+\s+a chat\s+0\s+0\s+-\s+1\s+1\s*$`), "one child ran, nothing pending, one interaction extracted")

		By("nothing the daemon wrote holds the secret")
		d.Stop()
		Expect(noFileHolds(iw.DataDir, key)).To(Succeed())
	})
	It("codex started by hand after thatch install codex: its SessionStart hook tells the daemon, and its idle session's shell call is extracted by codex exec", func() {
		iw := NewRealIMWorld("codex")
		iw.Env = append(iw.Env, "THATCH_MEMORY_IDLE_AFTER=2s")
		web := filepath.Join(iw.Projects, "web")
		notes := filepath.Join(web, "DEPLOY.md")
		Expect(os.WriteFile(notes, []byte("Deploy with make ship.\n"), 0o644)).To(Succeed())
		d := StartDaemon(iw.World)
		Expect(iw.install("codex")).To(ContainSubstring("trust"), "install says the hook must be trusted in codex")

		iw.Codex.On(fakeresponses.Rule{Name: "look", Match: fakeresponses.UserContains("LOOKAROUND"), Steps: []fakeresponses.Step{
			{Calls: []fakeresponses.Call{fakeresponses.Shell("cat " + notes)}},
			{Text: "Found the deploy notes."},
		}})
		fact := "The web project deploys with make ship"
		const extractor = "extract"
		iw.Codex.On(fakeresponses.Rule{Name: extractor, Match: fakeresponses.UserContains("thatch's memory extractor"), Steps: []fakeresponses.Step{
			{Calls: []fakeresponses.Call{fakeresponses.MCPTool("thatch", "extraction_payload", map[string]any{})}},
			{Calls: []fakeresponses.Call{fakeresponses.MCPTool("thatch", "memory_remember", map[string]any{"label": "Deploy", "content": fact})}},
			{Calls: []fakeresponses.Call{fakeresponses.MCPTool("thatch", "extraction_done", map[string]any{})}},
			{Text: "Extracted."},
		}})

		By("a codex exec run by hand in the project (its hook trusted for this run, as /hooks would)")
		run := exec.Command(bins.Codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust", "LOOKAROUND please")
		run.Dir, run.Env = web, iw.Env
		out, err := run.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "codex exec: %s", out)
		Expect(string(out)).To(ContainSubstring("Found the deploy notes."))

		By("once it is idle, codex exec fetches its shell call, remembers, and completes")
		Eventually(func() string {
			for _, r := range iw.Codex.Requests() {
				if out := r.Outputs(); r.Rule == extractor && r.Step == 3 && len(out) > 0 {
					return strings.TrimSpace(fakeresponses.CommandOutput(out[len(out)-1]))
				}
			}
			return ""
		}, 2*time.Minute).Should(Equal("Acknowledged: 1 interaction(s) completed."))
		Expect(globalMemories(d)).To(ContainElement("Deploy: " + fact))
		Eventually(iw.StatusTable).Should(MatchRegexp(`(?m)^\s+codex:\S+\s+thatch \(started by hand\)\s+0\s+0\s+-\s+1\s+1\s*$`))
	})
})
