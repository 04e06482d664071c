package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// ErrInstall is returned by Install and Uninstall for a file they will
// not change: one they cannot read as the agent's format, or a server of
// thatch's name the user wrote by hand.
var ErrInstall = errors.New("agents: cannot install")

// InstallOptions say where an agent keeps its user configuration and what
// thatch adds to it.
type InstallOptions struct {
	// Home is the user's home directory.
	Home string
	// ClaudeConfigDir is $CLAUDE_CONFIG_DIR ("": ~/.claude, with the MCP
	// servers in ~/.claude.json).
	ClaudeConfigDir string
	// CodexHome is $CODEX_HOME ("": ~/.codex).
	CodexHome string
	// Thatch is thatch's binary, and ControlArgs the flags that name the
	// daemon's control files (for `thatch mcp` and `thatch hook claude`).
	Thatch      string
	ControlArgs []string
}

// Installed says what Install or Uninstall changed: the files written,
// and what each holds of thatch's now.
type Installed struct {
	Files []string
	What  []string
}

// claudeFiles are claude's user settings and the file with its user
// MCP servers.
func (o InstallOptions) claudeFiles() (settings, servers string) {
	if o.ClaudeConfigDir != "" {
		return filepath.Join(o.ClaudeConfigDir, "settings.json"), filepath.Join(o.ClaudeConfigDir, ".claude.json")
	}
	return filepath.Join(o.Home, ".claude", "settings.json"), filepath.Join(o.Home, ".claude.json")
}

func (o InstallOptions) server() MCPServer {
	return MCPServer{Name: MemoryServer, Command: o.Thatch, Args: append([]string{"mcp"}, o.ControlArgs...)}
}

// InstallClaude gives the claude a user starts by hand what thatch gives
// the ones it launches, at user scope: the memory's MCP server (in the
// MCP servers of ~/.claude.json), thatch's SessionStart hook, and the
// permission rules that let the memory's reading and saving tools run (in
// ~/.claude/settings.json). Every other key is kept; a second run changes
// nothing. uninstall takes out what an install put in.
func InstallClaude(o InstallOptions, uninstall bool) (Installed, error) {
	settingsFile, serversFile := o.claudeFiles()
	var out Installed
	err := editJSON(serversFile, func(v map[string]any) error {
		if err := want[map[string]any](v, "mcpServers"); err != nil {
			return err
		}
		servers, _ := v["mcpServers"].(map[string]any)
		if uninstall {
			if servers != nil {
				delete(servers, MemoryServer)
			}
			return nil
		}
		if servers == nil {
			servers = map[string]any{}
			v["mcpServers"] = servers
		}
		s := o.server()
		servers[MemoryServer] = map[string]any{"type": "stdio", "command": s.Command, "args": s.Args}
		return nil
	}, &out)
	if err != nil {
		return out, err
	}
	err = editJSON(settingsFile, func(v map[string]any) error {
		if err := want[map[string]any](v, "hooks"); err != nil {
			return err
		}
		if hooks, ok := v["hooks"].(map[string]any); ok {
			if err := want[[]any](hooks, "SessionStart"); err != nil {
				return err
			}
		}
		if err := want[map[string]any](v, "permissions"); err != nil {
			return err
		}
		if perms, ok := v["permissions"].(map[string]any); ok {
			if err := want[[]any](perms, "allow"); err != nil {
				return err
			}
		}
		editClaudeHook(v, o, uninstall)
		editClaudePermissions(v, uninstall)
		return nil
	}, &out)
	if !uninstall && err == nil {
		out.What = append(out.What, "claude: the memory's MCP server "+MemoryServer+" (user scope), the SessionStart hook, and recall, remember and list allowed without asking")
	}
	return out, err
}

// want says why v[key] is not a T, when it is there and is not.
func want[T any](v map[string]any, key string) error {
	if x, ok := v[key]; ok && x != nil {
		if _, ok := x.(T); !ok {
			return fmt.Errorf("its %q is a %T, not what claude writes there", key, x)
		}
	}
	return nil
}

