package agents_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thatch-run/thatch/im/agents"
)

// The screens in testdata/screens were captured (tmux capture-pane -p)
// from the real claude 2.1.328 and codex 0.169.0, run in tmux against
// local fakes of their model APIs. InputLine must find the input line on
// each, and only there: typing into a dialog would answer it.
func TestInputLineOnTheAgentsRealScreens(t *testing.T) {
	r, err := agents.NewRegistry(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		file  string
		agent string
		ok    bool
		text  string
	}{
		{"claude-starting", agents.Claude, false, ""},
		{"claude-first-draw", agents.Claude, true, ""},
		{"claude-ready", agents.Claude, true, ""},
		{"claude-ready-manual-mode", agents.Claude, true, ""},
		{"claude-typed", agents.Claude, true, "hello world"},
		{"claude-busy", agents.Claude, true, ""},
		{"claude-after-reply", agents.Claude, true, ""},
		{"claude-pasted-long", agents.Claude, true, "[Pasted text #1 +39 lines]"},
		{"claude-permission", agents.Claude, false, ""},
		{"claude-exited", agents.Claude, false, ""},
		{"claude-suspended", agents.Claude, false, ""},
		// codex draws its input line before it reads keys; it reads
		// them once its status line shows below (codex-first-draw is
		// the bottom of a pane caught then, its blank lines squeezed).
		{"codex-starting", agents.Codex, false, ""},
		{"codex-first-draw", agents.Codex, false, ""},
		{"codex-ready", agents.Codex, true, "Ask Codex to do anything"},
		{"codex-typed", agents.Codex, true, "hello codex"},
		{"codex-busy", agents.Codex, true, "Ask Codex to do anything"},
		{"codex-approval", agents.Codex, false, ""},
		{"codex-trust", agents.Codex, false, ""},
	}
	// Without the lines codex shows only sometimes (the model's reason,
	// the environment), an earlier message comes within reach of the
	// scan: the dialog below it must still win.
	b, err := os.ReadFile(filepath.Join("testdata", "screens", "codex-approval.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var short []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.Contains(l, "Reason:") && !strings.Contains(l, "Environment:") {
			short = append(short, l)
		}
	}
	a, _ := r.Get(agents.Codex)
	if text, ok := a.InputLine(strings.Join(short, "\n")); ok {
		t.Errorf("codex approval without its reason: InputLine = %q, true; want none (a dialog is open)", text)
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "screens", c.file+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			a, _ := r.Get(c.agent)
			text, ok := a.InputLine(string(b))
			if ok != c.ok || text != c.text {
				t.Errorf("InputLine = %q, %v; want %q, %v", text, ok, c.text, c.ok)
			}
		})
	}
}

// A draft in claude's input line (typed by hand, or a message claude did
// not take) is told from its empty line and its own placeholder.
func TestHoldsDraftOnClaudesRealScreens(t *testing.T) {
	r, err := agents.NewRegistry(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]bool{
		"claude-ready": false, "claude-queued": false, "claude-after-reply": false, "claude-typed": true, "claude-pasted-long": true,
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "screens", file+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		a, _ := r.Get(agents.Claude)
		line, ok := a.InputLine(string(b))
		if got := ok && a.HoldsDraft(line); got != want {
			t.Errorf("%s: HoldsDraft(%q) = %v, want %v", file, line, got, want)
		}
	}
	codex, _ := r.Get(agents.Codex)
	if codex.HoldsDraft("Ask Codex to do anything") {
		t.Error("codex's placeholder taken for a draft")
	}
}
