//go:build capture

// Command capture regenerates the fixtures in im/agents/testdata/prompts
// from the real agents: claude and codex (the versions in e2e/claude.version
// and e2e/codex.version, installed by e2e/install-agents.sh) run in tmux
// windows of a private tmux server against the e2e suite's fake model APIs
// (e2e/fakeanthropic, e2e/fakeresponses) on 127.0.0.1, the fake model asks
// for the tools whose dialogs we want, and each screen is saved with tmux
// capture-pane -p (.txt) and -e -p (.ansi).
//
// It lives under testdata so that `go build ./...`, `go vet ./...` and the
// import rules of im/agents never see it (it imports e2e packages), and it
// needs the capture build tag:
//
//	eval "$(bash e2e/install-agents.sh)"
//	go run -tags capture ./im/agents/testdata/prompts/capture \
//		-claude "$claude" -codex "$codex" -out im/agents/testdata/prompts
//
// Screens hold the temporary project path; the program rewrites it to
// /tmp/proj so that fixtures do not change on every run. It kills its own
// tmux server (tmux -L <its socket> kill-server) and codex's app-server
// daemon when done. -only NAME captures the scenarios whose name holds
// NAME; -verify "KEYS" answers the dialog with those tmux keys instead
// (one send-keys each, 500 ms apart) and prints the screen after: how the
// keys each agent's prompt_keys default were checked (claude 2.1.328 only
// moves its selection on a digit and needs Enter; codex 0.169.0 chooses on
// the digit).
//
// -legacy VERSION captures an older claude's Bash dialog (claude 1.0
// draws it inside a box, 2.0 under a rule with other options), installed
// by hand, e.g. npm install --prefix /tmp/c1 @anthropic-ai/claude-code@1.0.128
// and -claude /tmp/c1/node_modules/.bin/claude -legacy 1.0: the fixtures
// are claude1.0-bash and claude1.0-bash-long-narrow.
//
// claude runs with --permission-mode manual, the mode that asks (its
// --help lists acceptEdits, auto, bypassPermissions, manual, dontAsk and
// plan; no "default"), and with plan for the plan approval.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/thatch-run/thatch/e2e/fakeanthropic"
	"github.com/thatch-run/thatch/e2e/fakeresponses"
)

// longCommand is a command long enough that the options naming it wrap in
// an 80-column window.
const longCommand = "npm test -- --reporter=verbose --coverage --testPathPattern=src/components/forms/validation"

type capturer struct {
	// ready is what the agent's input line shows once it takes keys;
	// mode is claude's permission mode that asks; prefix, when set,
	// names the fixtures of an older claude instead of "claude-".
	ready, mode, prefix string
	socket              string
	env                 []string
	out                 string
	root                string
	only                string
	verify              []string
}

func main() {
	claude := flag.String("claude", "", "the real claude binary")
	codex := flag.String("codex", "", "the real codex binary")
	out := flag.String("out", "im/agents/testdata/prompts", "where fixtures go")
	only := flag.String("only", "", "capture only scenarios whose name contains this")
	verify := flag.String("verify", "", "instead of capturing, answer the Bash dialog with these keys (space-separated tmux key names) and print the screen")
	legacy := flag.String("legacy", "", "capture an older claude's (2.0 and before) Bash dialog only, as claude<VERSION>-bash: its mode that asks is \"default\", and its input box draws \">\" and a no-break space")
	flag.Parse()
	root, err := os.MkdirTemp("", "cap.")
	must(err)
	c := &capturer{socket: fmt.Sprintf("thatch-capture-%d", os.Getpid()), out: *out, root: root, only: *only, verify: strings.Fields(*verify),
		ready: "❯\u00a0", mode: "manual"}
	if *legacy != "" {
		c.ready, c.mode, c.prefix, c.only = ">\u00a0", "default", "claude"+*legacy+"-", "claude-bash"
	}
	defer os.RemoveAll(root)
	defer c.tmux("kill-server")
	if *claude != "" {
		c.claude(*claude)
	}
	if *codex != "" {
		// A tmux server passes its own environment (HOME) to its windows:
		// codex needs a server started with codex's.
		c.tmux("kill-server")
		c.codex(*codex)
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "capture:", err)
		panic(err)
	}
}

