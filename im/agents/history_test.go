package agents_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/thatch-run/thatch/im/agents"
)

func writeTranscript(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// /history shows the last exchanges: each prompt with the replies to it,
// oldest first; a prompt not answered yet has none.
func TestHistoryKeepsTheLastExchangesWithTheirReplies(t *testing.T) {
	r := newRegistry(t, t.TempDir(), nil)
	user := func(s string) string { return `{"type":"user","message":{"role":"user","content":"` + s + `"}}` }
	reply := func(s string) string {
		return `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"` + s + `"}]}}`
	}
	path := writeTranscript(t, reply("from before"), user("one"), reply("r1"), `{not json`, user("two"), reply("r2a"),
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","name":"Bash"}]}}`, reply("r2b"), user("three"))
	got, err := agent(t, r, "claude").History(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []agents.Exchange{{Prompt: "two", Replies: []string{"r2a", "r2b"}}, {Prompt: "three"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("History = %+v, want %+v", got, want)
	}
	all, _ := agent(t, r, "claude").History(path, 10)
	if len(all) != 4 || all[0].Prompt != "" || all[0].Replies[0] != "from before" {
		t.Fatalf("History(10) = %+v, want the reply before any prompt first", all)
	}
}

// codex records a prompt twice (an event and a message): it is one
// exchange.
func TestHistoryCountsCodexsDoubledPromptOnce(t *testing.T) {
	r := newRegistry(t, t.TempDir(), nil)
	path := writeTranscript(t,
		`{"type":"event_msg","payload":{"type":"user_message","message":"hi"}}`,
		`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}`,
		`{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hello"}]}}`)
	got, err := agent(t, r, "codex").History(path, 5)
	if err != nil {
		t.Fatal(err)
	}
	if want := []agents.Exchange{{Prompt: "hi", Replies: []string{"hello"}}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("History = %+v, want %+v", got, want)
	}
}
