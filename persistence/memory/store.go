package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/persistence/memory/embed"
)

// Defaults of Options.
const (
	DefaultDedupThreshold = 0.85
	DefaultStaleAfter     = 90 * 24 * time.Hour
	// reembedBatch is how many texts Open hands the embedder at once when it
	// re-embeds entries stored by another embedder.
	reembedBatch = 64
	// defaultRerank is how many sketch-nearest candidates a recall scores
	// exactly once a search covers more entries than that. At 100,000
	// entries 2,048 candidates hold about 99.5% of the exact top 5 and cost
	// under 1 ms to score.
	defaultRerank = 2048
)

// Options configure Open. The zero value is usable.
type Options struct {
	// Embedder turns text into vectors. Default: embed.Local{}.
	Embedder embed.Embedder
	// Now is the clock for created, updated, recalled and staleness.
	// Default: time.Now.
	Now func() time.Time
	// DedupThreshold is the cosine similarity at and above which two
	// entries are reported as possible duplicates. Default: 0.85.
	DedupThreshold float64
	// StaleAfter is how long an entry may go without an update or a recall
	// before it counts as stale. Default: 90 days.
	StaleAfter time.Duration
	// Logger receives warnings about entries that could not be re-embedded.
	// Default: discarded.
	Logger hclog.Logger
	// Guard is asked about the label and content of every memory Remember
	// is given, before anything is written; an error refuses the memory
	// and Remember returns it wrapped. thatch passes the secret redactor's
	// Refuse, so that no way into the store (the agents' memory_remember,
	// an import, an edit on the web page) can keep a secret. Default: nil
	// (every memory is written).
	Guard func(label, content string) error
}

// Store is thatch's memory store. It is safe for concurrent use; one mutex
// serialises operations, and the embedder runs outside it.
type Store struct {
	st        *persistence.Store
	db        *pebble.DB
	embedder  embed.Embedder
	embedName string
	dim       int
	sk        *sketcher
	now       func() time.Time
	threshold float64
	staleFor  time.Duration
	log       hclog.Logger
	guard     func(label, content string) error
	// onChange is told of every write of the store's own callers.
	onChange func(Change)
	// changeLog keeps those writes in their own batches (LogChanges).
	changeLog func(b *pebble.Batch, c Change) error
	rerank    int

	mu     sync.Mutex
	closed bool
	shards map[string]*shard
	// scratch for Recall, reused under mu
	hams  []uint16
	cands []candidate
}

type candidate struct {
	sh   *shard
	slot int32
}

// Open loads the memory index from st and re-embeds entries whose stored
// vectors come from another embedder or dimension. Re-embedding stops at the
// first embedder error; those entries stay out of recall and dedup until
// Reindex succeeds. Open never fails because of the embedder.
func Open(st *persistence.Store, o Options) (*Store, error) {
	return OpenContext(context.Background(), st, o)
}

