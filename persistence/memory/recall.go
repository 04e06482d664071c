package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Recall limits.
const (
	DefaultRecallLimit = 5
	MaxRecallLimit     = 50
	// termBoost is added to a hit's score times the fraction of query words
	// that occur as whole words in its label or content. It lifts exact
	// matches of names (a flag, a file) above entries that only share
	// spelling fragments, without overriding similarity.
	termBoost = 0.1
)

// RecallMode picks how Recall ranks.
type RecallMode string

// Recall modes. The default, RecallHybrid, is what sessions and the CLI
// use; the other two exist to measure it against its parts.
const (
	// RecallHybrid fuses the vector ranking and the BM25 ranking with
	// reciprocal rank fusion (see rrfK).
	RecallHybrid RecallMode = "hybrid"
	// RecallVector ranks by cosine similarity plus the exact-word boost
	// (termBoost): recall as it was before full-text ranking.
	RecallVector RecallMode = "vector"
	// RecallText ranks by BM25 over label and content alone.
	RecallText RecallMode = "text"
)

// Fusion parameters.
const (
	// rrfK is the k of reciprocal rank fusion, score = sum of 1/(k+rank).
	// 60 is the value of Cormack et al. Tuned on the first half of the
	// queries in testdata/eval, every k from 5 to 200 gave the same
	// recall@5 (0.989), and the same again on the held-out second half
	// (0.957; k=1 gave 0.936), so the customary value stays.
	rrfK = 60
	// fuseDepth is how many results of each ranking take part in fusion
	// (at least 3 times the limit).
	fuseDepth = 50
)

// RecallInput is a search.
type RecallInput struct {
	// Query is the text to match. Required.
	Query string
	// Stores are searched together. Default: every store. A session passes
	// its project store and GlobalStore (see SessionStores).
	Stores []string
	// Branch selects branch memories: entries on Branch and project-wide
	// entries match. Default: "" (only project-wide entries).
	Branch string
	// Limit is the most hits returned. Default: DefaultRecallLimit; at most
	// MaxRecallLimit.
	Limit int
	// Mode is the ranking. Default: RecallHybrid.
	Mode RecallMode
}

// Hit is one recalled entry.
type Hit struct {
	// Entry is the entry with its recall count and time already updated
	// for this recall.
	Entry Entry
	// Similarity is the cosine similarity of query and entry, to within
	// about 0.002; 0 in RecallText mode and for an entry without a vector.
	Similarity float64
	// Score orders the hits. RecallHybrid: the reciprocal-rank-fusion score
	// (at most 2/61); RecallVector: Similarity plus the exact-word boost;
	// RecallText: the BM25 score.
	Score float64
}

// SessionStores is what a session recalls from: its project store and
// GlobalStore (once, when they are the same).
func SessionStores(project string) []string {
	if project == "" || project == GlobalStore {
		return []string{GlobalStore}
	}
	return []string{project, GlobalStore}
}

type scored struct {
	c   candidate
	cos float64
}

