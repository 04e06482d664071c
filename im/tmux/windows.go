package tmux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// NewWindow creates a window named name in dir, in the session, without
// making it the session's current window (the user's view stays where it
// is), and tags it with tag so that it can be found again after a crash
// (FindTagged). It starts the server and the session when they are
// missing. The window runs the default shell when cmd is empty; a single
// element is a shell command line, as tmux runs it with sh -c; more
// elements are an argument vector, run directly.
func (c *Client) NewWindow(ctx context.Context, name, dir, tag string, cmd []string) (Window, error) {
	return c.NewWindowEnv(ctx, name, dir, tag, nil, cmd)
}

// NewWindowEnv is NewWindow with env ("NAME=value" each) set in the
// window's environment (tmux's new-window -e, tmux 3.2 or later): the shell
// and every program started in it inherit them, whatever the shell's
// syntax and whether the command typed there is an alias or a function.
func (c *Client) NewWindowEnv(ctx context.Context, name, dir, tag string, env, cmd []string) (Window, error) {
	if c.o.Borrowed {
		return Window{}, fmt.Errorf("%w: no window is made there", ErrBorrowed)
	}
	if err := checkText(append(append([]string{name, dir, tag}, env...), cmd...)...); err != nil {
		return Window{}, err
	}
	var spec []string
	for _, kv := range env {
		if !validEnv(kv) {
			return Window{}, fmt.Errorf("%w: environment entry %q is not NAME=value", ErrInvalidText, kv)
		}
		spec = append(spec, "-e", kv)
	}
	if name != "" {
		spec = append(spec, "-n", formatLiteral(name))
	}
	if dir != "" {
		spec = append(spec, "-c", formatLiteral(dir))
	}
	if len(cmd) > 0 {
		spec = append(append(spec, "--"), cmd...)
	}
	args := append([]string{"new-window", "-d", "-P", "-F", "#{window_id}", "-t", "=" + c.o.Session + ":"}, spec...)
	out, err := c.run(ctx, false, args...)
	if isNoServer(err) {
		out, err = c.newSession(ctx, spec)
	}
	var ce *CommandError
	if len(env) > 0 && errors.As(err, &ce) && strings.Contains(ce.Message, "unknown flag -e") {
		return Window{}, fmt.Errorf("tmux: new window %q: this tmux cannot set a window's environment (new-window -e); thatch needs tmux 3.2 or later: %w", name, err)
	}
	if err != nil {
		return Window{}, fmt.Errorf("tmux: new window %q: %w", name, err)
	}
	id := strings.TrimSpace(out)
	if !validID(id) {
		return Window{}, fmt.Errorf("%w: new-window printed %q", errParse, clip(out))
	}
	// The pane stays, dead, when its program exits: a window thatch made
	// never falls back to a shell, and a check sees the agent is gone.
	if _, err := c.run(ctx, true, "set-option", "-w", "-t", id, "remain-on-exit", "on"); err != nil {
		return Window{}, fmt.Errorf("tmux: set remain-on-exit on window %s: %w", id, err)
	}
	if tag != "" {
		if _, err := c.run(ctx, true, "set-option", "-w", "-t", id, tagOption, tag); err != nil {
			return Window{}, fmt.Errorf("tmux: tag window %s: %w", id, err)
		}
	}
	return c.Window(ctx, id)
}

// Adopt makes an existing window one of thatch's: it takes tag (unless
// it carries another already: ErrTagged), is renamed to name, and its
// pane stays, dead, when its program exits (remain-on-exit).
func (c *Client) Adopt(ctx context.Context, id, name, tag string) (Window, error) {
	if err := checkText(name, tag); err != nil {
		return Window{}, err
	}
	if !validID(id) {
		return Window{}, fmt.Errorf("%w: %q", ErrInvalidID, id)
	}
	w, err := c.Window(ctx, id)
	if err != nil {
		return Window{}, err
	}
	if w.Tag != "" && w.Tag != tag {
		return Window{}, fmt.Errorf("%w: window %s is %s's", ErrTagged, id, w.Tag)
	}
	_, err = c.batch(ctx, true, []string{"set-option", "-w", "-t", id, tagOption, tag},
		[]string{"set-option", "-w", "-t", id, "remain-on-exit", "on"},
		[]string{"rename-window", "-t", id, "--", formatLiteral(name)})
	if err != nil {
		return Window{}, fmt.Errorf("tmux: adopt window %s: %w", id, err)
	}
	return c.Window(ctx, id)
}

