package agents_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/im/agents"
)

// The fixtures in testdata/prompts were captured from the real claude
// 2.1.328 and codex 0.169.0, run in tmux against the e2e suite's fake
// model APIs, by testdata/prompts/capture (see its doc comment; `go run
// -tags capture`): NAME.txt with tmux capture-pane -p, NAME.ansi with -e
// -p; claude1.0-* and claude2.0-* from claude 1.0.128 and 2.0.53 (its
// -legacy flag). The project path is rewritten to /tmp/proj; "-long-narrow" screens
// are 80 columns wide, with a long command. "-neg-" screens hold no
// prompt: the idle input line, a reply with a numbered list and a
// question, a message "1. Yes" sent, and typed but not sent, the agent
// working.

type promptCase struct {
	file    string
	agent   string
	want    bool
	q       string
	context []string
	labels  []string
	sel     int
	keys    [][]string
	optKeys []string // PromptOption.Key of each option
	details []string
}

var promptCases = []promptCase{
	{
		file: "claude-bash", agent: agents.Claude, want: true,
		q:       "Do you want to proceed?",
		context: []string{"Bash command", "Run npm test", "npm test", "This command requires approval"},
		labels: []string{"1. Yes", "2. Yes, and don’t ask again for: npm test *",
			"3. Yes, and switch to auto mode · auto mode handles these prompts for you", "4. No"},
		keys: [][]string{{"1", "Enter"}, {"2", "Enter"}, {"3", "Enter"}, {"4", "Enter"}},
	},
	{
		file: "claude-bash-second-selected", agent: agents.Claude, want: true, sel: 1,
		q:       "Do you want to proceed?",
		context: []string{"Bash command", "Run npm test", "npm test", "This command requires approval"},
		labels: []string{"1. Yes", "2. Yes, and don’t ask again for: npm test *",
			"3. Yes, and switch to auto mode · auto mode handles these prompts for you", "4. No"},
		keys: [][]string{{"1", "Enter"}, {"2", "Enter"}, {"3", "Enter"}, {"4", "Enter"}},
	},
	{
		// 80 columns: the command wraps, drawn after "│ "; so does the
		// tip, whose second line ("below") prompt_ignore cannot tell from
		// the context.
		file: "claude-bash-long-narrow", agent: agents.Claude, want: true,
		q: "Do you want to proceed?",
		context: []string{"Bash command", "below",
			"│ Run npm test -- --reporter=verbose --coverage", "│ --testPathPattern=src/components/forms/validation",
			"│ npm test -- --reporter=verbose --coverage", "│ --testPathPattern=src/components/forms/validation",
			"This command requires approval"},
		labels: []string{"1. Yes", "2. Yes, and don’t ask again for: npm test *",
			"3. Yes, and switch to auto mode · auto mode handles these prompts for you", "4. No"},
		keys: [][]string{{"1", "Enter"}, {"2", "Enter"}, {"3", "Enter"}, {"4", "Enter"}},
	},
	{
		file: "claude-write", agent: agents.Claude, want: true,
		q:       "Do you want to create notes.md?",
		context: []string{"Create file", "notes.md", "1 # Notes", "2", "3 written by the fake model"},
		labels: []string{"1. Yes",
			"2. Yes, and switch to accept edits (auto-approve file edits and common file commands) for this session (shift+tab)",
			"3. No"},
		keys: [][]string{{"1", "Enter"}, {"2", "Enter"}, {"3", "Enter"}},
	},
	{
		file: "claude-edit", agent: agents.Claude, want: true,
		q: "Do you want to make this edit to main.go?",
		context: []string{"Edit file", "main.go", "1  package main", "2",
			`3 -func main() { println("hello") }`, `3 +func main() { println("hello, world") }`},
		labels: []string{"1. Yes",
			"2. Yes, and switch to accept edits (auto-approve file edits and common file commands) for this session (shift+tab)",
			"3. No"},
		keys: [][]string{{"1", "Enter"}, {"2", "Enter"}, {"3", "Enter"}},
	},
	{
		file: "claude-ask", agent: agents.Claude, want: true,
		q:       "Which test runner should I set up?",
		context: []string{"☐ Runner"},
		labels:  []string{"1. Jest", "2. Vitest", "3. node:test", "4. Type something.", "5. Chat about this"},
		details: []string{"The usual choice, with mocks built in", "Fast, shares the Vite config", "No dependency at all", "", ""},
		keys:    [][]string{{"1", "Enter"}, {"2", "Enter"}, {"3", "Enter"}, {"4", "Enter"}, {"5", "Enter"}},
	},
	{
		// claude 2.1.328 shows no plan in its dialog when the model
		// calls ExitPlanMode without writing its plan file first.
		file: "claude-plan", agent: agents.Claude, want: true,
		q:       "Exit plan mode?",
		context: []string{"Claude wants to exit plan mode"},
		labels:  []string{"1. Yes, and switch to default (ask each time) for this session", "2. No"},
		keys:    [][]string{{"1", "Enter"}, {"2", "Enter"}},
	},
	{
		file: "codex-approval", agent: agents.Codex, want: true,
		q:       "Would you like to run the following command?",
		context: []string{"Environment: local", "Reason: Run the project's tests, which need the network", "$ npm test"},
		labels: []string{"1. Yes, proceed (y)",
			"2. Yes, and don't ask again for commands that start with `npm test` (p)",
			"3. No, and tell Codex what to do differently (esc)"},
		optKeys: []string{"y", "p", "esc"},
		keys:    [][]string{{"1"}, {"2"}, {"3"}},
	},
	{
		file: "codex-approval-second-selected", agent: agents.Codex, want: true, sel: 1,
		q:       "Would you like to run the following command?",
		context: []string{"Environment: local", "Reason: Run the project's tests, which need the network", "$ npm test"},
		labels: []string{"1. Yes, proceed (y)",
			"2. Yes, and don't ask again for commands that start with `npm test` (p)",
			"3. No, and tell Codex what to do differently (esc)"},
		optKeys: []string{"y", "p", "esc"},
		keys:    [][]string{{"1"}, {"2"}, {"3"}},
	},
	{
		// 80 columns: option 2 wraps over three lines; joined with spaces
		// they end with its key, so they are its label.
		file: "codex-approval-long-narrow", agent: agents.Codex, want: true,
		q: "Would you like to run the following command?",
		context: []string{"Environment: local", "Reason: Run the project's tests, which need the network",
			"$ npm test -- --reporter=verbose --coverage", "--testPathPattern=src/components/forms/validation"},
		labels: []string{"1. Yes, proceed (y)",
			"2. Yes, and don't ask again for commands that start with `npm test -- '--reporter=verbose' --coverage '--testPathPattern=src/components/forms/ validation'` (p)",
			"3. No, and tell Codex what to do differently (esc)"},
		optKeys: []string{"y", "p", "esc"},
		keys:    [][]string{{"1"}, {"2"}, {"3"}},
	},
	{
		// claude 1.0.128 draws its dialog inside a box ("╭─…─╮", "│ … │").
		file: "claude1.0-bash", agent: agents.Claude, want: true,
		q:       "Do you want to proceed?",
		context: []string{"Bash command", "npm test", "Run npm test"},
		labels: []string{"1. Yes", "2. Yes, and don't ask again for npm test commands in /tmp/proj",
			"3. No, and tell Claude what to do differently (esc)"},
		keys: [][]string{{"1", "Enter"}, {"2", "Enter"}, {"3", "Enter"}},
	},
	{
		file: "claude1.0-bash-long-narrow", agent: agents.Claude, want: true,
		q: "Do you want to proceed?",
		context: []string{"Bash command", "npm test -- --reporter=verbose --coverage", "--testPathPattern=src/components/forms/validation",
			"Run npm test -- --reporter=verbose --coverage", "--testPathPattern=src/components/forms/validation"},
		labels: []string{"1. Yes", "2. Yes, and don't ask again for similar commands in",
			"3. No, and tell Claude what to do differently (esc)"},
		details: []string{"", "/tmp/proj", ""},
		keys:    [][]string{{"1", "Enter"}, {"2", "Enter"}, {"3", "Enter"}},
	},
	{
		// claude 2.0.53 draws it under a rule, as 2.1 does, with other
		// options.
		file: "claude2.0-bash", agent: agents.Claude, want: true,
		q:       "Do you want to proceed?",
		context: []string{"Bash command", "npm test", "Run npm test"},
		labels: []string{"1. Yes", "2. Yes, and don't ask again for npm test commands in /tmp/proj",
			"3. Type here to tell Claude what to do differently"},
		keys: [][]string{{"1", "Enter"}, {"2", "Enter"}, {"3", "Enter"}},
	},
	{
		file: "claude2.0-bash-long-narrow", agent: agents.Claude, want: true,
		q: "Do you want to proceed?",
		context: []string{"Bash command", "npm test -- --reporter=verbose --coverage", "--testPathPattern=src/components/forms/validation",
			"Run npm test -- --reporter=verbose --coverage", "--testPathPattern=src/components/forms/validation"},
		labels: []string{"1. Yes", "2. Yes, and don't ask again for similar commands in",
			"3. Type here to tell Claude what to do differently"},
		details: []string{"", "/tmp/proj", ""},
		keys:    [][]string{{"1", "Enter"}, {"2", "Enter"}, {"3", "Enter"}},
	},
	{file: "claude-neg-idle", agent: agents.Claude},
	{file: "claude-neg-list-reply", agent: agents.Claude},
	{file: "claude-neg-user-sent-option", agent: agents.Claude},
	{file: "claude-neg-draft-option", agent: agents.Claude},
	{file: "claude-neg-spinner", agent: agents.Claude},
	{file: "codex-neg-idle", agent: agents.Codex},
	{file: "codex-neg-list-reply", agent: agents.Codex},
	{file: "codex-neg-user-sent-option", agent: agents.Codex},
	{file: "codex-neg-draft-option", agent: agents.Codex},
	{file: "codex-neg-working", agent: agents.Codex},
}

