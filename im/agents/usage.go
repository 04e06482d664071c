package agents

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strings"

	"github.com/thatch-run/thatch/config"
)

// Usage is what a session used, as its transcript records it. A count
// the agent does not record is -1 (unknown), never 0.
type Usage struct {
	// Model is the model of the newest request ("" unknown).
	Model string
	// Input, Output, CacheRead and CacheWrite are the tokens of every
	// request of the session: sent, written, read from the prompt cache,
	// written to it.
	Input, Output, CacheRead, CacheWrite int64
	// Context is the tokens of the newest request's prompt: the share of
	// the context window in use. Window is the model's window (0 unknown).
	Context, Window int64
}

// unknownUsage is a Usage of which nothing is known.
var unknownUsage = Usage{Input: -1, Output: -1, CacheRead: -1, CacheWrite: -1, Context: -1}

// claudeWindow is the context window of claude's models.
const claudeWindow = 200_000

// Usage reads what the session whose transcript is at path used: claude's
// message.usage (each message counted once, however many lines it was
// written over), codex's token_count events. Agents that record none
// give a Usage of unknowns.
func (a *Agent) Usage(path string) (Usage, error) {
	if a.format != formatClaude && a.format != formatCodex {
		return unknownUsage, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return unknownUsage, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, MaxLine)
	var r usageReader
	if a.format == formatClaude {
		r.byMessage = map[string]claudeUsage{}
	}
	for sc.Scan() {
		if a.format == formatClaude {
			r.claude(sc.Bytes())
		} else {
			r.codex(sc.Bytes())
		}
	}
	if err := sc.Err(); err != nil && err != bufio.ErrTooLong {
		return unknownUsage, fmt.Errorf("agents: read %s: %w", path, err)
	}
	return r.usage(), nil
}

type claudeUsage struct {
	Input      int64 `json:"input_tokens"`
	Output     int64 `json:"output_tokens"`
	CacheRead  int64 `json:"cache_read_input_tokens"`
	CacheWrite int64 `json:"cache_creation_input_tokens"`
}

// context is the request's prompt: what it sent, read from the cache and
// wrote to it.
func (u claudeUsage) context() int64 { return u.Input + u.CacheRead + u.CacheWrite }

// codexTokens is the info of codex's token_count event.
type codexTokens struct {
	Total  *codexUsage `json:"total_token_usage"`
	Last   *codexUsage `json:"last_token_usage"`
	Window int64       `json:"model_context_window"`
}

type codexUsage struct {
	Input  int64 `json:"input_tokens"`
	Cached int64 `json:"cached_input_tokens"`
	Output int64 `json:"output_tokens"`
}

// usageReader folds a transcript's lines into a Usage.
type usageReader struct {
	byMessage map[string]claudeUsage // claude: the newest usage of each message id
	order     []string
	last      *claudeUsage
	model     string
	// codex: the newest totals and the newest request's.
	total, latest *codexUsage
	window        int64
}

func (r *usageReader) claude(line []byte) {
	var l struct {
		Type        string `json:"type"`
		IsSidechain bool   `json:"isSidechain"`
		Message     *struct {
			ID    string       `json:"id"`
			Model string       `json:"model"`
			Usage *claudeUsage `json:"usage"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &l) != nil || l.Type != "assistant" || l.Message == nil || l.Message.Usage == nil {
		return
	}
	m := l.Message
	id := m.ID
	if id == "" {
		id = fmt.Sprintf("line-%d", len(r.order))
	}
	if _, seen := r.byMessage[id]; !seen {
		r.order = append(r.order, id)
	}
	r.byMessage[id] = *m.Usage
	if l.IsSidechain {
		// A sub-agent's requests are spent like the session's own, but
		// their prompts are in a context of their own.
		return
	}
	u := *m.Usage
	r.last = &u
	if m.Model != "" && !strings.HasPrefix(m.Model, "<") {
		r.model = m.Model
	}
}

func (r *usageReader) codex(line []byte) {
	var l struct {
		Type    string `json:"type"`
		Payload *struct {
			Type  string       `json:"type"`
			Model string       `json:"model"`
			Info  *codexTokens `json:"info"`
		} `json:"payload"`
	}
	if json.Unmarshal(line, &l) != nil || l.Payload == nil {
		return
	}
	p := l.Payload
	switch {
	case l.Type == "turn_context" && p.Model != "":
		r.model = p.Model
	case l.Type == "event_msg" && p.Type == "token_count" && p.Info != nil:
		if p.Info.Total != nil {
			r.total = p.Info.Total
		}
		if p.Info.Last != nil {
			r.latest = p.Info.Last
		}
		if p.Info.Window > 0 {
			r.window = p.Info.Window
		}
	}
}

func (r *usageReader) usage() Usage {
	u := unknownUsage
	u.Model = r.model
	switch {
	case r.byMessage != nil && len(r.order) > 0:
		u.Input, u.Output, u.CacheRead, u.CacheWrite = 0, 0, 0, 0
		for _, id := range r.order {
			m := r.byMessage[id]
			u.Input += m.Input
			u.Output += m.Output
			u.CacheRead += m.CacheRead
			u.CacheWrite += m.CacheWrite
		}
		u.Context = r.last.context()
		u.Window = claudeWindow
	case r.total != nil:
		// codex counts cached input within input; it records no cache
		// writes.
		u.Input, u.Output, u.CacheRead = r.total.Input-r.total.Cached, r.total.Output, r.total.Cached
		if r.latest != nil {
			u.Context = r.latest.Input
		}
		u.Window = r.window
	}
	return u
}

// Price is what a model costs, in US dollars per million tokens.
type Price = config.Price

// Prices are prices by the start of models' names: the longest that
// matches a model wins.
type Prices map[string]Price

// DefaultPrices are the list prices of the models in use, for an
// estimate only (im.prices adds to them and overrides them).
func DefaultPrices() Prices { return maps.Clone(prices) }

// prices are list prices of the models in use, by the start of their
// names, the longest that matches wins. They are for an estimate only.
var prices = Prices{
	"claude-opus-4-5":   {Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	"claude-opus-4":     {Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
	"claude-sonnet-4":   {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	"claude-3-7-sonnet": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	"claude-haiku-4-5":  {Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25},
	"claude-3-5-haiku":  {Input: 0.8, Output: 4, CacheRead: 0.08, CacheWrite: 1},
	"gpt-5":             {Input: 1.25, Output: 10, CacheRead: 0.125},
	"gpt-5-mini":        {Input: 0.25, Output: 2, CacheRead: 0.025},
	"o4-mini":           {Input: 1.1, Output: 4.4, CacheRead: 0.275},
}

// Cost estimates what u cost at the model's price in table; ok is false
// when the model or a count is unknown.
func (u Usage) Cost(table Prices) (dollars float64, ok bool) {
	best := ""
	for name := range table {
		if strings.HasPrefix(u.Model, name) && len(name) > len(best) {
			best = name
		}
	}
	if best == "" || u.Input < 0 || u.Output < 0 {
		return 0, false
	}
	p := table[best]
	m := func(n int64, per float64) float64 { return float64(max(n, 0)) * per / 1e6 }
	return m(u.Input, p.Input) + m(u.Output, p.Output) + m(u.CacheRead, p.CacheRead) + m(u.CacheWrite, p.CacheWrite), true
}
