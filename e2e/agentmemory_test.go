package e2e

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/fakeanthropic"
	"github.com/thatch-run/thatch/e2e/faketelegram"
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
		Expect(globalMemories(d)).To(ContainElement("Deploy path: " + fact))
	})

	It("claude: an idle session's tool calls are extracted by claude -p through thatch's MCP server, its fetch claiming and its completion consuming, with no secret in the payload, the store or the journal", func() {
		iw := NewRealIMWorld("claude")
		iw.Env = append(iw.Env, "THATCH_MEMORY_IDLE_AFTER=2s")
		key := "ghp_" + strings.Repeat("Xy9", 12)
		notes := filepath.Join(iw.Projects, "web", "DEPLOY.md")
		Expect(os.WriteFile(notes, []byte("Deploy with make ship.\nThe deploy token is "+key+"\n"), 0o644)).To(Succeed())
		d := StartDaemon(iw.World)
		iw.Claude.On(fakeanthropic.UserSays("LOOKAROUND"), fakeanthropic.Reply{
			Tool: &fakeanthropic.ToolUse{Name: "Read", Input: map[string]any{"file_path": notes}},
			Then: &fakeanthropic.Reply{Text: "Found the deploy notes."}})
		fact := "The web project deploys with make ship (DEPLOY.md)"
		scriptExtractor(iw.Claude, "Deploy notes", fact)

		thread := iw.Setup("extract", "claude", "web", "LOOKAROUND please")
		Eventually(iw.Said(thread)).Should(ContainElement("Found the deploy notes."))

		By("once the session is idle, a headless claude fetches the payload, remembers, and completes")
		resultOf := func(prefix string) func() string { return toolResult(iw.Claude, prefix) }
		Eventually(resultOf("Acknowledged:"), 2*time.Minute).Should(Equal("Acknowledged: 1 interaction(s) completed."),
			"the completion consumed the one Read call the fetch claimed")
		payload := resultOf("{")()
		Expect(payload).To(And(MatchRegexp(`"tool":\s*"Read"`), ContainSubstring("make ship"), ContainSubstring("[redacted:github_token]")))
		Expect(payload).NotTo(ContainSubstring(key), "the payload holds no secret")

		Expect(globalMemories(d)).To(ContainElement("Deploy notes: " + fact))
		Expect(iw.Said(thread)()).NotTo(ContainElement("Extracted."), "the child typed nothing in the chat")
		line := "🧠 1 memory saved from this session's last 1 tool call."
		Eventually(iw.Said(thread)).Should(ContainElement(line), "the thread is told what was saved")
		for _, s := range iw.TG.Sent() {
			if s.Text == line {
				Expect(s.Silent).To(BeTrue(), "the line does not notify")
			}
		}

		By("thatch status shows the session's extraction")
		Eventually(iw.StatusTable).Should(MatchRegexp(`(?m)^\s+claude:\S+\s+a chat\s+0\s+0\s+-\s+1\s+1\s*$`), "one child ran, nothing pending, one interaction extracted")
		Expect(iw.sessionFiles("web")).To(HaveLen(1), "the child's own transcript is not beside the chat session's")

		By("nothing the daemon wrote holds the secret")
		d.Stop()
		Expect(noFileHolds(iw.DataDir, key)).To(Succeed())
	})

	It("claude started by hand after thatch install claude: its idle session's tool calls are extracted by claude -p, and thatch status says thatch follows it", func() {
		iw := NewRealIMWorld("claude")
		iw.Env = append(iw.Env, "THATCH_MEMORY_IDLE_AFTER=2s")
		web := filepath.Join(iw.Projects, "web")
		notes := filepath.Join(web, "DEPLOY.md")
		Expect(os.WriteFile(notes, []byte("Deploy with make ship.\n"), 0o644)).To(Succeed())
		d := StartDaemon(iw.World)
		iw.install("claude")

		iw.Claude.On(fakeanthropic.UserSays("LOOKAROUND"), fakeanthropic.Reply{
			Tool: &fakeanthropic.ToolUse{Name: "Read", Input: map[string]any{"file_path": notes}},
			Then: &fakeanthropic.Reply{Text: "Found the deploy notes."}})
		fact := "The web project deploys with make ship"
		scriptExtractor(iw.Claude, "Deploy", fact)

		By("a claude -p run by hand in the project, not in any chat")
		run := exec.Command(bins.Claude, "-p", "LOOKAROUND please")
		run.Dir, run.Env = web, iw.Env
		out, err := run.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "claude -p: %s", out)
		Expect(string(out)).To(ContainSubstring("Found the deploy notes."))

		By("once it is idle, an extraction child fetches its Read call, remembers, and completes")
		Eventually(toolResult(iw.Claude, "Acknowledged:"), 2*time.Minute).Should(Equal("Acknowledged: 1 interaction(s) completed."))
		Expect(globalMemories(d)).To(ContainElement("Deploy: " + fact))
		Eventually(iw.StatusTable).Should(MatchRegexp(`(?m)^\s+claude:\S+\s+thatch \(started by hand\)\s+0\s+0\s+-\s+1\s+1\s*$`))
		Expect(regexp.MustCompile(`(?m)^\s+claude:`).FindAllString(iw.StatusTable(), -1)).To(HaveLen(1),
			"the extraction child's own session is not followed")
	})

	It("claude: an extraction child killed after its fetch hands the claim back, and the next child extracts it", func() {
		iw := NewRealIMWorld("claude")
		iw.Env = append(iw.Env, "THATCH_MEMORY_IDLE_AFTER=2s")
		notes := filepath.Join(iw.Projects, "web", "DEPLOY.md")
		Expect(os.WriteFile(notes, []byte("Deploy with make ship.\n"), 0o644)).To(Succeed())
		d := StartDaemon(iw.World)
		iw.Claude.On(fakeanthropic.UserSays("LOOKAROUND"), fakeanthropic.Reply{
			Tool: &fakeanthropic.ToolUse{Name: "Read", Input: map[string]any{"file_path": notes}},
			Then: &fakeanthropic.Reply{Text: "Read it."}})
		const extractor = "thatch's memory extractor"
		call := func(tool string, then *fakeanthropic.Reply) *fakeanthropic.Reply {
			return &fakeanthropic.Reply{Tool: &fakeanthropic.ToolUse{Name: "mcp__thatch__" + tool, Input: map[string]any{}}, Then: then}
		}
		search := &fakeanthropic.ToolUse{Name: "ToolSearch", Input: map[string]any{
			"query": "select:mcp__thatch__extraction_payload,mcp__thatch__extraction_done", "max_results": 2}}
		iw.Claude.On(fakeanthropic.UserSays(extractor), fakeanthropic.Reply{Tool: search,
			Then: call("extraction_payload", call("extraction_done", &fakeanthropic.Reply{Text: "Extracted."}))})
		// The first child's session hangs after its fetch, until it is
		// killed.
		var mu sync.Mutex
		first := ""
		iw.Claude.On(func(r *fakeanthropic.Request) bool {
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(r.UserText, extractor) {
				return false
			}
			if first == "" {
				first = r.SessionID
			}
			return r.SessionID == first
		}, fakeanthropic.Reply{Tool: search, Then: call("extraction_payload", &fakeanthropic.Reply{Delay: 10 * time.Minute})})

		thread := iw.Setup("handback", "claude", "web", "LOOKAROUND please")
		Eventually(iw.Said(thread)).Should(ContainElement("Read it."))
		fetched := func() int {
			n := 0
			for _, r := range iw.Claude.Requests() {
				if strings.Contains(r.ToolResultText(), "make ship") && strings.Contains(r.ToolResultText(), "interactions") {
					n++
				}
			}
			return n
		}
		Eventually(fetched, 2*time.Minute).Should(Equal(1), "the first child fetched the payload")

		By("the first child is killed while it holds the claim")
		var child int
		Eventually(func() int {
			for _, pid := range descendants(d.Sess.Command.Process.Pid) {
				if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil &&
					bytes.Contains(cmd, []byte(extractor)) && !bytes.HasPrefix(cmd, []byte("/bin/sh")) {
					child = pid
				}
			}
			return child
		}).ShouldNot(BeZero())
		Expect(syscall.Kill(child, syscall.SIGKILL)).To(Succeed())

		By("the next child gets the same interaction, and its completion consumes it")
		Eventually(toolResult(iw.Claude, "Acknowledged:"), 2*time.Minute).Should(Equal("Acknowledged: 1 interaction(s) completed."))
		Expect(fetched()).To(Equal(2), "the second child fetched what the first held")
		Expect(d.Log()).To(ContainSubstring("an extraction child ended"))
	})
})

