package agents

import (
	"cmp"
	"encoding/json"
	"strconv"
	"strings"
)

// What one transcript line says of the agent's turn (TurnItems).
const (
	// ItemText is text the agent wrote (a reply, or a note between tools).
	ItemText = "text"
	// ItemTool is a tool call: Text is its line ("▸ Bash: npm test").
	ItemTool = "tool"
	// ItemResult is a tool call's outcome: Failed, and Exit when the
	// agent records an exit status.
	ItemResult = "result"
	// ItemEnd: the agent ended its turn (claude's end_turn, codex's
	// task_complete, copilot's turn_end).
	ItemEnd = "end"
	// ItemUser: the agent took a message of its user (Text): a new turn.
	ItemUser = "user"
	// ItemContext: the context window in use after a request (Context of
	// Window tokens; Window 0: unknown), as Usage counts it.
	ItemContext = "context"
)

// TurnItem is one thing a transcript line says of the agent's turn.
type TurnItem struct {
	Kind string
	Text string
	// ID ties a tool call to its result.
	ID     string
	Failed bool
	// Exit is the exit status a result records (nil: none recorded).
	Exit *int
	// Name and Input are a tool call's tool and its input (JSON, as the
	// agent recorded it); Output is a result's text. Only claude's and
	// codex's are read (the memory's extraction reads them).
	Name, Input, Output string
	// Context and Window are an ItemContext's tokens.
	Context, Window int64
}

// TurnItems returns, in order, what one transcript line says of the
// agent's turn: its texts, tool calls, their results, and the turn's end.
// An agent whose tool calls thatch does not read gives its texts only.
// Like Replies, it never fails: a line it cannot read gives nil.
func (a *Agent) TurnItems(line []byte) []TurnItem {
	if len(line) == 0 || len(line) > MaxLine {
		return nil
	}
	if p, ok := a.userPrompt(line); ok {
		return []TurnItem{{Kind: ItemUser, Text: p}}
	}
	switch a.format {
	case formatClaude:
		return claudeItems(line)
	case formatCodex:
		return codexItems(line)
	case formatCopilot:
		var l copilotLine
		if json.Unmarshal(line, &l) == nil && l.Type == "assistant.turn_end" && l.AgentID == "" {
			return []TurnItem{{Kind: ItemEnd}}
		}
	}
	var out []TurnItem
	for _, t := range a.Replies(line) {
		out = append(out, TurnItem{Kind: ItemText, Text: t})
	}
	return out
}

