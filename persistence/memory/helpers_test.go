package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/goleak"

	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/persistence/memory/embed"
)

func TestMain(m *testing.M) {
	code := m.Run()
	cleanupBenchFixture()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is a persistence store on disk plus a memory store on it, reopenable.
type env struct {
	t   testing.TB
	dir string
	st  *persistence.Store
	ms  *Store
	clk *clock
}

func newEnv(t testing.TB, o Options) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clk: newClock()}
	e.open(o)
	t.Cleanup(e.close)
	return e
}

func (e *env) open(o Options) {
	e.t.Helper()
	st, err := persistence.Open(e.dir, persistence.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	if o.Now == nil {
		o.Now = e.clk.Now
	}
	ms, err := Open(st, o)
	if err != nil {
		st.Close()
		e.t.Fatal(err)
	}
	e.st, e.ms = st, ms
}

func (e *env) close() {
	if e.ms != nil {
		e.ms.Close()
		e.st.Close()
		e.ms, e.st = nil, nil
	}
}

func (e *env) reopen(o Options) {
	e.t.Helper()
	e.close()
	e.open(o)
}

func (e *env) remember(in RememberInput) RememberResult {
	e.t.Helper()
	res, err := e.ms.Remember(context.Background(), in)
	if err != nil {
		e.t.Fatalf("remember %q: %v", in.Label, err)
	}
	return res
}

func (e *env) recall(in RecallInput) []Hit {
	e.t.Helper()
	hits, err := e.ms.Recall(context.Background(), in)
	if err != nil {
		e.t.Fatalf("recall %q: %v", in.Query, err)
	}
	return hits
}

func (e *env) signals(store string) Signals {
	e.t.Helper()
	sig, err := e.ms.Hygiene([]string{store}, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return sig[store]
}

func slugsOf(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Entry.Slug
	}
	return out
}

// bulkLoad writes entries straight into the database and the index, in
// large unsynced batches followed by one flush, without looking for
// duplicates. Tests and benchmarks use it to build big stores quickly.
func bulkLoad(tb testing.TB, s *Store, entries []Entry) {
	tb.Helper()
	const chunk = 2000
	for start := 0; start < len(entries); start += chunk {
		part := entries[start:min(start+chunk, len(entries))]
		texts := make([]string, len(part))
		for i, e := range part {
			texts[i] = embedText(e.Label, e.Content)
		}
		vecs, err := s.embed(context.Background(), texts)
		if err != nil {
			tb.Fatal(err)
		}
		b := s.db.NewBatch()
		for i := range part {
			e := &part[i]
			raw, _ := json.Marshal(e)
			if err := b.Set(entryKey(e.Store, e.Slug), raw, nil); err != nil {
				tb.Fatal(err)
			}
			v := vecs[i]
			rec := &indexRecord{archived: e.Archived, activity: e.activity().UnixNano(), branch: e.Branch,
				embedder: s.embedName, vec: v.q, inv: v.inv, sketchV: sketchVersion, sketch: v.sketch}
			if err := b.Set(indexKey(e.Store, e.Slug), encodeIndex(rec), nil); err != nil {
				tb.Fatal(err)
			}
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			tb.Fatal(err)
		}
		b.Close()
		s.mu.Lock()
		for i, e := range part {
			s.shard(e.Store).put(e.Slug, meta{branch: e.Branch, archived: e.Archived, activity: e.activity().UnixNano()}, vecs[i])
		}
		s.mu.Unlock()
	}
	if err := s.db.Flush(); err != nil {
		tb.Fatal(err)
	}
}

// corpusEntries makes n entries for store with unique labels.
func corpusEntries(c *corpus, store string, n int, now time.Time) []Entry {
	out := make([]Entry, n)
	for i := range out {
		label := fmt.Sprintf("note %d %s", i, c.text(2, 4))
		out[i] = Entry{
			Slug: Slugify(label), Store: store, Label: label, Content: c.text(8, 60),
			Confidence: 5, Created: now, Updated: now,
		}
	}
	return out
}

// switchable wraps an embedder under another name and can be made to fail.
type switchable struct {
	inner embed.Embedder
	name  string
	fail  atomic.Bool
	calls atomic.Int64 // texts embedded
	// permute reverses vector coordinates, so vectors of inner and of this
	// embedder are not comparable even at the same dimension.
	permute bool
}

var errEmbedDown = errors.New("test embedder down")

func (w *switchable) Name() string { return w.name }
func (w *switchable) Dim() int     { return w.inner.Dim() }
func (w *switchable) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if w.fail.Load() {
		return nil, errEmbedDown
	}
	w.calls.Add(int64(len(texts)))
	vs, err := w.inner.Embed(ctx, texts)
	if err != nil || !w.permute {
		return vs, err
	}
	for _, v := range vs {
		for i, j := 0, len(v)-1; i < j; i, j = i+1, j-1 {
			v[i], v[j] = v[j], v[i]
		}
	}
	return vs, nil
}
