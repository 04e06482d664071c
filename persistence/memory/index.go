package memory

import (
	"cmp"
	"slices"
)

// vecData is one vector in its in-memory form.
type vecData struct {
	q      []int8
	inv    float32
	sketch []uint64 // sketchWords
}

// meta is what the index keeps per entry, archived or not.
type meta struct {
	branch   string
	archived bool
	activity int64 // unix nanos
	// slot is the entry's position in the shard's vector arrays, or -1 when
	// it is archived or has no vector from the current embedder.
	slot int32
	// unindexed is set for a live entry whose stored vector came from
	// another embedder and could not be re-embedded yet.
	unindexed bool
}

// shard is the in-memory index of one store. Vectors of live, embedded
// entries sit in contiguous arrays (slot i owns vecs[i*dim:(i+1)*dim] and
// sketches[i*sketchWords:...]); removal moves the last slot into the hole.
type shard struct {
	name  string
	dim   int
	metas map[string]*meta

	branchIDs  map[string]int32 // interned branch names; "" is 0
	branchRefs map[string]int   // non-empty branch -> entries on it

	slugs    []string
	branches []int32
	vecs     []int8
	invs     []float32
	sketches []uint64

	pairs    map[pairKey]float32 // candidate duplicates at/above the threshold
	adj      map[string]map[string]struct{}
	verdicts map[pairKey]Verdict
	vadj     map[string]map[string]struct{}
	unjudged int // pairs without a verdict

	// text is the BM25 index of the live entries' label and content.
	text *textIndex
}

func newShard(name string, dim int) *shard {
	return &shard{
		name:       name,
		dim:        dim,
		metas:      map[string]*meta{},
		branchIDs:  map[string]int32{"": 0},
		branchRefs: map[string]int{},
		pairs:      map[pairKey]float32{},
		adj:        map[string]map[string]struct{}{},
		verdicts:   map[pairKey]Verdict{},
		vadj:       map[string]map[string]struct{}{},
		text:       newTextIndex(),
	}
}

func (sh *shard) branchID(b string) int32 {
	if id, ok := sh.branchIDs[b]; ok {
		return id
	}
	id := int32(len(sh.branchIDs))
	sh.branchIDs[b] = id
	return id
}

// put installs or replaces an entry's metadata and vector. v is nil for an
// entry without a usable vector.
func (sh *shard) put(slug string, m meta, v *vecData) {
	if old, ok := sh.metas[slug]; ok {
		sh.unrefBranch(old.branch)
		if old.slot >= 0 {
			sh.removeSlot(old.slot)
		}
	}
	nm := m
	nm.slot = -1
	if !m.archived && v != nil {
		nm.slot = sh.addSlot(slug, sh.branchID(m.branch), v)
	}
	nm.unindexed = !m.archived && v == nil
	sh.metas[slug] = &nm
	if m.branch != "" {
		sh.branchRefs[m.branch]++
	}
}

// remove drops an entry with its pairs and verdicts.
func (sh *shard) remove(slug string) {
	m, ok := sh.metas[slug]
	if !ok {
		return
	}
	sh.unrefBranch(m.branch)
	if m.slot >= 0 {
		sh.removeSlot(m.slot)
	}
	delete(sh.metas, slug)
	sh.text.remove(slug)
	sh.dropPairs(slug)
	sh.dropVerdicts(slug)
}

func (sh *shard) unrefBranch(b string) {
	if b == "" {
		return
	}
	if sh.branchRefs[b]--; sh.branchRefs[b] <= 0 {
		delete(sh.branchRefs, b)
	}
}

func (sh *shard) addSlot(slug string, branch int32, v *vecData) int32 {
	i := int32(len(sh.slugs))
	sh.slugs = append(sh.slugs, slug)
	sh.branches = append(sh.branches, branch)
	sh.vecs = append(sh.vecs, v.q...)
	sh.invs = append(sh.invs, v.inv)
	sh.sketches = append(sh.sketches, v.sketch...)
	return i
}

func (sh *shard) removeSlot(i int32) {
	last := int32(len(sh.slugs) - 1)
	if i != last {
		moved := sh.slugs[last]
		sh.slugs[i] = moved
		sh.branches[i] = sh.branches[last]
		copy(sh.vecs[int(i)*sh.dim:], sh.vecs[int(last)*sh.dim:int(last+1)*sh.dim])
		sh.invs[i] = sh.invs[last]
		copy(sh.sketches[int(i)*sketchWords:], sh.sketches[int(last)*sketchWords:int(last+1)*sketchWords])
		sh.metas[moved].slot = i
	}
	sh.slugs = sh.slugs[:last]
	sh.branches = sh.branches[:last]
	sh.vecs = sh.vecs[:int(last)*sh.dim]
	sh.invs = sh.invs[:last]
	sh.sketches = sh.sketches[:int(last)*sketchWords]
}

