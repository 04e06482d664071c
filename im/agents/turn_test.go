package agents_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thatch-run/thatch/im/agents"
)

// turnItems reads every line of a transcript fixture.
func turnItems(t *testing.T, agent, file string) []string {
	t.Helper()
	reg, err := agents.NewRegistry(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := reg.Get(agent)
	fh, err := os.Open(filepath.Join("testdata", "replies", file))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []string
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, agents.MaxLine)
	for sc.Scan() {
		for _, it := range a.TurnItems(sc.Bytes()) {
			if it.Kind == agents.ItemContext {
				continue // TestContextItemsAgreeWithUsage
			}
			s := it.Kind
			switch it.Kind {
			case agents.ItemText, agents.ItemTool:
				s += " " + strings.SplitN(it.Text, "\n", 2)[0]
			case agents.ItemResult:
				s += " " + it.ID + " " + it.Outcome()
			}
			out = append(out, s)
		}
	}
	return out
}

// A turn as the transcripts record it: the user's message, texts, tool
// calls with their ids,
// their outcomes (codex's exit status), and the turn's end; a
// sub-agent's lines are not the turn's.
func TestTurnItemsFollowTheTranscript(t *testing.T) {
	claude := strings.Join(turnItems(t, agents.Claude, "claude.jsonl"), "\n")
	want := strings.Join([]string{
		"user", "text Let me look at the test.", "tool ▸ Read: /home/u/p/x_test.go", "result toolu_01 ✓",
		"tool ▸ Bash: go test ./...", "text The test sleeps **instead of polling**:", "text Shall I fix it?", "end",
	}, "\n")
	if !strings.HasPrefix(claude, want) {
		t.Fatalf("claude:\n%s\nwant it to start with:\n%s", claude, want)
	}
	codex := strings.Join(turnItems(t, agents.Codex, "codex.jsonl"), "\n")
	for _, w := range []string{"user\nuser\ntext 4", "tool ▸ shell: ls\nresult call_1 ✓", "tool ▸ apply_patch"} {
		if !strings.Contains(codex, w) {
			t.Fatalf("codex:\n%s\nwant %q", codex, w)
		}
	}
	if strings.Contains(claude, "subagent") {
		t.Fatalf("a sub-agent's text is in the turn:\n%s", claude)
	}
}

// A codex MCP call names its server's namespace, and its result is a list
// of text parts: the call is named as claude names MCP tools, and the
// result's text is read (the memory's extraction keeps both).
func TestCodexMCPCallsAndTheirPartsAreRead(t *testing.T) {
	reg, err := agents.NewRegistry(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := reg.Get(agents.Codex)
	call := a.TurnItems([]byte(`{"type":"response_item","payload":{"type":"function_call","namespace":"mcp__thatch","name":"memory_recall","arguments":"{\"query\":\"deploy\"}","call_id":"c1"}}`))
	if len(call) != 1 || call[0].Kind != agents.ItemTool || call[0].Name != "mcp__thatch__memory_recall" || call[0].Input != `{"query":"deploy"}` {
		t.Fatalf("call = %+v", call)
	}
	res := a.TurnItems([]byte(`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"{\"hits\":[]}"}]}}`))
	if len(res) != 1 || res[0].Kind != agents.ItemResult || res[0].Output != `{"hits":[]}` || res[0].Failed {
		t.Fatalf("result = %+v", res)
	}
	shell := a.TurnItems([]byte(`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c2","output":"{\"output\":\"boom\",\"metadata\":{\"exit_code\":2}}"}}`))
	if len(shell) != 1 || shell[0].Output != "boom" || !shell[0].Failed {
		t.Fatalf("shell result = %+v", shell)
	}
}
