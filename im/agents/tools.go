package agents

import (
	"encoding/json"
	"strings"
)

// maxToolSummary is how many characters of a tool call's argument a tool
// line shows.
const maxToolSummary = 80

// toolArgKeys are the arguments a tool line shows, the first one a call
// has: what a person would want to see of it.
var toolArgKeys = []string{"command", "cmd", "file_path", "path", "pattern", "url", "query", "description", "prompt"}

// ToolCalls returns one short line per tool call in one transcript line,
// in order: "▸ Bash: npm test". Lines of no tool call (and every line of
// an agent whose format has none thatch reads) give nil.
func (a *Agent) ToolCalls(line []byte) []string {
	if len(line) == 0 || len(line) > MaxLine {
		return nil
	}
	switch a.format {
	case formatClaude:
		return claudeTools(line)
	case formatCodex:
		return codexTools(line)
	}
	return nil
}

func claudeTools(line []byte) []string {
	var l claudeLine
	if json.Unmarshal(line, &l) != nil || l.Type != "assistant" || l.IsSidechain || l.Message == nil {
		return nil
	}
	var blocks []struct {
		Type  string          `json:"type"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	if json.Unmarshal(l.Message.Content, &blocks) != nil {
		return nil
	}
	var out []string
	for _, b := range blocks {
		if b.Type == "tool_use" && b.Name != "" {
			out = append(out, toolLine(b.Name, argSummary(b.Input)))
		}
	}
	return out
}

func codexTools(line []byte) []string {
	var l struct {
		Type    string `json:"type"`
		Payload *struct {
			Type      string `json:"type"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Input     string `json:"input"`
			Action    *struct {
				Command []string `json:"command"`
			} `json:"action"`
		} `json:"payload"`
	}
	if json.Unmarshal(line, &l) != nil || l.Type != "response_item" || l.Payload == nil {
		return nil
	}
	p := l.Payload
	switch p.Type {
	case "function_call":
		return []string{toolLine(p.Name, argSummary(json.RawMessage(p.Arguments)))}
	case "local_shell_call":
		if p.Action != nil {
			return []string{toolLine("shell", shellCommand(p.Action.Command))}
		}
		return []string{toolLine("shell", "")}
	case "custom_tool_call":
		return []string{toolLine(p.Name, "")}
	}
	return nil
}

// argSummary is the first of toolArgKeys an argument object has, as text
// (a command given as a list is joined; "bash -lc X" shows X).
func argSummary(raw json.RawMessage) string {
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &args) != nil {
		return ""
	}
	for _, k := range toolArgKeys {
		v, ok := args[k]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
		var list []string
		if json.Unmarshal(v, &list) == nil {
			return shellCommand(list)
		}
	}
	return ""
}

// shellCommand shows a command line given as a list: the script of a
// shell's -c or -lc, the words joined otherwise.
func shellCommand(argv []string) string {
	if len(argv) == 3 && (argv[1] == "-c" || argv[1] == "-lc") {
		return argv[2]
	}
	return strings.Join(argv, " ")
}

// toolLine is "▸ name: summary", the summary cut to its first line and
// maxToolSummary characters.
func toolLine(name, summary string) string {
	summary, _, _ = strings.Cut(strings.TrimSpace(summary), "\n")
	if r := []rune(summary); len(r) > maxToolSummary {
		summary = string(r[:maxToolSummary]) + "…"
	}
	if summary == "" {
		return "▸ " + name
	}
	return "▸ " + name + ": " + summary
}
