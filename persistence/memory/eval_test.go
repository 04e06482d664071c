package memory

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The evaluation set in testdata/eval is a project's memories as agents
// write them (commands, paths, error messages, decisions, preferences) and
// queries as people and agents ask them (exact identifiers, file paths,
// error strings, paraphrases), each with the labels of the memories that
// answer it. bench/recall.go reports the same numbers in `make bench`.

const evalStore = "acme/widget"

type evalMemory struct {
	Label   string `json:"label"`
	Content string `json:"content"`
}

type evalQuery struct {
	Query    string   `json:"query"`
	Relevant []string `json:"relevant"`
}

func readJSONL[T any](t testing.TB, name string) []T {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "eval", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// evalEnv is a store holding the evaluation memories, and the queries.
func evalEnv(t testing.TB) (*env, []evalQuery) {
	t.Helper()
	mems := readJSONL[evalMemory](t, "memories.jsonl")
	qs := readJSONL[evalQuery](t, "queries.jsonl")
	if len(mems) < 200 || len(qs) < 60 {
		t.Fatalf("evaluation set has %d memories and %d queries, want >= 200 and >= 60", len(mems), len(qs))
	}
	e := newEnv(t, Options{})
	labels := map[string]bool{}
	for _, m := range mems {
		e.remember(RememberInput{Store: evalStore, Label: m.Label, Content: m.Content})
		labels[m.Label] = true
	}
	for _, q := range qs {
		for _, l := range q.Relevant {
			if !labels[l] {
				t.Fatalf("query %q names unknown memory %q", q.Query, l)
			}
		}
	}
	return e, qs
}

// recallAt is the mean over qs of the share of each query's relevant
// memories among its top k hits.
func recallAt(t testing.TB, e *env, qs []evalQuery, mode RecallMode, k int, miss func(evalQuery, []Hit)) float64 {
	t.Helper()
	sum := 0.0
	for _, q := range qs {
		hits := e.recall(RecallInput{Query: q.Query, Stores: SessionStores(evalStore), Limit: k, Mode: mode})
		found := 0
		for _, h := range hits {
			for _, l := range q.Relevant {
				if h.Entry.Label == l {
					found++
				}
			}
		}
		r := float64(found) / float64(len(q.Relevant))
		if r < 1 && miss != nil {
			miss(q, hits)
		}
		sum += r
	}
	return sum / float64(len(qs))
}

func TestRecallEvaluation(t *testing.T) {
	e, qs := evalEnv(t)
	got := map[RecallMode]float64{}
	for _, mode := range []RecallMode{RecallVector, RecallText, RecallHybrid} {
		got[mode] = recallAt(t, e, qs, mode, 5, func(q evalQuery, hits []Hit) {
			var top []string
			for _, h := range hits {
				top = append(top, h.Entry.Label)
			}
			t.Logf("%s missed %q (want %q): got %q", mode, q.Query, q.Relevant, top)
		})
	}
	t.Logf("recall@5 over %d queries: vector %.3f, text %.3f, hybrid %.3f", len(qs), got[RecallVector], got[RecallText], got[RecallHybrid])
	if h := got[RecallHybrid]; h < 0.9 || h <= got[RecallVector] || h <= got[RecallText] {
		t.Errorf("hybrid recall@5 %.3f: want >= 0.9 and above vector %.3f and text %.3f", h, got[RecallVector], got[RecallText])
	}
	// The default mode is the hybrid.
	if d := recallAt(t, e, qs, "", 5, nil); d != got[RecallHybrid] {
		t.Errorf("default mode recall@5 %.3f, hybrid %.3f", d, got[RecallHybrid])
	}
}
