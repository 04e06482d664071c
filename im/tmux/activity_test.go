package tmux

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/thatch-run/thatch/internal/testwait"
)

// seenIDs records what a Client reported as active.
type seenIDs struct {
	mu  sync.Mutex
	ids []string
}

func (s *seenIDs) add(id string) {
	s.mu.Lock()
	s.ids = append(s.ids, id)
	s.mu.Unlock()
}

func (s *seenIDs) since(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ids[min(n, len(s.ids)):])
}

func (s *seenIDs) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids)
}

// A watcher learns which pane wrote and which window closed, as tmux
// reads it: typing into one window names its pane and no other, killing
// it names the window, and a pane tmux paused for the client (as it does
// for a client that fell behind) is continued, so that its output is
// still reported.
func TestActivityNamesThePaneThatWroteAndTheWindowThatClosed(t *testing.T) {
	var seen seenIDs
	c := newTestClient(t, nil)
	c.OnActivity(seen.add)
	a, _ := catWindow(t, c, "a")
	b, _ := catWindow(t, c, "b")
	testwait.Until(t, "the activity feed to be live", func() bool {
		_, live := c.ActivityFeed()
		return live
	})
	if gen, _ := c.ActivityFeed(); gen == 0 {
		t.Fatal("a live feed counts no control-mode client")
	}

	mark := seen.len()
	if err := c.SendText(testCtx(t), a.ID, "hello"); err != nil {
		t.Fatal(err)
	}
	testwait.UntilReason(t, "a's pane reported", func() (bool, string) {
		got := seen.since(mark)
		return slices.Contains(got, a.Pane), fmt.Sprintf("%q", got)
	})
	if got := seen.since(mark); slices.Contains(got, b.Pane) {
		t.Fatalf("typing into %s reported %q, which names the idle pane %s", a.ID, got, b.Pane)
	}

	name := strings.TrimSpace(tmuxCmd(t, c, "list-clients", "-F", "#{client_name}"))
	if strings.Contains(name, "\n") || name == "" {
		t.Fatalf("clients %q, want the Client's one control-mode client", name)
	}
	tmuxCmd(t, c, "refresh-client", "-t", name, "-A", a.Pane+":pause")
	mark = seen.len()
	if err := c.SendText(testCtx(t), a.ID, "after the pause"); err != nil {
		t.Fatal(err)
	}
	testwait.UntilReason(t, "a's pane reported after tmux paused it", func() (bool, string) {
		got := seen.since(mark)
		return slices.Contains(got, a.Pane), fmt.Sprintf("%q", got)
	})

	mark = seen.len()
	tmuxCmd(t, c, "kill-window", "-t", a.ID)
	testwait.UntilReason(t, "the killed window reported", func() (bool, string) {
		got := seen.since(mark)
		return slices.Contains(got, a.ID), fmt.Sprintf("%q", got)
	})
}

// A Client nobody asked for activity attaches without output: the feed is
// never live, so its caller polls.
func TestActivityIsNotLiveUnlessAskedFor(t *testing.T) {
	c := newTestClient(t, nil)
	w, _ := catWindow(t, c, "a")
	if _, err := c.Window(testCtx(t), w.ID); err != nil {
		t.Fatal(err)
	}
	if gen, live := c.ActivityFeed(); live || gen != 0 {
		t.Fatalf("ActivityFeed() = %d, %v for a Client without OnActivity", gen, live)
	}
	flags := tmuxCmd(t, c, "list-clients", "-F", "#{client_flags}")
	if !strings.Contains(flags, "no-output") {
		t.Fatalf("client flags %q: the control-mode client is sent the panes' output", flags)
	}
}
