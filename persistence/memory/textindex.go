package memory

import (
	"math"
	"slices"
	"strings"
	"unicode"
)

// BM25 parameters (the usual defaults) and the weight of a label: its terms
// count labelWeight times, since a label names what the memory is about.
const (
	bm25K1      = 1.2
	bm25B       = 0.75
	labelWeight = 2
	// maxTokenBytes drops tokens longer than this (hashes, base64 blobs):
	// they match nothing a person types and bloat the postings.
	maxTokenBytes = 64
	// compactAt is how many dead documents a text index tolerates before it
	// rebuilds its postings without them.
	compactAt = 1024
)

// posting is one document's count of one term.
type posting struct {
	doc int32
	tf  uint16
}

// textDoc is one indexed entry.
type textDoc struct {
	slug   string
	length int32 // weighted term count
	dead   bool
}

// textIndex is a shard's BM25 inverted index over the label and content of
// its live entries. It is derived data: Open builds it from the entries in
// Pebble and commit and Forget keep it in step, so it never has to agree
// with anything on disk after a crash. Removed documents are tombstoned and
// skipped, and the postings are rebuilt once compactAt of them pile up.
type textIndex struct {
	docs []textDoc
	// lens and branches are per document, packed for the scoring loop:
	// the weighted length, and the interned branch (0 project-wide, -1 a
	// removed document).
	lens      []float32
	branches  []int32
	branchIDs map[string]int32
	bySlug    map[string]int32
	// termIDs numbers the terms; postings[id] lists the documents of term
	// id. Documents refer to terms by id, so each term's text is held once.
	termIDs  map[string]int32
	postings [][]posting
	live     int
	totalLen int64
	dead     int

	// scratch for searchText, reused under the store's mutex
	acc     []float32
	touched []int32
}

func newTextIndex() *textIndex {
	return &textIndex{bySlug: map[string]int32{}, termIDs: map[string]int32{}, branchIDs: map[string]int32{"": 0}}
}

// put indexes (or re-indexes) an entry's text.
func (t *textIndex) put(slug, branch, label, content string) {
	t.remove(slug)
	counts := map[string]int{}
	n := 0
	for _, tok := range tokenize(label) {
		counts[tok] += labelWeight
		n += labelWeight
	}
	for _, tok := range tokenize(content) {
		counts[tok]++
		n++
	}
	id := int32(len(t.docs))
	d := textDoc{slug: slug, length: int32(n)}
	for term, c := range counts {
		tid, ok := t.termIDs[term]
		if !ok {
			tid = int32(len(t.postings))
			t.termIDs[term] = tid
			t.postings = append(t.postings, nil)
		}
		t.postings[tid] = append(t.postings[tid], posting{doc: id, tf: uint16(min(c, math.MaxUint16))})
	}
	t.docs = append(t.docs, d)
	t.lens = append(t.lens, float32(n))
	t.branches = append(t.branches, t.branchID(branch))
	t.bySlug[slug] = id
	t.live++
	t.totalLen += int64(n)
}

// remove drops slug from the index, if it is there.
func (t *textIndex) remove(slug string) {
	id, ok := t.bySlug[slug]
	if !ok {
		return
	}
	delete(t.bySlug, slug)
	d := &t.docs[id]
	d.dead = true
	t.branches[id] = -1
	t.live--
	t.totalLen -= int64(d.length)
	t.dead++
	if t.dead >= compactAt && t.dead > t.live/4 {
		t.compact()
	}
}

// compact rebuilds docs and postings without the dead documents.
func (t *textIndex) compact() {
	remap := make([]int32, len(t.docs))
	docs := make([]textDoc, 0, t.live)
	lens := make([]float32, 0, t.live)
	branches := make([]int32, 0, t.live)
	for i, d := range t.docs {
		remap[i] = -1
		if !d.dead {
			remap[i] = int32(len(docs))
			t.bySlug[d.slug] = int32(len(docs))
			docs = append(docs, d)
			lens = append(lens, t.lens[i])
			branches = append(branches, t.branches[i])
		}
	}
	t.lens, t.branches = lens, branches
	for tid, ps := range t.postings {
		kept := ps[:0]
		for _, p := range ps {
			if id := remap[p.doc]; id >= 0 {
				kept = append(kept, posting{doc: id, tf: p.tf})
			}
		}
		// A term left without documents keeps its id (and an empty list).
		t.postings[tid] = slices.Clip(kept)
	}
	t.docs, t.dead = docs, 0
}

func (t *textIndex) branchID(b string) int32 {
	id, ok := t.branchIDs[b]
	if !ok {
		id = int32(len(t.branchIDs))
		t.branchIDs[b] = id
	}
	return id
}

// df is how many live documents hold term (dead ones are counted until the
// next compaction; the difference is at most compactAt).
func (t *textIndex) df(term string) int { return len(t.list(term)) }

// list is the postings of term, nil for an unknown term.
func (t *textIndex) list(term string) []posting {
	if tid, ok := t.termIDs[term]; ok {
		return t.postings[tid]
	}
	return nil
}

// textHit is one BM25 result.
type textHit struct {
	sh    *shard
	slug  string
	score float64
}