// toolResult is a poll of the first tool result the fake model was sent
// that begins with prefix (trimmed; "" while there is none).
func toolResult(model *fakeanthropic.Server, prefix string) func() string {
	return func() string {
		for _, r := range model.Requests() {
			if t := strings.TrimSpace(r.ToolResultText()); strings.HasPrefix(t, prefix) {
				return t
			}
		}
		return ""
	}
}

// install runs `thatch install agent` for the world's user, and returns
// what it printed.
func (iw *IMWorld) install(agent string) string {
	GinkgoHelper()
	cmd := exec.Command(bins.Thatch, "install", agent, "--config", iw.ThatchConfig)
	cmd.Env = iw.Env
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "thatch install %s: %s", agent, out)
	return string(out)
}

// scriptExtractor has the fake model play an extraction child that
// fetches its payload, remembers label: fact, and completes.
func scriptExtractor(model *fakeanthropic.Server, label, fact string) {
	call := func(tool string, input map[string]any, then *fakeanthropic.Reply) *fakeanthropic.Reply {
		return &fakeanthropic.Reply{Tool: &fakeanthropic.ToolUse{Name: "mcp__thatch__" + tool, Input: input}, Then: then}
	}
	model.On(fakeanthropic.UserSays("thatch's memory extractor"), fakeanthropic.Reply{
		Tool: &fakeanthropic.ToolUse{Name: "ToolSearch", Input: map[string]any{
			"query": "select:mcp__thatch__extraction_payload,mcp__thatch__memory_remember,mcp__thatch__extraction_done", "max_results": 3}},
		Then: call("extraction_payload", map[string]any{},
			call("memory_remember", map[string]any{"label": label, "content": fact},
				call("extraction_done", map[string]any{}, &fakeanthropic.Reply{Text: "Extracted."})))})
}