// OpenContext is Open with a context for the re-embedding calls.
func OpenContext(ctx context.Context, st *persistence.Store, o Options) (*Store, error) {
	if o.Embedder == nil {
		o.Embedder = embed.Local{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.DedupThreshold == 0 {
		o.DedupThreshold = DefaultDedupThreshold
	}
	if o.StaleAfter == 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.DedupThreshold <= 0 || o.DedupThreshold > 1 || math.IsNaN(o.DedupThreshold) {
		return nil, invalid("dedup threshold %v is outside (0, 1]", o.DedupThreshold)
	}
	if o.StaleAfter < 0 {
		return nil, invalid("stale-after %v is negative", o.StaleAfter)
	}
	dim := o.Embedder.Dim()
	if dim <= 0 || dim > 1<<16 {
		return nil, invalid("embedder %s has dimension %d", o.Embedder.Name(), dim)
	}
	s := &Store{
		st:        st,
		db:        st.DB(),
		embedder:  o.Embedder,
		embedName: o.Embedder.Name(),
		dim:       dim,
		sk:        newSketcher(dim),
		now:       o.Now,
		threshold: o.DedupThreshold,
		staleFor:  o.StaleAfter,
		log:       o.Logger,
		guard:     o.Guard,
		rerank:    defaultRerank,
		shards:    map[string]*shard{},
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	if _, err := s.Reindex(ctx); err != nil {
		s.log.Warn("memories stay out of recall until they can be re-embedded", "embedder", s.embedName, "error", err)
	}
	return s, nil
}

// Close makes every later call return ErrClosed. It does not close the
// persistence store, which the caller owns; close that after this.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	return nil
}

func (s *Store) shard(name string) *shard {
	sh := s.shards[name]
	if sh == nil {
		sh = newShard(name, s.dim)
		s.shards[name] = sh
	}
	return sh
}

func (s *Store) load() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixHidden, kindIndex}, UpperBound: []byte{prefixHidden, kindIndex + 1}})
	if err != nil {
		return fmt.Errorf("memory: load index: %w", err)
	}
	for it.First(); it.Valid(); it.Next() {
		store, rest, ok := parseKey(it.Key())
		if !ok {
			continue
		}
		slug := string(rest)
		r, err := decodeIndex(it.Value())
		if err != nil {
			it.Close()
			return fmt.Errorf("memory: load %s/%s: %w", store, slug, err)
		}
		var v *vecData
		if r.embedder == s.embedName && r.dim == s.dim {
			v = &vecData{q: r.vec, inv: r.inv, sketch: r.sketch}
			if r.sketchV != sketchVersion || len(r.sketch) != sketchWords {
				v.sketch = make([]uint64, sketchWords)
				s.sk.sketch(dequantize(r.vec), v.sketch)
			}
		}
		s.shard(store).put(slug, meta{branch: r.branch, archived: r.archived, activity: r.activity}, v)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("memory: load index: %w", err)
	}
	if err := s.loadText(); err != nil {
		return err
	}
	return s.loadPairs()
}

// loadText builds the full-text index from the entries themselves, so it
// is always what Pebble holds: entries without an index record or archived
// ones are left out, as recall leaves them out.
func (s *Store) loadText() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixEntry, kindEntry}, UpperBound: []byte{prefixEntry, kindEntry + 1}})
	if err != nil {
		return fmt.Errorf("memory: load text index: %w", err)
	}
	for it.First(); it.Valid(); it.Next() {
		var e Entry
		if err := json.Unmarshal(it.Value(), &e); err != nil {
			it.Close()
			return fmt.Errorf("memory: decode %s: %w", it.Key(), err)
		}
		sh := s.shards[e.Store]
		if sh == nil {
			continue
		}
		if m := sh.metas[e.Slug]; m != nil && !m.archived {
			sh.text.put(e.Slug, e.Branch, e.Label, e.Content)
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("memory: load text index: %w", err)
	}
	return nil
}

func (s *Store) loadPairs() error {
	for _, kind := range []byte{kindPair, kindVerdict} {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixHidden, kind}, UpperBound: []byte{prefixHidden, kind + 1}})
		if err != nil {
			return fmt.Errorf("memory: load pairs: %w", err)
		}
		for it.First(); it.Valid(); it.Next() {
			store, p, ok := parsePairKey(it.Key())
			if !ok {
				continue
			}
			sh := s.shard(store)
			if kind == kindVerdict {
				sh.setVerdict(p, Verdict(it.Value()))
				continue
			}
			score, err := decodeScore(it.Value())
			if err != nil {
				it.Close()
				return err
			}
			sh.addPair(p, score)
		}
		if err := it.Close(); err != nil {
			return fmt.Errorf("memory: load pairs: %w", err)
		}
	}
	return nil
}

func dequantize(q []int8) []float32 {
	v := make([]float32, len(q))
	for i, x := range q {
		v[i] = float32(x)
	}
	return v
}