func claudeItems(line []byte) []TurnItem {
	var l struct {
		claudeLine
		Message *struct {
			Content    json.RawMessage `json:"content"`
			StopReason string          `json:"stop_reason"`
			Usage      *claudeUsage    `json:"usage"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &l) != nil || l.IsSidechain || l.Message == nil || (l.Type != "assistant" && l.Type != "user") {
		return nil
	}
	var used []TurnItem
	if u := l.Message.Usage; u != nil && l.Type == "assistant" {
		used = []TurnItem{{Kind: ItemContext, Context: u.context(), Window: claudeWindow}}
	}
	raw := l.Message.Content
	if len(raw) > 0 && raw[0] == '"' {
		if l.Type != "assistant" {
			return nil
		}
		return append(withEnd(textItems(blockTexts(raw, "text")), l.Message.StopReason == "end_turn"), used...)
	}
	var blocks []struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		IsError   bool            `json:"is_error"`
		Content   json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return used
	}
	var out []TurnItem
	for _, b := range blocks {
		switch {
		case l.Type == "assistant" && b.Type == "text" && !blank(b.Text):
			out = append(out, TurnItem{Kind: ItemText, Text: b.Text})
		case l.Type == "assistant" && b.Type == "tool_use" && b.Name != "":
			out = append(out, TurnItem{Kind: ItemTool, ID: b.ID, Text: toolLine(b.Name, argSummary(b.Input)), Name: b.Name, Input: string(b.Input)})
		case l.Type == "user" && b.Type == "tool_result" && b.ToolUseID != "":
			out = append(out, TurnItem{Kind: ItemResult, ID: b.ToolUseID, Failed: b.IsError, Output: resultText(b.Content)})
		}
	}
	return append(withEnd(out, l.Type == "assistant" && l.Message.StopReason == "end_turn"), used...)
}

func codexItems(line []byte) []TurnItem {
	var l struct {
		Type    string `json:"type"`
		Payload *struct {
			Type      string          `json:"type"`
			CallID    string          `json:"call_id"`
			Output    json.RawMessage `json:"output"`
			Name      string          `json:"name"`
			Namespace string          `json:"namespace"`
			Arguments string          `json:"arguments"`
			Input     string          `json:"input"`
			Info      *codexTokens    `json:"info"`
		} `json:"payload"`
	}
	if json.Unmarshal(line, &l) != nil || l.Payload == nil {
		return nil
	}
	p := l.Payload
	switch {
	case l.Type == "event_msg" && p.Type == "task_complete":
		return []TurnItem{{Kind: ItemEnd}}
	case l.Type == "event_msg" && p.Type == "token_count":
		if p.Info == nil || p.Info.Last == nil {
			return nil
		}
		return []TurnItem{{Kind: ItemContext, Context: p.Info.Last.Input, Window: p.Info.Window}}
	case l.Type != "response_item":
		return nil
	case p.Type == "function_call_output" && p.CallID != "":
		// A shell's output is a string (itself JSON with the output and
		// the exit code, in some versions); an MCP tool's, text parts.
		text := resultText(p.Output)
		r := TurnItem{Kind: ItemResult, ID: p.CallID, Output: text}
		var out struct {
			Output   *string `json:"output"`
			Metadata *struct {
				ExitCode *int `json:"exit_code"`
			} `json:"metadata"`
		}
		if json.Unmarshal([]byte(text), &out) == nil {
			if out.Output != nil {
				r.Output = *out.Output
			}
			if out.Metadata != nil && out.Metadata.ExitCode != nil {
				r.Exit = out.Metadata.ExitCode
				r.Failed = *r.Exit != 0
			}
		}
		return []TurnItem{r}
	}
	if tools := codexTools(line); len(tools) > 0 {
		var id struct {
			Payload struct {
				CallID string `json:"call_id"`
			} `json:"payload"`
		}
		_ = json.Unmarshal(line, &id)
		name := p.Name
		if p.Namespace != "" {
			name = p.Namespace + "__" + p.Name // an MCP server's tool, named as claude names them
		}
		return []TurnItem{{Kind: ItemTool, ID: id.Payload.CallID, Text: tools[0], Name: name, Input: cmp.Or(p.Arguments, p.Input)}}
	}
	return textItems(codexReplies(line))
}

func textItems(texts []string) []TurnItem {
	var out []TurnItem
	for _, t := range texts {
		out = append(out, TurnItem{Kind: ItemText, Text: t})
	}
	return out
}

func withEnd(items []TurnItem, end bool) []TurnItem {
	if end {
		items = append(items, TurnItem{Kind: ItemEnd})
	}
	return items
}

func blank(s string) bool {
	for _, r := range s {
		if r != ' ' && r != '\n' && r != '\t' && r != '\r' {
			return false
		}
	}
	return true
}

// Outcome is how a tool line shows a result: "✓", "✗", or "✗ exit N".
func (it TurnItem) Outcome() string {
	switch {
	case !it.Failed:
		return "✓"
	case it.Exit != nil:
		return "✗ exit " + strconv.Itoa(*it.Exit)
	}
	return "✗"
}

// resultText is a tool result's content as text: a string (claude's
// plain results, codex's shell output), or the texts of its parts
// (claude's text blocks, codex's MCP results); parts without text (an
// image) give none.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// LineCwd is the working directory a transcript line records ("" when it
// records none): claude writes it on every line, codex in its session's
// meta and each turn's context.
func LineCwd(line []byte) string {
	var l struct {
		Cwd     string `json:"cwd"`
		Payload *struct {
			Cwd string `json:"cwd"`
		} `json:"payload"`
	}
	if json.Unmarshal(line, &l) != nil {
		return ""
	}
	if l.Cwd == "" && l.Payload != nil {
		return l.Payload.Cwd
	}
	return l.Cwd
}
