package memory

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thatch-run/thatch/persistence"
)

// The benchmarks share one store of 100,000 memories on disk (synced
// writes, as in production), built once per test binary with bulkLoad and
// then reopened so the index is loaded the way Open loads it. Each reports
// the 99th percentile latency of one operation as "p99-ms".

const (
	benchEntries = 100000
	benchStore   = "bench/repo"
)

var benchFix struct {
	once    sync.Once
	dir     string
	st      *persistence.Store
	ms      *Store
	c       *corpus
	entries []Entry
	err     error
}

func benchStoreFixture(b *testing.B) *Store {
	b.Helper()
	f := &benchFix
	f.once.Do(func() {
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		f.dir, f.err = os.MkdirTemp("", "thatch-memory-bench-")
		if f.err != nil {
			return
		}
		f.c = newCorpus(42)
		f.entries = corpusEntries(f.c, benchStore, benchEntries, now)
		for i := range f.entries {
			e := &f.entries[i]
			// A year of history; one in ten on a branch; one in fifty archived.
			e.Updated = now.Add(-time.Duration(f.c.rng.IntN(365*24)) * time.Hour)
			if i%10 == 0 {
				e.Branch = fmt.Sprintf("b%d", i%200/10)
			}
			e.Archived = i%50 == 1
		}
		st, err := persistence.Open(f.dir, persistence.Options{})
		if err != nil {
			f.err = err
			return
		}
		ms, err := Open(st, Options{Now: clock})
		if err != nil {
			f.err = err
			return
		}
		bulkLoad(b, ms, f.entries)
		ms.Close()
		st.Close()
		if f.st, f.err = persistence.Open(f.dir, persistence.Options{}); f.err != nil {
			return
		}
		start := time.Now()
		f.ms, f.err = Open(f.st, Options{Now: clock})
		load := time.Since(start)
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		b.Logf("fixture: %d memories loaded in %v, heap %d MB", benchEntries, load.Round(time.Millisecond), m.HeapAlloc>>20)
	})
	if f.err != nil {
		b.Fatal(f.err)
	}
	if f.ms == nil {
		b.Fatal("benchmark fixture failed to build")
	}
	return f.ms
}

func cleanupBenchFixture() {
	f := &benchFix
	if f.ms != nil {
		f.ms.Close()
		f.st.Close()
	}
	if f.dir != "" {
		os.RemoveAll(f.dir)
	}
}

