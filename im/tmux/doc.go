// Package tmux is the IM front end's tmux manager: it creates, finds,
// watches and types into the tmux windows that agent CLIs (claude, codex,
// ...) run in, on one tmux server (a private -L socket) and in one session.
//
// # Speed
//
// A message from an IM conversation costs a Window check and a SendText.
// Forking a tmux client for each command costs milliseconds of CPU, which
// at hundreds of messages a second fills two cores, so a Client speaks to
// the server over one persistent control-mode client
// (`tmux -L SOCKET -C attach-session -f ignore-size,no-output -t =SESSION`):
// commands are lines on its stdin, answers are %begin ... %end (or %error)
// blocks on its stdout, matched to commands first in, first out. The
// ignore-size and no-output flags keep that client from resizing the
// user's windows and from receiving pane output, unless the caller asked
// to be told which panes wrote (OnActivity, activity.go: the client then
// receives the output, with pause-after, and reports each pane's id
// instead of the caller capturing panes on a timer). The connection is made
// on first use and made again after the server or the session went away;
// while it cannot be made, each command forks a tmux client instead (the
// exec path), which is also what Options.ExecOnly selects.
//
// # Literal text
//
// Nothing a caller passes is interpreted by a shell or as tmux syntax:
// every argument of a control-mode line is single-quoted (control
// characters as octal escapes), an argument ending in ';' is escaped on
// the exec path, '#' is doubled where tmux expands formats (window names
// and directories), and SendText types with send-keys -l or pastes through
// a named buffer. Window ids are checked to be '@' and digits before they
// are used as a target.
//
// # Window ids after a restart
//
// tmux numbers windows from @0 again when its server restarts, so an id
// saved before a crash may name another window afterwards. NewWindow tags
// each window (the window option @thatch_tag), and Window reports the tag,
// so that a caller can tell its window from a stranger and find it again
// with FindTagged.
//
// # Imports
//
// tmux may import the standard library and hclog. It knows nothing of IM
// protocols, actors or storage; it runs the tmux binary and nothing else.
package tmux