func (c *capturer) tmux(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-L", c.socket}, args...)...)
	cmd.Env = c.env
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// window starts line in a new 120x40 window of the private server and
// returns its target.
func (c *capturer) window(name, dir, line string) string {
	if _, err := c.tmux("has-session", "-t", "cap"); err != nil {
		_, err := c.tmux("new-session", "-d", "-s", "cap", "-x", "120", "-y", "40", "-n", "idle", "sleep 3600")
		must(err)
	}
	_, err := c.tmux("new-window", "-d", "-t", "cap", "-n", name, "-c", dir, line)
	must(err)
	return "cap:" + name
}

// narrow makes target's window 80 columns wide, so that long options wrap.
func (c *capturer) narrow(target string) {
	_, err := c.tmux("resize-window", "-t", target, "-x", "80", "-y", "40")
	must(err)
}

func (c *capturer) pane(target string, escapes bool) string {
	args := []string{"capture-pane", "-p", "-t", target}
	if escapes {
		args = []string{"capture-pane", "-e", "-p", "-t", target}
	}
	s, err := c.tmux(args...)
	must(err)
	return s
}

// waitFor polls target's screen until it contains every one of want.
func (c *capturer) waitFor(target string, want ...string) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		s := c.pane(target, false)
		ok := true
		for _, w := range want {
			if !strings.Contains(s, w) {
				ok = false
			}
		}
		if ok {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "capture: %s never showed %q; screen:\n%s\n", target, want, c.pane(target, false))
	panic("timeout")
}

func (c *capturer) send(target string, keys ...string) {
	_, err := c.tmux(append([]string{"send-keys", "-t", target}, keys...)...)
	must(err)
}

// typeLine types text and Enter, as thatch does (literal text, then Enter
// after the agent drew it).
func (c *capturer) typeLine(target, text string) {
	c.send(target, "-l", text)
	c.waitFor(target, text)
	time.Sleep(300 * time.Millisecond)
	c.send(target, "Enter")
}

// save writes the screen of target as name.txt and name.ansi, after it has
// been still for a moment (the agents animate their first frames).
func (c *capturer) save(target, name string, scrub map[string]string) {
	time.Sleep(700 * time.Millisecond)
	for _, ext := range []string{"txt", "ansi"} {
		s := c.pane(target, ext == "ansi")
		for from, to := range scrub {
			s = strings.ReplaceAll(s, from, to)
		}
		must(os.WriteFile(filepath.Join(c.out, name+"."+ext), []byte(s), 0o644))
	}
	fmt.Println("captured", name)
}

func (c *capturer) want(name string) bool { return c.only == "" || strings.Contains(name, c.only) }

