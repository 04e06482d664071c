package agents_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thatch-run/thatch/im/agents"
)

func installOptions(t *testing.T) agents.InstallOptions {
	return agents.InstallOptions{Home: t.TempDir(), Thatch: "/opt/thatch/thatch", ControlArgs: []string{"--state-file", "/d/control.json", "--token-file", "/d/control.token"}}
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// An install keeps everything the user had, a second one changes
// nothing, and --uninstall takes out only what it put in.
func TestInstallClaudeAddsTheMemoryAndTheHookAndUninstallTakesThemOut(t *testing.T) {
	o := installOptions(t)
	settings := filepath.Join(o.Home, ".claude", "settings.json")
	servers := filepath.Join(o.Home, ".claude.json")
	userSettings := `{"model":"opus","hooks":{"SessionStart":[{"matcher":"startup","hooks":[{"type":"command","command":"echo hi"}]}]},"permissions":{"allow":["Bash(ls:*)"]}}`
	userServers := `{"numStartups":3,"mcpServers":{"other":{"command":"x"}}}`
	if err := os.MkdirAll(filepath.Dir(settings), 0o700); err != nil {
		t.Fatal(err)
	}
	for p, b := range map[string]string{settings: userSettings, servers: userServers} {
		if err := os.WriteFile(p, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := agents.InstallClaude(o, false); err != nil {
		t.Fatal(err)
	}
	first := map[string]string{}
	for _, p := range []string{settings, servers} {
		b, _ := os.ReadFile(p)
		first[p] = string(b)
	}
	srv := readJSON(t, servers)["mcpServers"].(map[string]any)
	if srv["other"] == nil || srv["thatch"].(map[string]any)["command"] != "/opt/thatch/thatch" {
		t.Fatalf("servers after install: %v", srv)
	}
	st := first[settings]
	for _, want := range []string{`"model": "opus"`, `echo hi`, `hook claude --state-file /d/control.json`, `Bash(ls:*)`, `mcp__thatch__memory_recall`} {
		if !strings.Contains(st, want) {
			t.Errorf("settings after install lack %s:\n%s", want, st)
		}
	}
	res, err := agents.InstallClaude(o, false)
	if err != nil || len(res.Files) != 0 {
		t.Fatalf("a second install wrote %v (%v); want nothing", res.Files, err)
	}
	if _, err := agents.InstallClaude(o, true); err != nil {
		t.Fatal(err)
	}
	if got := readJSON(t, servers); got["mcpServers"].(map[string]any)["thatch"] != nil || got["numStartups"] != float64(3) {
		t.Errorf("servers after uninstall: %v", got)
	}
	after, _ := os.ReadFile(settings)
	var want, got any
	_ = json.Unmarshal([]byte(userSettings), &want)
	_ = json.Unmarshal(after, &got)
	if b1, b2 := mustJSON(want), mustJSON(got); b1 != b2 {
		t.Errorf("settings after uninstall = %s; want the user's own %s", b2, b1)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestInstallCodexWritesOneMarkedBlockAndLeavesTheRestAlone(t *testing.T) {
	o := installOptions(t)
	o.CodexHome = filepath.Join(o.Home, "codexhome")
	path := filepath.Join(o.CodexHome, "config.toml")
	user := "model = \"gpt-5\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n"
	if err := os.MkdirAll(o.CodexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(user), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := agents.InstallCodex(o, false); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b), user) || !strings.Contains(string(b), "[mcp_servers.thatch]\ncommand = \"/opt/thatch/thatch\"\nargs = [\"mcp\", \"--state-file\", \"/d/control.json\", \"--token-file\", \"/d/control.token\"]\n") {
		t.Fatalf("config after install:\n%s", b)
	}
	if res, err := agents.InstallCodex(o, false); err != nil || len(res.Files) != 0 {
		t.Fatalf("a second install wrote %v (%v)", res.Files, err)
	}
	if _, err := agents.InstallCodex(o, true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != user {
		t.Fatalf("config after uninstall = %q; want the user's %q", b, user)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v; want the file's own 0644", fi.Mode().Perm())
	}
	for _, mine := range []string{"[mcp_servers.thatch]\ncommand = \"mine\"\n", "[mcp_servers]\nthatch = { command = \"mine\" }\n",
		"mcp_servers.thatch.command = \"mine\"\n", "[mcp_servers.\"thatch\"]\ncommand = \"mine\"\n", "not = toml = at all\n"} {
		if err := os.WriteFile(path, []byte(mine), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := agents.InstallCodex(o, false); !errors.Is(err, agents.ErrInstall) {
			t.Fatalf("%q: %v; want ErrInstall", mine, err)
		}
		if b, _ := os.ReadFile(path); string(b) != mine {
			t.Fatalf("%q was changed to %q", mine, b)
		}
	}
}

func TestInstallClaudeRefusesAFileThatIsNotOneJSONObjectOfClaudesForm(t *testing.T) {
	for _, bad := range []string{"{oops", "null", `{"a":1}{"b":2}`, `{"mcpServers":[1]}`} {
		o := installOptions(t)
		if err := os.WriteFile(filepath.Join(o.Home, ".claude.json"), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := agents.InstallClaude(o, false); !errors.Is(err, agents.ErrInstall) {
			t.Fatalf("%s: err = %v; want ErrInstall", bad, err)
		}
		if b, _ := os.ReadFile(filepath.Join(o.Home, ".claude.json")); string(b) != bad {
			t.Fatalf("%s was changed", bad)
		}
	}
}

// thatch install codex puts its SessionStart hook in codex's hooks.json
// beside the user's own hooks, once; uninstall takes out only thatch's.
func TestInstallCodexAddsItsSessionStartHookBesideTheUsers(t *testing.T) {
	o := installOptions(t)
	o.CodexHome = filepath.Join(o.Home, "codexhome")
	path := filepath.Join(o.CodexHome, "hooks.json")
	user := `{"hooks":{"SessionStart":[{"matcher":"startup","hooks":[{"type":"command","command":"notify-me"}]}],"Stop":[{"hooks":[{"type":"command","command":"bell"}]}]}}`
	if err := os.MkdirAll(o.CodexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(user), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := agents.InstallCodex(o, false); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	for _, want := range []string{`"notify-me"`, `"bell"`, `/opt/thatch/thatch hook codex --state-file /d/control.json --token-file /d/control.token`, `"startup|resume|clear"`} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("hooks.json after install lacks %s:\n%s", want, b)
		}
	}
	if res, err := agents.InstallCodex(o, false); err != nil || len(res.Files) != 0 {
		t.Fatalf("a second install wrote %v (%v)", res.Files, err)
	}
	if _, err := agents.InstallCodex(o, true); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	if strings.Contains(string(b), "hook codex") || !strings.Contains(string(b), `"notify-me"`) || !strings.Contains(string(b), `"bell"`) {
		t.Fatalf("hooks.json after uninstall:\n%s", b)
	}
}
