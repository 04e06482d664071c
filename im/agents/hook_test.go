package agents_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thatch-run/thatch/im/agents"
)

func TestHookMapKeepsOneEntryPerWindow(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state", "hooks.json")
	if _, ok, err := agents.ReadHook(file, "%1"); ok || err != nil {
		t.Fatalf("ReadHook of a missing file = %v, %v; want no entry, no error", ok, err)
	}
	e1 := agents.HookEntry{SessionID: id1, TranscriptPath: "/h/.claude/projects/-p/" + id1 + ".jsonl", Cwd: "/p", Agent: "claude", Source: "startup"}
	e2 := agents.HookEntry{SessionID: id2, Cwd: "/q"}
	for _, w := range []struct {
		key string
		e   agents.HookEntry
	}{{"%1", agents.HookEntry{SessionID: id3}}, {"%2", e2}, {"%1", e1}} {
		if err := agents.WriteHook(file, w.key, w.e); err != nil {
			t.Fatal(err)
		}
	}
	for key, want := range map[string]agents.HookEntry{"%1": e1, "%2": e2} {
		got, ok, err := agents.ReadHook(file, key)
		if err != nil || !ok || got.SessionID != want.SessionID || got.TranscriptPath != want.TranscriptPath ||
			got.Cwd != want.Cwd || got.Agent != want.Agent || got.Updated.IsZero() {
			t.Errorf("ReadHook(%s) = %+v, %v, %v; want %+v", key, got, ok, err, want)
		}
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("hook map mode = %v, %v; want 0600", fi.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".hooks.json.tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

func TestConcurrentHooksLoseNoEntry(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hooks.json")
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- agents.WriteHook(file, fmt.Sprintf("%%%d", i), agents.HookEntry{SessionID: fmt.Sprintf("s%d", i)})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		if e, ok, err := agents.ReadHook(file, fmt.Sprintf("%%%d", i)); err != nil || !ok || e.SessionID != fmt.Sprintf("s%d", i) {
			t.Errorf("window %%%d: %+v, %v, %v", i, e, ok, err)
		}
	}
}

func TestWriteHookDropsStaleEntriesAndRefusesBadOnes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hooks.json")
	now := time.Now().UTC()
	if err := agents.WriteHook(file, "%old", agents.HookEntry{SessionID: id1, Updated: now.Add(-agents.HookMaxAge - time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := agents.WriteHook(file, "%new", agents.HookEntry{SessionID: id2, Updated: now}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := agents.ReadHook(file, "%old"); ok {
		t.Error("an entry older than HookMaxAge survived a write")
	}
	for _, c := range []struct {
		key string
		e   agents.HookEntry
	}{{"", agents.HookEntry{SessionID: id1}}, {"%1", agents.HookEntry{SessionID: "x; rm -rf /"}}, {"%1", agents.HookEntry{}}} {
		if err := agents.WriteHook(file, c.key, c.e); !errors.Is(err, agents.ErrBadHook) {
			t.Errorf("WriteHook(%q, %+v) = %v, want ErrBadHook", c.key, c.e, err)
		}
	}
}

func TestACorruptHookMapIsReportedAndReplaced(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hooks.json")
	if err := os.WriteFile(file, []byte(`{"version":1,"windows":{"%1":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := agents.ReadHook(file, "%1"); !errors.Is(err, agents.ErrBadHookFile) {
		t.Fatalf("ReadHook of a corrupt map = %v, want ErrBadHookFile", err)
	}
	if err := agents.WriteHook(file, "%1", agents.HookEntry{SessionID: id1}); err != nil {
		t.Fatalf("WriteHook over a corrupt map: %v", err)
	}
	if e, ok, err := agents.ReadHook(file, "%1"); err != nil || !ok || e.SessionID != id1 {
		t.Errorf("after replacing: %+v, %v, %v", e, ok, err)
	}
}

func TestParseClaudeHookReadsSessionStartInput(t *testing.T) {
	in := `{"session_id":"` + id1 + `","transcript_path":"/home/u/.claude/projects/-p/` + id1 + `.jsonl",` +
		`"cwd":"/p","hook_event_name":"SessionStart","source":"startup"}`
	e, err := agents.ParseClaudeHook(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := agents.HookEntry{SessionID: id1, TranscriptPath: "/home/u/.claude/projects/-p/" + id1 + ".jsonl", Cwd: "/p", Agent: "claude", Source: "startup"}
	if e != want {
		t.Errorf("ParseClaudeHook = %+v, want %+v", e, want)
	}
	for _, bad := range []string{``, `not json`, `{"cwd":"/p"}`, `{"session_id":"$(id)"}`, `{"session_id":7}`} {
		if _, err := agents.ParseClaudeHook(strings.NewReader(bad)); !errors.Is(err, agents.ErrBadHook) {
			t.Errorf("ParseClaudeHook(%q) = %v, want ErrBadHook", bad, err)
		}
	}
}

func TestClaudeHookSettingsRegistersTheSessionStartHook(t *testing.T) {
	for bin, want := range map[string]string{
		"/usr/local/bin/thatch":    "/usr/local/bin/thatch hook claude",
		"/home/a b/it's/thatch":    `'/home/a b/it'\''s/thatch' hook claude`,
		"/opt/thatch-1.0/bin/th_x": "/opt/thatch-1.0/bin/th_x hook claude",
	} {
		var v struct {
			Hooks map[string][]struct {
				Matcher string `json:"matcher"`
				Hooks   []struct {
					Type    string `json:"type"`
					Command string `json:"command"`
				} `json:"hooks"`
			} `json:"hooks"`
		}
		s := agents.ClaudeHookSettings(bin)
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("ClaudeHookSettings(%q) is not JSON: %v\n%s", bin, err, s)
		}
		ss := v.Hooks["SessionStart"]
		if len(ss) != 1 || len(ss[0].Hooks) != 1 || ss[0].Hooks[0].Type != "command" || ss[0].Hooks[0].Command != want {
			t.Errorf("ClaudeHookSettings(%q) = %s; want one command hook %q", bin, s, want)
		}
		if !strings.Contains(ss[0].Matcher, "startup") || !strings.Contains(ss[0].Matcher, "resume") {
			t.Errorf("matcher %q misses startup or resume", ss[0].Matcher)
		}
	}
}
