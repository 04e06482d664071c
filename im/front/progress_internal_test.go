package front

import (
	"slices"
	"testing"
	"time"

	"github.com/thatch-run/thatch/messages"
)

// watchClock drives a watcher's time by hand.
type watchClock struct{ t time.Time }

func (c *watchClock) add(d time.Duration) time.Time { c.t = c.t.Add(d); return c.t }

func newTestWatcher() (*watcher, *watchClock) {
	c := &watchClock{t: time.Unix(1_700_000_000, 0)}
	wr := newWatcher()
	wr.now = func() time.Time { return c.t }
	return wr, c
}

func looks(r round) []string {
	var out []string
	for _, j := range r.looks {
		out = append(out, j.thread)
	}
	slices.Sort(out)
	return out
}

// A window of thatch's server is looked at when tmux reports it changed,
// lookSettle after the change and no more than once per lookGap, and not
// at all while it is still; before its pane is known, and while tmux
// reports nothing, it is looked at every pollEvery.
func TestAWatchedWindowIsLookedAtWhenItChanges(t *testing.T) {
	wr, c := newTestWatcher()
	w := &messages.IMWatchPane{WindowID: "@1", Agent: "claude", Since: 1}
	wr.set("a", w, c.t)
	r := wr.due(c.t, 1, true)
	if got := looks(r); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("a new watch: looks %q, want a at once", got)
	}
	wr.paneRead(r.looks[0], "%4")
	wr.looked(r.looks[0], 7, c.t)
	if r := wr.due(c.add(time.Hour/1000), 1, true); len(r.looks) != 0 {
		t.Fatalf("a still screen looked at: %q", looks(r))
	}

	wr.active("%4")
	if r := wr.due(c.t, 1, true); len(r.looks) != 0 || r.next != c.t.Add(lookSettle) {
		t.Fatalf("at the change: looks %q, next in %v; want one lookSettle later", looks(r), r.next.Sub(c.t))
	}
	if r := wr.due(c.add(lookSettle), 1, true); !slices.Equal(looks(r), []string{"a"}) {
		t.Fatalf("lookSettle after the change: looks %q", looks(r))
	}
	wr.active("%4")
	if r := wr.due(c.add(lookSettle), 1, true); len(r.looks) != 0 {
		t.Fatalf("a look within lookGap of the last: %q", looks(r))
	}
	if r := wr.due(c.add(lookGap), 1, true); !slices.Equal(looks(r), []string{"a"}) {
		t.Fatalf("lookGap after the last look: looks %q", looks(r))
	}
	wr.active("%5") // another pane's output
	wr.active("@9") // another window closed
	if r := wr.due(c.add(time.Second/2), 1, true); len(r.looks) != 0 {
		t.Fatalf("looked after another pane's output: %q", looks(r))
	}

	// tmux's reports stop: poll.
	if r := wr.due(c.add(time.Second/2), 1, false); !slices.Equal(looks(r), []string{"a"}) {
		t.Fatalf("no feed: looks %q, want a polled", looks(r))
	}
	if r := wr.due(c.add(pollEvery/2), 1, false); len(r.looks) != 0 {
		t.Fatalf("polled twice within pollEvery: %q", looks(r))
	}
	// A new feed may have missed changes: look again.
	if r := wr.due(c.add(lookGap), 2, true); !slices.Equal(looks(r), []string{"a"}) {
		t.Fatalf("a new feed: looks %q", looks(r))
	}

	wr.set("a", &messages.IMWatchPane{}, c.t)
	wr.active("%4")
	if r := wr.due(c.add(time.Second), 2, true); len(r.looks)+len(r.idle)+len(r.signs) != 0 {
		t.Fatalf("an ended watch still does %+v", r)
	}
}

// The agent counts as idle once its screen stayed still for progressQuiet
// with no prompt shown: told once per watch, and not while a prompt of
// its is shown in the chat.
func TestAStillScreenWithNoPromptIsToldIdleOnce(t *testing.T) {
	wr, c := newTestWatcher()
	wr.set("a", &messages.IMWatchPane{WindowID: "@1", Since: 1}, c.t)
	wr.set("b", &messages.IMWatchPane{WindowID: "@2", Since: 1, Shown: "fp"}, c.t)
	for _, j := range wr.due(c.t, 1, true).looks {
		wr.paneRead(j, map[string]string{"a": "%1", "b": "%2"}[j.thread])
	}
	if r := wr.due(c.add(progressQuiet-time.Millisecond), 1, true); len(r.idle) != 0 {
		t.Fatalf("idle before progressQuiet: %+v", r.idle)
	}
	r := wr.due(c.add(time.Millisecond), 1, true)
	if len(r.idle) != 1 || r.idle[0].thread != "a" || r.idle[0].w.Since != 1 {
		t.Fatalf("at progressQuiet: idle %+v, want a's work", r.idle)
	}
	if r := wr.due(c.add(time.Minute), 1, true); len(r.idle) != 0 {
		t.Fatalf("told idle twice: %+v", r.idle)
	}
	wr.untold(r.idle[0])
	if r := wr.due(c.t, 1, true); len(r.idle) != 1 {
		t.Fatalf("a report that did not land is not made again: %+v", r.idle)
	}
}

// The typing sign shows while the screen changes (the agent draws its
// work), at most once per signEvery, and not on a still screen nor while
// a prompt is shown.
func TestTheTypingSignShowsWhileTheScreenChanges(t *testing.T) {
	wr, c := newTestWatcher()
	wr.set("a", &messages.IMWatchPane{WindowID: "@1", Since: 1}, c.t)
	wr.set("b", &messages.IMWatchPane{WindowID: "@2", Since: 1, Shown: "fp"}, c.t)
	if r := wr.due(c.t, 1, true); !slices.Equal(r.signs, []string{"a"}) {
		t.Fatalf("signs %q at the start of work, want a's", r.signs)
	}
	for _, id := range []string{"@1", "@2"} {
		wr.active(id)
	}
	if r := wr.due(c.add(time.Second), 1, true); len(r.signs) != 0 {
		t.Fatalf("signs %q within signEvery", r.signs)
	}
	wr.active("@1")
	if r := wr.due(c.add(signEvery-time.Second), 1, true); !slices.Equal(r.signs, []string{"a"}) {
		t.Fatalf("signs %q after signEvery of changes, want a's", r.signs)
	}
	if r := wr.due(c.add(signEvery), 1, true); len(r.signs) != 0 {
		t.Fatalf("signs %q on a screen still for signEvery", r.signs)
	}
}
