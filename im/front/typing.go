package front

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/thatch-run/thatch/actors/imbinding"
	"github.com/thatch-run/thatch/im/agents"
)

// Typing into an agent's TUI. A real agent is not a line reader: it takes
// keys only once its input box is drawn (keys sent while it starts are
// lost or left in the box), and it may read an Enter that comes right
// after a paste as part of the paste. So a message is typed only once the
// agent's input line shows, Enter is pressed once the text shows in it,
// and the line is read again to see that the agent took the message; an
// Enter that did not land is pressed again, a bounded number of times.
// The text itself is typed once, never again: a message the agent did not
// take stays in its input line, and the user is told.
const (
	// readyTimeout bounds the wait for the agent's input line.
	readyTimeout = 30 * time.Second
	// echoTimeout bounds the wait for the typed text to show.
	echoTimeout = 3 * time.Second
	// lateEchoTimeout bounds a second wait for text that did not show
	// within echoTimeout: on a loaded machine an agent can draw what was
	// typed seconds later, and an Enter pressed before it has read the
	// keys arrives with them in one burst, which codex takes for a paste
	// (its Enter a line break in the draft).
	lateEchoTimeout = 10 * time.Second
	// takeTimeout bounds the wait, after each Enter, for the line to let
	// go of the text.
	takeTimeout = 2 * time.Second
	// settle is the pause between the text showing and Enter: codex reads
	// keys that come fast, one after another, as a paste, and an Enter
	// within about 120 ms of them as a line break within it.
	settle = 250 * time.Millisecond
	// enterTries is how many times Enter is pressed at most.
	enterTries = 3
	// typePoll is how often the screen is read meanwhile.
	typePoll = 100 * time.Millisecond
)

// Errors of typing, as the binding's user reads them.
var (
	errNotReady = errors.New("the agent did not show its input line")
	errNotTaken = errors.New("the agent did not take the Enter")
)

// typeText types a message into a window, literally, and presses Enter.
// For an agent with an input line (agents.Agent.ChecksInput) it waits for
// the line first and checks afterwards that the agent took the message;
// notTaken reports text left in the input line (it must not be typed
// again). ctx bounds the whole.
func (f *FrontEnd) typeText(ctx context.Context, window, agent string, update int64, text string) (notTaken bool, err error) {
	a, ok := f.agents.Get(agent)
	if !ok || !a.ChecksInput() {
		tctx, cancel := context.WithTimeout(ctx, effectTimeout)
		err = f.wins.SendText(tctx, window, text)
		cancel()
	} else {
		notTaken, err = f.typeChecked(ctx, a, window, text)
	}
	f.log.Trace("typed into a window", "window", window, "update", update, "not_taken", notTaken, "error", err)
	if err == nil && f.opts.Trace != nil {
		f.opts.Trace("typed", update)
	}
	return notTaken, err
}

