package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/im/agents"
)

// hookTimeout bounds the hook's question to the daemon: claude waits for
// its SessionStart hooks before the session starts.
const hookTimeout = 3 * time.Second

// hookFlags are `thatch hook claude`'s flags.
func hookFlags(fs *pflag.FlagSet) {
	fs.Bool("settings", false, "print the settings.json snippet that registers the hook")
	fs.String("state-file", "", "the daemon's control state file (default: the config's control.state_file)")
	fs.String("token-file", "", "the daemon's control token file (default: the config's control.token_file)")
	fs.String("config", "", configFlag)
}

// runHook is `thatch hook claude`, Claude Code's SessionStart hook (JSON
// on stdin). In a window thatch launched it records the window's session
// in the daemon's hook map; in a claude started by hand it tells the
// daemon of the session, whose memory thatch then extracts; in any
// claude it prints the memory's reminder, with the hygiene lines of the
// session's stores, as the context claude adds to the session
// (additionalContext).
func runHook(args []string) int {
	if len(args) > 0 && args[0] == "codex" {
		return runCodexHook(args[1:])
	}
	if len(args) == 0 || args[0] != "claude" {
		fmt.Fprintln(os.Stderr, "usage: thatch hook claude              (Claude Code's SessionStart hook: reads its JSON on stdin)\n       thatch hook claude --settings   (print the settings.json snippet that registers it)\n       thatch hook codex               (codex's SessionStart hook: reads its JSON on stdin)")
		return 2
	}
	fs := pflag.NewFlagSet("thatch hook claude", pflag.ContinueOnError)
	hookFlags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	if ok, _ := fs.GetBool("settings"); ok {
		exe, err := os.Executable()
		if err != nil {
			exe = "thatch"
		}
		fmt.Println(agents.ClaudeHookSettings(exe))
		return 0
	}
	e, err := agents.ParseClaudeHook(os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch hook claude: %v\n", err)
		return 1
	}
	code := 0
	c, dialErr := dialFlags(fs, hookTimeout)
	told := make(chan struct{})
	switch window := os.Getenv("THATCH_IM_WINDOW"); {
	case window != "":
		close(told)
		if err := recordHook(window, e); err != nil {
			fmt.Fprintf(os.Stderr, "thatch hook claude: %v\n", err)
			code = 1
		}
	case os.Getenv(agents.ExtractionChildEnv) == "" && dialErr == nil:
		go func() { // a session started by hand, told beside the reminder's question
			defer close(told)
			hookSession(c, e)
		}()
	default:
		close(told)
	}
	text := hookReminder(c, dialErr, e.Cwd)
	<-told
	if text != "" {
		out := map[string]any{"hookSpecificOutput": map[string]string{"hookEventName": "SessionStart", "additionalContext": text}}
		if err := json.NewEncoder(os.Stdout).Encode(out); err == nil {
			// claude reads a hook's output only when it exits 0; a
			// record that failed was said on stderr.
			return 0
		}
		code = 1
	}
	return code
}

// recordHook writes the window's entry into the daemon's hook map.
func recordHook(window string, e agents.HookEntry) error {
	if fi, err := os.Stat(e.TranscriptPath); err == nil && e.TranscriptPath != "" {
		e.Size = fi.Size()
	}
	// The daemon names its hook file when it launches the agent; a claude
	// started some other way records into the default data directory's.
	file := os.Getenv("THATCH_IM_HOOK_FILE")
	if file == "" {
		cfg, err := config.Load(config.LoadOptions{Env: os.Environ()})
		if err != nil {
			return err
		}
		file = filepath.Join(cfg.Data.Dir, "im", "claude-sessions.json")
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	return agents.WriteHook(file, window, e)
}

// runCodexHook is `thatch hook codex`, codex's SessionStart hook (JSON on
// stdin, claude's fields; `thatch install codex` registers it): a codex
// started by hand is told to the daemon, whose memory thatch then
// extracts. It prints nothing: codex gets the memory's reminder from the
// MCP server's instructions. A codex in a window thatch launched is
// followed by its chat already.
func runCodexHook(args []string) int {
	fs := pflag.NewFlagSet("thatch hook codex", pflag.ContinueOnError)
	hookFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	e, err := agents.ParseCodexHook(os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch hook codex: %v\n", err)
		return 1
	}
	if os.Getenv("THATCH_IM_WINDOW") != "" || os.Getenv(agents.ExtractionChildEnv) != "" {
		return 0
	}
	c, err := dialFlags(fs, hookTimeout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch hook codex: the session's memory is not extracted: %v\n", err)
		return 0 // the session goes on without it
	}
	hookSession(c, e)
	return 0
}

// hookSession tells the daemon of a session started by hand, so that it
// follows its transcript for the memory. A daemon that does not answer
// in time only costs the session its extraction (said on stderr).
func hookSession(c *control.Client, e agents.HookEntry) {
	if e.TranscriptPath == "" || !filepath.IsAbs(e.TranscriptPath) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
	defer cancel()
	body := map[string]string{"agent": e.Agent, "transcript": filepath.Clean(e.TranscriptPath), "dir": e.Cwd}
	if err := c.Do(ctx, "POST", "/v1/agent/sessions", body, nil); err != nil {
		fmt.Fprintf(os.Stderr, "thatch hook %s: the session's memory is not extracted: %v\n", e.Agent, err)
	}
}

// hookReminder asks the daemon for the memory's reminder for a session
// in dir; "" when no daemon answers in time (a session is never held up
// for it, and says so only on stderr, which claude shows in its debug
// output).
func hookReminder(c *control.Client, dialErr error, dir string) string {
	if !filepath.IsAbs(dir) {
		return ""
	}
	if dialErr != nil {
		fmt.Fprintf(os.Stderr, "thatch hook claude: no memory reminder: %v\n", dialErr)
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
	defer cancel()
	var rem struct {
		Text string `json:"text"`
	}
	if err := c.Do(ctx, "POST", "/v1/memory/reminder", map[string]string{"directory": dir}, &rem); err != nil {
		fmt.Fprintf(os.Stderr, "thatch hook claude: no memory reminder: %v\n", err)
		return ""
	}
	return rem.Text
}
