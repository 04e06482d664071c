package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Errors of the hook map.
var (
	// ErrBadHook is returned by ParseClaudeHook for input that is not a
	// SessionStart payload with a safe session id.
	ErrBadHook = errors.New("agents: bad hook input")
	// ErrBadHookFile is returned by ReadHook and WriteHook for a hook map
	// that is not one this package wrote.
	ErrBadHookFile = errors.New("agents: bad hook map file")
)

// HookPaneEnv is the environment variable a hook reads its window key
// from: tmux sets it in every pane to the pane's id ("%3"), and the agent
// passes it on to the hooks it runs.
const HookPaneEnv = "TMUX_PANE"

// HookMaxAge is how long an entry stays in the hook map without being
// written again; WriteHook drops older ones so the map stays small.
const HookMaxAge = 30 * 24 * time.Hour

// HookEntry is what an agent's hook recorded about the session in one
// window.
type HookEntry struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path,omitempty"`
	Cwd            string `json:"cwd,omitempty"`
	// Agent names the agent that ran the hook; FindSession ignores an
	// entry of another agent. "" matches any.
	Agent string `json:"agent,omitempty"`
	// Source is why the session started, as the agent said: "startup",
	// "resume", "clear" or "compact" for claude; "" when not said.
	Source string `json:"source,omitempty"`
	// Size is the transcript's size when the session started (0 when it
	// did not exist): a resumed session's replies are those after it.
	Size int64 `json:"size,omitempty"`
	// Updated is when the entry was written; WriteHook sets it when zero.
	Updated time.Time `json:"updated"`
}

// hookMap is the file's content.
type hookMap struct {
	Version int                  `json:"version"`
	Windows map[string]HookEntry `json:"windows"`
}

const hookVersion = 1

// maxHookFile bounds what ReadHook reads.
const maxHookFile = 8 << 20

// ParseClaudeHook reads the JSON that Claude Code gives its SessionStart
// hook on stdin (session_id, transcript_path, cwd, hook_event_name,
// source) and returns the entry to record, with Agent set to claude.
func ParseClaudeHook(r io.Reader) (HookEntry, error) {
	var in struct {
		SessionID      string `json:"session_id"`
		TranscriptPath string `json:"transcript_path"`
		Cwd            string `json:"cwd"`
		Source         string `json:"source"`
	}
	if err := json.NewDecoder(io.LimitReader(r, MaxLine)).Decode(&in); err != nil {
		return HookEntry{}, fmt.Errorf("%w: %w", ErrBadHook, err)
	}
	if !ValidSessionID(in.SessionID) {
		return HookEntry{}, fmt.Errorf("%w: session_id %q", ErrBadHook, in.SessionID)
	}
	src := in.Source
	if len(src) > 32 {
		src = src[:32]
	}
	return HookEntry{SessionID: in.SessionID, TranscriptPath: in.TranscriptPath, Cwd: in.Cwd, Agent: Claude, Source: src}, nil
}

// ParseCodexHook reads codex's SessionStart hook input, which has claude's
// fields (codex 0.169: session_id, transcript_path, cwd, source).
func ParseCodexHook(r io.Reader) (HookEntry, error) {
	e, err := ParseClaudeHook(r)
	e.Agent = Codex
	return e, err
}

// ClaudeHookSettings returns the JSON to merge into ~/.claude/settings.json
// so that Claude Code runs `<thatchBinary> hook claude` at every session
// start (new, resumed, cleared or compacted: each may change the id).
func ClaudeHookSettings(thatchBinary string) string {
	b, _ := json.MarshalIndent(claudeHooks(thatchBinary, nil), "", "  ") // plain values
	return string(b)
}

// claudeHooks is the settings' "hooks" for a hook run as thatchBinary
// with args after `hook claude`.
func claudeHooks(thatchBinary string, args []string) map[string]any {
	return sessionStartHooks(Claude, thatchBinary, args)
}

// sessionStartHooks is the hooks object (claude's settings.json, codex's
// hooks.json: both have this form) that runs `<thatchBinary> hook
// <agent> args...` at every session start the agent tells.
func sessionStartHooks(agent, thatchBinary string, args []string) map[string]any {
	type hook struct {
		Type    string `json:"type"`
		Command string `json:"command"`
	}
	type matcher struct {
		Matcher string `json:"matcher"`
		Hooks   []hook `json:"hooks"`
	}
	cmd := shellQuote(thatchBinary) + " hook " + agent
	for _, a := range args {
		cmd += " " + shellQuote(a)
	}
	starts := "startup|resume|clear|compact"
	if agent == Codex {
		starts = "startup|resume|clear"
	}
	return map[string]any{"hooks": map[string][]matcher{"SessionStart": {{
		Matcher: starts,
		Hooks:   []hook{{Type: "command", Command: cmd}},
	}}}}
}