func (f *FrontEnd) typeChecked(ctx context.Context, a *agents.Agent, window, text string) (bool, error) {
	before, ok := f.waitLine(ctx, a, window, readyTimeout, func(string, bool) bool { return true })
	if !ok {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, fmt.Errorf("%w (waited %s)", errNotReady, readyTimeout)
	}
	typedBefore := holdsText(before, text)
	if !typedBefore && a.HoldsDraft(before) {
		// Typed now, the message would be joined to the draft and sent
		// with it.
		return false, fmt.Errorf("%w: its input line holds text not sent yet (%q)", errNotReady, imbinding.Clip(before, 40))
	}
	if typedBefore {
		// A crash (or a stop) came between the typing and its Enter: the
		// text waits in the line, and only the Enter is missing.
		f.log.Info("the message is in the agent's input line already; pressing Enter only", "window", window, "agent", a.Name)
	} else {
		tctx, cancel := context.WithTimeout(ctx, effectTimeout)
		err := f.wins.Type(tctx, window, text)
		cancel()
		if err != nil {
			return false, err
		}
	}
	// From here on the text is in the agent's input line: whatever fails
	// reports it not taken, so that it is never typed a second time.
	// The text shows in the line (a paste as its summary): the agent has
	// read it, and the Enter after it is an Enter of its own.
	typed, shown := before, true
	if !typedBefore {
		typed, shown = f.waitEcho(ctx, a, window, before)
	}
	select {
	case <-ctx.Done():
		return true, ctx.Err()
	case <-time.After(settle):
	}
	for try := 1; try <= enterTries; try++ {
		tctx, cancel := context.WithTimeout(ctx, effectTimeout)
		err := f.wins.SendKeys(tctx, window, "Enter")
		cancel()
		if err != nil {
			return true, err
		}
		// Taken: the line let go of the text (it is empty again, or the
		// agent drew something else, such as a dialog, in its place). A
		// line that holds the text is never taken, also when it shows it
		// only now, after an Enter pressed without seeing it.
		if _, taken := f.waitLine(ctx, a, window, takeTimeout, func(line string, ok bool) bool {
			return !ok || line != typed && !holdsText(line, text)
		}); taken {
			if try > 1 {
				f.log.Info("an Enter did not land; pressing it again did", "window", window, "agent", a.Name, "presses", try)
			}
			return false, nil
		}
		if ctx.Err() != nil {
			return true, ctx.Err()
		}
		if f.paneDead(ctx, window) {
			// The agent took the message and exited (the user typed
			// exit or /exit): a dead pane still shows the line as it was.
			// The next message finds the agent gone.
			f.log.Info("the agent exited after the message was sent", "window", window, "agent", a.Name)
			return false, nil
		}
	}
	if !shown {
		// Nothing to tell the text from what the line held: assume it
		// went, rather than tell the user of a failure that may not be.
		return false, nil
	}
	return true, fmt.Errorf("%w after %d presses", errNotTaken, enterTries)
}

// waitEcho waits for the typed text to show in the agent's input line
// (the line changes from before), first for echoTimeout and then, for an
// agent that draws it late, for lateEchoTimeout more. It returns the line
// that shows the text, or before and false when it never showed.
func (f *FrontEnd) waitEcho(ctx context.Context, a *agents.Agent, window, before string) (string, bool) {
	changed := func(line string, ok bool) bool { return ok && line != before }
	if typed, shown := f.waitLine(ctx, a, window, echoTimeout, changed); shown {
		return typed, true
	}
	if typed, shown := f.waitLine(ctx, a, window, lateEchoTimeout, changed); shown {
		f.log.Debug("the typed text showed in the agent's input line late", "window", window, "agent", a.Name, "after", echoTimeout)
		return typed, true
	}
	f.log.Debug("the typed text did not show in the agent's input line; pressing Enter anyway", "window", window, "agent", a.Name)
	return before, false
}

// paneDead tells whether the window's program has exited (its pane stays,
// dead); a window that cannot be read counts as alive.
func (f *FrontEnd) paneDead(ctx context.Context, window string) bool {
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	w, err := f.wins.Window(ctx, window)
	return err == nil && w.Dead
}

// waitLine reads the window's screen until done(input line, drawn) holds,
// for at most limit; it returns the last line read and whether done held.
func (f *FrontEnd) waitLine(ctx context.Context, a *agents.Agent, window string, limit time.Duration, done func(string, bool) bool) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(typePoll)
	defer tick.Stop()
	for {
		screen, err := f.wins.Capture(ctx, window, 0)
		if err == nil {
			line, ok := a.InputLine(screen)
			if done(line, ok) {
				return line, true
			}
		}
		select {
		case <-ctx.Done():
			return "", false
		case <-tick.C:
		}
	}
}

// holdsText reports whether an input line shows text already: all of its
// first line, or (a long line wraps) a long enough start of it.
func holdsText(line, text string) bool {
	first, _, _ := strings.Cut(text, "\n")
	first = strings.TrimRight(first, " \t")
	if line == "" || first == "" {
		return false
	}
	return line == first || (len(line) >= 20 && strings.HasPrefix(first, line))
}
