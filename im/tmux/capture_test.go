package tmux

import (
	"errors"
	"strings"
	"testing"

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
