package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// MemoryServer is the name under which every agent thatch launches, or
// `thatch install` sets up, is given thatch's memory server (`thatch
// mcp`): claude calls its tools mcp__thatch__memory_recall and so on.
const MemoryServer = "thatch"

// ExtractionChildEnv is set (to "1") in an extraction child's environment:
// the hook of a claude run as one does not report it as a session of its
// own.
const ExtractionChildEnv = "THATCH_EXTRACTION_CHILD"

// MCPServer is a stdio MCP server thatch gives the agents it launches
// (thatch's memory): each agent gets it the way its CLI takes one, on the
// launch line or in a file under thatch's data directory, never by an
// edit of the user's own configuration.
type MCPServer struct {
	// Name is the server's name (the agent's tools are named after it:
	// claude's mcp__<name>__<tool>).
	Name string
	// Command and Args start the server.
	Command string
	Args    []string
	// ClaudeConfig is a file in claude's --mcp-config form (ClaudeMCPConfig).
	ClaudeConfig string
	// CopilotConfig is a file in copilot's --additional-mcp-config form
	// (CopilotMCPConfig).
	CopilotConfig string
}

// Extras are what thatch adds to every launch line it types.
type Extras struct {
	// ClaudeSettings is the settings file passed to claude (--settings).
	ClaudeSettings string
	// MCP is the server every agent is given; a zero Name gives none.
	MCP MCPServer
}

// MCPPlaceholder in a launch or resume line is replaced by the flags
// that give the agent thatch's MCP server (for a line where the agent is
// not last); a line without it gets them appended.
const MCPPlaceholder = "{mcp}"

// ClaudeMCPConfig is the content of the file claude's --mcp-config reads.
func ClaudeMCPConfig(s MCPServer) string {
	return mcpJSON(s, map[string]any{"type": "stdio", "command": s.Command, "args": s.Args})
}

// CopilotMCPConfig is the content of the file copilot's
// --additional-mcp-config reads (prefixed with @): every tool of the
// server is offered.
func CopilotMCPConfig(s MCPServer) string {
	return mcpJSON(s, map[string]any{"type": "local", "command": s.Command, "args": s.Args, "tools": []string{"*"}})
}

func mcpJSON(s MCPServer, server map[string]any) string {
	b, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{s.Name: server}}, "", "  ") // plain values
	return string(b)
}

// mcpFlags are the launch line's flags that give the agent s, or "" when
// the agent has no way thatch knows (mimo) or s is not set.
func (a *Agent) mcpFlags(s MCPServer) string {
	if s.Name == "" {
		return ""
	}
	switch a.format {
	case formatClaude:
		if s.ClaudeConfig != "" {
			return "--mcp-config " + shellQuote(s.ClaudeConfig)
		}
	case formatCodex:
		// Codex reads its MCP servers from its config; -c sets a key of
		// it for this run only, its value in TOML (a JSON string is a
		// TOML basic string).
		args := make([]string, len(s.Args))
		for i, v := range s.Args {
			args[i] = tomlString(v)
		}
		key := "mcp_servers." + s.Name
		return "-c " + shellQuote(key+".command="+tomlString(s.Command)) +
			" -c " + shellQuote(key+".args=["+strings.Join(args, ",")+"]")
	case formatCopilot:
		if s.CopilotConfig != "" {
			return "--additional-mcp-config " + shellQuote("@"+s.CopilotConfig)
		}
	}
	return ""
}

func tomlString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// ClaudeMCPPermissions are the permission rules thatch's settings give a
// claude it launches: the memory's reading and saving tools run without
// asking (a saved secret is refused by the store), forgetting asks.
func ClaudeMCPPermissions(server string) []string {
	p := "mcp__" + server + "__"
	return []string{p + "memory_recall", p + "memory_remember", p + "memory_list"}
}

// ErrNoHeadless is returned by HeadlessLine for an agent thatch cannot
// run without a terminal.
var ErrNoHeadless = errors.New("agents: no headless mode")

// HeadlessLine is the shell line that runs the agent without a terminal
// on prompt, with s as its only MCP server and nothing else it may do: it
// reads untrusted text (tool output), so it gets no built-in tool that
// runs commands or writes (claude: --restricted, no tools, the user's
// settings ignored; codex: a read-only sandbox). It starts from the
// agent's own command (the launch line's first word; the agent's name
// when that line is more than one command), not the user's launch line,
// whose flags may lift those limits. The line execs the agent, so that
// it is the shell's process.
func (a *Agent) HeadlessLine(prompt string, s MCPServer) (string, error) {
	bin := a.binary()
	switch a.format {
	case formatClaude:
		return "exec " + shellQuote(bin) + " -p " + shellQuote(prompt) + " --restricted --tools '' --mcp-config " + shellQuote(s.ClaudeConfig) +
			" --strict-mcp-config --allowedTools " + shellQuote("mcp__"+s.Name), nil
	case formatCodex:
		return "exec " + shellQuote(bin) + " exec --skip-git-repo-check --sandbox read-only " + a.mcpFlags(s) + " " + shellQuote(prompt), nil
	}
	return "", fmt.Errorf("%w for %s", ErrNoHeadless, a.Name)
}

// binary is the agent's command: the launch line's first word when the
// line is one plain command, else the agent's name.
func (a *Agent) binary() string {
	f := strings.Fields(a.Launch)
	if len(f) == 0 || strings.ContainsAny(a.Launch, "|&;<>()$`\\\"'") || strings.Contains(f[0], "=") {
		return a.Name
	}
	return f[0]
}