// Reindex re-embeds live entries whose stored vector came from another
// embedder or dimension (or could not be re-embedded before), and finds
// their duplicate pairs again. It returns how many entries it indexed and
// stops at the first embedder error. Open calls it; call it again after the
// embedder recovers.
func (s *Store) Reindex(ctx context.Context) (int, error) {
	type job struct{ store, slug string }
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, ErrClosed
	}
	var jobs []job
	for name, sh := range s.shards {
		for slug, m := range sh.metas {
			if m.unindexed {
				jobs = append(jobs, job{name, slug})
			}
		}
	}
	s.mu.Unlock()
	slices.SortFunc(jobs, func(a, b job) int {
		if c := cmp.Compare(a.store, b.store); c != 0 {
			return c
		}
		return cmp.Compare(a.slug, b.slug)
	})
	done := 0
	for start := 0; start < len(jobs); start += reembedBatch {
		batch := jobs[start:min(start+reembedBatch, len(jobs))]
		entries := make([]Entry, 0, len(batch))
		texts := make([]string, 0, len(batch))
		for _, j := range batch {
			e, err := s.Get(j.store, j.slug)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return done, err
			}
			entries = append(entries, e)
			texts = append(texts, embedText(e.Label, e.Content))
		}
		vecs, err := s.embed(ctx, texts)
		if err != nil {
			return done, fmt.Errorf("memory: re-embed %d entries with %s: %w", len(texts), s.embedName, err)
		}
		for i, e := range entries {
			ok, err := s.reindexOne(e, vecs[i])
			if err != nil {
				return done, err
			}
			if ok {
				done++
			}
		}
		if err := s.db.LogData(nil, s.st.WriteOptions()); err != nil {
			return done, fmt.Errorf("memory: sync re-embedded vectors: %w", err)
		}
	}
	return done, nil
}

// reindexOne installs a fresh vector for e unless e changed meanwhile.
func (s *Store) reindexOne(e Entry, v *vecData) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, ErrClosed
	}
	sh := s.shards[e.Store]
	if sh == nil {
		return false, nil
	}
	m, ok := sh.metas[e.Slug]
	if !ok || !m.unindexed {
		return false, nil
	}
	cur, err := s.getLocked(e.Store, e.Slug)
	if err != nil || !cur.Updated.Equal(e.Updated) {
		return false, nil
	}
	nm := meta{branch: m.branch, archived: m.archived, activity: m.activity}
	// Unsynced: a re-embedded vector is derived data, and Reindex syncs the
	// log once per batch. A crash before that only means re-embedding again.
	if _, err := s.commit(sh, e.Slug, nil, nm, v, false, pebble.NoSync, nil); err != nil {
		return false, err
	}
	return true, nil
}

// embed runs the embedder and turns its vectors into the in-memory form.
func (s *Store) embed(ctx context.Context, texts []string) ([]*vecData, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	raw, err := s.embedder.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	if len(raw) != len(texts) {
		return nil, fmt.Errorf("%w: %s returned %d vectors for %d texts", embed.ErrBadVector, s.embedName, len(raw), len(texts))
	}
	out := make([]*vecData, len(raw))
	for i, v := range raw {
		if len(v) != s.dim {
			return nil, fmt.Errorf("%w: %s returned a %d-dim vector, declared %d", embed.ErrBadVector, s.embedName, len(v), s.dim)
		}
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("%w: %s returned NaN or Inf", embed.ErrBadVector, s.embedName)
			}
		}
		v = slices.Clone(v)
		embed.Normalize(v)
		d := &vecData{q: make([]int8, s.dim), sketch: make([]uint64, sketchWords)}
		d.inv = quantize(v, d.q)
		s.sk.sketch(v, d.sketch)
		out[i] = d
	}
	return out, nil
}

func embedText(label, content string) string { return label + "\n" + content }

