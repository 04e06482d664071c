package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// RememberInput is one memory to store.
type RememberInput struct {
	// Label is a short title; the slug is derived from it. Required.
	Label string
	// Content is the memory. Required, at most MaxContentSize bytes.
	Content string
	// Store is the store to write to. Default: GlobalStore.
	Store string
	// Branch limits the memory to a git branch. Default: "" (project-wide).
	Branch string
	// Confidence is 1..10. Default: DefaultConfidence (5).
	Confidence int
	// Overwrite replaces an entry with the same slug instead of failing with
	// ErrExists. It also forgets every dedup verdict about that entry: its
	// text changed, so earlier judgements no longer hold.
	Overwrite bool
	// Archived stores the entry out of recall, dedup and staleness.
	Archived bool
	// Created and Updated, when set, are the entry's times instead of now:
	// an import restoring an export keeps when each memory was written,
	// so staleness and the lists' order survive the move. Default: zero,
	// meaning now (Created of an overwritten entry is its own).
	Created, Updated time.Time
}

// RememberResult says what Remember did.
type RememberResult struct {
	Entry Entry
	// Op is "new" or "updated".
	Op string
	// Similar lists live entries of the same store whose cosine similarity
	// with the new entry is at or above the dedup threshold, best first (at
	// most MaxSimilar). The entry is saved regardless; this is a warning.
	Similar []SimilarEntry
}

// Op values of RememberResult.
const (
	OpNew     = "new"
	OpUpdated = "updated"
	// MaxSimilar caps RememberResult.Similar.
	MaxSimilar = 10
	// MaxPairsPerWrite caps the duplicate pairs one write records: its
	// best ones. A store of many near-identical entries (notes written
	// from one template) would otherwise hold pairs quadratic in its size,
	// all loaded at every open; capped, they stay linear, and the dedup
	// signal still says the store needs a cleanup.
	MaxPairsPerWrite = 32
)

// SimilarEntry is another entry close to the one just written.
type SimilarEntry struct {
	Slug  string
	Label string
	// Score is the cosine similarity, to within about 0.002.
	Score float64
}

// Verdict is a person's or agent's judgement of a reported pair.
type Verdict string

// Verdicts accepted by ResolvePair.
const (
	VerdictDuplicate Verdict = "duplicate"
	VerdictDistinct  Verdict = "distinct"
)

func (in *RememberInput) normalize() error {
	in.Label = strings.TrimSpace(in.Label)
	in.Content = strings.TrimSpace(in.Content)
	in.Store = strings.TrimSpace(in.Store)
	in.Branch = normalizeBranch(in.Branch)
	if in.Store == "" {
		in.Store = GlobalStore
	}
	if in.Confidence == 0 {
		in.Confidence = DefaultConfidence
	}
	switch {
	case in.Label == "":
		return invalid("label is empty")
	case utf8.RuneCountInString(in.Label) > MaxLabelRunes:
		return invalid("label has more than %d characters", MaxLabelRunes)
	case in.Content == "":
		return invalid("content of %q is empty", in.Label)
	case len(in.Content) > MaxContentSize:
		return invalid("content of %q is %d bytes, more than %d", in.Label, len(in.Content), MaxContentSize)
	case !utf8.ValidString(in.Label) || !utf8.ValidString(in.Content):
		return invalid("label or content of %q is not valid UTF-8", in.Label)
	case in.Confidence < 1 || in.Confidence > 10:
		return invalid("confidence %d of %q is outside 1..10", in.Confidence, in.Label)
	}
	if err := checkName("store", in.Store); err != nil {
		return err
	}
	if in.Branch != "" {
		if err := checkName("branch", in.Branch); err != nil {
			return err
		}
	}
	return nil
}

// Remember stores a memory. An entry with the same slug in the same store
// makes it fail with an error matching ErrExists, unless in.Overwrite is
// set. The write, its index record and its duplicate pairs are committed in
// one synced batch.
func (s *Store) Remember(ctx context.Context, in RememberInput) (RememberResult, error) {
	res, err := s.remember(ctx, in, true)
	if err == nil {
		s.changed(Change{Store: res.Entry.Store, Slug: res.Entry.Slug, Entry: &res.Entry})
	}
	return res, err
}

