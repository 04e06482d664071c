package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/persistence/memory"
)

func init() {
	register(Bench{
		Name:  "recall",
		Doc:   "memory recall quality (recall@5 of vector, text and hybrid ranking on persistence/memory/testdata/eval) and hybrid recall p99 at 100,000 memories",
		Order: 61,
		Run:   benchRecall,
	})
}

const (
	// Targets of the full-text recall issue.
	recallHybridTarget = 0.9 // recall@5, and above both other modes
	recallP99Target    = 20  // ms, hybrid recall p99 at 100,000 memories
	evalStore          = "acme/widget"
)

// evalDir is persistence/memory/testdata/eval of the source tree this file
// was built from: the evaluation set is not copied into the binary.
func evalDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("bench: cannot locate the source tree for the evaluation set")
	}
	return filepath.Join(filepath.Dir(file), "..", "persistence", "memory", "testdata", "eval"), nil
}

type evalQuery struct {
	Query    string   `json:"query"`
	Relevant []string `json:"relevant"`
}

func readJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("bench: %s: %w", path, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

func benchRecall(c *Config) ([]Record, error) {
	recs, err := evalRecall(c)
	if err != nil {
		return nil, err
	}
	lat, err := recallLatency(c)
	if err != nil {
		return nil, err
	}
	return append(recs, lat...), nil
}

// evalRecall loads the evaluation memories into a fresh store and reports
// recall@5 (the mean share of each query's relevant memories in its top 5)
// for each ranking.
func evalRecall(c *Config) ([]Record, error) {
	dir, err := evalDir()
	if err != nil {
		return nil, err
	}
	mems, err := readJSONL[struct{ Label, Content string }](filepath.Join(dir, "memories.jsonl"))
	if err != nil {
		return nil, err
	}
	qs, err := readJSONL[evalQuery](filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		return nil, err
	}
	tmp, remove, err := c.TempDir("recall-eval")
	if err != nil {
		return nil, err
	}
	defer remove()
	st, err := persistence.Open(tmp, persistence.Options{NoSync: true})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	mem, err := memory.Open(st, memory.Options{Now: func() time.Time { return memNow }})
	if err != nil {
		return nil, err
	}
	defer mem.Close()
	ctx := context.Background()
	for _, m := range mems {
		if _, err := mem.Remember(ctx, memory.RememberInput{Store: evalStore, Label: m.Label, Content: m.Content}); err != nil {
			return nil, err
		}
	}
	got := map[memory.RecallMode]float64{}
	for _, mode := range []memory.RecallMode{memory.RecallVector, memory.RecallText, memory.RecallHybrid} {
		sum := 0.0
		for _, q := range qs {
			hits, err := mem.Recall(ctx, memory.RecallInput{Query: q.Query, Stores: memory.SessionStores(evalStore), Limit: 5, Mode: mode})
			if err != nil {
				return nil, err
			}
			found := 0
			for _, h := range hits {
				for _, l := range q.Relevant {
					if h.Entry.Label == l {
						found++
					}
				}
			}
			sum += float64(found) / float64(len(q.Relevant))
		}
		got[mode] = sum / float64(len(qs))
	}
	notes := fmt.Sprintf("%d memories, %d queries of persistence/memory/testdata/eval; mean share of each query's relevant memories in the top 5", len(mems), len(qs))
	v, t, h := got[memory.RecallVector], got[memory.RecallText], got[memory.RecallHybrid]
	return []Record{
		newRecord("recall.at5.vector", v, "recall@5", notes+"; cosine of the offline embedder plus the exact-word boost (recall before full-text ranking)"),
		newRecord("recall.at5.text", t, "recall@5", notes+"; BM25 over label and content"),
		newRecord("recall.at5.hybrid", h, "recall@5", notes+"; reciprocal rank fusion (k=60) of the vector and BM25 rankings, the default").
			addTarget(fmt.Sprintf(">= %v and above vector and text", recallHybridTarget), h >= recallHybridTarget && h > v && h > t),
	}, nil
}

// recallLatency builds the memstore bench's 100,000 synthetic memories and
// times recalls in each mode over SessionStores, one in four on a branch.
func recallLatency(c *Config) ([]Record, error) {
	n := c.Count(100_000, 10_000)
	dir, remove, err := c.TempDir("recall")
	if err != nil {
		return nil, err
	}
	defer remove()
	g := newTextGen(43)
	entries := memFixture(g, n)
	c.Logf("recall: writing %d memories through Remember (no fsync, bulk load)", n)
	if err := buildMemories(dir, entries, 2); err != nil {
		return nil, err
	}
	st, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	t0 := time.Now()
	mem, err := memory.Open(st, memory.Options{Now: func() time.Time { return memNow }})
	if err != nil {
		return nil, err
	}
	defer mem.Close()
	open := time.Since(t0)
	if err := checkMemories(mem, entries, g); err != nil {
		return nil, err
	}
	nq := c.Count(1000, 300)
	qs := memQueries(g, entries, nq)
	ctx := context.Background()
	stores := memory.SessionStores(memStore)
	lat := map[memory.RecallMode]latencies{}
	for _, mode := range []memory.RecallMode{memory.RecallVector, memory.RecallText, memory.RecallHybrid} {
		c.Logf("recall: %d %s recalls", nq, mode)
		var err error
		lat[mode], err = timed(nq, func(i int) error {
			in := memory.RecallInput{Query: qs[i], Stores: stores, Limit: 5, Mode: mode}
			if i%4 == 0 {
				in.Branch = "b3"
			}
			_, err := mem.Recall(ctx, in)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	mode := fmt.Sprintf("%d memories", n)
	if c.Quick {
		mode += " (QUICK MODE: the target is set for 100,000)"
	}
	h := lat[memory.RecallHybrid]
	return []Record{
		newRecord("recall.hybrid.p99", ms(h.p(99)), "ms",
			fmt.Sprintf("%s in %q as the memstore bench writes them, reopened from disk (open with the text index built from the entries: %v); %d recalls over SessionStores, limit 5, 1 in 4 on a branch, each ending with the fsync'd write of recall stats; hybrid %v; vector alone %v; text alone %v",
				mode, memStore, open.Round(time.Millisecond), nq, h, lat[memory.RecallVector], lat[memory.RecallText])).atMost(recallP99Target),
	}, nil
}
