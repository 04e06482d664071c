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
}

// Hit is one recalled entry.
type Hit struct {
	// Entry is the entry with its recall count and time already updated
	// for this recall.
	Entry Entry
	// Similarity is the cosine similarity of query and entry, to within
	// about 0.002.
	Similarity float64
	// Score orders the hits: Similarity plus the exact-word boost.
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

// Recall returns the live entries most similar to in.Query, best first.
// Archived entries are never returned. Every returned entry's recall count
// and last-recalled time are updated in one synced batch before Recall
// returns.
//
// A search over more than 2,048 entries first keeps the 2,048 whose
// sketches are closest to the query's and scores only those exactly. At
// 100,000 entries this returns about 99.5% of the exact top 5
// (BenchmarkRecall100k reports it as top5-agreement). Smaller searches are
// exact.
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
	branch := normalizeBranch(in.Branch)
	for _, st := range in.Stores {
		if err := checkName("store", st); err != nil {
			return nil, err
		}
	}
	vecs, err := s.embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("memory: embed recall query with %s: %w", s.embedName, err)
	}
	q := vecs[0]
	if q.inv == 0 {
		return nil, nil // no letters or digits: similar to nothing
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	best := s.search(q, s.searchShards(in.Stores), branch, limit*3)
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
	slices.SortStableFunc(hits, func(a, b Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	if err := s.recordRecalls(hits); err != nil {
		return nil, err
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
		v := sh.vecOf(m.slot)
		rec := &indexRecord{
			archived: m.archived, activity: e.activity().UnixNano(), branch: m.branch,
			embedder: s.embedName, vec: v.q, inv: v.inv, sketchV: sketchVersion, sketch: v.sketch,
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