// remember stores a memory; logged: the write is the store's own (not a
// replicated one), kept by the change log in its batch (LogChanges).
func (s *Store) remember(ctx context.Context, in RememberInput, logged bool) (RememberResult, error) {
	if err := in.normalize(); err != nil {
		return RememberResult{}, err
	}
	if err := s.refuse(&in); err != nil {
		return RememberResult{}, err
	}
	slug := Slugify(in.Label)
	vecs, err := s.embed(ctx, []string{embedText(in.Label, in.Content)})
	if err != nil {
		return RememberResult{}, fmt.Errorf("memory: embed %q with %s: %w", in.Label, s.embedName, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return RememberResult{}, ErrClosed
	}
	sh := s.shard(in.Store)
	if _, exists := sh.metas[slug]; !exists {
		slug = s.legacySlugLocked(sh, in.Store, in.Label, slug)
	}
	now := s.now().UTC()
	e := Entry{
		Slug: slug, Store: in.Store, Label: in.Label, Content: in.Content, Branch: in.Branch,
		Confidence: in.Confidence, Archived: in.Archived, Created: now, Updated: now,
	}
	op := OpNew
	if _, exists := sh.metas[slug]; exists {
		if !in.Overwrite {
			return RememberResult{}, &existsError{store: in.Store, slug: slug}
		}
		prev, err := s.getLocked(in.Store, slug)
		if err != nil {
			return RememberResult{}, err
		}
		e.Created, e.RecallCount, e.LastRecalled = prev.Created, prev.RecallCount, prev.LastRecalled
		op = OpUpdated
	}
	if !in.Created.IsZero() {
		e.Created = in.Created.UTC()
	}
	if !in.Updated.IsZero() {
		e.Updated = in.Updated.UTC()
	}
	m := meta{branch: e.Branch, archived: e.Archived, activity: e.activity().UnixNano()}
	var change *Change
	if logged {
		change = &Change{Store: in.Store, Slug: slug, Entry: &e}
	}
	similar, err := s.commit(sh, slug, &e, m, vecs[0], op == OpUpdated, s.st.WriteOptions(), change)
	if err != nil {
		return RememberResult{}, err
	}
	if len(similar) > MaxSimilar {
		similar = similar[:MaxSimilar]
	}
	for i := range similar {
		if o, err := s.getLocked(in.Store, similar[i].Slug); err == nil {
			similar[i].Label = o.Label
		}
	}
	return RememberResult{Entry: e, Op: op, Similar: similar}, nil
}

// refuse asks the guard about in. An overwrite that leaves the label and
// content as stored adds no text, so it is let through: a memory kept
// before the guard was set can still be archived or have its confidence
// changed (or be forgotten), even when the guard would refuse it now.
func (s *Store) refuse(in *RememberInput) error {
	if s.guard == nil {
		return nil
	}
	err := s.guard(in.Label, in.Content)
	if err == nil {
		return nil
	}
	if in.Overwrite {
		if e, gerr := s.Find(in.Store, in.Label); gerr == nil && e.Label == in.Label && e.Content == in.Content {
			return nil
		}
	}
	// The label is left out: the secret may be in it.
	return fmt.Errorf("memory: refused: %w", err)
}

// legacySlugLocked returns the slug under which an entry for label was
// stored before long slugs got a hash, when there is one whose own label has
// the same slug as label; otherwise it returns slug. Caller holds mu.
func (s *Store) legacySlugLocked(sh *shard, store, label, slug string) string {
	old := legacySlug(label)
	if old == slug || sh.metas[old] == nil {
		return slug
	}
	if e, err := s.getLocked(store, old); err == nil && Slugify(e.Label) == slug {
		return old
	}
	return slug
}

// resolveSlug finds the entry a user means by labelOrSlug: an exact slug
// first, then the slug of it read as a label. Caller holds mu.
func (s *Store) resolveSlug(store, labelOrSlug string) (*shard, string, error) {
	if err := checkName("store", store); err != nil {
		return nil, "", err
	}
	labelOrSlug = strings.TrimSpace(labelOrSlug)
	if labelOrSlug == "" {
		return nil, "", invalid("label or slug is empty")
	}
	sh := s.shards[store]
	if sh != nil {
		if _, ok := sh.metas[labelOrSlug]; ok {
			return sh, labelOrSlug, nil
		}
		slug := Slugify(labelOrSlug)
		if slug = s.legacySlugLocked(sh, store, labelOrSlug, slug); sh.metas[slug] != nil {
			return sh, slug, nil
		}
	}
	return nil, "", fmt.Errorf("%w: %q in store %q", ErrNotFound, labelOrSlug, store)
}

// Forget deletes an entry, named by slug or label, with its duplicate pairs
// and verdicts, and returns what was deleted.
func (s *Store) Forget(store, labelOrSlug string) (Entry, error) {
	e, err := s.forget(store, labelOrSlug, true)
	if err == nil {
		s.changed(Change{Delete: true, Store: e.Store, Slug: e.Slug})
	}
	return e, err
}

// forget deletes an entry; logged as remember's.
func (s *Store) forget(store, labelOrSlug string, logged bool) (Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Entry{}, ErrClosed
	}
	sh, slug, err := s.resolveSlug(store, labelOrSlug)
	if err != nil {
		return Entry{}, err
	}
	e, err := s.getLocked(store, slug)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Entry{}, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	del := func(k []byte) error {
		if err := b.Delete(k, nil); err != nil {
			return fmt.Errorf("memory: forget %s/%s: %w", store, slug, err)
		}
		return nil
	}
	if err := del(entryKey(store, slug)); err != nil {
		return Entry{}, err
	}
	if err := del(indexKey(store, slug)); err != nil {
		return Entry{}, err
	}
	pairs, verdicts := sh.pairsOf(slug)
	for _, p := range pairs {
		if err := del(pairRecordKey(kindPair, store, p)); err != nil {
			return Entry{}, err
		}
	}
	for _, p := range verdicts {
		if err := del(pairRecordKey(kindVerdict, store, p)); err != nil {
			return Entry{}, err
		}
	}
	if logged {
		if err := s.logChange(b, Change{Delete: true, Store: store, Slug: slug}); err != nil {
			return Entry{}, err
		}
	}
	if err := b.Commit(s.st.WriteOptions()); err != nil {
		return Entry{}, fmt.Errorf("memory: forget %s/%s: %w", store, slug, err)
	}
	sh.remove(slug)
	return e, nil
}

