package tmux

import (
	"errors"
	"strings"
)

var (
	// ErrNoWindow is returned when a window is gone, and also when its
	// session or the whole server is: to a caller holding a window id the
	// three mean the same, the agent is not there any more.
	ErrNoWindow = errors.New("tmux: no such window")

	// ErrInvalidID is returned for a window id that is not '@' and
	// digits; such an id is never passed to tmux, where it could name a
	// different target.
	ErrInvalidID = errors.New("tmux: invalid window id")

	// ErrInvalidText is returned for text, names, tags or keys tmux
	// cannot carry as given: a NUL byte, or no keys at all.
	ErrInvalidText = errors.New("tmux: invalid text")

	// ErrTagged is returned by Adopt for a window another tag owns.
	ErrTagged = errors.New("tmux: window is tagged already")

	// ErrBorrowed is returned by a Borrowed client asked to make a
	// window or to kill its server.
	ErrBorrowed = errors.New("tmux: the server is not thatch's")

	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("tmux: client closed")

	// errConnLost fails the commands in flight on a control-mode client
	// that stopped (the server or the session went away, or it was
	// closed).
	errConnLost = errors.New("tmux: control-mode client stopped")
)

// CommandError is a command that tmux ran and refused. It matches
// ErrNoWindow (errors.Is) when tmux's message says the window, the session
// or the server is not there.
type CommandError struct {
	Command string // the tmux command, e.g. "send-keys"
	Message string // tmux's own words, e.g. "can't find window: @3"
}

func (e *CommandError) Error() string {
	return "tmux: " + e.Command + ": " + e.Message
}

// Is makes a missing window, session or server match ErrNoWindow.
func (e *CommandError) Is(target error) bool {
	return target == ErrNoWindow && (noServer(e.Message) ||
		strings.Contains(e.Message, "can't find window") ||
		strings.Contains(e.Message, "no such window") ||
		strings.Contains(e.Message, "can't find pane"))
}

// noServer reports whether a tmux message says that the server or the
// session is not there (so that NewWindow must start them).
func noServer(msg string) bool {
	for _, s := range []string{
		"no server running", "error connecting to", "server exited unexpectedly",
		"can't find session", "no sessions", "session not found",
		// A server with no session (kept alive by a config job or by
		// exit-empty off) answers any targeted command so.
		"no current target",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// isNoServer reports whether err is a CommandError saying that the server
// or the session is not there.
func isNoServer(err error) bool {
	var ce *CommandError
	return errors.As(err, &ce) && noServer(ce.Message)
}