// Recall returns the live entries that best match in.Query, best first,
// ranked as in.Mode says (by default the fusion of vector similarity and
// BM25). Archived entries are never returned. Every returned entry's recall
// count and last-recalled time are updated in one synced batch before
// Recall returns.
//
// A vector search over more than 2,048 entries first keeps the 2,048 whose
// sketches are closest to the query's and scores only those exactly. At
// 100,000 entries this returns about 99.5% of the exact top 5
// (BenchmarkRecall100k reports it as top5-agreement). Smaller searches are
// exact. The BM25 search is always exact.
func (s *Store) Recall(ctx context.Context, in RecallInput) ([]Hit, error) {
	query := strings.TrimSpace(in.Query)
	if query == "" {
		return nil, invalid("recall query is empty")
	}
	limit := in.Limit
	switch {
	case limit == 0:
		limit = DefaultRecallLimit
	case limit < 0:
		return nil, invalid("recall limit %d is negative", limit)
	case limit > MaxRecallLimit:
		limit = MaxRecallLimit
	}
	mode := in.Mode
	switch mode {
	case "":
		mode = RecallHybrid
	case RecallHybrid, RecallVector, RecallText:
	default:
		return nil, invalid("recall mode %q is none of %q, %q, %q", mode, RecallHybrid, RecallVector, RecallText)
	}
	branch := normalizeBranch(in.Branch)
	for _, st := range in.Stores {
		if err := checkName("store", st); err != nil {
			return nil, err
		}
	}
	var q *vecData
	if mode != RecallText {
		vecs, err := s.embed(ctx, []string{query})
		if err != nil {
			return nil, fmt.Errorf("memory: embed recall query with %s: %w", s.embedName, err)
		}
		if q = vecs[0]; q.inv == 0 {
			q = nil // no letters or digits: similar to nothing
		}
	}
	if q == nil && mode == RecallVector {
		return nil, nil
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	shards := s.searchShards(in.Stores)
	var hits []Hit
	var err error
	switch mode {
	case RecallVector:
		hits, err = s.recallVector(q, query, shards, branch, limit)
	case RecallText:
		hits, err = s.recallText(query, shards, branch, limit)
	default:
		hits, err = s.recallHybrid(q, query, shards, branch, limit)
	}
	if err != nil {
		return nil, err
	}
	if err := s.recordRecalls(hits); err != nil {
		return nil, err
	}
	return hits, nil
}

// recallVector ranks by cosine plus the exact-word boost. Caller holds mu.
func (s *Store) recallVector(q *vecData, query string, shards []*shard, branch string, limit int) ([]Hit, error) {
	best := s.search(q, shards, branch, limit*3)
	hits := make([]Hit, 0, len(best))
	terms := queryTerms(query)
	for _, b := range best {
		e, err := s.getLocked(b.c.sh.name, b.c.sh.slugs[b.c.slot])
		if errors.Is(err, ErrNotFound) {
			continue // index record without entry: never written so, but harmless
		}
		if err != nil {
			return nil, err
		}
		hits = append(hits, Hit{Entry: e, Similarity: b.cos, Score: b.cos + termBoost*termMatch(terms, e)})
	}
	slices.SortStableFunc(hits, func(a, b Hit) int { return cmp.Compare(b.Score, a.Score) })
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}

// recallText ranks by BM25 alone. Caller holds mu.
func (s *Store) recallText(query string, shards []*shard, branch string, limit int) ([]Hit, error) {
	hits := make([]Hit, 0, limit)
	for _, t := range searchText(query, shards, branch, limit) {
		e, err := s.getLocked(t.sh.name, t.slug)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		hits = append(hits, Hit{Entry: e, Score: t.score})
	}
	return hits, nil
}

// fused is one candidate of reciprocal rank fusion.
type fused struct {
	sh    *shard
	slug  string
	cos   float64
	score float64
}

// recallHybrid fuses the top fuseDepth of the vector ranking (cosine plus
// exact-word boost is not used here: BM25 carries the exact words) and of
// BM25 by reciprocal rank fusion. q may be nil (a query of punctuation
// only), leaving BM25 alone. Caller holds mu.
func (s *Store) recallHybrid(q *vecData, query string, shards []*shard, branch string, limit int) ([]Hit, error) {
	depth := max(fuseDepth, 3*limit)
	type key struct {
		sh   *shard
		slug string
	}
	byKey := map[key]*fused{}
	var all []*fused
	get := func(sh *shard, slug string) *fused {
		k := key{sh, slug}
		f := byKey[k]
		if f == nil {
			f = &fused{sh: sh, slug: slug, cos: -2}
			byKey[k] = f
			all = append(all, f)
		}
		return f
	}
	if q != nil {
		for i, b := range s.search(q, shards, branch, depth) {
			f := get(b.c.sh, b.c.sh.slugs[b.c.slot])
			f.cos = b.cos
			f.score += 1 / float64(rrfK+i+1)
		}
	}
	for i, t := range searchText(query, shards, branch, depth) {
		get(t.sh, t.slug).score += 1 / float64(rrfK+i+1)
	}
	slices.SortFunc(all, func(a, b *fused) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := cmp.Compare(a.sh.name, b.sh.name); c != 0 {
			return c
		}
		return cmp.Compare(a.slug, b.slug)
	})
	hits := make([]Hit, 0, limit)
	for _, f := range all {
		if len(hits) == limit {
			break
		}
		e, err := s.getLocked(f.sh.name, f.slug)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if f.cos == -2 {
			f.cos = 0
			if m := f.sh.metas[f.slug]; q != nil && m != nil && m.slot >= 0 {
				f.cos = f.sh.cosine(q.q, q.inv, m.slot)
			}
		}
		hits = append(hits, Hit{Entry: e, Similarity: f.cos, Score: f.score})
	}
	return hits, nil
}

// searchShards resolves RecallInput.Stores to shards, sorted by name so a
// search visits entries in a stable order.
func (s *Store) searchShards(stores []string) []*shard {
	var out []*shard
	if len(stores) == 0 {
		for _, sh := range s.shards {
			out = append(out, sh)
		}
	} else {
		for _, name := range stores {
			if sh := s.shards[name]; sh != nil && !slices.Contains(out, sh) {
				out = append(out, sh)
			}
		}
	}
	slices.SortFunc(out, func(a, b *shard) int { return cmp.Compare(a.name, b.name) })
	return out
}

// search returns up to k entries of shards with positive cosine to q, best
// first (ties by store and slug). Caller holds mu.
func (s *Store) search(q *vecData, shards []*shard, branch string, k int) []scored {
	cands := s.cands[:0]
	for _, sh := range shards {
		want := int32(-1)
		if branch != "" {
			if id, ok := sh.branchIDs[branch]; ok {
				want = id
			}
		}
		for i, b := range sh.branches {
			if b == 0 || b == want {
				cands = append(cands, candidate{sh: sh, slot: int32(i)})
			}
		}
	}
	if len(cands) > s.rerank {
		cands = s.nearestBySketch(q, cands)
	}
	s.cands = cands[:0]
	top := make([]scored, 0, k+1)
	for _, c := range cands {
		cos := c.sh.cosine(q.q, q.inv, c.slot)
		if cos <= 0 || (len(top) == k && !better(scored{c, cos}, top[k-1])) {
			continue
		}
		// insert into the sorted top k
		i := len(top)
		top = append(top, scored{c, cos})
		for i > 0 && better(top[i], top[i-1]) {
			top[i], top[i-1] = top[i-1], top[i]
			i--
		}
		if len(top) > k {
			top = top[:k]
		}
	}
	return top
}