// ResolvePair records a verdict on two entries (slugs or labels) of store.
// A judged pair is never reported as a duplicate again, until either entry
// is overwritten.
func (s *Store) ResolvePair(store, a, b string, v Verdict) error {
	if v != VerdictDuplicate && v != VerdictDistinct {
		return invalid("verdict %q is neither %q nor %q", v, VerdictDuplicate, VerdictDistinct)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	sh, sa, err := s.resolveSlug(store, a)
	if err != nil {
		return err
	}
	_, sb, err := s.resolveSlug(store, b)
	if err != nil {
		return err
	}
	if sa == sb {
		return invalid("a pair needs two different entries, got %q twice", sa)
	}
	p := makePair(sa, sb)
	if err := s.db.Set(pairRecordKey(kindVerdict, store, p), []byte(v), s.st.WriteOptions()); err != nil {
		return fmt.Errorf("memory: judge %s/%s+%s: %w", store, p.a, p.b, err)
	}
	sh.setVerdict(p, v)
	return nil
}

// Pair is a reported possible duplicate.
type Pair struct {
	A, B string // slugs, A < B
	// Score is the cosine similarity, to within about 0.002.
	Score float64
}

// Pairs lists the unjudged possible duplicates of store, most similar
// first: the pairs behind the DedupPairs signal.
func (s *Store) Pairs(store string) ([]Pair, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	sh := s.shards[store]
	if sh == nil {
		return nil, nil
	}
	var out []Pair
	for p, score := range sh.pairs {
		if _, judged := sh.verdicts[p]; !judged {
			out = append(out, Pair{A: p.a, B: p.b, Score: float64(score)})
		}
	}
	slices.SortFunc(out, func(x, y Pair) int {
		if x.Score != y.Score {
			if x.Score > y.Score {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(x.A, y.A); c != 0 {
			return c
		}
		return cmp.Compare(x.B, y.B)
	})
	return out, nil
}