// ClaudeLaunchSettings is the settings file thatch passes to every claude
// it launches: the SessionStart hook of ClaudeHookSettings, run with
// hookArgs (the daemon's control files, so that the hook reaches the
// daemon that launched it), and the permission rules that let the tools
// of the memory's MCP server (named mcpServer; "" adds none) run.
func ClaudeLaunchSettings(thatchBinary string, hookArgs []string, mcpServer string) string {
	v := claudeHooks(thatchBinary, hookArgs)
	if mcpServer != "" {
		v["permissions"] = map[string]any{"allow": ClaudeMCPPermissions(mcpServer)}
	}
	b, _ := json.MarshalIndent(v, "", "  ") // plain values
	return string(b)
}

// shellQuote quotes s for sh when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+:@%=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ReadHooks returns every entry of the hook map, by window key. A missing
// file is an empty map, not an error.
func ReadHooks(hookFile string) (map[string]HookEntry, error) {
	m, err := readHookMap(hookFile)
	return m.Windows, err
}

// ReadHook returns the entry recorded for windowKey. A missing file is no
// entry, not an error.
func ReadHook(hookFile, windowKey string) (HookEntry, bool, error) {
	m, err := readHookMap(hookFile)
	if err != nil {
		return HookEntry{}, false, err
	}
	e, ok := m.Windows[windowKey]
	return e, ok, nil
}

func readHookMap(hookFile string) (hookMap, error) {
	m := hookMap{Version: hookVersion, Windows: map[string]HookEntry{}}
	f, err := os.Open(hookFile)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("agents: open hook map: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxHookFile+1))
	if err != nil {
		return m, fmt.Errorf("agents: read hook map %s: %w", hookFile, err)
	}
	if len(b) > maxHookFile {
		return m, fmt.Errorf("%w: %s is over %d bytes", ErrBadHookFile, hookFile, maxHookFile)
	}
	var got hookMap
	if err := json.Unmarshal(b, &got); err != nil {
		return m, fmt.Errorf("%w: %s: %w", ErrBadHookFile, hookFile, err)
	}
	if got.Version != hookVersion {
		return m, fmt.Errorf("%w: %s has version %d, want %d", ErrBadHookFile, hookFile, got.Version, hookVersion)
	}
	if got.Windows != nil {
		m.Windows = got.Windows
	}
	return m, nil
}

// WriteHook records e for windowKey. Hooks of several panes may run at
// once, so the read-modify-write holds an exclusive lock on
// hookFile+".lock"; the new map is written to a temporary file, synced
// and renamed over the old one, so a reader never sees half a map. A map
// that cannot be read is replaced (it only caches what hooks report).
func WriteHook(hookFile, windowKey string, e HookEntry) error {
	if windowKey == "" {
		return fmt.Errorf("%w: empty window key", ErrBadHook)
	}
	if !ValidSessionID(e.SessionID) {
		return fmt.Errorf("%w: session_id %q", ErrBadHook, e.SessionID)
	}
	if e.Updated.IsZero() {
		e.Updated = time.Now().UTC()
	}
	dir := filepath.Dir(hookFile)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("agents: hook map dir: %w", err)
	}
	unlock, err := lockFile(hookFile + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	m, err := readHookMap(hookFile)
	if err != nil && !errors.Is(err, ErrBadHookFile) {
		return err
	}
	if m.Windows == nil {
		m = hookMap{Version: hookVersion, Windows: map[string]HookEntry{}}
	}
	for k, old := range m.Windows {
		if e.Updated.Sub(old.Updated) > HookMaxAge {
			delete(m.Windows, k)
		}
	}
	m.Windows[windowKey] = e
	return writeAtomic(hookFile, m)
}

func writeAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("agents: encode hook map: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("agents: hook map temp file: %w", err)
	}
	name := tmp.Name()
	_, err = tmp.Write(append(b, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("agents: write hook map %s: %w", path, err)
	}
	return nil
}

// HookLockTimeout bounds the wait for the hook map's lock: a hook must
// not hang the agent that runs it.
const HookLockTimeout = 5 * time.Second

// lockFile takes an exclusive flock on path, creating it, waiting at most
// HookLockTimeout; the returned func releases it.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("agents: hook map lock: %w", err)
	}
	deadline := time.Now().Add(HookLockTimeout)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil || !(errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EINTR)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("agents: hook map lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
