package tmux

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/thatch-run/thatch/internal/testwait"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var socketSeq atomic.Int64

// testWriter sends log lines to the test's log.
type testWriter struct{ tb testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.tb.Helper()
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// newTestClient returns a Client on a private server of its own, which
// the test's cleanup kills. mod, when not nil, adjusts the options.
func newTestClient(tb testing.TB, mod func(*Options)) *Client {
	tb.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		tb.Skip("no tmux binary")
	}
	o := Options{
		Socket:  fmt.Sprintf("thatch-test-%d-%d", os.Getpid(), socketSeq.Add(1)),
		Session: "thatch",
		Config:  "/dev/null",
		Timeout: 20 * time.Second, // a loaded shared machine, under -race
		Logger:  hclog.New(&hclog.LoggerOptions{Name: "tmux", Level: hclog.Debug, Output: testWriter{tb}}),
	}
	if mod != nil {
		mod(&o)
	}
	c, err := New(o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c.Close()
		_ = exec.Command("tmux", "-L", o.Socket, "kill-server").Run()
	})
	return c
}

// tmuxCmd runs a tmux client on the test client's server, as someone
// other than the Client would.
func tmuxCmd(tb testing.TB, c *Client, args ...string) string {
	tb.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", c.o.Socket}, args...)...).CombinedOutput()
	if err != nil {
		tb.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

func testCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

// catWindow starts a window whose pane copies what is typed into a file
// (cat in the terminal's line mode), and returns the window and the file.
func catWindow(tb testing.TB, c *Client, name string) (Window, string) {
	tb.Helper()
	file := filepath.Join(tb.TempDir(), "typed")
	w, err := c.NewWindow(testCtx(tb), name, tb.TempDir(), "", []string{"sh", "-c", `exec cat > "$0"`, file})
	if err != nil {
		tb.Fatal(err)
	}
	waitCommand(tb, c, w.ID, "cat")
	if w, err = c.Window(testCtx(tb), w.ID); err != nil {
		tb.Fatal(err)
	}
	return w, file
}

// waitCommand waits until the window's pane runs command, so that what is
// typed next reaches it rather than the shell that starts it.
func waitCommand(tb testing.TB, c *Client, id, command string) {
	tb.Helper()
	testwait.UntilReason(tb, "window "+id+" runs "+command, func() (bool, string) {
		w, err := c.Window(testCtx(tb), id)
		return err == nil && w.Command == command, fmt.Sprintf("%+v, %v", w, err)
	})
}

// waitFile waits until file ends with the line want and returns it all.
func waitFile(tb testing.TB, file, want string) string {
	tb.Helper()
	var s string
	testwait.UntilReason(tb, file+" ends with "+want, func() (bool, string) {
		b, _ := os.ReadFile(file)
		s = string(b)
		return strings.HasSuffix(s, want+"\n"), fmt.Sprintf("%q", s)
	})
	return s
}