func (sh *shard) vecOf(slot int32) *vecData {
	return &vecData{
		q:      sh.vecs[int(slot)*sh.dim : int(slot+1)*sh.dim],
		inv:    sh.invs[slot],
		sketch: sh.sketches[int(slot)*sketchWords : int(slot+1)*sketchWords],
	}
}

func (sh *shard) cosine(q []int8, inv float32, slot int32) float64 {
	d := dotInt8(q, sh.vecs[int(slot)*sh.dim:int(slot+1)*sh.dim])
	return float64(d) * float64(inv) * float64(sh.invs[slot])
}

// similar returns the live entries other than self whose cosine with v is at
// least threshold, best first. Sketches pick candidates in two steps (the
// first 256 bits, then all 1024) so that only pairs plausibly above the
// threshold are scored exactly.
func (sh *shard) similar(v *vecData, self string, threshold float64) []SimilarEntry {
	c1, c2 := dedupCutoffs(threshold)
	var out []SimilarEntry
	head := v.sketch[:dedupWords]
	tail := v.sketch[dedupWords:]
	for i := range sh.slugs {
		sk := sh.sketches[i*sketchWords : (i+1)*sketchWords]
		h := hamming(head, sk[:dedupWords])
		if h > c1 {
			continue
		}
		if h+hamming(tail, sk[dedupWords:]) > c2 {
			continue
		}
		if sh.slugs[i] == self {
			continue
		}
		if c := sh.cosine(v.q, v.inv, int32(i)); c >= threshold {
			out = append(out, SimilarEntry{Slug: sh.slugs[i], Score: c})
		}
	}
	slices.SortFunc(out, func(a, b SimilarEntry) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Slug, b.Slug)
	})
	return out
}

func link(adj map[string]map[string]struct{}, a, b string) {
	for _, x := range [2][2]string{{a, b}, {b, a}} {
		m := adj[x[0]]
		if m == nil {
			m = map[string]struct{}{}
			adj[x[0]] = m
		}
		m[x[1]] = struct{}{}
	}
}

func unlink(adj map[string]map[string]struct{}, a, b string) {
	for _, x := range [2][2]string{{a, b}, {b, a}} {
		if m := adj[x[0]]; m != nil {
			delete(m, x[1])
			if len(m) == 0 {
				delete(adj, x[0])
			}
		}
	}
}

func (sh *shard) addPair(p pairKey, score float64) {
	if _, ok := sh.pairs[p]; !ok {
		link(sh.adj, p.a, p.b)
		if _, judged := sh.verdicts[p]; !judged {
			sh.unjudged++
		}
	}
	sh.pairs[p] = float32(score)
}

func (sh *shard) dropPairs(slug string) {
	for o := range sh.adj[slug] {
		p := makePair(slug, o)
		delete(sh.pairs, p)
		if _, judged := sh.verdicts[p]; !judged {
			sh.unjudged--
		}
		unlink(sh.adj, slug, o)
	}
}

func (sh *shard) setVerdict(p pairKey, v Verdict) {
	if _, ok := sh.verdicts[p]; !ok {
		link(sh.vadj, p.a, p.b)
		if _, paired := sh.pairs[p]; paired {
			sh.unjudged--
		}
	}
	sh.verdicts[p] = v
}

func (sh *shard) dropVerdicts(slug string) {
	for o := range sh.vadj[slug] {
		p := makePair(slug, o)
		delete(sh.verdicts, p)
		if _, paired := sh.pairs[p]; paired {
			sh.unjudged++
		}
		unlink(sh.vadj, slug, o)
	}
}

// pairsOf lists the keys of slug's candidate pairs and verdicts, for deletion.
func (sh *shard) pairsOf(slug string) (pairs, verdicts []pairKey) {
	for o := range sh.adj[slug] {
		pairs = append(pairs, makePair(slug, o))
	}
	for o := range sh.vadj[slug] {
		verdicts = append(verdicts, makePair(slug, o))
	}
	return pairs, verdicts
}
