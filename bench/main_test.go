package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// protoactor's process-wide helpers that outlive one ActorSystem.
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.(*ActorSystem).Shutdown"),
		goleak.IgnoreAnyFunction("github.com/lithammer/shortuuid/v4.init"),
	)
}

// tinyArgs run every benchmark on tiny data: the tests check the harness,
// not the numbers.
var tinyArgs = []string{"-quick", "-scale", "0.02"}

// runTiny runs the harness with TMPDIR pointed at a fresh folder and returns
// the records it wrote, its table and that folder.
func runTiny(t *testing.T, extra ...string) ([]Record, string, string) {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	out := filepath.Join(t.TempDir(), "bench.json")
	var stdout, stderr bytes.Buffer
	args := append(append(append([]string(nil), tinyArgs...), "-out", out), extra...)
	if err := run(args, &stdout, &stderr); err != nil {
		t.Fatalf("run %v: %v\nstderr:\n%s", args, err, stderr.String())
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no JSON file: %v", err)
	}
	return checkWellFormed(t, raw), stdout.String(), tmp
}

// checkWellFormed decodes the JSON file and checks every record's shape.
func checkWellFormed(t *testing.T, raw []byte) []Record {
	t.Helper()
	var generic []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatalf("JSON file is not an array of objects: %v\n%s", err, raw)
	}
	var recs []Record
	if err := json.Unmarshal(raw, &recs); err != nil {
		t.Fatalf("records do not decode: %v", err)
	}
	keys := []string{"name", "value", "unit", "baseline", "ratio", "target", "pass", "notes"}
	seen := map[string]bool{}
	for i, r := range recs {
		for _, k := range keys {
			if _, ok := generic[i][k]; !ok {
				t.Errorf("record %d (%s) has no key %q", i, r.Name, k)
			}
		}
		if len(generic[i]) != len(keys) {
			t.Errorf("record %d (%s) has keys %v, want exactly %v", i, r.Name, mapKeys(generic[i]), keys)
		}
		if r.Name == "" || r.Unit == "" {
			t.Errorf("record %d has an empty name or unit: %+v", i, r)
		}
		if seen[r.Name] {
			t.Errorf("record name %q appears twice", r.Name)
		}
		seen[r.Name] = true
		if (r.Target == "") != (r.Pass == nil) {
			t.Errorf("%s: target %q but pass %v: pass must be set exactly when there is a target", r.Name, r.Target, r.Pass)
		}
		if r.Ratio != nil && (r.Baseline == nil || *r.Baseline == 0) {
			t.Errorf("%s: ratio without a baseline", r.Name)
		}
		if r.Baseline != nil && *r.Baseline != 0 && r.Ratio == nil {
			t.Errorf("%s: baseline without a ratio", r.Name)
		}
	}
	return recs
}

