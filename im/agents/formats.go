package agents

import (
	"encoding/json"
	"strings"
)

// MaxLine is the longest transcript line Replies reads; a longer one (a
// huge tool result, an image) is skipped whole.
const MaxLine = 1 << 20

// Replies returns the assistant's text in one transcript line, one string
// per text block, in order. User lines, tool calls and results, reasoning,
// metadata, malformed JSON and lines over MaxLine give nil: a relay
// following a transcript calls this on every line and must never stop on
// one.
func (a *Agent) Replies(line []byte) []string {
	if len(line) == 0 || len(line) > MaxLine {
		return nil
	}
	switch a.format {
	case formatClaude:
		return claudeReplies(line)
	case formatCodex:
		return codexReplies(line)
	case formatCopilot:
		return copilotReplies(line)
	}
	return nil
}

// claudeLine is the part of a Claude Code transcript line the readers use.
type claudeLine struct {
	Type        string `json:"type"`
	IsSidechain bool   `json:"isSidechain"`
	IsMeta      bool   `json:"isMeta"`
	Message     *struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// blockTexts reads content that is either a string or an array of blocks,
// keeping the non-blank text of blocks whose type is one of kinds.
func blockTexts(raw json.RawMessage, kinds ...string) []string {
	if len(raw) == 0 {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil || strings.TrimSpace(s) == "" {
			return nil
		}
		return []string{s}
	}
	var blocks []textBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return nil
	}
	var out []string
	for _, b := range blocks {
		if strings.TrimSpace(b.Text) == "" {
			continue
		}
		for _, k := range kinds {
			if b.Type == k {
				out = append(out, b.Text)
				break
			}
		}
	}
	return out
}

func claudeReplies(line []byte) []string {
	var l claudeLine
	if json.Unmarshal(line, &l) != nil || l.Type != "assistant" || l.IsSidechain || l.Message == nil {
		return nil
	}
	return blockTexts(l.Message.Content, "text")
}

// codexLine is one line of a codex rollout file: {timestamp, type, payload}.
type codexLine struct {
	Type    string `json:"type"`
	Payload *struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Message string          `json:"message"`
		ID      string          `json:"id"`
		Cwd     string          `json:"cwd"`
	} `json:"payload"`
}

func codexReplies(line []byte) []string {
	var l codexLine
	if json.Unmarshal(line, &l) != nil || l.Type != "response_item" || l.Payload == nil {
		return nil
	}
	if l.Payload.Type != "message" || l.Payload.Role != "assistant" {
		return nil
	}
	return blockTexts(l.Payload.Content, "output_text")
}

// copilotLine is one event of a Copilot CLI events.jsonl: {type, data, id,
// timestamp, parentId, agentId}. agentId is set on a sub-agent's events
// (absent for the main agent's); parentToolCallId is the older, now
// deprecated, mark of the same.
type copilotLine struct {
	Type    string `json:"type"`
	AgentID string `json:"agentId"`
	Data    *struct {
		Content                 json.RawMessage `json:"content"`
		SessionID               string          `json:"sessionId"`
		ParentToolCallID        string          `json:"parentToolCallId"`
		IsAutopilotContinuation bool            `json:"isAutopilotContinuation"`
		Context                 *struct {
			Cwd string `json:"cwd"`
		} `json:"context"`
	} `json:"data"`
}

// mainAgent reports an event of the session's own agent, not of a
// sub-agent it runs.
func (l *copilotLine) mainAgent() bool {
	return l.AgentID == "" && l.Data != nil && l.Data.ParentToolCallID == ""
}

func copilotReplies(line []byte) []string {
	var l copilotLine
	if json.Unmarshal(line, &l) != nil || l.Type != "assistant.message" || !l.mainAgent() {
		return nil
	}
	return blockTexts(l.Data.Content, "text")
}

// userPrompt returns the text a person typed, if line records one, for
// the picker's FirstPrompt. Wrapped context that the CLIs inject as user
// turns (codex's <environment_context>, claude's <command-name> and other
// tags) is not a prompt.
func (a *Agent) userPrompt(line []byte) (string, bool) {
	var texts []string
	switch a.format {
	case formatClaude:
		var l claudeLine
		if json.Unmarshal(line, &l) != nil || l.Type != "user" || l.IsSidechain || l.IsMeta || l.Message == nil {
			return "", false
		}
		texts = blockTexts(l.Message.Content, "text")
	case formatCodex:
		var l codexLine
		if json.Unmarshal(line, &l) != nil || l.Payload == nil {
			return "", false
		}
		switch {
		case l.Type == "event_msg" && l.Payload.Type == "user_message":
			texts = []string{l.Payload.Message}
		case l.Type == "response_item" && l.Payload.Type == "message" && l.Payload.Role == "user":
			texts = blockTexts(l.Payload.Content, "input_text")
		}
	case formatCopilot:
		var l copilotLine
		if json.Unmarshal(line, &l) != nil || l.Type != "user.message" || !l.mainAgent() || l.Data.IsAutopilotContinuation {
			return "", false
		}
		texts = blockTexts(l.Data.Content, "text")
	}
	for _, t := range texts {
		t = strings.TrimSpace(t)
		if t != "" && !strings.HasPrefix(t, "<") {
			return t, true
		}
	}
	return "", false
}

// PromptWidth is how many characters of a session's first prompt Sessions
// keeps, enough for one line of a picker.
const PromptWidth = 80

// cutPrompt folds whitespace to single spaces and cuts s to PromptWidth
// runes, marking a cut with an ellipsis.
func cutPrompt(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= PromptWidth {
		return s
	}
	return string(r[:PromptWidth-1]) + "…"
}