// better orders search results: higher cosine first, then store and slug.
func better(a, b scored) bool {
	if a.cos != b.cos {
		return a.cos > b.cos
	}
	if a.c.sh.name != b.c.sh.name {
		return a.c.sh.name < b.c.sh.name
	}
	return a.c.sh.slugs[a.c.slot] < b.c.sh.slugs[b.c.slot]
}

// nearestBySketch keeps the s.rerank candidates whose sketches are closest
// to q's, filtering cands in place, in scan order. (A first round over half
// the sketch was tried: it cost more than it saved.)
func (s *Store) nearestBySketch(q *vecData, cands []candidate) []candidate {
	if cap(s.hams) < len(cands) {
		s.hams = make([]uint16, len(cands))
	}
	hams := s.hams[:len(cands)]
	for i, c := range cands {
		base := int(c.slot) * sketchWords
		hams[i] = uint16(hamming(q.sketch, c.sh.sketches[base:base+sketchWords]))
	}
	return keepNearest(cands, hams, s.rerank, sketchBits)
}

// keepNearest keeps the n candidates with the smallest distances (of at
// most maxDist), breaking ties by position.
func keepNearest(cands []candidate, dist []uint16, n, maxDist int) []candidate {
	hist := make([]int, maxDist+1)
	for _, h := range dist {
		hist[h]++
	}
	cut, below := 0, 0
	for ; cut <= maxDist; cut++ {
		if below+hist[cut] >= n {
			break
		}
		below += hist[cut]
	}
	atCut := n - below // how many at exactly the cut distance to keep
	kept := cands[:0]
	for i, c := range cands {
		h := int(dist[i])
		if h < cut || (h == cut && atCut > 0) {
			if h == cut {
				atCut--
			}
			kept = append(kept, c)
		}
	}
	return kept
}

// recordRecalls bumps recall count and time of every hit, on disk and in
// the index. Caller holds mu.
func (s *Store) recordRecalls(hits []Hit) error {
	if len(hits) == 0 {
		return nil
	}
	now := s.now().UTC()
	b := s.db.NewBatch()
	defer b.Close()
	for i := range hits {
		e := &hits[i].Entry
		e.RecallCount++
		e.LastRecalled = now
		sh := s.shards[e.Store]
		m := sh.metas[e.Slug]
		raw, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("memory: encode %s/%s: %w", e.Store, e.Slug, err)
		}
		if err := b.Set(entryKey(e.Store, e.Slug), raw, nil); err != nil {
			return fmt.Errorf("memory: record recall of %s/%s: %w", e.Store, e.Slug, err)
		}
		var rec *indexRecord
		if m.slot >= 0 {
			v := sh.vecOf(m.slot)
			rec = &indexRecord{
				archived: m.archived, activity: e.activity().UnixNano(), branch: m.branch,
				embedder: s.embedName, vec: v.q, inv: v.inv, sketchV: sketchVersion, sketch: v.sketch,
			}
		} else {
			// Found by full text without a current vector (re-embedding
			// failed): keep whatever vector the record holds for Reindex.
			raw, closer, err := s.db.Get(indexKey(e.Store, e.Slug))
			if err != nil {
				return fmt.Errorf("memory: record recall of %s/%s: %w", e.Store, e.Slug, err)
			}
			rec, err = decodeIndex(raw)
			closer.Close()
			if err != nil {
				return fmt.Errorf("memory: record recall of %s/%s: %w", e.Store, e.Slug, err)
			}
			rec.activity = e.activity().UnixNano()
		}
		if err := b.Set(indexKey(e.Store, e.Slug), encodeIndex(rec), nil); err != nil {
			return fmt.Errorf("memory: record recall of %s/%s: %w", e.Store, e.Slug, err)
		}
	}
	if err := b.Commit(s.st.WriteOptions()); err != nil {
		return fmt.Errorf("memory: record recalls: %w", err)
	}
	for i := range hits {
		e := &hits[i].Entry
		s.shards[e.Store].metas[e.Slug].activity = e.activity().UnixNano()
	}
	return nil
}

// queryTerms are the distinct lowercase words of at least two characters.
func queryTerms(q string) []string {
	var out []string
	for _, w := range words(q) {
		if len([]rune(w)) >= 2 && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// termMatch is the fraction of terms found as whole words in e.
func termMatch(terms []string, e Entry) float64 {
	if len(terms) == 0 {
		return 0
	}
	have := map[string]struct{}{}
	for _, w := range words(e.Label) {
		have[w] = struct{}{}
	}
	for _, w := range words(e.Content) {
		have[w] = struct{}{}
	}
	n := 0
	for _, t := range terms {
		if _, ok := have[t]; ok {
			n++
		}
	}
	return float64(n) / float64(len(terms))
}
