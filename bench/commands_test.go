package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tiny run of the commands benchmark measures each of its paths (a
// render of the real pane checked byte for byte, a dialog drawn by the
// fake claude and sent with its buttons, the CPU of idle bindings with
// none at work: a failure there is an error of the run), sets each
// target's limit as its baseline, and leaves no tmux server behind.
func TestCommandsMeasuresEachPath(t *testing.T) {
	recs, _, _ := runTiny(t, "-only", "commands")
	byName := map[string]Record{}
	for _, r := range recs {
		byName[r.Name] = r
	}
	for _, c := range []struct {
		name  string
		limit float64 // the baseline; 0 for one measured
	}{
		{"commands.screenshot_render", 50},
		{"commands.screenshot_capture", 0},
		{"commands.screenshot_render.vs_bare_capture", -1},
		{"commands.prompt_to_buttons", 300},
		{"commands.watch_cost.watched", 0},
		{"commands.watch_cost", 2},
	} {
		r, ok := byName[c.name]
		switch {
		case !ok:
			t.Errorf("no record %s in %v", c.name, names(recs))
		case r.Value <= 0 && !strings.HasPrefix(c.name, "commands.watch_cost"):
			t.Errorf("%s measured nothing: %+v", c.name, r)
		case c.limit > 0 && (r.Baseline == nil || *r.Baseline != c.limit):
			t.Errorf("%s: baseline %v, want the limit %v", c.name, r.Baseline, c.limit)
		case c.limit < 0 && (r.Baseline == nil || *r.Baseline != byName["commands.screenshot_capture"].Value):
			t.Errorf("%s: baseline %v, want commands.screenshot_capture's value", c.name, r.Baseline)
		}
	}
	// The render target holds at every size; the others are judged at
	// their full sizes only.
	if r := byName["commands.screenshot_render"]; r.Target != "<= 50" {
		t.Errorf("screenshot_render: target %q, want <= 50", r.Target)
	}
	for _, name := range []string{"commands.prompt_to_buttons", "commands.watch_cost"} {
		if r := byName[name]; r.Pass != nil || !strings.Contains(r.Notes, "not judged at") {
			t.Errorf("%s: pass %v, notes %q: want it not judged at a tiny size", name, r.Pass, r.Notes)
		}
	}
	base := os.Getenv("TMUX_TMPDIR")
	if base == "" {
		base = "/tmp"
	}
	left, _ := filepath.Glob(filepath.Join(base, fmt.Sprintf("tmux-%d", os.Getuid()), fmt.Sprintf("thatch-bench-%d-*", os.Getpid())))
	if len(left) > 0 {
		t.Errorf("tmux sockets left behind: %v", left)
	}
}