// thatchHook reports whether a hook command is thatch's hook for agent.
func thatchHook(agent, cmd string) bool {
	return strings.Contains(cmd, " hook "+agent)
}

// editClaudeHook puts thatch's SessionStart hook in claude's settings v,
// or takes it out, keeping every other hook.
func editClaudeHook(v map[string]any, o InstallOptions, uninstall bool) {
	editHook(v, Claude, o, uninstall)
}

// editHook puts thatch's SessionStart hook for agent in v (claude's
// settings, codex's hooks.json), or takes it out, keeping every other
// hook.
func editHook(v map[string]any, agent string, o InstallOptions, uninstall bool) {
	hooks, _ := v["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
	}
	var kept []any
	starts, _ := hooks["SessionStart"].([]any)
	for _, m := range starts {
		mm, ok := m.(map[string]any)
		if !ok {
			kept = append(kept, m) // not claude's form: not thatch's either
			continue
		}
		list, _ := mm["hooks"].([]any)
		var others []any
		for _, h := range list {
			if hm, _ := h.(map[string]any); hm == nil || !thatchHook(agent, fmt.Sprint(hm["command"])) {
				others = append(others, h)
			}
		}
		if len(others) > 0 {
			mm["hooks"] = others
			kept = append(kept, mm)
		}
	}
	if !uninstall {
		b, _ := json.Marshal(sessionStartHooks(agent, o.Thatch, o.ControlArgs)) // plain values
		var ours struct {
			Hooks struct{ SessionStart []any }
		}
		_ = json.Unmarshal(b, &ours)
		kept = append(kept, ours.Hooks.SessionStart...)
	}
	if len(kept) == 0 {
		delete(hooks, "SessionStart")
	} else {
		hooks["SessionStart"] = kept
	}
	if len(hooks) == 0 {
		delete(v, "hooks")
	} else {
		v["hooks"] = hooks
	}
}

// editClaudePermissions adds the memory's allowed tools to settings v, or
// takes them out.
func editClaudePermissions(v map[string]any, uninstall bool) {
	perms, _ := v["permissions"].(map[string]any)
	if perms == nil {
		if uninstall {
			return
		}
		perms = map[string]any{}
		v["permissions"] = perms
	}
	allow, _ := perms["allow"].([]any)
	ours := ClaudeMCPPermissions(MemoryServer)
	var kept []any
	for _, a := range allow {
		if s, ok := a.(string); !ok || !slices.Contains(ours, s) {
			kept = append(kept, a)
		}
	}
	if !uninstall {
		for _, s := range ours {
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		delete(perms, "allow")
	} else {
		perms["allow"] = kept
	}
	if len(perms) == 0 {
		delete(v, "permissions")
	}
}

// editJSON reads a JSON object file (missing: empty), lets edit change
// it, and writes it back, atomically and with its mode, when it changed.
func editJSON(path string, edit func(map[string]any) error, out *Installed) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	v := map[string]any{}
	if len(bytes.TrimSpace(old)) > 0 {
		d := json.NewDecoder(bytes.NewReader(old))
		d.UseNumber() // large numbers come back as they were
		if err := d.Decode(&v); err != nil || v == nil || d.More() {
			return fmt.Errorf("%w: %s is not one JSON object (%v); it is left as it is", ErrInstall, path, err)
		}
	}
	if err := edit(v); err != nil {
		return fmt.Errorf("%w: %s: %w; it is left as it is", ErrInstall, path, err)
	}
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	body = append(body, '\n')
	if bytes.Equal(body, old) || (old == nil && len(v) == 0) {
		return nil
	}
	if err := writeKeepingMode(path, body); err != nil {
		return err
	}
	out.Files = append(out.Files, path)
	return nil
}

