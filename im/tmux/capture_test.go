package tmux

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thatch-run/thatch/internal/testwait"
)

// CapturePane gives the screen with its colours (as tmux's escape
// sequences) and the pane's size in cells.
func TestCapturePaneKeepsColoursAndTellsTheSize(t *testing.T) {
	c := newTestClient(t, nil)
	w, err := c.NewWindow(testCtx(t), "shot", t.TempDir(), "",
		[]string{"sh", "-c", `printf '\033[31mred\033[0m plain\n'; exec sleep 600`})
	if err != nil {
		t.Fatal(err)
	}
	var p Pane
	testwait.UntilReason(t, "the colours on screen", func() (bool, string) {
		p, err = c.CapturePane(testCtx(t), w.ID)
		return err == nil && strings.Contains(p.Text, "plain"), p.Text
	})
	if !strings.Contains(p.Text, "\x1b[31mred") {
		t.Fatalf("the capture lost the colour: %q", p.Text)
	}
	if p.Cols <= 0 || p.Rows <= 0 {
		t.Fatalf("pane size %dx%d", p.Cols, p.Rows)
	}
	if _, err := c.CapturePane(testCtx(t), "@99999"); err == nil {
		t.Fatal("a window that is not there was captured")
	}
}

// Adopt makes a window opened by someone else one of thatch's: tagged,
// renamed, kept when its program exits; a window another binding tagged
// is refused.
func TestAdoptTagsAndRenamesAWindowOnce(t *testing.T) {
	c := newTestClient(t, nil)
	w, err := c.NewWindow(testCtx(t), "mine", t.TempDir(), "", []string{"sleep", "600"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Adopt(testCtx(t), w.ID, "api work", "thatch:tg:1:2:1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Tag != "thatch:tg:1:2:1" || got.Name != "api work" {
		t.Fatalf("adopted %+v", got)
	}
	if _, err := c.Adopt(testCtx(t), w.ID, "other", "thatch:tg:1:3:1"); !errors.Is(err, ErrTagged) {
		t.Fatalf("adopting a tagged window: %v, want ErrTagged", err)
	}
}

// A borrowed client reaches the user's own server by its socket file: it
// lists the windows of every session there and adopts one, but makes no
// window there, never kills that server, and never shows up among its
// clients.
func TestABorrowedServerIsListedAndAdoptedButNeverChanged(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("no tmux binary")
	}
	dir, err := os.MkdirTemp("", "tmx") // a socket path is short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "user")
	user := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	user("new-session", "-d", "-s", "work", "-n", "editor", "sleep 600")
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", sock, "kill-server").Run() })
	user("new-session", "-d", "-s", "play", "-n", "agent", "sleep 600")
	c, err := New(Options{SocketPath: sock, Borrowed: true, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := testCtx(t)
	ws, err := c.Windows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, w := range ws {
		names[w.Name] = w.ID
	}
	if len(ws) != 2 || names["editor"] == "" || names["agent"] == "" {
		t.Fatalf("windows of both sessions: %+v", ws)
	}
	got, err := c.Adopt(ctx, names["agent"], "api work", "thatch:tg:1:2:1")
	if err != nil || got.Name != "api work" || got.Tag != "thatch:tg:1:2:1" {
		t.Fatalf("adopted %+v, %v", got, err)
	}
	if _, err := c.NewWindow(ctx, "x", "", "", nil); !errors.Is(err, ErrBorrowed) {
		t.Fatalf("NewWindow on a borrowed server: %v, want ErrBorrowed", err)
	}
	if err := c.KillServer(ctx); !errors.Is(err, ErrBorrowed) {
		t.Fatalf("KillServer on a borrowed server: %v, want ErrBorrowed", err)
	}
	if n := user("list-windows", "-a", "-F", "#{window_name}"); n != "api work\neditor" {
		t.Fatalf("the user's server holds %q", n)
	}
	if clients := user("list-clients"); clients != "" {
		t.Fatalf("a client stayed attached to the user's server: %q", clients)
	}
}