// getLocked reads one entry from disk. Caller holds mu.
func (s *Store) getLocked(store, slug string) (Entry, error) {
	v, closer, err := s.db.Get(entryKey(store, slug))
	if errors.Is(err, pebble.ErrNotFound) {
		return Entry{}, fmt.Errorf("%w: %q in store %q", ErrNotFound, slug, store)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("memory: read %s/%s: %w", store, slug, err)
	}
	defer closer.Close()
	var e Entry
	if err := json.Unmarshal(v, &e); err != nil {
		return Entry{}, fmt.Errorf("memory: decode %s/%s: %w", store, slug, err)
	}
	return e, nil
}

// Get returns the entry with slug in store, or an error wrapping ErrNotFound.
func (s *Store) Get(store, slug string) (Entry, error) {
	if err := checkName("store", store); err != nil {
		return Entry{}, err
	}
	if err := checkName("slug", slug); err != nil {
		return Entry{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Entry{}, ErrClosed
	}
	return s.getLocked(store, slug)
}

// Find returns the entry a user names by slug or label, as Forget resolves
// it: an exact slug first, then the slug of it read as a label (including
// the cut slug an entry with a long label was stored under before long
// slugs got a hash). Get(store, Slugify(label)) misses those entries.
func (s *Store) Find(store, labelOrSlug string) (Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Entry{}, ErrClosed
	}
	_, slug, err := s.resolveSlug(store, labelOrSlug)
	if err != nil {
		return Entry{}, err
	}
	return s.getLocked(store, slug)
}

// List returns the entries of store in slug order, archived ones included.
// With branch "" it returns every entry; with a branch it returns the
// entries on that branch and the project-wide ones, the same set a recall
// on that branch searches.
func (s *Store) List(store, branch string) ([]Entry, error) {
	if err := checkName("store", store); err != nil {
		return nil, err
	}
	branch = normalizeBranch(branch)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	lo := storeKey(prefixEntry, kindEntry, store)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return nil, fmt.Errorf("memory: list %s: %w", store, err)
	}
	var out []Entry
	for it.First(); it.Valid(); it.Next() {
		var e Entry
		if err := json.Unmarshal(it.Value(), &e); err != nil {
			it.Close()
			return nil, fmt.Errorf("memory: decode %s: %w", it.Key(), err)
		}
		if branch == "" || e.Branch == "" || e.Branch == branch {
			out = append(out, e)
		}
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("memory: list %s: %w", store, err)
	}
	return out, nil
}

// ListPage returns the entries offset..offset+limit of store in slug
// order (with a branch, only the entries on that branch: a browser of the
// store filters by it, where List adds the project-wide ones a recall on
// the branch searches), how many there are, and the store's branches
// (sorted). It reads only the entries of the page: the rest comes from
// the in-memory index, so a page of a large store costs its own entries,
// not the store's.
func (s *Store) ListPage(store, branch string, offset, limit int) ([]Entry, int, []string, error) {
	if err := checkName("store", store); err != nil {
		return nil, 0, nil, err
	}
	branch = normalizeBranch(branch)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, 0, nil, ErrClosed
	}
	sh := s.shards[store]
	if sh == nil {
		return nil, 0, nil, nil
	}
	slugs := make([]string, 0, len(sh.metas))
	for slug, m := range sh.metas {
		if branch == "" || m.branch == branch {
			slugs = append(slugs, slug)
		}
	}
	slices.Sort(slugs)
	branches := make([]string, 0, len(sh.branchRefs))
	for b, n := range sh.branchRefs {
		if n > 0 {
			branches = append(branches, b)
		}
	}
	slices.Sort(branches)
	lo := min(max(offset, 0), len(slugs))
	hi := min(lo+max(limit, 0), len(slugs))
	out := make([]Entry, 0, hi-lo)
	for _, slug := range slugs[lo:hi] {
		e, err := s.getLocked(store, slug)
		if err != nil {
			return out, len(slugs), branches, err
		}
		out = append(out, e)
	}
	return out, len(slugs), branches, nil
}