func (c *capturer) claude(bin string) {
	home := filepath.Join(c.root, "home")
	tmp := filepath.Join(c.root, "t")
	must(os.MkdirAll(tmp, 0o700))
	s := fakeanthropic.New()
	defer s.Close()
	c.env = append(os.Environ(), "HOME="+home, "TMPDIR="+tmp, "TERM=xterm-256color")
	c.env = append(c.env, s.Env("")...)

	list := "Here are the steps:\n\n1. Yes, run the tests first\n2. No, skip the lint\n3. Commit\n\nDo you want to proceed? I can do it."
	s.On(fakeanthropic.UserSays("LISTREPLY"), fakeanthropic.Text(list))
	s.On(fakeanthropic.UserSays("SLOW"), fakeanthropic.Reply{Text: "slow done", Delay: 30 * time.Second})
	s.On(fakeanthropic.UserSays("RUNTESTS"), fakeanthropic.Bash("npm test", "tests ran"))
	s.On(fakeanthropic.UserSays("LONGTESTS"), fakeanthropic.Bash(longCommand, "tests ran"))
	s.On(fakeanthropic.UserSays("ASKME"), fakeanthropic.Reply{
		Tool: &fakeanthropic.ToolUse{Name: "AskUserQuestion", Input: map[string]any{
			"questions": []any{map[string]any{
				"question":    "Which test runner should I set up?",
				"header":      "Runner",
				"multiSelect": false,
				"options": []any{
					map[string]any{"label": "Jest", "description": "The usual choice, with mocks built in"},
					map[string]any{"label": "Vitest", "description": "Fast, shares the Vite config"},
					map[string]any{"label": "node:test", "description": "No dependency at all"},
				},
			}},
		}},
		Then: &fakeanthropic.Reply{Text: "noted"},
	})
	s.On(fakeanthropic.UserSays("PLANIT"), fakeanthropic.Reply{
		Tool: &fakeanthropic.ToolUse{Name: "ExitPlanMode", Input: map[string]any{
			"plan": "# Plan\n\n1. Add a test for the parser\n2. Fix the off-by-one in parse()\n3. Run npm test",
		}},
		Then: &fakeanthropic.Reply{Text: "planned"},
	})

	type scen struct {
		name, mode, say, wait string
	}
	scens := []scen{
		{"claude-bash", "manual", "RUNTESTS please", "Do you want to proceed?"},
		{"claude-bash-long-narrow", "manual", "LONGTESTS please", "Do you want to proceed?"},
		{"claude-write", "manual", "WRITEFILE please", "Do you want to"},
		{"claude-edit", "manual", "EDITFILE please", "Do you want to"},
		{"claude-ask", "manual", "ASKME please", "Which test runner"},
		{"claude-plan", "plan", "PLANIT please", "Exit plan mode?"},
	}
	for i, sc := range scens {
		if !c.want(sc.name) {
			continue
		}
		proj := filepath.Join(c.root, fmt.Sprintf("p%d", i), "proj")
		must(os.MkdirAll(proj, 0o755))
		must(os.WriteFile(filepath.Join(proj, "main.go"), []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644))
		must(os.WriteFile(filepath.Join(proj, "package.json"), []byte(`{"name":"proj","scripts":{"test":"echo ok"}}`+"\n"), 0o644))
		must(fakeanthropic.PrepareHome(home, fakeanthropic.APIKey, proj))
		if c.prefix != "" {
			must(oldProjects(home))
		}
		fileRules(s, proj)
		mode := sc.mode
		if mode == "manual" {
			mode = c.mode
		}
		t := c.window(sc.name, proj, bin+" --permission-mode "+mode)
		if strings.HasSuffix(sc.name, "-narrow") {
			c.narrow(t)
		}
		c.waitFor(t, c.ready)
		c.typeLine(t, sc.say)
		if c.prefix != "" {
			// claude 1.0 may drop an Enter that comes soon after its
			// screen changed: press it again while the line still waits.
			time.Sleep(2 * time.Second)
			if strings.Contains(c.pane(t, false), ">\u00a0"+sc.say) {
				c.send(t, "Enter")
			}
		}
		c.waitFor(t, sc.wait)
		if len(c.verify) > 0 {
			c.answer(t)
			continue
		}
		name := sc.name
		if c.prefix != "" {
			name = c.prefix + strings.TrimPrefix(name, "claude-")
		}
		c.save(t, name, map[string]string{proj: "/tmp/proj"})
		if sc.name == "claude-bash" && c.prefix == "" {
			// The selection moved to the second option.
			c.send(t, "Down")
			time.Sleep(500 * time.Millisecond)
			c.save(t, "claude-bash-second-selected", map[string]string{proj: "/tmp/proj"})
		}
		_, _ = c.tmux("kill-window", "-t", t)
	}

	if c.want("claude-neg") {
		proj := filepath.Join(c.root, "neg", "proj")
		must(os.MkdirAll(proj, 0o755))
		must(fakeanthropic.PrepareHome(home, fakeanthropic.APIKey, proj))
		t := c.window("claude-neg", proj, bin+" --permission-mode manual")
		c.waitFor(t, "❯\u00a0")
		c.save(t, "claude-neg-idle", map[string]string{proj: "/tmp/proj"})
		c.typeLine(t, "LISTREPLY please")
		c.waitFor(t, "I can do it.")
		c.save(t, "claude-neg-list-reply", map[string]string{proj: "/tmp/proj"})
		// What the user sends, or is typing, can look like an option.
		c.typeLine(t, "1. Yes")
		c.waitFor(t, "echo: 1. Yes")
		c.save(t, "claude-neg-user-sent-option", map[string]string{proj: "/tmp/proj"})
		c.send(t, "-l", "1. Yes")
		c.waitFor(t, "❯\u00a01. Yes")
		c.save(t, "claude-neg-draft-option", map[string]string{proj: "/tmp/proj"})
		c.send(t, "C-u")
		time.Sleep(300 * time.Millisecond)
		c.typeLine(t, "SLOW please")
		c.waitFor(t, "esc to interrupt")
		c.save(t, "claude-neg-spinner", map[string]string{proj: "/tmp/proj"})
		_, _ = c.tmux("kill-window", "-t", t)
	}
}

