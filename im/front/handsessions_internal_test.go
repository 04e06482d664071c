package front

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/agentmem"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/im/agents"
	"github.com/thatch-run/thatch/internal/redact"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// memoryTree takes what is delivered to the sessions' memory.
type memoryTree struct {
	frontend.Tree
	mu   sync.Mutex
	got  []*agentmem.ToolsRead
	fail bool
}

func (m *memoryTree) DeliverContext(_ context.Context, to actors.Identity, msg any, _ time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		return context.DeadlineExceeded
	}
	if r, ok := msg.(*agentmem.ToolsRead); ok && to.Kind == agentmem.KindName {
		m.got = append(m.got, r)
	}
	return nil
}

func (m *memoryTree) reads() []*agentmem.ToolsRead {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*agentmem.ToolsRead(nil), m.got...)
}

// A transcript of a session started by hand is read from where its
// memory says, in whole lines: its tool calls and their results go to
// the session's memory, redacted, with no thread; a line not ended yet
// waits for its end; a read the memory could not take is read again.
func TestASessionStartedByHandIsReadInWholeLinesFromWhereItsMemoryWas(t *testing.T) {
	home := t.TempDir()
	reg, err := agents.NewRegistry(home, nil)
	if err != nil {
		t.Fatal(err)
	}
	red, err := redact.New(redact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tree := &memoryTree{}
	tools := &toolReader{cfg: &config.Config{}, agents: reg, redactor: red, log: hclog.NewNullLogger(), tree: tree}
	h := newHandFollower(tools, hclog.NewNullLogger())
	path := filepath.Join(home, "s1.jsonl")
	key := "ghp_" + strings.Repeat("Ab1", 12)
	before := `{"type":"user","cwd":"/work/web","message":{"role":"user","content":"hi"}}` + "\n"
	call := `{"type":"assistant","cwd":"/work/web","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"echo ` + key + `"}}]}}` + "\n"
	result := `{"type":"user","cwd":"/work/web","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"done"}]}}` + "\n"
	if err := os.WriteFile(path, []byte(before+call+result[:20]), 0o600); err != nil {
		t.Fatal(err)
	}
	h.follow(agents.Claude, path, int64(len(before)))
	ctx := context.Background()
	h.poll(ctx, path)
	got := tree.reads()
	if len(got) != 1 || got[0].From != int64(len(before)) || got[0].To != int64(len(before+call)) || len(got[0].Calls) != 1 ||
		got[0].Thread != "" || got[0].Dir != "/work/web" || strings.Contains(got[0].Calls[0].Input, key) {
		t.Fatalf("first read: %+v", got)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(result[20:]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tree.fail = true
	h.poll(ctx, path)
	tree.fail = false
	h.poll(ctx, path)
	got = tree.reads()
	if len(got) != 2 || got[1].From != int64(len(before+call)) || len(got[1].Results) != 1 || got[1].Results[0].Output != "done" {
		t.Fatalf("after the line's end and a failed delivery: %+v", got)
	}
	h.poll(ctx, path)
	if n := len(tree.reads()); n != 2 {
		t.Fatalf("read again with nothing new: %d reads", n)
	}
}

// A line longer than one read (a huge tool output) is passed, and the
// lines after it are read.
func TestALineLongerThanAReadIsPassed(t *testing.T) {
	home := t.TempDir()
	reg, err := agents.NewRegistry(home, nil)
	if err != nil {
		t.Fatal(err)
	}
	tree := &memoryTree{}
	tools := &toolReader{cfg: &config.Config{}, agents: reg, log: hclog.NewNullLogger(), tree: tree}
	h := newHandFollower(tools, hclog.NewNullLogger())
	path := filepath.Join(home, "s2.jsonl")
	long := `{"type":"user","message":{"role":"user","content":"` + strings.Repeat("x", handChunk+100) + `"}}` + "\n"
	call := `{"type":"assistant","cwd":"/w","message":{"role":"assistant","content":[{"type":"tool_use","id":"t9","name":"Bash","input":{"command":"ls"}}]}}` + "\n"
	if err := os.WriteFile(path, []byte(long+call), 0o600); err != nil {
		t.Fatal(err)
	}
	h.follow(agents.Claude, path, 0)
	for range 2 {
		h.poll(context.Background(), path)
	}
	got := tree.reads()
	if len(got) != 1 || got[0].From != int64(len(long)) || len(got[0].Calls) != 1 || got[0].Calls[0].ID != "t9" {
		t.Fatalf("reads after the long line: %+v", got)
	}
}

// The route takes only an agent's transcript under the user's home, also
// through a link.
func TestASessionsTranscriptMustBeUnderTheHome(t *testing.T) {
	home := t.TempDir()
	outside := filepath.Join(t.TempDir(), "x.jsonl")
	if err := os.WriteFile(outside, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(home, "link.jsonl")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		b  sessionBody
		ok bool
	}{
		{sessionBody{Agent: "claude", Transcript: filepath.Join(home, ".claude", "projects", "p", "s.jsonl"), Dir: "/w"}, true},
		{sessionBody{Agent: "codex", Transcript: filepath.Join(home, ".codex", "sessions", "r.jsonl")}, true},
		{sessionBody{Agent: "mimo", Transcript: filepath.Join(home, "s.jsonl")}, false},
		{sessionBody{Agent: "claude", Transcript: outside}, false},
		{sessionBody{Agent: "claude", Transcript: link}, false},
		{sessionBody{Agent: "claude", Transcript: filepath.Join(home, "s.txt")}, false},
		{sessionBody{Agent: "claude", Transcript: home + "/../etc/s.jsonl"}, false},
		{sessionBody{Agent: "claude", Transcript: filepath.Join(home, "s.jsonl"), Dir: "rel"}, false},
	} {
		if err := c.b.check(home); (err == nil) != c.ok {
			t.Errorf("%+v: %v, want ok %v", c.b, err, c.ok)
		}
	}
}
