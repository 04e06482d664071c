package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/pflag"

	"github.com/thatch-run/thatch"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/hosts/memmcp"
)

const mcpLong = `Serves thatch's memory over MCP on stdin and stdout, for an agent that
starts it as a stdio server: memory_remember, memory_recall, memory_forget and
memory_list, answered by the running daemon (the one this config names). The
project store is the one of --dir (default: the directory it starts in), as an
opencode session's is of its directory. thatch passes it to every agent it
launches; 'thatch install claude' and 'thatch install codex' add it for the
agents you start yourself.
`

// mcpFlags are thatch mcp's flags. The daemon names its control files
// on the line it gives an agent, so that a config the agent's
// environment cannot load (a token thatch withholds from it) does not
// stop the memory from starting.
func mcpFlags(fs *pflag.FlagSet) {
	fs.String("dir", "", "the agent's working directory, which picks the project store (default: the current directory)")
	fs.String("state-file", "", "the daemon's control state file (default: the config's control.state_file)")
	fs.String("token-file", "", "the daemon's control token file (default: the config's control.token_file)")
	fs.String("config", "", configFlag)
	fs.String("extraction", "", "serve an extraction child of thatch's (its id): also extraction_payload and extraction_done")
}

// dialFlags dials the daemon the flags name: its control files, or those
// of the config.
func dialFlags(fs *pflag.FlagSet, timeout time.Duration) (*control.Client, error) {
	state, _ := fs.GetString("state-file")
	token, _ := fs.GetString("token-file")
	if state == "" || token == "" {
		file, _ := fs.GetString("config")
		cfg, err := config.Load(config.LoadOptions{File: file, Env: os.Environ()})
		if err != nil {
			return nil, err
		}
		state, token = cmp.Or(state, cfg.Control.StateFile), cmp.Or(token, cfg.Control.TokenFile)
	}
	c, _, err := control.Dial(state, token, timeout)
	return c, err
}

func runMCP(args []string) int {
	fs := pflag.NewFlagSet("thatch mcp", pflag.ContinueOnError)
	mcpFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "thatch mcp: takes no arguments, got %q\n", fs.Args())
		return 2
	}
	dir, _ := fs.GetString("dir")
	var err error
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			fmt.Fprintf(os.Stderr, "thatch mcp: %v\n", err)
			return 1
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		fmt.Fprintf(os.Stderr, "thatch mcp: %v\n", err)
		return 2
	}
	c, err := dialFlags(fs, memmcp.DefaultTimeout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch mcp: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	child, _ := fs.GetString("extraction")
	s, err := memmcp.New(ctx, memmcp.Options{Daemon: c, Directory: dir, Version: thatch.Version, Extraction: child})
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch mcp: %v\n", err)
		return 1
	}
	// The client ends the session by closing stdin; a signal ends it too.
	if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "thatch mcp: %v\n", err)
		return 1
	}
	return 0
}
