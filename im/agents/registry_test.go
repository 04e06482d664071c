package agents_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/thatch-run/thatch/im/agents"
)

func newRegistry(t *testing.T, home string, specs map[string]agents.Spec, opts ...agents.Option) *agents.Registry {
	t.Helper()
	r, err := agents.NewRegistry(home, specs, opts...)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	return r
}

func agent(t *testing.T, r *agents.Registry, name string) *agents.Agent {
	t.Helper()
	a, ok := r.Get(name)
	if !ok {
		t.Fatalf("no agent %s", name)
	}
	return a
}

func TestRegistryHasTheFourAgentsWithDefaultsAndOverrides(t *testing.T) {
	r := newRegistry(t, t.TempDir(), map[string]agents.Spec{
		"codex": {Launch: "codex --full-auto", Resume: "codex resume --full-auto {session_id}"},
	})
	if got, want := r.Names(), []string{"claude", "codex", "copilot", "mimo"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	want := map[string][2]string{
		"claude":  {"claude", "claude -r {session_id}"},
		"codex":   {"codex --full-auto", "codex resume --full-auto {session_id}"},
		"copilot": {"copilot", "copilot --resume {session_id}"},
		"mimo":    {"mimo", "mimo --resume {session_id}"},
	}
	for name, w := range want {
		a := agent(t, r, name)
		if a.Name != name || a.Launch != w[0] || a.Resume != w[1] {
			t.Errorf("%s: got (%q, %q, %q), want (%q, %q)", name, a.Name, a.Launch, a.Resume, w[0], w[1])
		}
	}
	if _, ok := r.Get("gemini"); ok {
		t.Error("Get(gemini) found an agent")
	}
}

func TestNewRegistryNamesEveryBadSpec(t *testing.T) {
	_, err := agents.NewRegistry(t.TempDir(), map[string]agents.Spec{
		"codex":  {Detect: "(unclosed"},
		"mimo":   {Detect: "[z-a]"},
		"gemini": {Launch: "gemini"},
		"claude": {Detect: `^claude$`},
	})
	if err == nil {
		t.Fatal("NewRegistry accepted bad regexps and an unknown agent")
	}
	if !errors.Is(err, agents.ErrBadDetect) || !errors.Is(err, agents.ErrUnknownAgent) {
		t.Errorf("error %v should match ErrBadDetect and ErrUnknownAgent", err)
	}
	for _, s := range []string{"agent codex", "agent mimo", `"gemini"`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
	if strings.Contains(err.Error(), "agent claude") {
		t.Errorf("error %q blames claude, whose regexp is fine", err)
	}
}

func TestResumeCommandSubstitutesSafeIDsAndRefusesOthers(t *testing.T) {
	r := newRegistry(t, t.TempDir(), map[string]agents.Spec{"copilot": {Resume: "copilot --resume={session_id} --log={session_id}.log"}})
	noResume := &agents.Agent{Name: "mimo"} // a config that empties im.agents.mimo.resume
	const id = "95e6f011-ec33-4b37-91ad-5d242b40ae3d"
	cases := []struct {
		agent, id, want string
		err             error
	}{
		{"claude", id, "claude -r " + id, nil},
		{"codex", id, "codex resume " + id, nil},
		{"copilot", "ses_01AB-x", "copilot --resume=ses_01AB-x --log=ses_01AB-x.log", nil},
		{"mimo", "ses_dca95f62bffeRDOQsucktegWH0", "mimo --resume ses_dca95f62bffeRDOQsucktegWH0", nil},
		{"", id, "", agents.ErrNoResume},
		{"claude", "", "", agents.ErrUnsafeID},
		{"claude", id + "; rm -rf ~", "", agents.ErrUnsafeID},
		{"claude", "$(reboot)", "", agents.ErrUnsafeID},
		{"claude", "a b", "", agents.ErrUnsafeID},
		{"claude", "../../etc", "", agents.ErrUnsafeID},
		{"claude", "id\n", "", agents.ErrUnsafeID},
		{"claude", strings.Repeat("a", 129), "", agents.ErrUnsafeID},
	}
	for _, c := range cases {
		a := noResume
		if c.agent != "" {
			a = agent(t, r, c.agent)
		}
		got, err := a.ResumeCommand(c.id)
		if c.err != nil {
			if !errors.Is(err, c.err) || got != "" {
				t.Errorf("%s ResumeCommand(%q) = %q, %v; want error %v", c.agent, c.id, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s ResumeCommand(%q) = %q, %v; want %q", c.agent, c.id, got, err, c.want)
		}
	}
}

func TestDetectFindsTheAgentNearestThePane(t *testing.T) {
	r := newRegistry(t, t.TempDir(), map[string]agents.Spec{"mimo": {Detect: `(^|/)mimo(code)?(\s|$)`}})
	bash := agents.Proc{PID: 10, PPID: 1, Name: "bash", Cmdline: "-bash"}
	child := func(pid int, name, cmdline string) agents.Proc {
		return agents.Proc{PID: pid, PPID: 10, Name: name, Cmdline: cmdline}
	}
	cases := []struct {
		name string
		tree []agents.Proc
		want string
	}{
		{"node-based claude shows as node", []agents.Proc{bash, child(11, "node", "node /usr/lib/node_modules/@anthropic-ai/claude-code/bin/claude --continue")}, "claude"},
		{"claude that set its title", []agents.Proc{bash, child(11, "claude", "claude")}, "claude"},
		{"node with flags before the script", []agents.Proc{bash, child(11, "node", "/usr/bin/node --no-warnings --enable-source-maps /home/u/.npm-global/bin/copilot")}, "copilot"},
		{"codex launcher and its native child", []agents.Proc{bash, child(11, "node", "node /usr/local/bin/codex"), {PID: 12, PPID: 11, Name: "codex", Cmdline: "/usr/local/lib/node_modules/@openai/codex/vendor/x86_64-unknown-linux-musl/codex/codex"}}, "codex"},
		{"the name alone (a zombie has no cmdline)", []agents.Proc{bash, child(11, "copilot", "")}, "copilot"},
		{"configured regexp", []agents.Proc{bash, child(11, "mimocode", "/opt/mimo/bin/mimocode")}, "mimo"},
		{"an agent running another as a tool stays itself", []agents.Proc{bash, child(11, "claude", "claude"), {PID: 12, PPID: 11, Name: "codex", Cmdline: "codex exec hi"}}, "claude"},
		{"the agent's name as an argument is not the agent", []agents.Proc{bash, child(11, "grep", "grep -r claude .")}, ""},
		{"an editor on a file named after the agent", []agents.Proc{bash, child(11, "vim", "vim claude.md")}, ""},
		{"a longer name is another program", []agents.Proc{bash, child(11, "claude-monitor", "claude-monitor")}, ""},
		{"a plain shell", []agents.Proc{bash}, ""},
		{"the shell that runs a launch line names the agent but is not it", []agents.Proc{{PID: 10, Name: "sh", Cmdline: "/bin/sh -ic /opt/claude --settings /d/s.json", SID: 10}}, ""},
		{"a stopped agent (Ctrl-Z) takes no input", []agents.Proc{bash, {PID: 11, PPID: 10, Name: "claude", Cmdline: "claude", State: 'T'}}, ""},
		{"a zombie agent", []agents.Proc{bash, {PID: 11, PPID: 10, Name: "claude", State: 'Z'}}, ""},
		{"a daemon the agent started left the pane's session", []agents.Proc{{PID: 10, Name: "bash", SID: 10},
			{PID: 13, PPID: 10, Name: "codex", Cmdline: "/h/.codex/packages/bin/codex app-server --managed-daemon", SID: 13, State: 'S'}}, ""},
		{"an agent in the pane's session", []agents.Proc{{PID: 10, Name: "bash", SID: 10}, {PID: 11, PPID: 10, Name: "codex", Cmdline: "codex", SID: 10, State: 'S'}}, "codex"},
		{"no processes", nil, ""},
	}
	for _, c := range cases {
		got, ok := r.Detect(c.tree)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%s: Detect = %q, %v; want %q", c.name, got, ok, c.want)
		}
	}
}

func TestLaunchLineHandsClaudeThatchsSettings(t *testing.T) {
	r := newRegistry(t, t.TempDir(), map[string]agents.Spec{"codex": {Launch: "source .venv/bin/activate && codex"}})
	cases := []struct {
		agent, id, settings, want string
	}{
		{"claude", "", "/d/claude settings.json", "claude --settings '/d/claude settings.json'"},
		{"claude", "11111111-1111-4111-8111-111111111111", "/d/s.json", "claude -r 11111111-1111-4111-8111-111111111111 --settings /d/s.json"},
		{"claude", "", "", "claude"},
		{"codex", "", "/d/s.json", "source .venv/bin/activate && codex"},
		{"codex", "abc", "/d/s.json", "codex resume abc"},
	}
	for _, c := range cases {
		a, _ := r.Get(c.agent)
		if got, err := a.LaunchLine(c.id, agents.Extras{ClaudeSettings: c.settings}); err != nil || got != c.want {
			t.Errorf("%s LaunchLine(%q, %q) = %q, %v; want %q", c.agent, c.id, c.settings, got, err, c.want)
		}
	}
	piped := newRegistry(t, t.TempDir(), map[string]agents.Spec{"claude": {Launch: "claude --settings {settings} | tee log", Resume: "claude -r {session_id} --settings {settings} | tee log"}})
	pc, _ := piped.Get("claude")
	if got, _ := pc.LaunchLine("", agents.Extras{ClaudeSettings: "/d/s.json"}); got != "claude --settings /d/s.json | tee log" {
		t.Errorf("a line with {settings} got %q", got)
	}
	if got, _ := pc.LaunchLine("abc", agents.Extras{ClaudeSettings: "/d/s.json"}); got != "claude -r abc --settings /d/s.json | tee log" {
		t.Errorf("a resume line with {settings} got %q", got)
	}
	own := newRegistry(t, t.TempDir(), map[string]agents.Spec{"claude": {Launch: "claude --settings /mine.json"}})
	a, _ := own.Get("claude")
	if got, _ := a.LaunchLine("", agents.Extras{ClaudeSettings: "/d/s.json"}); got != "claude --settings /mine.json" {
		t.Errorf("a launch line with its own --settings got %q", got)
	}
	if _, err := a.LaunchLine("$(id)", agents.Extras{ClaudeSettings: "/d/s.json"}); err == nil {
		t.Error("an unsafe session id was taken")
	}
}

func TestABadInputExpressionIsReported(t *testing.T) {
	for _, bad := range []string{"(", "(a)(b)"} {
		if _, err := agents.NewRegistry(t.TempDir(), map[string]agents.Spec{"codex": {Input: bad}}); !errors.Is(err, agents.ErrBadInput) {
			t.Errorf("Input %q: %v, want ErrBadInput", bad, err)
		}
	}
	r := newRegistry(t, t.TempDir(), map[string]agents.Spec{"claude": {Input: agents.InputOff}})
	if a, _ := r.Get("claude"); a.ChecksInput() {
		t.Error(`Input "off" still checks`)
	}
}

func TestEveryAgentIsGivenThatchsMCPServerTheWayItsCLITakesOne(t *testing.T) {
	r := newRegistry(t, t.TempDir(), map[string]agents.Spec{"copilot": {Launch: "copilot {mcp} | tee log"}})
	x := agents.Extras{ClaudeSettings: "/d/s.json", MCP: agents.MCPServer{Name: "thatch", Command: "/opt/my thatch",
		Args: []string{"mcp", "--control-state-file", "/d/control.json"}, ClaudeConfig: "/d/mcp-claude.json", CopilotConfig: "/d/mcp-copilot.json"}}
	cases := []struct{ agent, id, want string }{
		{"claude", "", "claude --mcp-config /d/mcp-claude.json --settings /d/s.json"},
		{"claude", "abc", "claude -r abc --mcp-config /d/mcp-claude.json --settings /d/s.json"},
		{"codex", "abc", `codex resume abc -c 'mcp_servers.thatch.command="/opt/my thatch"' -c 'mcp_servers.thatch.args=["mcp","--control-state-file","/d/control.json"]'`},
		{"copilot", "", "copilot --additional-mcp-config @/d/mcp-copilot.json | tee log"},
		{"mimo", "", "mimo"},
	}
	for _, c := range cases {
		a, _ := r.Get(c.agent)
		if got, err := a.LaunchLine(c.id, x); err != nil || got != c.want {
			t.Errorf("%s LaunchLine(%q) = %q, %v; want %q", c.agent, c.id, got, err, c.want)
		}
	}
	var cfg struct {
		MCPServers map[string]struct {
			Type, Command string
			Args          []string
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(agents.ClaudeMCPConfig(x.MCP)), &cfg); err != nil || cfg.MCPServers["thatch"].Command != "/opt/my thatch" ||
		len(cfg.MCPServers["thatch"].Args) != 3 || cfg.MCPServers["thatch"].Type != "stdio" {
		t.Errorf("claude's MCP config = %+v, %v", cfg, err)
	}
	var st struct {
		Permissions struct{ Allow []string }
		Hooks       map[string]any
	}
	if err := json.Unmarshal([]byte(agents.ClaudeLaunchSettings("/opt/thatch", []string{"--state-file", "/d/c.json"}, "thatch")), &st); err != nil ||
		!slices.Contains(st.Permissions.Allow, "mcp__thatch__memory_recall") || slices.Contains(st.Permissions.Allow, "mcp__thatch__memory_forget") ||
		st.Hooks["SessionStart"] == nil {
		t.Errorf("claude's launch settings = %+v, %v; want the hook, recall allowed and forget asked", st, err)
	}
}

// An extraction child runs the agent's bare command with nothing that
// runs commands or writes, whatever the user's launch line adds.
func TestHeadlessLineRunsTheBareAgentWithNoToolOfItsOwn(t *testing.T) {
	r := newRegistry(t, t.TempDir(), map[string]agents.Spec{
		"claude": {Launch: "claude --dangerously-skip-permissions --settings {settings} | tee log"},
		"codex":  {Launch: "/opt/codex/bin/codex --yolo"}})
	s := agents.MCPServer{Name: "thatch", Command: "/t", Args: []string{"mcp"}, ClaudeConfig: "/d/x.mcp.json"}
	c, _ := r.Get("claude")
	line, err := c.HeadlessLine("extract it", s)
	if err != nil || line != "exec claude -p 'extract it' --restricted --tools '' --mcp-config /d/x.mcp.json --strict-mcp-config --allowedTools mcp__thatch" {
		t.Errorf("claude: %q, %v", line, err)
	}
	x, _ := r.Get("codex")
	line, err = x.HeadlessLine("extract it", s)
	if err != nil || !strings.HasPrefix(line, "exec /opt/codex/bin/codex exec --skip-git-repo-check --sandbox read-only -c ") || strings.Contains(line, "--yolo") {
		t.Errorf("codex: %q, %v", line, err)
	}
	m, _ := r.Get("mimo")
	if _, err := m.HeadlessLine("x", s); !errors.Is(err, agents.ErrNoHeadless) {
		t.Errorf("mimo: %v; want ErrNoHeadless", err)
	}
}