// Stores lists the stores that hold at least one entry, sorted.
func (s *Store) Stores() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for name, sh := range s.shards {
		if len(sh.metas) > 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Unindexed is how many live entries have no vector from the current
// embedder (re-embedding failed); they are missing from recall and dedup
// until Reindex succeeds.
func (s *Store) Unindexed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sh := range s.shards {
		for _, m := range sh.metas {
			if m.unindexed {
				n++
			}
		}
	}
	return n
}

// commit writes an entry's index record (and the entry itself when e is
// not nil), replaces its duplicate pairs with the best MaxPairsPerWrite of
// those found for v, drops its verdicts when clearVerdicts is set, and
// updates the in-memory index only once the batch is durable. It returns
// every pair found. change, when set, goes to the change log in the same
// batch. Caller holds mu; v must not alias the shard's arrays.
func (s *Store) commit(sh *shard, slug string, e *Entry, m meta, v *vecData, clearVerdicts bool, wo *pebble.WriteOptions, change *Change) ([]SimilarEntry, error) {
	var similar, paired []SimilarEntry
	if v != nil && !m.archived {
		similar = sh.similar(v, slug, s.threshold)
		paired = similar[:min(len(similar), MaxPairsPerWrite)] // best first
	}
	b := s.db.NewBatch()
	defer b.Close()
	if e != nil {
		raw, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("memory: encode %s/%s: %w", sh.name, slug, err)
		}
		if err := b.Set(entryKey(sh.name, slug), raw, nil); err != nil {
			return nil, fmt.Errorf("memory: write %s/%s: %w", sh.name, slug, err)
		}
	}
	rec := &indexRecord{archived: m.archived, activity: m.activity, branch: m.branch}
	if v != nil {
		rec.embedder, rec.vec, rec.inv, rec.sketchV, rec.sketch = s.embedName, v.q, v.inv, sketchVersion, v.sketch
	}
	if err := b.Set(indexKey(sh.name, slug), encodeIndex(rec), nil); err != nil {
		return nil, fmt.Errorf("memory: write %s/%s: %w", sh.name, slug, err)
	}
	oldPairs, oldVerdicts := sh.pairsOf(slug)
	for _, p := range oldPairs {
		if err := b.Delete(pairRecordKey(kindPair, sh.name, p), nil); err != nil {
			return nil, fmt.Errorf("memory: write %s/%s: %w", sh.name, slug, err)
		}
	}
	if clearVerdicts {
		for _, p := range oldVerdicts {
			if err := b.Delete(pairRecordKey(kindVerdict, sh.name, p), nil); err != nil {
				return nil, fmt.Errorf("memory: write %s/%s: %w", sh.name, slug, err)
			}
		}
	}
	for _, sim := range paired {
		if err := b.Set(pairRecordKey(kindPair, sh.name, makePair(slug, sim.Slug)), encodeScore(sim.Score), nil); err != nil {
			return nil, fmt.Errorf("memory: write %s/%s: %w", sh.name, slug, err)
		}
	}
	if change != nil {
		if err := s.logChange(b, *change); err != nil {
			return nil, err
		}
	}
	if err := b.Commit(wo); err != nil {
		return nil, fmt.Errorf("memory: commit %s/%s: %w", sh.name, slug, err)
	}
	sh.dropPairs(slug)
	if clearVerdicts {
		sh.dropVerdicts(slug)
	}
	sh.put(slug, m, v)
	if e != nil {
		if e.Archived {
			sh.text.remove(slug)
		} else {
			sh.text.put(slug, e.Branch, e.Label, e.Content)
		}
	}
	for _, sim := range paired {
		sh.addPair(makePair(slug, sim.Slug), sim.Score)
	}
	return similar, nil
}