// Respawn ends what runs in the window's pane, if anything, and starts
// cmd there instead (respawn-pane -k): in dir, with env ("NAME=value"
// each) added to the environment. A single element of cmd is a shell
// command line, as tmux runs it with sh -c; more elements are an argument
// vector. The pane stays when cmd exits (remain-on-exit).
func (c *Client) Respawn(ctx context.Context, id, dir string, env, cmd []string) error {
	if !validID(id) {
		return fmt.Errorf("%w: %q", ErrInvalidID, id)
	}
	if len(cmd) == 0 {
		return fmt.Errorf("%w: no command to respawn", ErrInvalidText)
	}
	if err := checkText(append(append([]string{dir}, env...), cmd...)...); err != nil {
		return err
	}
	args := []string{"respawn-pane", "-k", "-t", id}
	for _, kv := range env {
		if !validEnv(kv) {
			return fmt.Errorf("%w: environment entry %q is not NAME=value", ErrInvalidText, kv)
		}
		args = append(args, "-e", kv)
	}
	if dir != "" {
		args = append(args, "-c", formatLiteral(dir))
	}
	args = append(append(args, "--"), cmd...)
	if _, err := c.run(ctx, false, "set-option", "-w", "-t", id, "remain-on-exit", "on"); err != nil {
		return fmt.Errorf("tmux: set remain-on-exit on window %s: %w", id, err)
	}
	if _, err := c.run(ctx, false, args...); err != nil {
		return fmt.Errorf("tmux: respawn %s: %w", id, err)
	}
	return nil
}

