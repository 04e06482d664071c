package agents_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/thatch-run/thatch/im/agents"
	"github.com/thatch-run/thatch/internal/testwait"
)

func procTreePIDs(pid int) ([]int, error) {
	tree, err := agents.ProcTree(pid)
	if err != nil {
		return nil, err
	}
	pids := make([]int, len(tree))
	for i, p := range tree {
		pids[i] = p.PID
	}
	return pids, nil
}

func TestProcTreeListsARealTreeParentsFirst(t *testing.T) {
	// sh -> sh -> sleep: the inner shell stays because a command follows.
	p := startPane(t, t.TempDir(), t.TempDir(), `sh -c 'sleep 300; :'; :`)
	root := p.cmd.Process.Pid
	var tree []agents.Proc
	testwait.Until(t, "sh -> sh -> sleep", func() bool {
		var err error
		tree, err = agents.ProcTree(root)
		// A process caught inside exec already has its new name but may
		// not have its arguments yet: wait for both.
		return err == nil && len(tree) == 3 && tree[2].Name == "sleep" && tree[2].Cmdline != ""
	})
	if tree[0].PID != root || tree[0].Name != "sh" || !strings.HasPrefix(tree[0].Cmdline, "sh -c sh -c ") {
		t.Errorf("root = %+v, want the outer sh (pid %d)", tree[0], root)
	}
	if tree[1].PPID != root || tree[1].Name != "sh" {
		t.Errorf("second = %+v, want the inner sh, child of %d", tree[1], root)
	}
	if tree[2].PPID != tree[1].PID || tree[2].Cmdline != "sleep 300" {
		t.Errorf("third = %+v, want sleep 300, child of %d", tree[2], tree[1].PID)
	}
	// Closing stdin does not end sleep: end it by its pid.
	sleeper, _ := os.FindProcess(tree[2].PID)
	_ = sleeper.Kill()
}

func TestProcTreeOfAMissingProcessFails(t *testing.T) {
	_, err := agents.ProcTree(1 << 30) // above any pid_max
	if !errors.Is(err, agents.ErrNoProcess) {
		t.Errorf("ProcTree(missing) error = %v, want ErrNoProcess", err)
	}
}

