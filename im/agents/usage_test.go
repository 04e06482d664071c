package agents_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thatch-run/thatch/im/agents"
)

func usageOf(t *testing.T, agent, transcript string) agents.Usage {
	t.Helper()
	reg, err := agents.NewRegistry(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := reg.Get(agent)
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(transcript), 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := a.Usage(path)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// claude writes one message over several lines, each with the message's
// usage so far: each message counts once, with its newest usage; the
// context in use is the newest request's prompt, cache included.
func TestClaudeUsageCountsEachMessageOnce(t *testing.T) {
	u := usageOf(t, agents.Claude, strings.Join([]string{
		`{"type":"user","message":{"role":"user","content":"hi"}}`,
		`{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-4-5","usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":1000,"cache_creation_input_tokens":200}}}`,
		`{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-4-5","usage":{"input_tokens":10,"output_tokens":40,"cache_read_input_tokens":1000,"cache_creation_input_tokens":200}}}`,
		`{"type":"assistant","message":{"id":"m2","model":"claude-sonnet-4-5","usage":{"input_tokens":5,"output_tokens":60,"cache_read_input_tokens":1200,"cache_creation_input_tokens":0}}}`,
		`not json`,
	}, "\n")+"\n")
	want := agents.Usage{Model: "claude-sonnet-4-5", Input: 15, Output: 100, CacheRead: 2200, CacheWrite: 200, Context: 1205, Window: 200_000}
	if u != want {
		t.Fatalf("usage %+v, want %+v", u, want)
	}
	cost, ok := u.Cost(agents.DefaultPrices())
	if want := (15*3 + 100*15 + 2200*0.3 + 200*3.75) / 1e6; !ok || math.Abs(cost-want) > 1e-12 {
		t.Fatalf("cost %v %v, want %v", cost, ok, want)
	}
}

// codex records running totals (cached input within input) and the
// model's window; a session with none, and an agent that records none,
// are unknown, never 0.
func TestCodexUsageAndUnknowns(t *testing.T) {
	u := usageOf(t, agents.Codex, strings.Join([]string{
		`{"type":"turn_context","payload":{"model":"gpt-5-codex"}}`,
		`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":9000,"cached_input_tokens":4000,"output_tokens":300},"last_token_usage":{"input_tokens":6000,"cached_input_tokens":4000,"output_tokens":100},"model_context_window":272000}}}`,
		`{"type":"event_msg","payload":{"type":"token_count","info":null}}`,
	}, "\n")+"\n")
	want := agents.Usage{Model: "gpt-5-codex", Input: 5000, Output: 300, CacheRead: 4000, CacheWrite: -1, Context: 6000, Window: 272000}
	if u != want {
		t.Fatalf("usage %+v, want %+v", u, want)
	}
	none := usageOf(t, agents.Codex, `{"type":"turn_context","payload":{"model":"gpt-5"}}`+"\n")
	if none.Input != -1 || none.Output != -1 || none.Context != -1 {
		t.Fatalf("a session with no counts: %+v", none)
	}
	if _, ok := none.Cost(agents.DefaultPrices()); ok {
		t.Fatal("a cost for unknown counts")
	}
	if c := usageOf(t, agents.Copilot, `{"type":"assistant.message","data":{"content":"hi"}}`+"\n"); c.Input != -1 || c.Model != "" {
		t.Fatalf("copilot: %+v", c)
	}
}

// The context in use that a turn's lines tell (the live turn and the
// board read it line by line) is the newest, as /usage reads it from the
// whole transcript; a line of claude's sub-agent, and a count of codex's
// with no info, tell none.
func TestContextItemsAgreeWithUsage(t *testing.T) {
	reg, err := agents.NewRegistry(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for agent, lines := range map[string][]string{
		agents.Claude: {
			`{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":1000,"cache_creation_input_tokens":200}}}`,
			`{"type":"assistant","message":{"id":"m2","content":"done","stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":60,"cache_read_input_tokens":1200}}}`,
			`{"type":"assistant","isSidechain":true,"message":{"id":"m3","content":"x","usage":{"input_tokens":99999}}}`,
		},
		agents.Codex: {
			`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":9000,"cached_input_tokens":4000,"output_tokens":300},"last_token_usage":{"input_tokens":6000,"cached_input_tokens":4000,"output_tokens":100},"model_context_window":272000}}}`,
			`{"type":"event_msg","payload":{"type":"token_count","info":null}}`,
		},
	} {
		a, _ := reg.Get(agent)
		var told []agents.TurnItem
		for _, l := range lines {
			for _, it := range a.TurnItems([]byte(l)) {
				if it.Kind == agents.ItemContext {
					told = append(told, it)
				}
			}
		}
		path := filepath.Join(t.TempDir(), "s.jsonl")
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		u, err := a.Usage(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(told); n == 0 || told[n-1].Context != u.Context || told[n-1].Window != u.Window || n != map[string]int{agents.Claude: 2, agents.Codex: 1}[agent] {
			t.Fatalf("%s: told %+v; /usage reads %d of %d", agent, told, u.Context, u.Window)
		}
	}
}
