package agents_test

import (
	"reflect"
	"strings"
	"testing"
)

// A tool call is one short line: the tool and what it acts on.
func TestToolCallsAreOneLineEach(t *testing.T) {
	r := newRegistry(t, t.TempDir(), nil)
	long := strings.Repeat("x", 100)
	for _, tc := range []struct {
		agent, line string
		want        []string
	}{
		{"claude", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Running."},` +
			`{"type":"tool_use","name":"Bash","input":{"command":"npm test\nnpm run lint","description":"run the tests"}},` +
			`{"type":"tool_use","name":"Read","input":{"file_path":"/src/a.go"}}]}}`,
			[]string{"▸ Bash: npm test", "▸ Read: /src/a.go"}},
		{"claude", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","name":"Grep","input":{"pattern":"` + long + `"}}]}}`,
			[]string{"▸ Grep: " + strings.Repeat("x", 80) + "…"}},
		{"claude", `{"type":"assistant","isSidechain":true,"message":{"role":"assistant","content":[{"type":"tool_use","name":"Bash","input":{}}]}}`, nil},
		{"claude", `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"ok"}]}}`, nil},
		{"codex", `{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"ls -la\"]}"}}`,
			[]string{"▸ shell: ls -la"}},
		{"codex", `{"type":"response_item","payload":{"type":"local_shell_call","action":{"command":["git","status"]}}}`,
			[]string{"▸ shell: git status"}},
		{"codex", `{"type":"response_item","payload":{"type":"message","role":"assistant","content":[]}}`, nil},
		{"copilot", `{"type":"assistant.message","data":{"content":"hi"}}`, nil},
		{"claude", `{not json`, nil},
	} {
		if got := agent(t, r, tc.agent).ToolCalls([]byte(tc.line)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %.60s: %q, want %q", tc.agent, tc.line, got, tc.want)
		}
	}
}
