package agents_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/thatch-run/thatch/im/agents"
	"github.com/thatch-run/thatch/internal/testwait"
)

// testdata/ps/linux-procps.txt is real output of `ps -axo
// pid=,ppid=,comm=,args=` (procps-ng 4.0.2), cut to a few lines: kernel
// threads, a tree started for the capture (sh running a copy of sleep
// named "my sleep", one named "claude", and sh -> sleep), and a tmux
// server of the e2e suite whose pane runs a fake claude. Names are padded
// to 15 columns, and both "my sleep" and "tmux: server" hold a space.
func TestParsePSReadsCapturedProcpsOutput(t *testing.T) {
	got := agents.ParsePS(readFile(t, filepath.Join("testdata", "ps", "linux-procps.txt")))
	want := []agents.Proc{
		{PID: 2, PPID: 0, Name: "kthreadd", Cmdline: "[kthreadd]"},
		{PID: 3, PPID: 2, Name: "pool_workqueue_", Cmdline: "[pool_workqueue_release]"},
		{PID: 4, PPID: 2, Name: "kworker/R-rcu_g", Cmdline: "[kworker/R-rcu_gp]"},
		{PID: 586, PPID: 1, Name: "sh", Cmdline: `sh -c "/tmp/thatch ps/bin/my sleep" 300 & "/tmp/thatch ps/bin/claude" 301 & sh -c "sleep 302; :" & wait # thatch-ps-capture`},
		{PID: 588, PPID: 586, Name: "my sleep", Cmdline: "/tmp/thatch ps/bin/my sleep 300"},
		{PID: 589, PPID: 586, Name: "claude", Cmdline: "/tmp/thatch ps/bin/claude 301"},
		{PID: 590, PPID: 586, Name: "sh", Cmdline: "sh -c sleep 302; :"},
		{PID: 591, PPID: 590, Name: "sleep", Cmdline: "sleep 302"},
		{PID: 28865, PPID: 1, Name: "tmux: server", Cmdline: "tmux -L thatch-e2e-21748-5 new-session -d -P -F #{window_id} -s thatch -e THATCH_IM_WINDOW=thatch:tg:-1001234:1:1 -e THATCH_IM_HOOK_FILE=/tmp/ginkgo2532454791/thatch/im/claude-sessions.json -n terminal -c /tmp/ginkgo2532454791/home/projects/api -- sh -c printf 'thatch: the agent starts here once its session is chosen\\n'; exec sleep 2147483647"},
		{PID: 28868, PPID: 28763, Name: "tmux: client", Cmdline: "tmux -N -L thatch-e2e-21748-5 -C attach-session -f ignore-size,no-output -t =thatch"},
		{PID: 28869, PPID: 28865, Name: "sh", Cmdline: "/bin/sh -ic true && /tmp/ginkgo2532454791/bin/claude --settings /tmp/ginkgo2532454791/thatch/im/claude-settings.json"},
		{PID: 28871, PPID: 28869, Name: "claude", Cmdline: "/tmp/ginkgo2532454791/bin/claude --settings /tmp/ginkgo2532454791/thatch/im/claude-settings.json"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParsePS =\n%s\nwant\n%s", procLines(got), procLines(want))
	}
}

// testdata/ps/macos-handwritten.txt is written by hand in the shape of
// macOS's BSD ps, which reports the command as the executable's path
// (with spaces under "Application Support" and in app bundles), a login
// shell as "-zsh", and is not padded past a long command. It was never
// captured on a Mac.
func TestParsePSReadsMacOSShapedOutput(t *testing.T) {
	got := agents.ParsePS(readFile(t, filepath.Join("testdata", "ps", "macos-handwritten.txt")))
	const support = "/Users/me/Library/Application Support/npm/"
	const helper = "/Applications/Visual Studio Code.app/Contents/Frameworks/Code Helper (Plugin).app/Contents/MacOS/Code Helper (Plugin)"
	want := []agents.Proc{
		{PID: 1, PPID: 0, Name: "launchd", Cmdline: "/sbin/launchd"},
		{PID: 412, PPID: 1, Name: "iTerm2", Cmdline: "/Applications/iTerm.app/Contents/MacOS/iTerm2"},
		{PID: 4242, PPID: 1, Name: "tmux", Cmdline: "tmux new-session -s work"},
		{PID: 4243, PPID: 4242, Name: "-zsh", Cmdline: "-zsh"},
		{PID: 4250, PPID: 4243, Name: "node", Cmdline: "node /opt/homebrew/bin/claude --resume 95e6f011-ec33-4b37-91ad-5d242b40ae3d"},
		{PID: 4251, PPID: 4250, Name: "zsh", Cmdline: "/bin/zsh -c -l source /Users/me/.zshrc && npm test"},
		{PID: 4300, PPID: 4242, Name: "zsh", Cmdline: "/bin/zsh -ic codex"},
		{PID: 4301, PPID: 4300, Name: "codex", Cmdline: support + "bin/codex --yolo"},
		{PID: 4302, PPID: 4301, Name: "codex", Cmdline: support + "lib/node_modules/@openai/codex/vendor/codex/codex --yolo"},
		{PID: 4400, PPID: 1, Name: "Code Helper (Plugin)", Cmdline: helper + " --type=utility --lang=en-US"},
		{PID: 4500, PPID: 4242, Name: "(zsh)", Cmdline: "(zsh)"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParsePS =\n%s\nwant\n%s", procLines(got), procLines(want))
	}
	if got := agents.ParsePS([]byte("  PID  PPID COMM ARGS\nnot a process\n  7\n  8  1\n")); len(got) != 0 {
		t.Errorf("ParsePS of a header and junk = %+v, want nothing", got)
	}
}

// TestProcTreeUsesPSWithoutProc takes the ps path, as on macOS, and tells
// the agents of the panes apart from the captured and hand-written output.
func TestProcTreeUsesPSWithoutProc(t *testing.T) {
	r := newRegistry(t, t.TempDir(), nil)
	for _, c := range []struct {
		file  string
		pane  int
		pids  []int
		agent string
	}{
		{"linux-procps.txt", 586, []int{586, 588, 589, 590, 591}, "claude"},
		{"linux-procps.txt", 28869, []int{28869, 28871}, "claude"},
		{"macos-handwritten.txt", 4243, []int{4243, 4250, 4251}, "claude"},
		{"macos-handwritten.txt", 4300, []int{4300, 4301, 4302}, "codex"},
	} {
		out := readFile(t, filepath.Join("testdata", "ps", c.file))
		restore := agents.WithoutProcForTest(func() ([]byte, error) { return out, nil })
		tree, err := agents.ProcTree(c.pane)
		_, missing := agents.ProcTree(99999)
		restore()
		if err != nil {
			t.Fatalf("%s: ProcTree(%d): %v", c.file, c.pane, err)
		}
		if got := treePIDs(tree); !reflect.DeepEqual(got, c.pids) {
			t.Errorf("%s: ProcTree(%d) = %v, want %v", c.file, c.pane, got, c.pids)
		}
		if got, ok := r.Detect(tree); !ok || got != c.agent {
			t.Errorf("%s: Detect(pane %d) = %q, %v; want %s", c.file, c.pane, got, ok, c.agent)
		}
		if !errors.Is(missing, agents.ErrNoProcess) {
			t.Errorf("%s: ProcTree(99999) error = %v, want ErrNoProcess", c.file, missing)
		}
	}
	restore := agents.WithoutProcForTest(func() ([]byte, error) { return nil, errors.New("no ps") })
	_, err := agents.ProcTree(1)
	restore()
	if err == nil {
		t.Error("ProcTree without /proc or ps succeeded")
	}
}

// TestProcTreeByRealPSMatchesProc runs the real ps on this machine: the
// tree it gives is the one /proc gives.
func TestProcTreeByRealPSMatchesProc(t *testing.T) {
	p := startPane(t, t.TempDir(), t.TempDir(), `sh -c 'sleep 300; :'; :`)
	root := p.cmd.Process.Pid
	var fromProc []agents.Proc
	testwait.Until(t, "sh -> sh -> sleep", func() bool {
		var err error
		fromProc, err = agents.ProcTree(root)
		return err == nil && len(fromProc) == 3 && fromProc[2].Cmdline == "sleep 300"
	})
	restore := agents.WithoutProcForTest(nil)
	fromPS, err := agents.ProcTree(root)
	restore()
	// Closing stdin does not end sleep: end it by its pid.
	sleeper, _ := os.FindProcess(fromProc[2].PID)
	_ = sleeper.Kill()
	if err != nil {
		t.Fatalf("ProcTree by ps: %v", err)
	}
	for i := range fromProc {
		fromProc[i].State, fromProc[i].SID = 0, 0 // ps is not asked for them
	}
	if !reflect.DeepEqual(fromPS, fromProc) {
		t.Errorf("by ps:\n%s\nby /proc:\n%s", procLines(fromPS), procLines(fromProc))
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func treePIDs(tree []agents.Proc) []int {
	out := make([]int, len(tree))
	for i, p := range tree {
		out[i] = p.PID
	}
	return out
}

func procLines(ps []agents.Proc) string {
	var s string
	for _, p := range ps {
		s += fmt.Sprintf("\t%d %d %q %q\n", p.PID, p.PPID, p.Name, p.Cmdline)
	}
	return s
}