// validEnv reports whether kv is NAME=value with a portable variable name.
func validEnv(kv string) bool {
	name, _, ok := strings.Cut(kv, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if r != '_' && !(r >= 'A' && r <= 'Z') && !(r >= 'a' && r <= 'z') && !(i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// newSession starts the session, and the server if need be, with the
// window spec as its first window; a forked client, since a control-mode
// client needs a session to attach to. When another caller created the
// session meanwhile, the window goes into it.
func (c *Client) newSession(ctx context.Context, spec []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	args := append([]string{"new-session", "-d", "-P", "-F", "#{window_id}", "-s", c.o.Session}, spec...)
	out, err := c.execRun(ctx, args)
	var ce *CommandError
	if errors.As(err, &ce) && strings.Contains(ce.Message, "duplicate session") {
		args = append([]string{"new-window", "-d", "-P", "-F", "#{window_id}", "-t", "=" + c.o.Session + ":"}, spec...)
		out, err = c.execRun(ctx, args)
	}
	if err == nil {
		c.log.Debug("started tmux session", "socket", c.o.Socket, "session", c.o.Session)
		c.redialNow()
	}
	return out, err
}

// Window reports the window with this id, or ErrNoWindow when it (or
// its server) is gone. It may be in any session of the server.
func (c *Client) Window(ctx context.Context, id string) (Window, error) {
	if !validID(id) {
		return Window{}, fmt.Errorf("%w: %q", ErrInvalidID, id)
	}
	w, err := c.window(ctx, id)
	if errors.Is(err, errParse) {
		// A field's length and its value are expanded one after the
		// other; a pane whose command changed in between (a shell that
		// just started a program) reads inconsistently once. Read again.
		w, err = c.window(ctx, id)
	}
	return w, err
}

func (c *Client) window(ctx context.Context, id string) (Window, error) {
	out, err := c.run(ctx, true, "display-message", "-p", "-t", id, windowFormat)
	if err != nil {
		return Window{}, fmt.Errorf("tmux: window %s: %w", id, err)
	}
	// display-message does not fail on a missing target: it expands the
	// format for no window at all, or for another one.
	if !strings.HasPrefix(out, id+" ") {
		return Window{}, fmt.Errorf("%w: %s", ErrNoWindow, id)
	}
	w, rest, err := parseWindow(out)
	if err == nil && rest != "" {
		err = fmt.Errorf("%w: %q after window %s", errParse, clip(rest), id)
	}
	return w, err
}

// Windows lists the session's windows in index order (a Borrowed
// client's: every session's, session by session); none, and no error,
// when the session or the server does not exist.
func (c *Client) Windows(ctx context.Context) ([]Window, error) {
	out, err := c.run(ctx, true, c.listArgs()...)
	if isNoServer(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tmux: list windows: %w", err)
	}
	ws, err := parseWindows(out)
	if errors.Is(err, errParse) {
		return c.windowsOnce(ctx) // see Window: read again once
	}
	return ws, err
}

func (c *Client) windowsOnce(ctx context.Context) ([]Window, error) {
	out, err := c.run(ctx, true, c.listArgs()...)
	if isNoServer(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tmux: list windows: %w", err)
	}
	return parseWindows(out)
}

// listArgs is the command that lists the windows Windows reports.
func (c *Client) listArgs() []string {
	if c.o.Borrowed {
		return []string{"list-windows", "-a", "-F", windowFormat}
	}
	return []string{"list-windows", "-t", "=" + c.o.Session, "-F", windowFormat}
}

// FindTagged returns the session's first window tagged tag, and whether
// there is one. An empty tag matches nothing.
func (c *Client) FindTagged(ctx context.Context, tag string) (Window, bool, error) {
	if tag == "" {
		return Window{}, false, nil
	}
	ws, err := c.Windows(ctx)
	if err != nil {
		return Window{}, false, err
	}
	for _, w := range ws {
		if w.Tag == tag {
			return w, true, nil
		}
	}
	return Window{}, false, nil
}

// SendText types text into the window's active pane as it is and then
// presses Enter; nothing in it is read by a shell or as tmux key names.
// Text on one line is typed (send-keys -l); text with line breaks is
// pasted (through a buffer of its own, paste-buffer -p), so that an agent
// that asked for bracketed paste receives it as one paste rather than as
// lines each submitted by its newline. Empty text presses Enter alone.
// Control characters but tab and newline are left out (see Printable).
func (c *Client) SendText(ctx context.Context, id, text string) error {
	return c.typeText(ctx, id, text, true)
}

// Type is SendText without the Enter: the text is left in the agent's
// input line, for the caller to press Enter once it shows there.
func (c *Client) Type(ctx context.Context, id, text string) error {
	return c.typeText(ctx, id, text, false)
}

func (c *Client) typeText(ctx context.Context, id, text string, enter bool) error {
	if !validID(id) {
		return fmt.Errorf("%w: %q", ErrInvalidID, id)
	}
	text = Printable(text)
	var cmds [][]string
	switch {
	case text == "":
	case !strings.Contains(text, "\n"):
		cmds = append(cmds, []string{"send-keys", "-t", id, "-l", "--", text})
	default:
		buf := fmt.Sprintf("thatch-%d-%d", os.Getpid(), c.bufSeq.Add(1))
		cmds = append(cmds, []string{"set-buffer", "-b", buf, "--", text}, []string{"paste-buffer", "-d", "-p", "-b", buf, "-t", id})
		defer func() {
			if len(cmds) > 0 {
				// The paste did not happen (the window went away): do
				// not leave the text behind in the server.
				_, _ = c.run(ctx, true, "delete-buffer", "-b", buf)
			}
		}()
	}
	if enter {
		cmds = append(cmds, []string{"send-keys", "-t", id, "Enter"})
	}
	if len(cmds) == 0 {
		return nil
	}
	if _, err := c.batch(ctx, false, cmds...); err != nil {
		return fmt.Errorf("tmux: send text to %s: %w", id, err)
	}
	cmds = nil
	return nil
}

// Printable returns s without the control characters a terminal acts on:
// C0 but tab and newline (a carriage return becomes a newline), DEL and
// C1. Typed into an agent, ^D ends its input and ^C or ^Z stops it, and
// what follows would reach whatever reads the terminal next.
func Printable(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\r':
			return '\n'
		case isControl(r):
			return -1
		}
		return r
	}, s)
}

func isControl(r rune) bool {
	return (r < 0x20 && r != '\t' && r != '\n') || (r >= 0x7f && r < 0xa0)
}

// SendKeys presses keys by tmux key name ("C-c", "Escape", "Enter") in
// the window's active pane.
func (c *Client) SendKeys(ctx context.Context, id string, keys ...string) error {
	if !validID(id) {
		return fmt.Errorf("%w: %q", ErrInvalidID, id)
	}
	if len(keys) == 0 {
		return fmt.Errorf("%w: no keys", ErrInvalidText)
	}
	if err := checkText(keys...); err != nil {
		return err
	}
	if _, err := c.run(ctx, false, append([]string{"send-keys", "-t", id, "--"}, keys...)...); err != nil {
		return fmt.Errorf("tmux: send keys to %s: %w", id, err)
	}
	return nil
}

// Rename sets the window's name as given; '#' is not a format here. tmux
// stores control characters in such a name escaped (a newline as \n),
// and Window reports that form.
func (c *Client) Rename(ctx context.Context, id, name string) error {
	if !validID(id) {
		return fmt.Errorf("%w: %q", ErrInvalidID, id)
	}
	if err := checkText(name); err != nil {
		return err
	}
	if _, err := c.run(ctx, true, "rename-window", "-t", id, "--", formatLiteral(name)); err != nil {
		return fmt.Errorf("tmux: rename %s: %w", id, err)
	}
	return nil
}

