package tmux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// baseArgs are the global options of every tmux client this package
// starts: the socket and, when set, the configuration file.
func (c *Client) baseArgs() []string {
	a := []string{"-L", c.o.Socket}
	if c.o.SocketPath != "" {
		a = []string{"-S", c.o.SocketPath}
	}
	if c.o.Config != "" {
		a = append(a, "-f", c.o.Config)
	}
	return a
}

// execRun runs one tmux command by forking a tmux client: the path for
// commands that must start a server, and the fallback while no
// control-mode client can be had. It returns stdout without its final
// newline.
func (c *Client) execRun(ctx context.Context, args []string) (string, error) {
	argv := c.baseArgs()
	for _, a := range args {
		argv = append(argv, execArg(a))
	}
	cmd := exec.CommandContext(ctx, c.o.Binary, argv...)
	cmd.Env = c.env
	// A server the command starts detaches from our pipes; should one
	// keep them, Wait gives up on it after this long.
	cmd.WaitDelay = time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("tmux: %s: %w", args[0], ctx.Err())
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", &CommandError{Command: args[0], Message: strings.TrimSpace(errb.String())}
		}
		return "", fmt.Errorf("tmux: run %s %s: %w", c.o.Binary, args[0], err)
	}
	return strings.TrimSuffix(out.String(), "\n"), nil
}
