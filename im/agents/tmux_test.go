package agents_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thatch-run/thatch/im/agents"
	"github.com/thatch-run/thatch/internal/testwait"
)

var tmuxServers atomic.Int32

// tmuxServer is a private tmux server (its own -L socket) whose panes run
// with HOME=home and the fake agents first in PATH; cleanup kills it.
type tmuxServer struct {
	socket string
	env    []string
}

func startTmux(t *testing.T, home string) *tmuxServer {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	dir := fakeAgentDir(t)
	s := &tmuxServer{
		socket: fmt.Sprintf("thatch-test-%d-%d", os.Getpid(), tmuxServers.Add(1)),
		env:    append(os.Environ(), "HOME="+home, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH")),
	}
	t.Logf("tmux -L %s", s.socket)
	t.Cleanup(func() {
		// tmux 3.3 leaves the socket file behind after kill-server.
		path, err := s.run("display-message", "-p", "#{socket_path}")
		_, _ = s.run("kill-server")
		if p := strings.TrimSpace(path); err == nil && strings.HasSuffix(p, "/"+s.socket) {
			_ = os.Remove(p)
		}
	})
	return s
}

func (s *tmuxServer) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "tmux", append([]string{"-L", s.socket, "-f", "/dev/null"}, args...)...)
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (s *tmuxServer) must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := s.run(args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// TestFakeClaudeInATmuxPane runs the fake claude the way thatch will: in
// a tmux pane, detected from the pane's process tree, its session found
// from the pane's pid and from the captured pane, and a bracketed paste of
// several lines answered as one message.
func TestFakeClaudeInATmuxPane(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	s := startTmux(t, home)
	s.must(t, "new-session", "-d", "-s", "w", "-x", "160", "-y", "50", "-c", cwd, "claude; exec sleep 300")
	pid, err := strconv.Atoi(s.must(t, "display-message", "-p", "-t", "w", "#{pane_pid}"))
	if err != nil {
		t.Fatal(err)
	}
	var screen string
	testwait.Until(t, "the session line in the pane", func() bool {
		screen = s.must(t, "capture-pane", "-p", "-J", "-t", "w")
		return sessionLine.MatchString(screen)
	})
	id := sessionLine.FindStringSubmatch(screen)[1]

	r := newRegistry(t, home, nil)
	tree, err := agents.ProcTree(pid)
	if err != nil {
		t.Fatal(err)
	}
	if name, ok := r.Detect(tree); name != "claude" || !ok {
		t.Errorf("Detect(%+v) = %q, %v", tree, name, ok)
	}
	a := agent(t, r, "claude")
	if f, ok := r.FindSession(context.Background(), a, agents.FindQuery{PanePID: pid, PaneText: "", HookFile: "", WindowKey: ""}); !ok || f.ID != id || f.How != agents.HowLsof {
		t.Errorf("FindSession by open files = %+v, %v; want %s", f, ok, id)
	}
	off := newRegistry(t, home, nil, agents.WithOpenFiles(agents.OpenFilesOff))
	if f, ok := off.FindSession(context.Background(), a, agents.FindQuery{PanePID: pid, PaneText: screen, HookFile: "", WindowKey: ""}); !ok || f.ID != id || f.How != agents.HowPane {
		t.Errorf("FindSession by pane = %+v, %v; want %s", f, ok, id)
	}

	buf := filepath.Join(t.TempDir(), "paste")
	if err := os.WriteFile(buf, []byte("first line\nsecond line"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.must(t, "load-buffer", "-b", "m", buf)
	s.must(t, "paste-buffer", "-p", "-d", "-b", "m", "-t", "w")
	s.must(t, "send-keys", "-t", "w", "Enter")
	waitForReplies(t, a, cwd, id, []string{"echo: first line\nsecond line"})
}