func reportLatencies(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	at := func(q float64) float64 {
		return float64(ds[min(len(ds)-1, int(q*float64(len(ds))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

func benchQueries(c *corpus, entries []Entry, n int) []string {
	qs := make([]string, n)
	for i := range qs {
		switch i % 3 {
		case 0:
			qs[i] = c.text(2, 5)
		case 1:
			ws := strings.Fields(entries[c.rng.IntN(len(entries))].Content)
			qs[i] = strings.Join(ws[:min(4, len(ws))], " ")
		default:
			qs[i] = c.mutate(entries[c.rng.IntN(len(entries))].Content, 0.5)
		}
	}
	return qs
}

// BenchmarkRecall100k: one recall (the default, hybrid) over the project
// and global stores, including the synced write of recall stats. Also
// reports how much of the exact top 5 the sketch-narrowed vector search
// returns ("top5-agreement").
func BenchmarkRecall100k(b *testing.B) {
	ms := benchRecallMode(b, "")
	ctx := context.Background()
	qs := benchQueries(newCorpus(43), benchFix.entries, 60)
	ms.mu.Lock()
	defer ms.mu.Unlock()
	shards := ms.searchShards(SessionStores(benchStore))
	found, total := 0, 0
	for _, q := range qs {
		vs, err := ms.embed(ctx, []string{q})
		if err != nil {
			b.Fatal(err)
		}
		ms.rerank = benchEntries * 2
		exact := ms.search(vs[0], shards, "", 5)
		ms.rerank = defaultRerank
		approx := ms.search(vs[0], shards, "", 5)
		for _, x := range exact {
			total++
			if slices.ContainsFunc(approx, func(a scored) bool { return a.c == x.c }) {
				found++
			}
		}
	}
	b.ReportMetric(float64(found)/float64(total), "top5-agreement")
}

// BenchmarkRecallVector100k is BenchmarkRecall100k ranking by vector alone.
func BenchmarkRecallVector100k(b *testing.B) { benchRecallMode(b, RecallVector) }

// BenchmarkRecallText100k is BenchmarkRecall100k ranking by BM25 alone.
func BenchmarkRecallText100k(b *testing.B) { benchRecallMode(b, RecallText) }

// benchRecallMode times recalls in mode over the fixture, one in four on a
// branch, and reports their latencies.
func benchRecallMode(b *testing.B, mode RecallMode) *Store {
	ms := benchStoreFixture(b)
	qs := benchQueries(benchFix.c, benchFix.entries, 512)
	ctx := context.Background()
	var ds []time.Duration
	i := 0
	for b.Loop() {
		in := RecallInput{Query: qs[i%len(qs)], Stores: SessionStores(benchStore), Limit: 5, Mode: mode}
		if i%4 == 0 {
			in.Branch = "b3"
		}
		start := time.Now()
		if _, err := ms.Recall(ctx, in); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
		i++
	}
	b.StopTimer()
	reportLatencies(b, ds)
	return ms
}

// BenchmarkRemember100k: one new memory, with its duplicate search and its
// synced commit. The commit's fsync dominates p99 on most disks; see
// BenchmarkDedupCheck100k for the CPU part alone.
func BenchmarkRemember100k(b *testing.B) {
	ms := benchStoreFixture(b)
	c := newCorpus(uint64(time.Now().UnixNano()))
	ctx := context.Background()
	var ds []time.Duration
	i := 0
	for b.Loop() {
		in := RememberInput{Store: benchStore, Label: fmt.Sprintf("bench remember %d %d", time.Now().UnixNano(), i), Content: c.text(10, 60)}
		start := time.Now()
		if _, err := ms.Remember(ctx, in); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
		i++
	}
	b.StopTimer()
	reportLatencies(b, ds)
}

// BenchmarkDedupCheck100k: what Remember spends before its commit:
// embedding, sketching and finding similar entries among 100,000.
func BenchmarkDedupCheck100k(b *testing.B) {
	ms := benchStoreFixture(b)
	c := newCorpus(7)
	ctx := context.Background()
	ms.mu.Lock()
	sh := ms.shards[benchStore]
	ms.mu.Unlock()
	var ds []time.Duration
	for b.Loop() {
		text := c.text(10, 60)
		start := time.Now()
		vs, err := ms.embed(ctx, []string{text})
		if err != nil {
			b.Fatal(err)
		}
		ms.mu.Lock()
		sh.similar(vs[0], "", ms.threshold)
		ms.mu.Unlock()
		ds = append(ds, time.Since(start))
	}
	b.StopTimer()
	reportLatencies(b, ds)
}

// BenchmarkHeartbeat100k: hygiene signals of the project and global stores,
// with a branch list in which 5 of the 20 branches are gone.
func BenchmarkHeartbeat100k(b *testing.B) {
	ms := benchStoreFixture(b)
	var live []string
	for i := range 15 {
		live = append(live, fmt.Sprintf("b%d", i))
	}
	branches := func(store string) ([]string, bool) { return live, store == benchStore }
	var ds []time.Duration
	var sig map[string]Signals
	for b.Loop() {
		start := time.Now()
		var err error
		if sig, err = ms.Hygiene(SessionStores(benchStore), branches); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	b.StopTimer()
	reportLatencies(b, ds)
	if sig[benchStore].Stale == 0 || sig[benchStore].Orphaned == 0 {
		b.Fatalf("fixture raised no signal: %+v", sig)
	}
}

// BenchmarkRecallRank100k: what a hybrid recall spends before its synced
// write of recall stats: embedding the query, the vector and BM25 searches,
// their fusion and reading the top 5 entries. The fsync is the rest of
// BenchmarkRecall100k.
func BenchmarkRecallRank100k(b *testing.B) {
	ms := benchStoreFixture(b)
	qs := benchQueries(benchFix.c, benchFix.entries, 512)
	ctx := context.Background()
	var ds []time.Duration
	i := 0
	for b.Loop() {
		q := qs[i%len(qs)]
		branch := ""
		if i%4 == 0 {
			branch = "b3"
		}
		start := time.Now()
		vs, err := ms.embed(ctx, []string{q})
		if err != nil {
			b.Fatal(err)
		}
		ms.mu.Lock()
		_, err = ms.recallHybrid(vs[0], q, ms.searchShards(SessionStores(benchStore)), branch, 5)
		ms.mu.Unlock()
		if err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
		i++
	}
	b.StopTimer()
	reportLatencies(b, ds)
}