// writeKeepingMode replaces path with body atomically, with the mode the
// file had (0600 for a new one).
func writeKeepingMode(path string, body []byte) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real // a dotfile manager's link stays a link
	}
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".thatch.tmp"
	if err := os.WriteFile(tmp, body, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Codex's block in its config.toml begins and ends with these lines.
const (
	codexBegin = "# >>> thatch: the memory's MCP server (thatch install codex; --uninstall takes it out)"
	codexEnd   = "# <<< thatch"
)

// InstallCodex gives the codex a user starts by hand the memory's MCP
// server: a block of codex's config.toml (~/.codex, or $CODEX_HOME)
// between two marker lines, replaced by a second run and taken out by
// uninstall; the rest of the file is kept byte for byte. A server of
// thatch's name that the user wrote is left alone, with an error. It
// also puts thatch's SessionStart hook in codex's hooks.json (every other
// hook kept), which tells the daemon of each session started.
func InstallCodex(o InstallOptions, uninstall bool) (Installed, error) {
	home := o.CodexHome
	if home == "" {
		home = filepath.Join(o.Home, ".codex")
	}
	path := filepath.Join(home, "config.toml")
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Installed{}, err
	}
	rest, err := withoutBlock(string(old))
	if err != nil {
		return Installed{}, fmt.Errorf("%w: %s: %w", ErrInstall, path, err)
	}
	table := "[mcp_servers." + MemoryServer + "]"
	var cfg struct {
		Servers map[string]any `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal([]byte(rest), &cfg); err != nil {
		return Installed{}, fmt.Errorf("%w: %s is not TOML codex can read (%v); it is left as it is", ErrInstall, path, err)
	}
	if _, ok := cfg.Servers[MemoryServer]; ok {
		return Installed{}, fmt.Errorf("%w: %s has an MCP server %q of its own; thatch leaves it alone", ErrInstall, path, MemoryServer)
	}
	body := rest
	if !uninstall {
		s := o.server()
		args := make([]string, len(s.Args))
		for i, a := range s.Args {
			args[i] = tomlString(a)
		}
		if body != "" && !strings.HasSuffix(body, "\n") {
			body += "\n"
		}
		if body != "" {
			body += "\n"
		}
		body += codexBegin + "\n" + table + "\ncommand = " + tomlString(s.Command) + "\nargs = [" + strings.Join(args, ", ") + "]\n" + codexEnd + "\n"
	}
	var out Installed
	if body != string(old) && (old != nil || body != "") {
		if err := writeKeepingMode(path, []byte(body)); err != nil {
			return out, err
		}
		out.Files = append(out.Files, path)
	}
	hooksFile := filepath.Join(home, "hooks.json")
	err = editJSON(hooksFile, func(v map[string]any) error {
		if err := want[map[string]any](v, "hooks"); err != nil {
			return err
		}
		if hooks, ok := v["hooks"].(map[string]any); ok {
			if err := want[[]any](hooks, "SessionStart"); err != nil {
				return err
			}
		}
		editHook(v, Codex, o, uninstall)
		return nil
	}, &out)
	if err != nil {
		return out, err
	}
	if !uninstall {
		out.What = append(out.What, "codex: the memory's MCP server "+MemoryServer+" in "+path,
			"codex: the SessionStart hook in "+hooksFile+", so that thatch extracts the memory of the sessions you start; "+
				"codex runs a hook only once you trust it: open /hooks in codex once and trust thatch's")
	}
	return out, nil
}

// withoutBlock is a config.toml without thatch's block (and the blank
// line put before it).
func withoutBlock(s string) (string, error) {
	i := strings.Index(s, codexBegin)
	if i < 0 {
		return s, nil
	}
	j := strings.Index(s[i:], codexEnd)
	if j < 0 {
		return "", errors.New("thatch's block has no end marker")
	}
	end := i + j + len(codexEnd)
	if end < len(s) && s[end] == '\n' {
		end++
	}
	before := s[:i]
	if strings.HasSuffix(before, "\n\n") {
		before = before[:len(before)-1]
	}
	return before + s[end:], nil
}