// TestFindSessionOfARunningAgent runs the fake claude under a shell, as in
// a pane, and finds its session each way FindSession knows.
func TestFindSessionOfARunningAgent(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	p := startPane(t, home, cwd, "claude; echo agent-ended")
	id := p.sessionID(t)
	pid := p.cmd.Process.Pid
	ctx := context.Background()
	hookFile := filepath.Join(t.TempDir(), "hooks.json")

	base := newRegistry(t, home, nil)
	wantPath, ok := agent(t, base, "claude").Transcript(cwd, id)
	if !ok {
		t.Fatalf("no transcript for %s under %s", id, home)
	}
	tree, err := agents.ProcTree(pid)
	if err != nil {
		t.Fatal(err)
	}
	if name, ok := base.Detect(tree); !ok || name != "claude" {
		t.Errorf("Detect(%+v) = %q, %v; want claude", tree, name, ok)
	}

	same := func(a, b string) bool {
		ra, _ := filepath.EvalSymlinks(a)
		rb, _ := filepath.EvalSymlinks(b)
		return ra == rb
	}
	check := func(name string, r *agents.Registry, paneText, key string, wantHow string) {
		t.Helper()
		f, ok := r.FindSession(ctx, agent(t, r, "claude"), agents.FindQuery{PanePID: pid, PaneText: paneText, HookFile: hookFile, WindowKey: key})
		if !ok || f.ID != id || f.How != wantHow {
			t.Errorf("%s: FindSession = %+v, %v; want id %s by %s", name, f, ok, id, wantHow)
			return
		}
		if wantHow != agents.HowHook && !same(f.Path, wantPath) {
			t.Errorf("%s: path %s, want %s", name, f.Path, wantPath)
		}
	}
	check("lsof", newRegistry(t, home, nil, agents.WithOpenFiles(agents.OpenFilesLsof)), "", "", agents.HowLsof)
	check("/proc fd", newRegistry(t, home, nil, agents.WithOpenFiles(agents.OpenFilesProc)), "", "", agents.HowLsof)
	check("lsof missing", newRegistry(t, home, nil, agents.WithLsof(filepath.Join(t.TempDir(), "no-lsof"))), "", "", agents.HowLsof)

	off := newRegistry(t, home, nil, agents.WithOpenFiles(agents.OpenFilesOff))
	// A UUID printed after the session's (a git hash, a request id) names
	// no transcript and must not win.
	noise := "request 3f2b8c1e-0000-4000-8000-000000000001 failed\n"
	check("pane", off, "old 11111111-2222-4333-8444-555555555555\n"+p.text()+noise, "", agents.HowPane)

	if _, ok := off.FindSession(ctx, agent(t, off, "claude"), agents.FindQuery{PanePID: pid, PaneText: noise, HookFile: hookFile, WindowKey: "%7"}); ok {
		t.Fatal("found a session with no open files, no id on screen and no hook entry")
	}
	if err := agents.WriteHook(hookFile, "%7", agents.HookEntry{SessionID: id, TranscriptPath: wantPath, Cwd: cwd, Agent: "claude"}); err != nil {
		t.Fatal(err)
	}
	check("hook", off, noise, "%7", agents.HowHook)
	if f, ok := off.FindSession(ctx, agent(t, off, "codex"), agents.FindQuery{PanePID: pid, PaneText: noise, HookFile: hookFile, WindowKey: "%7"}); ok {
		t.Errorf("codex took claude's hook entry: %+v", f)
	}
}