func readPrompt(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "prompts", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFindPromptOnTheAgentsRealScreens(t *testing.T) {
	r, err := agents.NewRegistry(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range promptCases {
		t.Run(tc.file, func(t *testing.T) {
			a, _ := r.Get(tc.agent)
			plain := readPrompt(t, tc.file+".txt")
			p, ok := a.FindPrompt(plain)
			if ok != tc.want {
				t.Fatalf("FindPrompt ok = %v, want %v; prompt %+v", ok, tc.want, p)
			}
			// Colours change nothing.
			pa, oka := a.FindPrompt(readPrompt(t, tc.file+".ansi"))
			if oka != ok || !reflect.DeepEqual(pa, p) {
				t.Errorf("on the .ansi capture: %+v, %v; want %+v, %v", pa, oka, p, ok)
			}
			// The package function with the defaults agrees.
			pf, okf := agents.FindPrompt(tc.agent, plain, agents.PromptPatterns{})
			if okf != ok || !reflect.DeepEqual(pf, p) {
				t.Errorf("FindPrompt(%s, ...) = %+v, %v; want %+v, %v", tc.agent, pf, okf, p, ok)
			}
			if !ok {
				return
			}
			if p.Question != tc.q {
				t.Errorf("Question = %q, want %q", p.Question, tc.q)
			}
			if !slices.Equal(p.Context, tc.context) {
				t.Errorf("Context = %q, want %q", p.Context, tc.context)
			}
			if p.Selected != tc.sel {
				t.Errorf("Selected = %d, want %d", p.Selected, tc.sel)
			}
			if p.Fingerprint == "" {
				t.Error("no Fingerprint")
			}
			var labels, optKeys, details []string
			var keys [][]string
			for i, o := range p.Options {
				if o.Number != i+1 {
					t.Errorf("option %d has Number %d", i, o.Number)
				}
				labels = append(labels, o.Label)
				optKeys = append(optKeys, o.Key)
				details = append(details, o.Detail)
				keys = append(keys, o.Keys)
			}
			if !slices.Equal(labels, tc.labels) {
				t.Errorf("labels = %q, want %q", labels, tc.labels)
			}
			if !reflect.DeepEqual(keys, tc.keys) {
				t.Errorf("keys = %q, want %q", keys, tc.keys)
			}
			if tc.optKeys == nil {
				tc.optKeys = make([]string, len(labels))
			}
			if !slices.Equal(optKeys, tc.optKeys) {
				t.Errorf("option keys = %q, want %q", optKeys, tc.optKeys)
			}
			if tc.details == nil {
				tc.details = make([]string, len(labels))
			}
			if !slices.Equal(details, tc.details) {
				t.Errorf("details = %q, want %q", details, tc.details)
			}
		})
	}
}

// Every fixture is in the table: a screen added later is tested too.
func TestEveryPromptFixtureIsTested(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "prompts", "*.*"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, tc := range promptCases {
		known[tc.file] = true
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		if !known[name] {
			t.Errorf("%s is in no case of promptCases", f)
		}
	}
	if len(files) != 2*len(promptCases) {
		t.Errorf("%d fixture files for %d cases, want a .txt and a .ansi each", len(files), len(promptCases))
	}
}

// The fingerprint tells the same prompt (the selection moved) from
// another one.
func TestPromptFingerprint(t *testing.T) {
	find := func(agent, file string) agents.Prompt {
		t.Helper()
		p, ok := agents.FindPrompt(agent, readPrompt(t, file+".txt"), agents.PromptPatterns{})
		if !ok {
			t.Fatalf("%s: no prompt", file)
		}
		return p
	}
	if a, b := find(agents.Claude, "claude-bash"), find(agents.Claude, "claude-bash-second-selected"); a.Fingerprint != b.Fingerprint {
		t.Errorf("claude's dialog with its selection moved: fingerprint %s, was %s", b.Fingerprint, a.Fingerprint)
	}
	if a, b := find(agents.Codex, "codex-approval"), find(agents.Codex, "codex-approval-second-selected"); a.Fingerprint != b.Fingerprint {
		t.Errorf("codex's dialog with its selection moved: fingerprint %s, was %s", b.Fingerprint, a.Fingerprint)
	}
	seen := map[string]string{}
	for _, f := range []struct{ agent, file string }{
		{agents.Claude, "claude-bash"}, {agents.Claude, "claude-write"}, {agents.Claude, "claude-edit"},
		{agents.Claude, "claude-ask"}, {agents.Claude, "claude-plan"}, {agents.Codex, "codex-approval"},
	} {
		fp := find(f.agent, f.file).Fingerprint
		if other, dup := seen[fp]; dup {
			t.Errorf("%s and %s have the same fingerprint %s", f.file, other, fp)
		}
		seen[fp] = f.file
	}
	// Another command in the same dialog is another prompt.
	screen := readPrompt(t, "claude-bash.txt")
	other := strings.ReplaceAll(screen, "npm test", "npm run build")
	p1, _ := agents.FindPrompt(agents.Claude, screen, agents.PromptPatterns{})
	p2, ok := agents.FindPrompt(agents.Claude, other, agents.PromptPatterns{})
	if !ok || p1.Fingerprint == p2.Fingerprint {
		t.Errorf("a dialog for another command: ok %v, fingerprint %s, same as the first's %s", ok, p2.Fingerprint, p1.Fingerprint)
	}
}

// The screens in testdata/screens (captured for the input-line checks)
// hold two more real dialogs; everything else there is no prompt: the
// resume picker, codex's trust question at start-up (which ends with no
// question mark), the agents starting, busy, exited.
func TestFindPromptOnTheInputLineScreens(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "screens", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"claude-permission.txt": "Do you want to proceed?",
		"codex-approval.txt":    "Would you like to run the following command?",
	}
	for _, f := range files {
		base := filepath.Base(f)
		agent, _, _ := strings.Cut(base, "-")
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := agents.FindPrompt(agent, string(b), agents.PromptPatterns{})
		if q, wantOK := want[base]; ok != wantOK || p.Question != q {
			t.Errorf("%s: FindPrompt = %q, %v; want %q, %v", base, p.Question, ok, q, wantOK)
		}
	}
	// codex's reason is the model's text, and may end with '?': it is not
	// the question.
	p, _ := agents.FindPrompt(agents.Codex, readScreen(t, "codex-approval.txt"), agents.PromptPatterns{})
	if !slices.Contains(p.Context, "Reason: Do you allow the fake to run this?") {
		t.Errorf("codex's reason should be context, got %q", p.Context)
	}
}

func readScreen(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "screens", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// promptSpec is the registry Spec a config's agent table gives.
func promptSpec(a config.Agent) agents.Spec {
	return agents.Spec{Input: a.Input, Prompt: agents.PromptPatterns{
		Option: a.PromptOption, Question: a.PromptQuestion, Top: a.PromptTop, Ignore: a.PromptIgnore, Keys: a.PromptKeys,
	}}
}

// A config file's prompt keys change what the registry finds.
func TestPromptConfigOverride(t *testing.T) {
	screen := readPrompt(t, "claude-bash.txt")
	cases := []struct {
		name  string
		toml  string // under [im.agents.claude]
		ok    bool
		check func(t *testing.T, p agents.Prompt)
	}{
		{"defaults", "", true, func(t *testing.T, p agents.Prompt) {
			if !slices.Equal(p.Options[3].Keys, []string{"4", "Enter"}) {
				t.Errorf("keys %q", p.Options[3].Keys)
			}
		}},
		{"prompt_keys", `prompt_keys = "Escape {n}"`, true, func(t *testing.T, p agents.Prompt) {
			if !slices.Equal(p.Options[3].Keys, []string{"Escape", "4"}) {
				t.Errorf("keys %q, want [Escape 4]", p.Options[3].Keys)
			}
		}},
		{"prompt_ignore emptied", `prompt_ignore = ""`, true, func(t *testing.T, p agents.Prompt) {
			if !slices.ContainsFunc(p.Context, func(s string) bool { return strings.HasPrefix(s, "Tip:") }) {
				t.Errorf("context %q should keep the tip", p.Context)
			}
		}},
		{"prompt_top emptied", `prompt_top = ""`, true, func(t *testing.T, p agents.Prompt) {
			if len(p.Context) != 0 {
				t.Errorf("context %q: the question opens the prompt, and the options follow it", p.Context)
			}
		}},
		{"prompt_question elsewhere", `prompt_question = '^\s*(Bash command)$'`, true, func(t *testing.T, p agents.Prompt) {
			if p.Question != "Bash command" {
				t.Errorf("question %q", p.Question)
			}
		}},
		{"prompt_option with another cursor", `prompt_option = '^\s*(?P<cursor>>)?\s*(?P<label>(?P<n>[0-9])\.\s+.*)$'`, false, nil},
		{"prompt_option off", `prompt_option = "off"`, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "thatch.toml")
			if err := os.WriteFile(file, []byte("[im.agents.claude]\n"+tc.toml+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := config.Load(config.LoadOptions{File: file, HomeDir: dir})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			r, err := agents.NewRegistry(dir, map[string]agents.Spec{agents.Claude: promptSpec(c.IM.Agents.Claude)})
			if err != nil {
				t.Fatal(err)
			}
			a, _ := r.Get(agents.Claude)
			p, ok := a.FindPrompt(screen)
			if ok != tc.ok {
				t.Fatalf("FindPrompt ok = %v, want %v (%+v)", ok, tc.ok, p)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

// Bad patterns are refused, each naming its agent and key.
func TestPromptBadPatterns(t *testing.T) {
	_, err := agents.NewRegistry(t.TempDir(), map[string]agents.Spec{
		agents.Claude: {Prompt: agents.PromptPatterns{Option: `(`, Question: `(a)(b)`, Keys: "{m}"}},
		agents.Codex:  {Prompt: agents.PromptPatterns{Option: `^(?P<n>\d)\. (?P<label>.*)$`, Question: `\?`, Keys: "{n}"}},
	})
	if !errors.Is(err, agents.ErrBadPrompt) {
		t.Fatalf("NewRegistry: %v, want ErrBadPrompt", err)
	}
	for _, want := range []string{"agent claude", "prompt_option", "prompt_question", "prompt_keys", "agent codex", "(?P<cursor>"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if _, ok := agents.FindPrompt(agents.Claude, readPrompt(t, "claude-bash.txt"), agents.PromptPatterns{Option: "("}); ok {
		t.Error("FindPrompt with a bad pattern found a prompt")
	}
}

// The package function fills nothing in a partly set PromptPatterns: a
// template that names {key} gives no keys to an option that names none.
func TestPromptKeysTemplate(t *testing.T) {
	pat := agents.DefaultPrompt(agents.Codex)
	pat.Keys = "{key}"
	screen := strings.ReplaceAll(readPrompt(t, "codex-approval.txt"), " (p)", "")
	p, ok := agents.FindPrompt(agents.Codex, screen, pat)
	if !ok {
		t.Fatal("no prompt")
	}
	got := [][]string{p.Options[0].Keys, p.Options[1].Keys, p.Options[2].Keys}
	if want := [][]string{{"y"}, nil, {"Escape"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("keys %q, want %q", got, want)
	}
}

// FindPrompt never panics, and what it finds is well formed.
func FuzzFindPrompt(f *testing.F) {
	for _, tc := range promptCases {
		f.Add(tc.agent, readPrompt(f, tc.file+".txt"))
	}
	f.Add(agents.Claude, " Do you want to proceed?\n ❯ 1. Yes\n   2. No\n")
	f.Add(agents.Codex, "Would you like to?\n› 1. a (y)\n  2. b\n\x1b[1m\x1b]0;t\x07")
	f.Add(agents.Claude, "\x1b")
	f.Fuzz(func(t *testing.T, agent, pane string) {
		p, ok := agents.FindPrompt(agent, pane, agents.PromptPatterns{})
		p2, ok2 := agents.FindPrompt(agent, pane, agents.PromptPatterns{})
		if ok != ok2 || !reflect.DeepEqual(p, p2) {
			t.Fatalf("not deterministic: %+v %v, then %+v %v", p, ok, p2, ok2)
		}
		if !ok {
			return
		}
		if len(p.Options) < 2 || p.Selected < 0 || p.Selected >= len(p.Options) {
			t.Fatalf("%d options, selected %d", len(p.Options), p.Selected)
		}
		if p.Question == "" || p.Fingerprint == "" {
			t.Fatalf("question %q fingerprint %q", p.Question, p.Fingerprint)
		}
		for i, o := range p.Options {
			if o.Number != i+1 || o.Label == "" {
				t.Fatalf("option %d: %+v", i, o)
			}
		}
	})
}