// searchText ranks the live entries of shards on branch (and project-wide)
// by BM25 against query and returns the best k, best first (ties by store
// and slug). Term statistics are taken over all the searched shards, so
// that scores from different stores compare. Caller holds mu.
func searchText(query string, shards []*shard, branch string, k int) []textHit {
	terms := queryTokens(query)
	if len(terms) == 0 {
		return nil
	}
	var n, total int64
	for _, sh := range shards {
		n += int64(sh.text.live)
		total += sh.text.totalLen
	}
	if n == 0 {
		return nil
	}
	avg := float64(total) / float64(n)
	idf := make([]float64, len(terms))
	for i, term := range terms {
		df := 0
		for _, sh := range shards {
			df += sh.text.df(term)
		}
		idf[i] = math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
	}
	top := make([]textHit, 0, k+1)
	for _, sh := range shards {
		t := sh.text
		want := int32(-2) // matches no document
		if branch != "" {
			if id, ok := t.branchIDs[branch]; ok {
				want = id
			}
		}
		if cap(t.acc) < len(t.docs) {
			t.acc = make([]float32, len(t.docs), cap(t.lens))
		}
		acc := t.acc[:len(t.docs)]
		touched := t.touched[:0]
		for i, term := range terms {
			w := float32(idf[i] * (bm25K1 + 1))
			for _, p := range t.list(term) {
				b := t.branches[p.doc]
				if b != 0 && b != want {
					continue
				}
				tf := float32(p.tf)
				if acc[p.doc] == 0 {
					touched = append(touched, p.doc)
				}
				acc[p.doc] += w * tf / (tf + float32(bm25K1*(1-bm25B)) + float32(bm25K1*bm25B/avg)*t.lens[p.doc])
			}
		}
		for _, id := range touched {
			h := textHit{sh: sh, slug: t.docs[id].slug, score: float64(acc[id])}
			acc[id] = 0
			if len(top) == k && !betterText(h, top[k-1]) {
				continue
			}
			i := len(top)
			top = append(top, h)
			for i > 0 && betterText(top[i], top[i-1]) {
				top[i], top[i-1] = top[i-1], top[i]
				i--
			}
			if len(top) > k {
				top = top[:k]
			}
		}
		t.touched = touched[:0]
	}
	return top
}

// betterText orders BM25 results: higher score first, then store and slug.
func betterText(a, b textHit) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	if a.sh.name != b.sh.name {
		return a.sh.name < b.sh.name
	}
	return a.slug < b.slug
}

// stopWords carry no meaning on their own; leaving them out keeps the
// longest postings out of every query.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or but if then else of to in on at by for from with without as is are was were be been being it its this that these those there here
		we you i he she they them our your my me us do does did done so than too very can could should would will shall may might must just also into onto over under about
		what which who whom when where why how all any each both few more most other some such own same s t`) {
		m[w] = true
	}
	return m
}()

// tokenize turns text into index terms. Each whitespace-separated chunk,
// stripped of surrounding punctuation and lowercased, is kept whole when it
// holds inner punctuation (a path, a flag, a dotted name, an error code), so
// that an exact name matches exactly; it is also split on every character
// that is not a letter or digit, and each piece on camelCase and
// letter-digit boundaries, keeping the piece whole too. So
// "persistence/memory/recall.go" gives the path and "persistence",
// "memory", "recall", "go"; "ErrNotFound" gives "errnotfound", "err",
// "not", "found"; "snake_case" gives "snake_case", "snake", "case".
// Pieces are lightly stemmed (a plural "s" is dropped) and stop words are
// left out, except inside a whole chunk.
func tokenize(text string) []string {
	var out []string
	for _, chunk := range strings.Fields(text) {
		chunk = strings.TrimFunc(chunk, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if chunk == "" {
			continue
		}
		parts := strings.FieldsFunc(chunk, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if len(parts) > 1 || parts[0] != chunk {
			out = appendToken(out, strings.ToLower(chunk), false)
		}
		for _, p := range parts {
			sub := splitCase(p)
			if len(sub) > 1 {
				out = appendToken(out, strings.ToLower(p), true)
			}
			for _, s := range sub {
				out = appendToken(out, strings.ToLower(s), true)
			}
		}
	}
	return out
}

func appendToken(out []string, tok string, stem bool) []string {
	if tok == "" || len(tok) > maxTokenBytes || stopWords[tok] {
		return out
	}
	if stem {
		tok = stemPlural(tok)
	}
	return append(out, tok)
}

// stemPlural drops a plural "s" ("entries" -> "entri" is not attempted;
// "files" -> "file", "flags" -> "flag"), leaving "ss", "us", "is" endings.
func stemPlural(w string) string {
	if len(w) > 3 && w[len(w)-1] == 's' {
		switch w[len(w)-2] {
		case 's', 'u', 'i':
			return w
		}
		return w[:len(w)-1]
	}
	return w
}

// splitCase splits an identifier at lower-to-upper changes, at the end of an
// upper-case run followed by a lower-case letter ("HTTPServer" -> "HTTP",
// "Server") and at letter-digit changes ("utf8" -> "utf", "8").
func splitCase(s string) []string {
	rs := []rune(s)
	var out []string
	start := 0
	for i := 1; i < len(rs); i++ {
		prev, cur := rs[i-1], rs[i]
		split := (unicode.IsLower(prev) && unicode.IsUpper(cur)) ||
			(unicode.IsUpper(prev) && unicode.IsUpper(cur) && i+1 < len(rs) && unicode.IsLower(rs[i+1])) ||
			(unicode.IsDigit(prev) != unicode.IsDigit(cur))
		if split {
			out = append(out, string(rs[start:i]))
			start = i
		}
	}
	return append(out, string(rs[start:]))
}

// queryTokens are the distinct terms of a query.
func queryTokens(q string) []string {
	var out []string
	for _, t := range tokenize(q) {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}