// fileRules scripts the Write and Edit calls for the project proj; rules
// added later are tried first, so each scenario's own project wins.
func fileRules(s *fakeanthropic.Server, proj string) {
	s.On(fakeanthropic.UserSays("WRITEFILE"), fakeanthropic.Reply{
		Tool: &fakeanthropic.ToolUse{Name: "Write", Input: map[string]any{
			"file_path": filepath.Join(proj, "notes.md"), "content": "# Notes\n\nwritten by the fake model\n",
		}},
		Then: &fakeanthropic.Reply{Text: "written"},
	})
	s.On(fakeanthropic.UserSays("EDITFILE"), fakeanthropic.Reply{
		Tool: &fakeanthropic.ToolUse{Name: "Read", Input: map[string]any{"file_path": filepath.Join(proj, "main.go")}},
		Then: &fakeanthropic.Reply{
			Tool: &fakeanthropic.ToolUse{Name: "Edit", Input: map[string]any{
				"file_path": filepath.Join(proj, "main.go"), "old_string": "hello", "new_string": "hello, world",
			}},
			Then: &fakeanthropic.Reply{Text: "edited"},
		},
	})
}

func (c *capturer) codex(bin string) {
	home := filepath.Join(c.root, "chome")
	s := fakeresponses.New()
	defer s.Close()
	defer stopCodexDaemon(home)
	defer c.tmux("kill-server") // before the daemon is stopped
	c.env = append(os.Environ(), "HOME="+home, "TERM=xterm-256color", fakeresponses.EnvKey+"=fake-key")

	s.On(fakeresponses.Rule{Name: "esc", Match: fakeresponses.UserContains("RUNTESTS"), Steps: []fakeresponses.Step{
		{Text: "I need to run the tests.", Calls: []fakeresponses.Call{fakeresponses.EscalatedShell("npm test", "Run the project's tests, which need the network")}},
		{Text: "tests ran"},
	}})
	s.On(fakeresponses.Rule{Name: "long", Match: fakeresponses.UserContains("LONGTESTS"), Steps: []fakeresponses.Step{
		{Text: "I need to run the tests.", Calls: []fakeresponses.Call{fakeresponses.EscalatedShell(longCommand, "Run the project's tests, which need the network")}},
		{Text: "tests ran"},
	}})
	s.On(fakeresponses.Rule{Name: "list", Match: fakeresponses.UserContains("LISTREPLY"), Steps: []fakeresponses.Step{
		{Text: "Here are the steps:\n\n1. Yes, run the tests first\n2. No, skip the lint\n3. Commit\n\nWould you like to run the following command? I can."},
	}})
	s.On(fakeresponses.Rule{Name: "slow", Match: fakeresponses.UserContains("SLOW"), Steps: []fakeresponses.Step{
		{Text: "slow done", Delay: 30 * time.Second},
	}})

	proj := filepath.Join(c.root, "cproj", "proj")
	must(os.MkdirAll(proj, 0o755))
	must(os.WriteFile(filepath.Join(proj, "package.json"), []byte(`{"name":"proj","scripts":{"test":"echo ok"}}`+"\n"), 0o644))
	must(fakeresponses.PrepareHome(home, s.URL(), proj))
	scrub := map[string]string{proj: "/tmp/proj"}

	if c.want("codex-approval") {
		t := c.window("codex-approval", proj, bin+" -a on-request -s workspace-write")
		c.waitFor(t, "Ask Codex")
		c.typeLine(t, "RUNTESTS please")
		c.waitFor(t, "Press enter to confirm")
		if len(c.verify) > 0 {
			c.answer(t)
			return
		}
		c.save(t, "codex-approval", scrub)
		c.send(t, "Down")
		time.Sleep(500 * time.Millisecond)
		c.save(t, "codex-approval-second-selected", scrub)
		_, _ = c.tmux("kill-window", "-t", t)
	}
	if c.want("codex-approval-long-narrow") && len(c.verify) == 0 {
		t := c.window("codex-approval-long-narrow", proj, bin+" -a on-request -s workspace-write")
		c.narrow(t)
		c.waitFor(t, "Ask Codex")
		c.typeLine(t, "LONGTESTS please")
		c.waitFor(t, "Press enter to confirm")
		c.save(t, "codex-approval-long-narrow", scrub)
		_, _ = c.tmux("kill-window", "-t", t)
	}
	if c.want("codex-neg") {
		t := c.window("codex-neg", proj, bin+" -a on-request -s workspace-write")
		c.waitFor(t, "Ask Codex")
		c.save(t, "codex-neg-idle", scrub)
		c.typeLine(t, "LISTREPLY please")
		c.waitFor(t, "I can.")
		c.save(t, "codex-neg-list-reply", scrub)
		c.typeLine(t, "1. Yes")
		c.waitFor(t, "echo: 1. Yes")
		c.save(t, "codex-neg-user-sent-option", scrub)
		c.send(t, "-l", "1. Yes")
		time.Sleep(time.Second)
		c.save(t, "codex-neg-draft-option", scrub)
		c.send(t, "C-u")
		time.Sleep(300 * time.Millisecond)
		c.typeLine(t, "SLOW please")
		c.waitFor(t, "esc to interrupt")
		c.save(t, "codex-neg-working", scrub)
		_, _ = c.tmux("kill-window", "-t", t)
	}
}

