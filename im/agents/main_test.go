package agents_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/thatch-run/thatch/internal/testwait"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) {
		if buildDir != "" {
			os.RemoveAll(buildDir)
		}
	}))
}

// fakeAgentDir builds e2e/fakeagent once per run and returns a directory
// holding it as claude, codex, copilot and mimo, to put first in PATH.
func fakeAgentDir(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "thatch-fakeagent-")
		if buildErr != nil {
			return
		}
		bin := filepath.Join(buildDir, "claude")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/thatch-run/thatch/e2e/fakeagent").CombinedOutput()
		if err != nil {
			buildErr = &buildError{err, string(out)}
			return
		}
		for _, n := range []string{"codex", "copilot", "mimo"} {
			if buildErr = os.Link(bin, filepath.Join(buildDir, n)); buildErr != nil {
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatalf("build fake agent: %v", buildErr)
	}
	return buildDir
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// paneProc is a shell running a fake agent, standing in for a tmux pane:
// its pid is the pane's pid, its output the pane's text.
type paneProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	out   strings.Builder
	done  chan struct{}
}

// startPane runs script under `sh -c` in cwd with HOME=home and the fake
// agents first in PATH. Cleanup closes its input (the agent exits at end
// of input) and, should it still run after a while, kills the shell and
// the agent by pid.
func startPane(t *testing.T, home, cwd, script string) *paneProc {
	t.Helper()
	dir := fakeAgentDir(t)
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), "HOME="+home, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	p := &paneProc{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { // owned by p: ends when the shell closes its output
		defer close(p.done)
		br := bufio.NewReader(stdout)
		for {
			line, err := br.ReadString('\n')
			p.mu.Lock()
			p.out.WriteString(line)
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

func (p *paneProc) stop(t *testing.T) {
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Errorf("pane %d did not end at end of input; killing it", p.cmd.Process.Pid)
		if tree, err := procTreePIDs(p.cmd.Process.Pid); err == nil {
			for _, pid := range tree {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		<-p.done
	}
	_ = p.cmd.Wait()
}

func (p *paneProc) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *paneProc) send(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, s); err != nil {
		t.Fatalf("write to pane: %v", err)
	}
}

var sessionLine = regexp.MustCompile(`session: ([0-9a-f-]{36})`)

// sessionID waits for the agent to print its session id and returns the
// last one printed.
func (p *paneProc) sessionID(t *testing.T) string {
	t.Helper()
	var id string
	testwait.Until(t, "the agent's session line", func() bool {
		m := sessionLine.FindAllStringSubmatch(p.text(), -1)
		if len(m) == 0 {
			return false
		}
		id = m[len(m)-1][1]
		return true
	})
	return id
}
