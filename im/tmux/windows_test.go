package tmux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/thatch-run/thatch/internal/testwait"
)

func TestWindowLifecycleRoundTrip(t *testing.T) {
	c := newTestClient(t, nil)
	ctx := testCtx(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Formats in a name stay as typed.
	w, err := c.NewWindow(ctx, "claude #{window_id}", dir, "binding-1", []string{"sleep", "1000"})
	if err != nil {
		t.Fatal(err)
	}
	if !validID(w.ID) || w.Name != "claude #{window_id}" || w.Tag != "binding-1" || w.Dir != dir {
		t.Fatalf("NewWindow = %+v, want name, tag and dir %s as given", w, dir)
	}
	// The pane's process is tmux's fork until it has exec'd sleep.
	testwait.UntilReason(t, "the pane's process to be the window's sleep", func() (bool, string) {
		comm, err := os.ReadFile("/proc/" + strconv.Itoa(w.PanePID) + "/comm")
		return err == nil && strings.TrimSpace(string(comm)) == "sleep", fmt.Sprintf("pid %d: %q, %v", w.PanePID, comm, err)
	})
	waitCommand(t, c, w.ID, "sleep")
	other, err := c.NewWindow(ctx, "shell", dir, "binding-2", nil)
	if err != nil {
		t.Fatal(err)
	}

	got, ok, err := c.FindTagged(ctx, "binding-1")
	if err != nil || !ok || got.ID != w.ID {
		t.Fatalf("FindTagged(binding-1) = %+v, %v, %v; want %s", got, ok, err, w.ID)
	}
	if got, ok, err := c.FindTagged(ctx, "binding-3"); err != nil || ok {
		t.Fatalf("FindTagged(binding-3) = %+v, %v, %v; want none", got, ok, err)
	}

	if err := c.Rename(ctx, w.ID, "codex; kill-server #x"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Window(ctx, w.ID); err != nil || got.Name != "codex; kill-server #x" {
		t.Fatalf("after Rename: %+v, %v", got, err)
	}

	if err := c.Kill(ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Window(ctx, w.ID); !errors.Is(err, ErrNoWindow) {
		t.Fatalf("Window after Kill: %v, want ErrNoWindow", err)
	}
	if err := c.Kill(ctx, w.ID); !errors.Is(err, ErrNoWindow) {
		t.Fatalf("second Kill: %v, want ErrNoWindow", err)
	}
	ws, err := c.Windows(ctx)
	if err != nil || len(ws) != 1 || ws[0].ID != other.ID || ws[0].Tag != "binding-2" {
		t.Fatalf("Windows after Kill = %+v, %v; want only %s", ws, err, other.ID)
	}
}

func TestWindowsParseNamesDirsAndTagsWithAnyByte(t *testing.T) {
	c := newTestClient(t, nil)
	ctx := testCtx(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "new\nline\ttab\x1f 12:3 é")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tag := "t\n1\t2\x1f3 4:5"
	a, err := c.NewWindow(ctx, "a\tb\nc", dir, tag, []string{"sleep", "1000"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.NewWindow(ctx, "plain", base, "t2", []string{"sleep", "1000"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := c.Windows(ctx)
	if err != nil || len(ws) != 2 {
		t.Fatalf("Windows = %+v, %v", ws, err)
	}
	if ws[0].ID != a.ID || ws[0].Dir != dir || ws[0].Tag != tag || ws[0].Name != "a\tb\nc" {
		t.Fatalf("first window = %q %q %q, want dir %q tag %q", ws[0].Name, ws[0].Dir, ws[0].Tag, dir, tag)
	}
	if ws[1].ID != b.ID || ws[1].Dir != base || ws[1].Tag != "t2" || ws[1].Name != "plain" {
		t.Fatalf("second window = %+v", ws[1])
	}
	if got, ok, err := c.FindTagged(ctx, tag); err != nil || !ok || got.ID != a.ID {
		t.Fatalf("FindTagged = %+v, %v, %v", got, ok, err)
	}
}

func TestInvalidWindowIDsAreRefused(t *testing.T) {
	c := newTestClient(t, nil)
	ctx := testCtx(t)
	if _, err := c.NewWindow(ctx, "w", "", "", []string{"sleep", "1000"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "@", "1", "@1 ", "@1;", "@1; kill-server", "=thatch:0", "thatch", "%1", "@-1", "@1.0", "@x"} {
		calls := map[string]error{
			"Window":   func() error { _, err := c.Window(ctx, id); return err }(),
			"SendText": c.SendText(ctx, id, "x"),
			"SendKeys": c.SendKeys(ctx, id, "Enter"),
			"Rename":   c.Rename(ctx, id, "x"),
			"Capture":  func() error { _, err := c.Capture(ctx, id, 1); return err }(),
			"Kill":     c.Kill(ctx, id),
		}
		for name, err := range calls {
			if !errors.Is(err, ErrInvalidID) {
				t.Errorf("%s(%q) = %v, want ErrInvalidID", name, id, err)
			}
		}
	}
	if ws, err := c.Windows(ctx); err != nil || len(ws) != 1 {
		t.Fatalf("the window should be untouched: %+v, %v", ws, err)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Session: "s"},
		{Socket: "a/b", Session: "s"},
		{Socket: "s"},
		{Socket: "s", Session: "a:b"},
		{Socket: "s", Session: "a.b"},
		{Socket: "s", Session: "a\nb"},
		{Socket: "s", Session: "a", Timeout: -1},
		{Socket: "s", Session: "a", Binary: "/nonexistent/tmux"},
		{Socket: "s", SocketPath: "/tmp/s", Session: "a"},
		{SocketPath: "relative/s", Session: "a"},
		{SocketPath: "/tmp/s"},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
	if _, err := New(Options{Socket: "s", Session: "thatch"}); err != nil {
		t.Fatalf("New with the required options: %v", err)
	}
	if _, err := New(Options{SocketPath: "/tmp/s", Borrowed: true}); err != nil {
		t.Fatalf("New for a borrowed server by its path: %v", err)
	}
}

func TestCaptureReturnsTheLastLines(t *testing.T) {
	c := newTestClient(t, nil)
	ctx := testCtx(t)
	script := `i=1; while [ $i -le 40 ]; do echo "line $i"; i=$((i+1)); done; exec sleep 1000`
	w, err := c.NewWindow(ctx, "w", "", "", []string{"sh", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	testwait.UntilReason(t, "the pane shows line 40", func() (bool, string) {
		s, err := c.Capture(ctx, w.ID, 3)
		return err == nil && s == "line 38\nline 39\nline 40", fmt.Sprintf("%q, %v", s, err)
	})
	s, err := c.Capture(ctx, w.ID, 30)
	if err != nil || !strings.HasPrefix(s, "line 11\n") || strings.Count(s, "\n") != 29 {
		t.Fatalf("Capture(30) = %q, %v", s, err)
	}
}

// A window made with an environment passes it to what runs there, with
// its value as it was given (quotes and spaces included); an entry that is
// not NAME=value is refused before tmux sees it.
func TestNewWindowEnvReachesTheWindowsPrograms(t *testing.T) {
	c := newTestClient(t, nil)
	ctx := testCtx(t)
	file := filepath.Join(t.TempDir(), "env")
	value := `a dir/with 'quotes' and "more"`
	w, err := c.NewWindowEnv(ctx, "env", "", "", []string{"THATCH_T=" + value, "THATCH_U=2"},
		[]string{"sh", "-c", `printf '%s|%s' "$THATCH_T" "$THATCH_U" > "$0"; exec sleep 1000`, file})
	if err != nil {
		t.Fatal(err)
	}
	testwait.UntilReason(t, "the window's program wrote its environment", func() (bool, string) {
		b, err := os.ReadFile(file)
		return err == nil && string(b) == value+"|2", fmt.Sprintf("%q, %v", b, err)
	})
	if _, err := c.Window(ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"NOEQUALS", "=x", "1X=y", "A-B=c"} {
		if _, err := c.NewWindowEnv(ctx, "bad", "", "", []string{bad}, []string{"sleep", "1000"}); !errors.Is(err, ErrInvalidText) {
			t.Errorf("NewWindowEnv with %q: %v, want ErrInvalidText", bad, err)
		}
	}
}

// The server takes its global environment from the client that starts
// it: Options.Env decides what the windows inherit, and UnsetGlobalEnv
// takes a variable back out of a server an older client started.
func TestTheServersEnvironmentIsTheClientsAndCanBeCleared(t *testing.T) {
	c := newTestClient(t, func(o *Options) {
		o.Env = append(os.Environ(), "THATCH_TEST_SECRET=s3cret", "THATCH_TEST_PLAIN=ok")
	})
	ctx := testCtx(t)
	if _, err := c.NewWindow(ctx, "env", t.TempDir(), "tag-env", nil); err != nil {
		t.Fatal(err)
	}
	if out := tmuxCmd(t, c, "show-environment", "-g"); !strings.Contains(out, "THATCH_TEST_SECRET=s3cret") {
		t.Fatalf("the server's environment is not the client's:\n%s", out)
	}
	if err := c.UnsetGlobalEnv(ctx, "THATCH_TEST_SECRET", "NOT_SET_ANYWHERE"); err != nil {
		t.Fatal(err)
	}
	out := tmuxCmd(t, c, "show-environment", "-g")
	if strings.Contains(out, "s3cret") || !strings.Contains(out, "THATCH_TEST_PLAIN=ok") {
		t.Fatalf("after UnsetGlobalEnv:\n%s", out)
	}
}
