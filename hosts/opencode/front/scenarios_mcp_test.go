package front_test

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/hosts/memmcp"
)

// mcpSession connects an MCP client, in process, to a thatch mcp server
// for an agent working in dir, which talks to the world's daemon.
func (w *world) mcpSession(dir string) *mcp.ClientSession {
	GinkgoHelper()
	c, _, err := control.Dial(w.cfg.Control.StateFile, w.cfg.Control.TokenFile, 10*time.Second)
	Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	srv, err := memmcp.New(ctx, memmcp.Options{Daemon: c, Directory: dir, Version: "test"})
	Expect(err).NotTo(HaveOccurred())
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(ss.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, ct, nil)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cs.Close)
	return cs
}

// callTool calls a tool and returns its text and whether it is an error.
func callTool(cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	GinkgoHelper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	Expect(err).NotTo(HaveOccurred(), "a tool's failure is its result, not a protocol error")
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String(), res.IsError
}

var _ = Describe("The memory over MCP (thatch mcp)", func() {
	var w *world
	BeforeEach(func() { w = newWorld() })

	It("gives an agent in a project the project's store, the same guard, and the reminder as instructions", func() {
		repo := gitRepo("git@github.com:acme/api.git")
		cs := w.mcpSession(repo)

		Expect(cs.InitializeResult().Instructions).To(ContainSubstring("memory_recall(query)"),
			"every MCP client is told how to use the memory")
		tools, err := cs.ListTools(context.Background(), nil)
		Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, t := range tools.Tools {
			names = append(names, t.Name)
		}
		Expect(names).To(ConsistOf("memory_remember", "memory_recall", "memory_forget", "memory_list"))

		text, isErr := callTool(cs, "memory_remember", map[string]any{"label": "Test command", "content": "Run make test before pushing"})
		Expect(isErr).To(BeFalse(), text)
		var saved struct{ Store, Op string }
		Expect(json.Unmarshal([]byte(text), &saved)).To(Succeed())
		Expect(saved.Store).To(Equal("acme/api"), "the directory's git remote names the store, as for an opencode session")

		text, isErr = callTool(cs, "memory_remember", map[string]any{"label": "Deploy key",
			"content": "deploy with AKIAIOSFODNN7EXAMPLE and secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"})
		Expect(isErr).To(BeTrue(), "a secret is refused")
		Expect(text).NotTo(ContainSubstring("AKIAIOSFODNN7EXAMPLE"), "the refusal names the kind, never the secret")

		text, isErr = callTool(cs, "memory_recall", map[string]any{"query": "how do I run the tests"})
		Expect(isErr).To(BeFalse(), text)
		Expect(text).To(ContainSubstring("Run make test before pushing"))

		By("an opencode session in the same project sees the same store")
		var rec struct {
			Hits []struct{ Entry struct{ Store string } }
		}
		w.post("/v1/memory/recall", map[string]any{"store": "acme/api", "query": "tests"}, &rec)
		Expect(rec.Hits).NotTo(BeEmpty())

		text, isErr = callTool(cs, "memory_forget", map[string]any{})
		Expect(isErr).To(BeTrue(), "forget without a label is refused before the daemon is asked")
		Expect(text).To(ContainSubstring("label or a slug"))
		text, isErr = callTool(cs, "memory_forget", map[string]any{"label": "Test command"})
		Expect(isErr).To(BeFalse(), text)
		text, _ = callTool(cs, "memory_list", map[string]any{})
		Expect(text).NotTo(ContainSubstring("make test"))
	})

	It("refuses to start for an agent whose daemon does not answer", func() {
		_, err := memmcp.New(context.Background(), memmcp.Options{Daemon: deadDaemon{}, Directory: "/tmp"})
		Expect(err).To(MatchError(ContainSubstring("reminder")))
	})
})

type deadDaemon struct{}

func (deadDaemon) Do(context.Context, string, string, any, any) error {
	return control.ErrNoDaemon
}