// answer sends the -verify keys to the dialog in target and prints the
// screen a few seconds later: what choosing an option with them did.
func (c *capturer) answer(target string) {
	for _, k := range c.verify {
		c.send(target, k)
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(4 * time.Second)
	fmt.Printf("--- %s after %q:\n%s\n", target, c.verify, c.pane(target, false))
}

// stopCodexDaemon ends the app-server daemon codex leaves running under
// home (it outlives the TUI and the tmux server): every process whose
// executable lies under home, which only codex's own daemon copy does.
// Its pid files are not reliable for this (they may not be written yet).
func stopCodexDaemon(home string) {
	for range 20 {
		found := false
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
			if err == nil && strings.HasPrefix(exe, home+"/") {
				found = true
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
		}
		if !found {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// oldProjects gives every project in HOME's .claude.json the lists claude
// 1.0 reads without checking that they are there (it stops with
// "allowedTools is not iterable" otherwise).
func oldProjects(home string) error {
	path := filepath.Join(home, ".claude.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		return err
	}
	projects, _ := cfg["projects"].(map[string]any)
	for _, p := range projects {
		entry, ok := p.(map[string]any)
		if !ok {
			continue
		}
		for _, k := range []string{"allowedTools", "mcpContextUris", "enabledMcpjsonServers", "disabledMcpjsonServers", "ignorePatterns"} {
			if _, ok := entry[k].([]any); !ok {
				entry[k] = []any{}
			}
		}
		if _, ok := entry["mcpServers"].(map[string]any); !ok {
			entry["mcpServers"] = map[string]any{}
		}
	}
	out, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}