func mapKeys(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func names(recs []Record) []string {
	var ns []string
	for _, r := range recs {
		ns = append(ns, r.Name)
	}
	return ns
}

func TestQuickRunMeasuresEverythingAndCleansUp(t *testing.T) {
	recs, table, tmp := runTiny(t)
	got := names(recs)
	for _, want := range []string{
		"journal.durable.c1", "journal.durable.c64", "journal.durable.c1000", "journal.durable.c1000.vs_batched_limit",
		"replay.raw", "replay.decoded",
		"recovery.cold", "recovery.cold.open", "recovery.cold.start", "recovery.cold.rebuild",
		"memory.passivated", "memory.live",
		"entity.durable.c1", "entity.durable.c1000",
		"soak.heap", "soak.rss", "soak.goroutines",
		"sweep.strand_plan.vs_limit",
		"feishu.webhook_answer", "feishu.ws_event_to_keys",
		"commands.screenshot_render", "commands.prompt_to_buttons", "commands.watch_cost",
		"redact.tool_roundtrip.p99",
		"recall.at5.hybrid", "recall.hybrid.p99", "mcp-recall.p99", "mcp-recall.overhead",
		"ui.list.p99",
		"cluster.update_to_keys.remote", "cluster.poller_failover",
		"memory-replication.lag.p99",
		"run.wall",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("no record %q in %v", want, got)
		}
	}
	// Without the real claude installed, agent-memory-overhead says so.
	if !slices.Contains(got, "agent-memory-overhead.turn") && !slices.Contains(got, "agent-memory-overhead.skipped") {
		t.Errorf("no record %q (nor %q) in %v", "agent-memory-overhead.turn", "agent-memory-overhead.skipped", got)
	}
	for _, r := range recs {
		if !strings.Contains(table, r.Name) {
			t.Errorf("table does not show %s:\n%s", r.Name, table)
		}
		if strings.HasPrefix(r.Name, "journal.") && (r.Value <= 0 || r.Baseline == nil || *r.Baseline <= 0) {
			t.Errorf("%s measured nothing: value %v baseline %v", r.Name, r.Value, r.Baseline)
		}
	}
	for _, col := range []string{"metric", "value", "unit", "baseline", "ratio", "target", "pass"} {
		if !strings.Contains(table, col) {
			t.Errorf("table header lacks %q:\n%s", col, table)
		}
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("the run left %d entries in TMPDIR, e.g. %s", len(left), left[0].Name())
	}
}

func TestOnlyRunsTheNamedBenchmarks(t *testing.T) {
	recs, _, _ := runTiny(t, "-only", "replay")
	for _, r := range recs {
		if !strings.HasPrefix(r.Name, "replay.") && r.Name != "run.wall" {
			t.Errorf("-only replay produced %s", r.Name)
		}
	}
	if !slices.Contains(names(recs), "replay.decoded") {
		t.Errorf("-only replay produced %v", names(recs))
	}
}

func TestBadArgumentsFailBeforeMeasuring(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-only", "journal,nope"}, "unknown benchmark"},
		{[]string{"-scale", "0"}, "-scale"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		out := filepath.Join(t.TempDir(), "bench.json")
		var stdout, stderr bytes.Buffer
		err := run(append(c.args, "-out", out), &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run %v: error %v, want one containing %q", c.args, err, c.want)
		}
		if _, statErr := os.Stat(out); statErr == nil {
			t.Errorf("run %v wrote %s despite bad arguments", c.args, out)
		}
	}
}

func TestTargetsDecidePass(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		name   string
		rec    Record
		target string
		pass   *bool
	}{
		{"no target", newRecord("x", 5, "u", ""), "", nil},
		{"at least met", newRecord("x", 5, "u", "").atLeast(5), ">= 5", &yes},
		{"at least missed", newRecord("x", 4.9, "u", "").atLeast(5), ">= 5", &no},
		{"at most met", newRecord("x", 500, "ms", "").atMost(500), "<= 500", &yes},
		{"at most missed", newRecord("x", 501, "ms", "").atMost(500), "<= 500", &no},
		{"both met", newRecord("x", 400_000, "u", "").withBaseline(20_000).atLeast(300_000).ratioAtLeast(10),
			">= 300,000 and >= 10x baseline", &yes},
		{"ratio missed", newRecord("x", 400_000, "u", "").withBaseline(50_000).atLeast(300_000).ratioAtLeast(10),
			">= 300,000 and >= 10x baseline", &no},
		{"value missed, ratio met", newRecord("x", 200_000, "u", "").withBaseline(1_000).atLeast(300_000).ratioAtLeast(10),
			">= 300,000 and >= 10x baseline", &no},
		{"ratio without baseline", newRecord("x", 1, "u", "").ratioAtLeast(10), ">= 10x baseline", &no},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.rec.Target != c.target {
				t.Errorf("target %q, want %q", c.rec.Target, c.target)
			}
			if (c.rec.Pass == nil) != (c.pass == nil) || (c.pass != nil && *c.rec.Pass != *c.pass) {
				t.Errorf("pass %v, want %v", c.rec.Pass, c.pass)
			}
		})
	}
}
