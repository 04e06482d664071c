package agents_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thatch-run/thatch/im/agents"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files under testdata/replies from the current code")

// readLines returns the lines of a testdata file, without line ends.
func readTestLines(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}

// TestRepliesMatchGoldenLines reads testdata/replies/<agent>.jsonl (lines
// in the agent's real transcript format, with malformed ones mixed in) and
// compares, line by line, what Replies returns with <agent>.golden (one
// JSON value per input line: the replies, or null).
func TestRepliesMatchGoldenLines(t *testing.T) {
	r := newRegistry(t, t.TempDir(), nil)
	for _, name := range []string{"claude", "codex", "copilot"} {
		t.Run(name, func(t *testing.T) {
			a := agent(t, r, name)
			lines := readTestLines(t, filepath.Join("testdata", "replies", name+".jsonl"))
			goldenPath := filepath.Join("testdata", "replies", name+".golden")
			var got []string
			for _, l := range lines {
				var b bytes.Buffer
				enc := json.NewEncoder(&b)
				enc.SetEscapeHTML(false)
				_ = enc.Encode(a.Replies(l))
				got = append(got, strings.TrimSuffix(b.String(), "\n"))
			}
			if *rewrite {
				if err := os.WriteFile(goldenPath, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want := readTestLines(t, goldenPath)
			if len(want) != len(lines) {
				t.Fatalf("%s has %d lines for %d input lines", goldenPath, len(want), len(lines))
			}
			for i := range lines {
				if got[i] != string(want[i]) {
					t.Errorf("line %d: Replies = %s, want %s\n  input: %.200s", i+1, got[i], want[i], lines[i])
				}
			}
		})
	}
}

func TestRepliesSkipsLinesOverOneMiB(t *testing.T) {
	a := agent(t, newRegistry(t, t.TempDir(), nil), "claude")
	text := strings.Repeat("x", 1<<20)
	line, _ := json.Marshal(map[string]any{"type": "assistant", "message": map[string]any{
		"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}}})
	if got := a.Replies(line); got != nil {
		t.Errorf("a %d-byte line gave %d replies; want it skipped", len(line), len(got))
	}
	small, _ := json.Marshal(map[string]any{"type": "assistant", "message": map[string]any{
		"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text[:1<<19]}}}})
	if got := a.Replies(small); len(got) != 1 || len(got[0]) != 1<<19 {
		t.Errorf("a %d-byte line was not read", len(small))
	}
}

func TestMimoHasNoTranscriptReplies(t *testing.T) {
	a := agent(t, newRegistry(t, t.TempDir(), nil), "mimo")
	for _, name := range []string{"claude", "codex", "copilot"} {
		for _, l := range readTestLines(t, filepath.Join("testdata", "replies", name+".jsonl")) {
			if got := a.Replies(l); got != nil {
				t.Fatalf("mimo Replies(%.80s) = %q, want nil", l, got)
			}
		}
	}
	if a.HasTranscript() {
		t.Error("mimo claims a transcript")
	}
}

// FuzzReplies proves that Replies never panics on any line, for any agent,
// and never returns a blank reply.
func FuzzReplies(f *testing.F) {
	for _, name := range []string{"claude", "codex", "copilot"} {
		for _, l := range readTestLines(f, filepath.Join("testdata", "replies", name+".jsonl")) {
			f.Add(l)
		}
	}
	r, err := agents.NewRegistry(f.TempDir(), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, name := range r.Names() {
			a, _ := r.Get(name)
			for _, s := range a.Replies(line) {
				if strings.TrimSpace(s) == "" {
					t.Fatalf("%s: blank reply from %q", name, line)
				}
			}
		}
	})
}