// globalMemories are "label: content" of every memory of the daemon's
// global store.
func globalMemories(d *Daemon) []string {
	GinkgoHelper()
	var list struct {
		Entries []struct{ Label, Content string }
	}
	Expect(d.Post("/v1/memory/list", map[string]any{"store": "global"}, &list)).To(Succeed())
	var out []string
	for _, e := range list.Entries {
		out = append(out, e.Label+": "+e.Content)
	}
	return out
}

// askedAfterReady are the texts of the thread's messages with buttons
// after its "Session ready!" (an agent's approval prompt shows so).
func (iw *IMWorld) askedAfterReady(thread int64) []string {
	GinkgoHelper()
	msgs := iw.TG.Messages(imChat, thread)
	ready := slices.IndexFunc(msgs, func(m faketelegram.Sent) bool { return visible(m) == "Session ready!" })
	Expect(ready).To(BeNumerically(">=", 0), "thread %d was never ready", thread)
	var out []string
	for _, m := range msgs[ready+1:] {
		if len(m.Buttons) > 0 {
			out = append(out, m.Text)
		}
	}
	return out
}

// noFileHolds says which file under dir holds secret (nil: none).
func noFileHolds(dir, secret string) error {
	return filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, []byte(secret)) {
			return fmt.Errorf("%s holds the secret", path)
		}
		return err
	})
}