// TestFakeAgentTranscriptsReadBack drives each fake agent through a new
// session and a resumed one, and reads its replies and its session list
// back with the registry: the fake writes what the readers expect.
func TestFakeAgentTranscriptsReadBack(t *testing.T) {
	for _, name := range []string{"claude", "codex", "copilot"} {
		t.Run(name, func(t *testing.T) {
			home, cwd := t.TempDir(), t.TempDir()
			a := agent(t, newRegistry(t, home, nil), name)
			p := startPane(t, home, cwd, a.Launch)
			id := p.sessionID(t)
			p.send(t, "hello there\n\x1b[200~pasted\nlines\x1b[201~\n")
			path := waitForReplies(t, a, cwd, id, []string{"echo: hello there", "echo: pasted\nlines"})
			p.send(t, "exit\n")
			<-p.done

			resume, err := a.ResumeCommand(id)
			if err != nil {
				t.Fatal(err)
			}
			p2 := startPane(t, home, cwd, resume)
			if got := p2.sessionID(t); got != id {
				t.Fatalf("resumed session %s, want %s", got, id)
			}
			p2.send(t, "tool\n")
			if again := waitForReplies(t, a, cwd, id, []string{"echo: hello there", "echo: pasted\nlines", "echo: tool"}); again != path {
				t.Errorf("resume wrote %s, want %s", again, path)
			}
			ss, err := a.Sessions(cwd, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(ss) != 1 || ss[0].ID != id || ss[0].FirstPrompt != "hello there" || ss[0].Path != path {
				t.Errorf("Sessions = %+v, want the one session %s with its first prompt", ss, id)
			}
			if got, ok := a.SessionIDFromPath(path); !ok || got != id {
				t.Errorf("SessionIDFromPath(%s) = %q, %v", path, got, ok)
			}
		})
	}
}

// waitForReplies polls the transcript of id until the replies in it are
// want, and returns its path.
func waitForReplies(t *testing.T, a *agents.Agent, cwd, id string, want []string) string {
	t.Helper()
	var path string
	var got []string
	testwait.Until(t, "replies "+strings.Join(want, " | "), func() bool {
		var ok bool
		path, ok = a.Transcript(cwd, id)
		if !ok {
			return false
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		got = nil
		for _, l := range strings.Split(string(b), "\n") {
			got = append(got, a.Replies([]byte(l))...)
		}
		return strings.Join(got, "\x00") == strings.Join(want, "\x00")
	})
	return path
}

// TestProcTreeByChildrenMatchesAFullScan holds the fast walk (the pane's
// own processes, through /proc/<pid>/task/<tid>/children) to the full
// scan of every process it replaces.
func TestProcTreeByChildrenMatchesAFullScan(t *testing.T) {
	p := startPane(t, t.TempDir(), t.TempDir(), `sh -c 'sleep 300; :'; :`)
	root := p.cmd.Process.Pid
	testwait.Until(t, "sh -> sh -> sleep, all asleep", func() bool {
		// By name: a child forked for sleep is named sh until it execs.
		// All asleep: a process that has just exec'd may still be running
		// ('R') at one read and asleep ('S') at the next, and the two
		// walks below read at different moments.
		tree, err := agents.ProcTree(root)
		return err == nil && slices.ContainsFunc(tree, func(pr agents.Proc) bool { return pr.Name == "sleep" }) &&
			!slices.ContainsFunc(tree, func(pr agents.Proc) bool { return pr.State != 'S' })
	})
	fast, full, ok := agents.CompareTreesForTest(root)
	if !ok {
		t.Skip("this kernel has no /proc/<pid>/task/<tid>/children")
	}
	// Closing stdin does not end sleep: end it by its pid.
	for _, pr := range full {
		if pr.Name == "sleep" {
			sleeper, _ := os.FindProcess(pr.PID)
			defer func() { _ = sleeper.Kill() }()
		}
	}
	if fmt.Sprint(fast) != fmt.Sprint(full) {
		t.Fatalf("children walk %v, full scan %v", fast, full)
	}
}

func TestFindSessionFallsBackToTheNewestTranscriptSinceTheLaunch(t *testing.T) {
	home := t.TempDir()
	r := newRegistry(t, home, nil)
	a, _ := r.Get("claude")
	cwd := "/work/p"
	dir := filepath.Join(home, ".claude", "projects", agents.ClaudeProjectDirs(cwd)[0])
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	launch := time.Now().Add(-time.Minute)
	write := func(id string, at time.Time) string {
		p := filepath.Join(dir, id+".jsonl")
		if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const before, other, mine = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222", "33333333-3333-4333-8333-333333333333"
	write(before, launch.Add(-time.Hour))
	otherPath := write(other, launch.Add(30*time.Second))
	q := agents.FindQuery{Dir: cwd, Since: launch}
	if f, ok := r.FindSession(context.Background(), a, q); !ok || f.ID != other || f.How != agents.HowNewest {
		t.Fatalf("FindSession = %+v, %v; want the transcript written since the launch", f, ok)
	}
	q.Taken = func(p string) bool { return p == otherPath }
	if f, ok := r.FindSession(context.Background(), a, q); ok {
		t.Fatalf("FindSession = %+v: took another thread's transcript, or one from before the launch", f)
	}
	write(mine, launch.Add(10*time.Second))
	if f, ok := r.FindSession(context.Background(), a, q); !ok || f.ID != mine {
		t.Fatalf("FindSession = %+v, %v; want %s", f, ok, mine)
	}
	if f, ok := r.FindSession(context.Background(), a, agents.FindQuery{Dir: cwd}); ok {
		t.Fatalf("FindSession without a launch time = %+v; the fallback needs one", f)
	}
	// Two new transcripts nobody follows: which is this window's cannot
	// be told, and none is taken.
	q.Taken = nil
	if f, ok := r.FindSession(context.Background(), a, q); ok {
		t.Fatalf("FindSession = %+v with two new candidates; want none", f)
	}
}
