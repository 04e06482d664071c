package agents_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thatch-run/thatch/im/agents"
)

// TestFindNewestListsWithoutReadingPrompts: the last step of FindSession
// (run on every poll while a launched agent's session is looked for) still
// takes the one transcript for the directory written since the launch,
// for each agent with transcripts, and the listing it uses reads no first
// prompt and leaves out what was written before the launch.
func TestFindNewestListsWithoutReadingPrompts(t *testing.T) {
	launch := time.Now().Add(-time.Minute).Truncate(time.Second)
	before, after, newest := launch.Add(-time.Hour), launch.Add(10*time.Second), launch.Add(20*time.Second)
	const cwd = "/work/p"
	for _, c := range []struct {
		agent string
		// write writes session id's transcript, in the directory dir,
		// with the user's first prompt, last written at mod.
		write func(t *testing.T, home, id, dir, prompt string, mod time.Time)
	}{
		{"claude", func(t *testing.T, home, id, dir, prompt string, mod time.Time) {
			path := filepath.Join(home, ".claude", "projects", agents.ClaudeProjectDirs(dir)[0], id+".jsonl")
			writeJSONL(t, path, mod, claudeUser(prompt, false))
		}},
		{"codex", func(t *testing.T, home, id, dir, prompt string, mod time.Time) {
			writeJSONL(t, codexFile(home, mod, id), mod,
				codexRec("session_meta", map[string]any{"id": id, "cwd": dir}),
				codexRec("event_msg", map[string]any{"type": "user_message", "message": prompt}))
		}},
		{"copilot", func(t *testing.T, home, id, dir, prompt string, mod time.Time) {
			writeJSONL(t, filepath.Join(home, ".copilot", "session-state", id, "events.jsonl"), mod,
				copilotEvent("session.start", map[string]any{"sessionId": id, "context": map[string]any{"cwd": dir}}),
				copilotEvent("user.message", map[string]any{"content": prompt}))
		}},
	} {
		t.Run(c.agent, func(t *testing.T) {
			home := t.TempDir()
			r := newRegistry(t, home, nil)
			a := agent(t, r, c.agent)
			c.write(t, home, id1, cwd, "the user's own session", before)
			c.write(t, home, id2, "/work/q", "another directory's", newest)
			c.write(t, home, id3, cwd, "this window's", after)

			f, ok := r.FindSession(context.Background(), a, agents.FindQuery{Dir: cwd, Since: launch})
			if !ok || f.ID != id3 || f.How != agents.HowNewest {
				t.Fatalf("FindSession = %+v, %v; want %s, the one transcript for %s since the launch", f, ok, id3, cwd)
			}

			list, err := agents.ListSessionsForTest(a, cwd, launch)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].ID != id3 || list[0].FirstPrompt != "" || !list[0].Modified.Equal(after) {
				t.Errorf("listing since the launch = %+v; want %s alone, without its first prompt", list, id3)
			}
			// Sessions lists the same transcripts with their prompts read.
			all := sessionIDs(t, a, cwd, 0)
			if got, want := strings.Join(ids(all), " "), id3+" "+id1; got != want || all[0].FirstPrompt != "this window's" {
				t.Errorf("Sessions = %s (first prompt %q); want %s, with prompts", got, all[0].FirstPrompt, want)
			}
		})
	}
}