// Capture returns the last lines lines of the window's active pane (its
// history and screen, blank lines at the bottom left out), or the visible
// screen when lines <= 0.
func (c *Client) Capture(ctx context.Context, id string, lines int) (string, error) {
	if !validID(id) {
		return "", fmt.Errorf("%w: %q", ErrInvalidID, id)
	}
	args := []string{"capture-pane", "-p", "-t", id}
	if lines > 0 {
		args = append(args, "-S", strconv.Itoa(-lines))
	}
	out, err := c.run(ctx, true, args...)
	if err != nil {
		return "", fmt.Errorf("tmux: capture %s: %w", id, err)
	}
	if lines <= 0 {
		return out, nil
	}
	ls := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for len(ls) > 0 && strings.TrimSpace(ls[len(ls)-1]) == "" {
		ls = ls[:len(ls)-1]
	}
	return strings.Join(ls[max(0, len(ls)-lines):], "\n"), nil
}

// Pane is the visible screen of a window's active pane: its text with
// tmux's escape sequences for colours and attributes (capture-pane -e),
// one line per row, and its size in cells.
type Pane struct {
	Text       string
	Cols, Rows int
}

// CapturePane captures the visible screen of the window's active pane
// with its colours and attributes.
func (c *Client) CapturePane(ctx context.Context, id string) (Pane, error) {
	if !validID(id) {
		return Pane{}, fmt.Errorf("%w: %q", ErrInvalidID, id)
	}
	outs, err := c.batch(ctx, true, []string{"display-message", "-p", "-t", id, "#{pane_width} #{pane_height}"},
		[]string{"capture-pane", "-e", "-p", "-t", id})
	if err != nil {
		return Pane{}, fmt.Errorf("tmux: capture %s: %w", id, err)
	}
	var p Pane
	if _, err := fmt.Sscanf(strings.TrimSpace(outs[0]), "%d %d", &p.Cols, &p.Rows); err != nil || p.Cols <= 0 || p.Rows <= 0 {
		return Pane{}, fmt.Errorf("tmux: capture %s: pane size %q", id, outs[0])
	}
	p.Text = outs[1]
	return p, nil
}

// Kill closes the window and ends what runs in it; ErrNoWindow when it
// was not there. Killing the session's last window ends the session.
func (c *Client) Kill(ctx context.Context, id string) error {
	if !validID(id) {
		return fmt.Errorf("%w: %q", ErrInvalidID, id)
	}
	if _, err := c.run(ctx, false, "kill-window", "-t", id); err != nil {
		return fmt.Errorf("tmux: kill %s: %w", id, err)
	}
	return nil
}

// KillServer ends the tmux server and every window on it. No server is
// not an error. The next NewWindow starts a new one.
func (c *Client) KillServer(ctx context.Context) error {
	c.mu.Lock()
	closed, cn := c.closed, c.conn
	c.conn = nil
	// No control-mode client dials while the server goes: tmux 3.3a can
	// crash sending a notification to a client still connecting.
	c.retryAt = time.Now().Add(redialDelay)
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if c.o.Borrowed {
		return fmt.Errorf("%w: its server is not killed", ErrBorrowed)
	}
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	_, err := c.execRun(ctx, []string{"kill-server"})
	if cn != nil {
		cn.close()
	}
	if err != nil && !isNoServer(err) {
		return fmt.Errorf("tmux: kill server: %w", err)
	}
	return nil
}

// checkText refuses strings tmux would cut short: C strings end at NUL.
func checkText(ss ...string) error {
	for _, s := range ss {
		if strings.IndexByte(s, 0) >= 0 {
			return fmt.Errorf("%w: NUL byte in %q", ErrInvalidText, clip(s))
		}
	}
	return nil
}

// UnsetGlobalEnv removes names from the server's global environment (set
// by a client that started it), which the windows made from now on
// inherit. No server is not an error: the next one starts with the
// client's own environment (Options.Env).
func (c *Client) UnsetGlobalEnv(ctx context.Context, names ...string) error {
	for _, n := range names {
		if !validEnv(n + "=") {
			return fmt.Errorf("%w: environment name %q", ErrInvalidText, n)
		}
		_, err := c.run(ctx, true, "set-environment", "-g", "-u", n)
		if isNoServer(err) {
			return nil
		}
		var ce *CommandError
		if errors.As(err, &ce) && strings.Contains(ce.Message, "unknown variable") {
			continue
		}
		if err != nil {
			return fmt.Errorf("tmux: unset %s: %w", n, err)
		}
	}
	return nil
}
