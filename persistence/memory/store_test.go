package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/persistence/memory/embed"
)

const proj = "acme/api"

var (
	pebbleNote = RememberInput{Store: proj, Label: "Pebble sync policy",
		Content: "Every journal append is committed with pebble.Sync so the fsync happens before any effect runs."}
	tmuxNote = RememberInput{Store: proj, Label: "tmux window naming",
		Content: "IM bindings name their tmux window after the forum topic id, never the topic title, because titles change."}
	goNote = RememberInput{Store: GlobalStore, Label: "Go table tests",
		Content: "Prefer table-driven tests with t.Run subtests and descriptive case names over copy-pasted test functions."}
)

func TestRememberValidation(t *testing.T) {
	e := newEnv(t, Options{})
	tests := []struct {
		name string
		in   RememberInput
		want string
	}{
		{"empty label", RememberInput{Label: "  ", Content: "x"}, "label is empty"},
		{"empty content", RememberInput{Label: "a", Content: " \n"}, "content of \"a\" is empty"},
		{"confidence too low", RememberInput{Label: "a", Content: "x", Confidence: -1}, "confidence -1"},
		{"confidence too high", RememberInput{Label: "a", Content: "x", Confidence: 11}, "confidence 11"},
		{"label too long", RememberInput{Label: strings.Repeat("x", MaxLabelRunes+1), Content: "x"}, "label has more than"},
		{"content too big", RememberInput{Label: "a", Content: strings.Repeat("x", MaxContentSize+1)}, "bytes, more than"},
		{"control char in store", RememberInput{Label: "a", Content: "x", Store: "a\x00b"}, "control character"},
		{"control char in branch", RememberInput{Label: "a", Content: "x", Branch: "a\nb"}, "control character"},
		{"store too long", RememberInput{Label: "a", Content: "x", Store: strings.Repeat("s", MaxNameBytes+1)}, "store \"sss"},
		{"branch too long", RememberInput{Label: "a", Content: "x", Branch: strings.Repeat("b", MaxNameBytes+1)}, "bytes long, more than 256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.ms.Remember(context.Background(), tt.in)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrInvalid mentioning %q", err, tt.want)
			}
		})
	}
	if got, _ := e.ms.List(GlobalStore, ""); len(got) != 0 {
		t.Fatalf("invalid input stored entries: %v", got)
	}
}

func TestLongNamesAreRefusedEverywhere(t *testing.T) {
	e := newEnv(t, Options{})
	long := strings.Repeat("s", MaxNameBytes+1)
	at := strings.Repeat("s", MaxNameBytes)
	e.remember(RememberInput{Store: at, Branch: at, Label: "a", Content: "x"}) // the limit itself is fine
	if _, err := e.ms.List(long, ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("List of a %d-byte store: %v, want ErrInvalid", len(long), err)
	}
	if _, err := e.ms.Recall(context.Background(), RecallInput{Query: "a", Stores: []string{long}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Recall of a %d-byte store: %v, want ErrInvalid", len(long), err)
	}
	if _, err := e.ms.Get(long, "a"); !errors.Is(err, ErrInvalid) {
		t.Errorf("Get of a %d-byte store: %v, want ErrInvalid", len(long), err)
	}
	if _, ok := ParseRemote("git@github.com:o/" + long); ok {
		t.Error("ParseRemote accepted a repository name longer than a store may be")
	}
}

// TestLongLabelsSharingAPrefixAreDifferentMemories: overwrite of one long
// label must not replace another that merely starts the same way.
func TestLongLabelsSharingAPrefixAreDifferentMemories(t *testing.T) {
	e := newEnv(t, Options{})
	prefix := strings.Repeat("release checklist for the payments api ", 2)
	first := e.remember(RememberInput{Store: proj, Label: prefix + "staging", Content: "staging steps"})
	second := e.remember(RememberInput{Store: proj, Label: prefix + "production", Content: "production steps", Overwrite: true})
	if second.Op != OpNew || second.Entry.Slug == first.Entry.Slug {
		t.Fatalf("second long label: op %s slug %q; first slug %q", second.Op, second.Entry.Slug, first.Entry.Slug)
	}
	got, err := e.ms.Get(proj, first.Entry.Slug)
	if err != nil || got.Content != "staging steps" {
		t.Fatalf("the first memory after remembering the second: %+v, %v", got, err)
	}
	if all, _ := e.ms.List(proj, ""); len(all) != 2 {
		t.Fatalf("store holds %d entries, want 2", len(all))
	}
}

// TestLegacyLongSlugStillResolves: an entry stored before long slugs got
// a hash keeps its slug, and its label still finds it.
func TestLegacyLongSlugStillResolves(t *testing.T) {
	e := newEnv(t, Options{})
	prefix := strings.Repeat("release checklist for the payments api ", 2)
	label := prefix + "staging"
	old := legacySlug(label)
	if old == Slugify(label) || len(old) != MaxSlugBytes {
		t.Fatalf("legacy slug %q of a long label equals the new one", old)
	}
	now := e.clk.Now()
	bulkLoad(t, e.ms, []Entry{{Slug: old, Store: proj, Label: label, Content: "old steps", Confidence: 5, Created: now, Updated: now}})
	e.reopen(Options{})

	// Another label with the same legacy slug is a different memory.
	other := e.remember(RememberInput{Store: proj, Label: prefix + "production", Content: "production steps", Overwrite: true})
	if other.Op != OpNew || other.Entry.Slug == old {
		t.Fatalf("an unrelated label took over the legacy entry: %+v %s", other.Entry, other.Op)
	}
	// The same label without overwrite is refused, with overwrite it
	// updates the stored entry in place.
	if _, err := e.ms.Remember(context.Background(), RememberInput{Store: proj, Label: label, Content: "new steps"}); !errors.Is(err, ErrExists) {
		t.Fatalf("remember of the stored label: %v, want ErrExists", err)
	}
	upd := e.remember(RememberInput{Store: proj, Label: label, Content: "new steps", Overwrite: true})
	if upd.Op != OpUpdated || upd.Entry.Slug != old {
		t.Fatalf("overwrite of the stored label: %s slug %q, want updated %q", upd.Op, upd.Entry.Slug, old)
	}
	if all, _ := e.ms.List(proj, ""); len(all) != 2 {
		t.Fatalf("store holds %d entries, want 2", len(all))
	}
	for _, key := range []string{label, strings.ToUpper(label), old} {
		if got, err := e.ms.Find(proj, key); err != nil || got.Slug != old || got.Content != "new steps" {
			t.Fatalf("Find(%q): %+v, %v", key, got, err)
		}
	}
	if got, err := e.ms.Find(proj, prefix+"production"); err != nil || got.Slug != other.Entry.Slug {
		t.Fatalf("Find of the other label: %+v, %v", got, err)
	}
	if _, err := e.ms.Find(proj, prefix+"nothing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Find of an unknown long label: %v, want ErrNotFound", err)
	}
	if got, err := e.ms.Forget(proj, label); err != nil || got.Slug != old {
		t.Fatalf("forget by label: %+v, %v", got, err)
	}
}

func TestRememberDefaultsAndFields(t *testing.T) {
	e := newEnv(t, Options{})
	res := e.remember(RememberInput{Label: "  Default store  ", Content: " body ", Branch: "refs/heads/feat"})
	want := Entry{Slug: "default-store", Store: GlobalStore, Label: "Default store", Content: "body", Branch: "feat",
		Confidence: DefaultConfidence, Created: e.clk.Now(), Updated: e.clk.Now()}
	if res.Op != OpNew || res.Entry != want {
		t.Fatalf("remember = %+v %s\nwant %+v", res.Entry, res.Op, want)
	}
	got, err := e.ms.Get(GlobalStore, "default-store")
	if err != nil || got != want {
		t.Fatalf("Get = %+v, %v", got, err)
	}
}

func TestRememberExistsAndOverwrite(t *testing.T) {
	e := newEnv(t, Options{})
	first := e.remember(pebbleNote)
	e.recall(RecallInput{Query: "pebble fsync", Stores: []string{proj}})
	e.clk.Advance(time.Hour)

	again := pebbleNote
	again.Label = "pebble SYNC policy!" // same slug
	again.Content = "changed"
	_, err := e.ms.Remember(context.Background(), again)
	if !errors.Is(err, ErrExists) {
		t.Fatalf("err = %v, want ErrExists", err)
	}
	for _, want := range []string{`"pebble-sync-policy"`, `store "acme/api"`, "pass overwrite"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not mention %s", err, want)
		}
	}
	if got, _ := e.ms.Get(proj, first.Entry.Slug); got.Content != pebbleNote.Content {
		t.Fatalf("refused remember changed the entry: %q", got.Content)
	}

	again.Overwrite = true
	again.Confidence = 9
	res := e.remember(again)
	if res.Op != OpUpdated {
		t.Fatalf("op = %s, want updated", res.Op)
	}
	got := res.Entry
	if got.Content != "changed" || got.Label != "pebble SYNC policy!" || got.Confidence != 9 ||
		!got.Created.Equal(first.Entry.Created) || !got.Updated.Equal(e.clk.Now()) || got.RecallCount != 1 {
		t.Fatalf("overwritten entry = %+v", got)
	}
	if all, _ := e.ms.List(proj, ""); len(all) != 1 {
		t.Fatalf("overwrite left %d entries", len(all))
	}
	// Overwrite of a missing entry is a plain new entry.
	fresh := tmuxNote
	fresh.Overwrite = true
	if res := e.remember(fresh); res.Op != OpNew {
		t.Fatalf("op = %s, want new", res.Op)
	}
}

func TestRememberWarnsAboutSimilarEntries(t *testing.T) {
	e := newEnv(t, Options{})
	e.remember(pebbleNote)
	e.remember(tmuxNote)
	e.remember(RememberInput{Store: "other/repo", Label: "pebble sync in other repo", Content: pebbleNote.Content})

	dup := RememberInput{Store: proj, Label: "Pebble syncing policy",
		Content: "Every journal append is committed with pebble.Sync, so the fsync happens before any effect runs."}
	res := e.remember(dup)
	if len(res.Similar) != 1 {
		t.Fatalf("similar = %+v, want the pebble note only (same store)", res.Similar)
	}
	s := res.Similar[0]
	if s.Slug != "pebble-sync-policy" || s.Label != pebbleNote.Label || s.Score < DefaultDedupThreshold || s.Score > 1.001 {
		t.Fatalf("similar = %+v", s)
	}
	if _, err := e.ms.Get(proj, "pebble-syncing-policy"); err != nil {
		t.Fatalf("similar entry was not saved: %v", err)
	}
	unrelated := e.remember(RememberInput{Store: proj, Label: "Release checklist",
		Content: "Tag the release, push the tag, then publish the changelog on the website."})
	if len(unrelated.Similar) != 0 {
		t.Fatalf("unrelated entry reported similar to %+v", unrelated.Similar)
	}
	// A higher threshold silences the warning for the same pair.
	strict := newEnv(t, Options{DedupThreshold: 0.999})
	strict.remember(pebbleNote)
	if res := strict.remember(dup); len(res.Similar) != 0 {
		t.Fatalf("threshold 0.999 still reported %+v", res.Similar)
	}
}

func TestRecallRanksAndFilters(t *testing.T) {
	e := newEnv(t, Options{})
	e.remember(pebbleNote)
	e.remember(tmuxNote)
	e.remember(goNote)
	e.remember(RememberInput{Store: proj, Branch: "feature/im", Label: "Feishu card callbacks",
		Content: "On feature/im the Feishu adapter acknowledges card callbacks within three seconds or Feishu retries them."})
	e.remember(RememberInput{Store: "other/repo", Label: "Other repo pebble", Content: pebbleNote.Content})

	tests := []struct {
		name   string
		in     RecallInput
		first  string
		absent []string
	}{
		{"best match first", RecallInput{Query: "when does pebble fsync the journal", Stores: SessionStores(proj)},
			"pebble-sync-policy", []string{"other-repo-pebble", "feishu-card-callbacks"}},
		{"global store searched with project", RecallInput{Query: "table driven tests subtests", Stores: SessionStores(proj)},
			"go-table-tests", nil},
		{"branch memories need the branch", RecallInput{Query: "feishu card callbacks retries", Stores: SessionStores(proj)},
			"", []string{"feishu-card-callbacks"}},
		{"branch recall sees branch and project-wide", RecallInput{Query: "feishu card callbacks retries", Stores: SessionStores(proj), Branch: "feature/im"},
			"feishu-card-callbacks", nil},
		{"other branch does not see it", RecallInput{Query: "feishu card callbacks retries", Stores: SessionStores(proj), Branch: "main"},
			"", []string{"feishu-card-callbacks"}},
		{"store filter", RecallInput{Query: "pebble fsync journal", Stores: []string{"other/repo"}},
			"other-repo-pebble", []string{"pebble-sync-policy", "go-table-tests"}},
		{"no stores means all", RecallInput{Query: "pebble fsync journal append", Limit: 10},
			"", []string{"feishu-card-callbacks"}},
		{"unknown store", RecallInput{Query: "pebble", Stores: []string{"nobody/nothing"}}, "", []string{"pebble-sync-policy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits := e.recall(tt.in)
			got := slugsOf(hits)
			if tt.first != "" && (len(got) == 0 || got[0] != tt.first) {
				t.Fatalf("hits = %v, want %s first", got, tt.first)
			}
			for _, a := range tt.absent {
				if slices.Contains(got, a) {
					t.Fatalf("hits = %v include %s", got, a)
				}
			}
			for i, h := range hits {
				if i > 0 && h.Score > hits[i-1].Score {
					t.Fatalf("hits not sorted by score: %v", hits)
				}
				// Hybrid scores are reciprocal-rank-fusion sums, at most 2/(rrfK+1).
				if h.Score <= 0 || h.Score > 2.0/(rrfK+1)+1e-12 {
					t.Fatalf("hit %+v has bad scores", h)
				}
			}
		})
	}
	if hits := e.recall(RecallInput{Query: "pebble fsync journal", Limit: 1}); len(hits) != 1 {
		t.Fatalf("limit 1 gave %d hits", len(hits))
	}
	if hits := e.recall(RecallInput{Query: "?!"}); len(hits) != 0 {
		t.Fatalf("query without words gave %v", slugsOf(hits))
	}
	if _, err := e.ms.Recall(context.Background(), RecallInput{Query: " "}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty query err = %v", err)
	}
}

func TestRecallExactWordBoost(t *testing.T) {
	e := newEnv(t, Options{})
	e.remember(RememberInput{Label: "wal", Content: "the wal file is fsynced on every commit"})
	e.remember(RememberInput{Label: "walls", Content: "walls and wallets: walking the wall of walnuts"})
	hits := e.recall(RecallInput{Query: "The WAL?", Mode: RecallVector})
	if len(hits) != 2 {
		t.Fatalf("hits = %v", slugsOf(hits))
	}
	// "wal" holds both query words, "walls" only "the" ("wall" is not "wal").
	want := map[string]float64{"wal": termBoost, "walls": termBoost / 2}
	for _, h := range hits {
		if d := h.Score - h.Similarity - want[h.Entry.Slug]; d > 1e-9 || d < -1e-9 {
			t.Fatalf("%s: score %.4f similarity %.4f, want boost %.3f", h.Entry.Slug, h.Score, h.Similarity, want[h.Entry.Slug])
		}
	}
	if hits[0].Entry.Slug != "wal" {
		t.Fatalf("hits = %v", slugsOf(hits))
	}
}

func TestRecallUpdatesStats(t *testing.T) {
	e := newEnv(t, Options{})
	e.remember(pebbleNote)
	e.remember(tmuxNote)
	e.clk.Advance(time.Minute)
	hits := e.recall(RecallInput{Query: "pebble sync fsync", Stores: []string{proj}, Limit: 1})
	if len(hits) != 1 || hits[0].Entry.RecallCount != 1 || !hits[0].Entry.LastRecalled.Equal(e.clk.Now()) {
		t.Fatalf("hit = %+v", hits)
	}
	e.clk.Advance(time.Minute)
	e.recall(RecallInput{Query: "pebble sync fsync", Stores: []string{proj}, Limit: 1})
	e.reopen(Options{})
	got, _ := e.ms.Get(proj, "pebble-sync-policy")
	if got.RecallCount != 2 || !got.LastRecalled.Equal(e.clk.Now()) {
		t.Fatalf("after reopen: count %d last %v", got.RecallCount, got.LastRecalled)
	}
	other, _ := e.ms.Get(proj, "tmux-window-naming")
	if other.RecallCount != 0 || !other.LastRecalled.IsZero() {
		t.Fatalf("entry not returned got stats: %+v", other)
	}
}

func TestArchivedEntriesAreExcluded(t *testing.T) {
	e := newEnv(t, Options{StaleAfter: 24 * time.Hour})
	arch := pebbleNote
	arch.Archived = true
	e.remember(arch)
	dup := pebbleNote
	dup.Label = "pebble sync policy copy"
	if res := e.remember(dup); len(res.Similar) != 0 {
		t.Fatalf("archived entry reported as similar: %+v", res.Similar)
	}
	for _, h := range e.recall(RecallInput{Query: "pebble sync", Stores: []string{proj}}) {
		if h.Entry.Archived {
			t.Fatalf("archived entry recalled: %+v", h.Entry)
		}
	}
	e.clk.Advance(48 * time.Hour)
	if sig := e.signals(proj); sig.Stale != 1 || sig.DedupPairs != 0 {
		t.Fatalf("signals = %+v, want only the live copy stale", sig)
	}
	all, _ := e.ms.List(proj, "")
	if len(all) != 2 {
		t.Fatalf("List = %d entries, want archived one listed too", len(all))
	}
	// Un-archiving by overwrite brings it back into recall and dedup.
	arch.Archived, arch.Overwrite = false, true
	res := e.remember(arch)
	if len(res.Similar) != 1 || e.signals(proj).DedupPairs != 1 {
		t.Fatalf("unarchived entry: similar %+v, signals %+v", res.Similar, e.signals(proj))
	}
	// Archiving by overwrite drops its pair.
	arch.Archived = true
	e.remember(arch)
	if sig := e.signals(proj); sig.DedupPairs != 0 {
		t.Fatalf("archived entry still in a pair: %+v", sig)
	}
}

func TestForget(t *testing.T) {
	e := newEnv(t, Options{})
	e.remember(pebbleNote)
	dup := pebbleNote
	dup.Label = "pebble sync policy again"
	e.remember(dup)
	e.remember(tmuxNote)
	if e.signals(proj).DedupPairs != 1 {
		t.Fatal("expected one pair")
	}
	got, err := e.ms.Forget(proj, "Pebble Sync Policy") // by label
	if err != nil || got.Slug != "pebble-sync-policy" || got.Content != pebbleNote.Content {
		t.Fatalf("Forget = %+v, %v", got, err)
	}
	if e.signals(proj).DedupPairs != 0 {
		t.Fatal("forgotten entry still counted in a pair")
	}
	if _, err := e.ms.Get(proj, "pebble-sync-policy"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after forget = %v", err)
	}
	if _, err := e.ms.Forget(proj, "tmux-window-naming"); err != nil { // by slug
		t.Fatal(err)
	}
	if _, err := e.ms.Forget(proj, "tmux-window-naming"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second forget = %v", err)
	}
	if _, err := e.ms.Forget("no/store", "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("forget in unknown store = %v", err)
	}
	for _, h := range e.recall(RecallInput{Query: "tmux window topic", Stores: []string{proj}}) {
		if h.Entry.Slug == "tmux-window-naming" {
			t.Fatal("forgotten entry recalled")
		}
	}
	e.reopen(Options{})
	all, _ := e.ms.List(proj, "")
	if len(all) != 1 || all[0].Slug != "pebble-sync-policy-again" {
		t.Fatalf("after reopen List = %v", all)
	}
	if e.signals(proj).DedupPairs != 0 {
		t.Fatal("pair of forgotten entry came back after reopen")
	}
}

func TestListByBranch(t *testing.T) {
	e := newEnv(t, Options{})
	e.remember(RememberInput{Store: proj, Label: "wide", Content: "project-wide"})
	e.remember(RememberInput{Store: proj, Label: "on a", Content: "a", Branch: "a"})
	e.remember(RememberInput{Store: proj, Label: "on b", Content: "b", Branch: "b"})
	names := func(es []Entry) []string {
		var out []string
		for _, x := range es {
			out = append(out, x.Slug)
		}
		return out
	}
	all, _ := e.ms.List(proj, "")
	onA, _ := e.ms.List(proj, "a")
	if !slices.Equal(names(all), []string{"on-a", "on-b", "wide"}) || !slices.Equal(names(onA), []string{"on-a", "wide"}) {
		t.Fatalf("List all = %v, on a = %v", names(all), names(onA))
	}
	if got := e.ms.Stores(); !slices.Equal(got, []string{proj}) {
		t.Fatalf("Stores = %v", got)
	}
}

func TestDedupPairJudgedOnce(t *testing.T) {
	e := newEnv(t, Options{})
	e.remember(pebbleNote)
	dup := pebbleNote
	dup.Label = "pebble sync policy (copy)"
	e.remember(dup)
	pairs, _ := e.ms.Pairs(proj)
	if len(pairs) != 1 || pairs[0].A != "pebble-sync-policy" || pairs[0].B != "pebble-sync-policy-copy" || pairs[0].Score < 0.85 {
		t.Fatalf("pairs = %+v", pairs)
	}
	if err := e.ms.ResolvePair(proj, "pebble-sync-policy-copy", "Pebble sync policy", VerdictDistinct); err != nil {
		t.Fatal(err)
	}
	if sig := e.signals(proj); sig.DedupPairs != 0 {
		t.Fatalf("judged pair still reported: %+v", sig)
	}
	// A third similar entry forms new pairs, but the judged one stays quiet,
	// also after a restart.
	third := pebbleNote
	third.Label = "pebble sync policy third"
	e.remember(third)
	if sig := e.signals(proj); sig.DedupPairs != 2 {
		t.Fatalf("signals = %+v, want the two new pairs", sig)
	}
	e.reopen(Options{})
	if sig := e.signals(proj); sig.DedupPairs != 2 {
		t.Fatalf("after reopen signals = %+v, want 2", sig)
	}
	// Overwriting one side forgets its verdicts: the pair is reported again.
	dup.Overwrite = true
	e.remember(dup)
	if sig := e.signals(proj); sig.DedupPairs != 3 {
		t.Fatalf("after overwrite signals = %+v, want 3", sig)
	}

	for _, tc := range []struct {
		a, b string
		v    Verdict
		err  error
	}{
		{"pebble-sync-policy", "pebble-sync-policy", VerdictDuplicate, ErrInvalid},
		{"pebble-sync-policy", "nope", VerdictDuplicate, ErrNotFound},
		{"pebble-sync-policy", "pebble-sync-policy-third", "maybe", ErrInvalid},
	} {
		if err := e.ms.ResolvePair(proj, tc.a, tc.b, tc.v); !errors.Is(err, tc.err) {
			t.Fatalf("ResolvePair(%s, %s, %s) = %v, want %v", tc.a, tc.b, tc.v, err, tc.err)
		}
	}
}

func TestStaleSignal(t *testing.T) {
	e := newEnv(t, Options{StaleAfter: 30 * 24 * time.Hour})
	e.remember(pebbleNote)
	e.remember(tmuxNote)
	e.clk.Advance(20 * 24 * time.Hour)
	e.remember(goNote)
	e.clk.Advance(11 * 24 * time.Hour) // pebble/tmux: 31 days idle, go: 11 days
	if sig := e.signals(proj); sig.Stale != 2 {
		t.Fatalf("signals = %+v, want 2 stale", sig)
	}
	e.recall(RecallInput{Query: "pebble fsync journal", Stores: []string{proj}, Limit: 1})
	if sig := e.signals(proj); sig.Stale != 1 {
		t.Fatalf("after recall signals = %+v, want 1 stale", sig)
	}
	e.reopen(Options{StaleAfter: 30 * 24 * time.Hour})
	if sig := e.signals(proj); sig.Stale != 1 {
		t.Fatalf("after reopen signals = %+v, want 1 stale", sig)
	}
	over := tmuxNote
	over.Overwrite = true
	e.remember(over)
	if sig := e.signals(proj); sig.Stale != 0 {
		t.Fatalf("after update signals = %+v, want none stale", sig)
	}
	if g := e.signals(GlobalStore); g.Stale != 0 {
		t.Fatalf("global store signals = %+v", g)
	}
}

func TestOrphanedBranchMemories(t *testing.T) {
	requireGit(t)
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	e := newEnv(t, Options{})
	branches := func(store string) ([]string, bool) {
		if store != proj {
			return nil, false
		}
		bs, err := GitBranches(repo)
		return bs, err == nil
	}
	e.remember(RememberInput{Store: proj, Label: "wide", Content: "project-wide note"})
	e.remember(RememberInput{Store: proj, Label: "login flow", Content: "login uses the new token", Branch: "feature/login"})
	e.remember(RememberInput{Store: proj, Label: "old login", Content: "archived login note", Branch: "feature/login", Archived: true})
	e.remember(RememberInput{Store: proj, Label: "main note", Content: "about main", Branch: "main"})

	hy := func() Signals {
		t.Helper()
		sig, err := e.ms.Hygiene([]string{proj}, branches)
		if err != nil {
			t.Fatal(err)
		}
		return sig[proj]
	}
	// Unborn repository: git lists no branch, so nothing is called orphaned.
	if sig := hy(); sig.Orphaned != 0 {
		t.Fatalf("unborn repo: %+v", sig)
	}
	git(t, repo, "commit", "-q", "--allow-empty", "-m", "first")
	if sig := hy(); sig.Orphaned != 2 {
		t.Fatalf("only main exists: %+v, want the 2 feature/login entries", sig)
	}
	git(t, repo, "branch", "feature/login")
	if sig := hy(); sig.Orphaned != 0 {
		t.Fatalf("all branches exist: %+v", sig)
	}
	git(t, repo, "branch", "-D", "feature/login")
	if sig := hy(); sig.Orphaned != 2 {
		t.Fatalf("feature/login deleted: %+v, want 2", sig)
	}
	if _, err := e.ms.Forget(proj, "old-login"); err != nil {
		t.Fatal(err)
	}
	if sig := hy(); sig.Orphaned != 1 {
		t.Fatalf("after forget: %+v, want 1", sig)
	}
	// A store whose branches are unknown is not checked.
	sig, err := e.ms.Hygiene(nil, func(string) ([]string, bool) { return nil, false })
	if err != nil || sig[proj].Orphaned != 0 {
		t.Fatalf("unknown branches: %+v, %v", sig, err)
	}
}

func TestHeartbeatLine(t *testing.T) {
	tests := []struct {
		sig  Signals
		want string
	}{
		{Signals{}, ""},
		{Signals{DedupPairs: 3, Stale: 12, Orphaned: 2}, `Store "acme/api": 3 dedup pairs; 12 stale; 2 orphaned branch memories`},
		{Signals{DedupPairs: 1}, `Store "acme/api": 1 dedup pair`},
		{Signals{Stale: 1, Orphaned: 1}, `Store "acme/api": 1 stale; 1 orphaned branch memory`},
		{Signals{Orphaned: 4}, `Store "acme/api": 4 orphaned branch memories`},
	}
	for _, tt := range tests {
		if got := HeartbeatLine(proj, tt.sig); got != tt.want {
			t.Errorf("HeartbeatLine(%+v) = %q, want %q", tt.sig, got, tt.want)
		}
	}
	lines := HeartbeatLines(map[string]Signals{"b/b": {Stale: 1}, "a/a": {DedupPairs: 2}, "c/c": {}})
	if want := []string{`Store "a/a": 2 dedup pairs`, `Store "b/b": 1 stale`}; !slices.Equal(lines, want) {
		t.Fatalf("HeartbeatLines = %q", lines)
	}
}

func TestPersistsAcrossReopen(t *testing.T) {
	e := newEnv(t, Options{})
	e.remember(pebbleNote)
	e.remember(tmuxNote)
	e.remember(goNote)
	before := e.recall(RecallInput{Query: "tmux topic window", Stores: SessionStores(proj)})
	e.reopen(Options{})
	all, _ := e.ms.List(proj, "")
	if len(all) != 2 {
		t.Fatalf("List after reopen = %d entries", len(all))
	}
	after := e.recall(RecallInput{Query: "tmux topic window", Stores: SessionStores(proj)})
	if !slices.Equal(slugsOf(before), slugsOf(after)) {
		t.Fatalf("recall before %v, after reopen %v", slugsOf(before), slugsOf(after))
	}
	for i := range after {
		if d := after[i].Similarity - before[i].Similarity; d > 1e-6 || d < -1e-6 {
			t.Fatalf("similarity changed across reopen: %v vs %v", before[i], after[i])
		}
	}
	if _, err := e.ms.Remember(context.Background(), pebbleNote); !errors.Is(err, ErrExists) {
		t.Fatalf("existing entry not known after reopen: %v", err)
	}
}

func TestEmbedderChangeReembeds(t *testing.T) {
	e := newEnv(t, Options{})
	e.remember(pebbleNote)
	e.remember(tmuxNote)
	e.remember(goNote)
	arch := RememberInput{Store: proj, Label: "archived", Content: "old", Archived: true}
	e.remember(arch)

	// Same dimension, different coordinates: comparing old vectors with new
	// queries would rank at random.
	perm := &switchable{inner: embed.Local{}, name: "permuted", permute: true}
	e.reopen(Options{Embedder: perm})
	if n := perm.calls.Load(); n != 3 {
		t.Fatalf("re-embedded %d texts, want the 3 live entries", n)
	}
	if hits := e.recall(RecallInput{Query: "tmux window forum topic", Stores: SessionStores(proj)}); len(hits) == 0 || hits[0].Entry.Slug != "tmux-window-naming" {
		t.Fatalf("recall after switch = %v", slugsOf(hits))
	}
	// The new vectors were stored: the next open re-embeds nothing.
	perm2 := &switchable{inner: embed.Local{}, name: "permuted", permute: true}
	e.reopen(Options{Embedder: perm2})
	if n := perm2.calls.Load(); n != 0 {
		t.Fatalf("second open re-embedded %d texts", n)
	}

	// An embedder that is down leaves entries out instead of comparing them.
	down := &switchable{inner: embed.Local{Dimensions: 256}, name: "small"}
	down.fail.Store(true)
	e.reopen(Options{Embedder: down})
	if n := e.ms.Unindexed(); n != 3 {
		t.Fatalf("Unindexed = %d, want 3", n)
	}
	down.fail.Store(false)
	if hits := e.recall(RecallInput{Query: "tmux window forum topic", Stores: SessionStores(proj), Mode: RecallVector}); len(hits) != 0 {
		t.Fatalf("entries without a current vector were recalled by vector: %v", slugsOf(hits))
	}
	// Full text does not need vectors: the hybrid still finds them, with
	// no similarity, and recording that recall keeps them for Reindex.
	hits := e.recall(RecallInput{Query: "tmux window forum topic", Stores: SessionStores(proj)})
	if len(hits) == 0 || hits[0].Entry.Slug != "tmux-window-naming" || hits[0].Similarity != 0 {
		t.Fatalf("hybrid recall without vectors = %+v", hits)
	}
	if all, _ := e.ms.List(proj, ""); len(all) != 3 {
		t.Fatalf("unindexed entries missing from List: %d", len(all))
	}
	n, err := e.ms.Reindex(context.Background())
	if err != nil || n != 3 || e.ms.Unindexed() != 0 {
		t.Fatalf("Reindex = %d, %v; unindexed %d", n, err, e.ms.Unindexed())
	}
	if hits := e.recall(RecallInput{Query: "tmux window forum topic", Stores: SessionStores(proj)}); len(hits) == 0 || hits[0].Entry.Slug != "tmux-window-naming" {
		t.Fatalf("recall after reindex = %v", slugsOf(hits))
	}
}

func TestEmbedderChangeRecomputesPairs(t *testing.T) {
	e := newEnv(t, Options{})
	e.remember(pebbleNote)
	dup := pebbleNote
	dup.Label = "pebble sync policy copy"
	e.remember(dup)
	if e.signals(proj).DedupPairs != 1 {
		t.Fatal("expected a pair")
	}
	// An embedder under which nothing is similar: every vector is orthogonal.
	e.reopen(Options{Embedder: &orthogonal{dim: 64}})
	if sig := e.signals(proj); sig.DedupPairs != 0 {
		t.Fatalf("pair from the old embedder survived re-embedding: %+v", sig)
	}
}

// orthogonal gives every distinct text its own axis.
type orthogonal struct {
	mu   sync.Mutex
	dim  int
	axes map[string]int
}

func (o *orthogonal) Name() string { return "orthogonal" }
func (o *orthogonal) Dim() int     { return o.dim }
func (o *orthogonal) Embed(_ context.Context, texts []string) ([][]float32, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.axes == nil {
		o.axes = map[string]int{}
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		ax, ok := o.axes[t]
		if !ok {
			ax = len(o.axes) % o.dim
			o.axes[t] = ax
		}
		out[i] = make([]float32, o.dim)
		out[i][ax] = 1
	}
	return out, nil
}

func TestEmbedderErrors(t *testing.T) {
	down := &switchable{inner: embed.Local{}, name: "down"}
	e := newEnv(t, Options{Embedder: down})
	down.fail.Store(true)
	if _, err := e.ms.Remember(context.Background(), pebbleNote); !errors.Is(err, errEmbedDown) {
		t.Fatalf("Remember with embedder down = %v", err)
	}
	if _, err := e.ms.Recall(context.Background(), RecallInput{Query: "x"}); !errors.Is(err, errEmbedDown) {
		t.Fatalf("Recall with embedder down = %v", err)
	}
	bad := badDim{}
	st, err := persistence.Open(t.TempDir(), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ms, err := Open(st, Options{Embedder: bad})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ms.Remember(context.Background(), pebbleNote); !errors.Is(err, embed.ErrBadVector) {
		t.Fatalf("wrong-length vector: %v", err)
	}
	if _, err := Open(st, Options{Embedder: &orthogonal{dim: 0}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("zero-dim embedder: %v", err)
	}
	if _, err := Open(st, Options{DedupThreshold: 1.5}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("threshold 1.5: %v", err)
	}
}

type badDim struct{}

func (badDim) Name() string { return "bad" }
func (badDim) Dim() int     { return 8 }
func (badDim) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = make([]float32, 7)
	}
	return out, nil
}

func TestClosed(t *testing.T) {
	e := newEnv(t, Options{})
	if err := e.ms.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err1 := e.ms.Remember(ctx, pebbleNote)
	_, err2 := e.ms.Recall(ctx, RecallInput{Query: "x"})
	_, err3 := e.ms.Get(proj, "x")
	_, err4 := e.ms.Hygiene([]string{proj}, nil)
	for i, err := range []error{err1, err2, err3, err4, e.ms.Close()} {
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("call %d after close: %v", i, err)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	e := newEnv(t, Options{})
	c := newCorpus(3)
	texts := make([]string, 40)
	for i := range texts {
		texts[i] = c.text(10, 30)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := range 10 {
				label := fmt.Sprintf("w%d n%d", w, i)
				if _, err := e.ms.Remember(ctx, RememberInput{Store: proj, Label: label, Content: texts[w*10+i]}); err != nil {
					errs <- err
				}
				if _, err := e.ms.Recall(ctx, RecallInput{Query: texts[(w*10+i+3)%40][:20], Stores: []string{proj}}); err != nil {
					errs <- err
				}
				if i%3 == 0 {
					if _, err := e.ms.Forget(proj, label); err != nil {
						errs <- err
					}
				}
				if _, err := e.ms.Hygiene(nil, nil); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all, _ := e.ms.List(proj, "")
	if len(all) != 4*6 {
		t.Fatalf("%d entries left, want 24", len(all))
	}
}

// Notes written from one template are all near-duplicates of each other.
// Each write records only its best MaxPairsPerWrite pairs, so the pairs a
// store holds (and loads at every open) grow linearly with it, not with
// its square, and the dedup signal still flags it.
func TestPairsOfManyNearDuplicatesStayLinear(t *testing.T) {
	e := newEnv(t, Options{})
	const n = 3 * MaxPairsPerWrite
	for i := range n {
		note := pebbleNote
		note.Label = fmt.Sprintf("pebble sync policy %d", i)
		res := e.remember(note)
		if want := min(i, MaxSimilar); len(res.Similar) != want {
			t.Fatalf("write %d: %d similar, want %d", i, len(res.Similar), want)
		}
	}
	want := 0
	for i := range n {
		want += min(i, MaxPairsPerWrite)
	}
	if got := e.signals(proj).DedupPairs; got != want || got >= n*(n-1)/2 {
		t.Fatalf("dedup pairs %d, want %d (of %d possible)", got, want, n*(n-1)/2)
	}
	e.reopen(Options{})
	if got := e.signals(proj).DedupPairs; got != want {
		t.Fatalf("after reopen: dedup pairs %d, want %d", got, want)
	}
}

// TestGuardRefusesBeforeAnythingIsWritten checks that a memory the guard
// refuses is not stored, with the guard's error wrapped and the label left
// out of it, and that an overwrite adding no text (an archive) passes.
func TestGuardRefusesBeforeAnythingIsWritten(t *testing.T) {
	errHolds := errors.New("holds a secret")
	refuse := false
	e := newEnv(t, Options{Guard: func(label, content string) error {
		if refuse || strings.Contains(label+content, "hunter2") {
			return errHolds
		}
		return nil
	}})
	_, err := e.ms.Remember(context.Background(), RememberInput{Label: "db hunter2", Content: "the password", Store: proj})
	if !errors.Is(err, errHolds) || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("Remember = %v, want the guard's error without the label", err)
	}
	_, err = e.ms.Remember(context.Background(), RememberInput{Label: "db", Content: "password=hunter2", Store: proj})
	if !errors.Is(err, errHolds) {
		t.Fatalf("Remember = %v, want the guard's error", err)
	}
	if all, _ := e.ms.List(proj, ""); len(all) != 0 {
		t.Fatalf("a refused memory was stored: %+v", all)
	}

	kept := e.remember(pebbleNote)
	refuse = true // the guard now refuses what it let through before
	archive := pebbleNote
	archive.Overwrite, archive.Archived = true, true
	if res := e.remember(archive); !res.Entry.Archived {
		t.Fatalf("archive = %+v", res.Entry)
	}
	edit := archive
	edit.Content = "changed"
	if _, err := e.ms.Remember(context.Background(), edit); !errors.Is(err, errHolds) {
		t.Fatalf("an edit adding text = %v, want the guard's error", err)
	}
	if got, _ := e.ms.Get(proj, kept.Entry.Slug); got.Content != pebbleNote.Content {
		t.Fatalf("a refused edit changed the entry: %q", got.Content)
	}
}

// TestRememberKeepsGivenTimes checks that the times an import restores
// are kept, new or overwritten, and that without them the entry is
// written now.
func TestRememberKeepsGivenTimes(t *testing.T) {
	e := newEnv(t, Options{})
	created := time.Date(2025, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	updated := created.Add(48 * time.Hour)
	in := pebbleNote
	in.Created, in.Updated = created, updated
	res := e.remember(in)
	if !res.Entry.Created.Equal(created) || !res.Entry.Updated.Equal(updated) {
		t.Fatalf("new entry times = %v, %v; want %v, %v", res.Entry.Created, res.Entry.Updated, created, updated)
	}
	e.reopen(Options{})
	got, err := e.ms.Get(proj, res.Entry.Slug)
	if err != nil || !got.Created.Equal(created) || !got.Updated.Equal(updated) {
		t.Fatalf("stored times = %v, %v (%v)", got.Created, got.Updated, err)
	}

	again := pebbleNote
	again.Content, again.Overwrite, again.Updated = "changed", true, updated.Add(time.Hour)
	res = e.remember(again)
	if !res.Entry.Created.Equal(created) || !res.Entry.Updated.Equal(again.Updated) {
		t.Fatalf("overwritten entry times = %v, %v", res.Entry.Created, res.Entry.Updated)
	}
	res = e.remember(tmuxNote)
	if !res.Entry.Created.Equal(e.clk.Now()) || !res.Entry.Updated.Equal(e.clk.Now()) {
		t.Fatalf("without times = %v, %v, want now", res.Entry.Created, res.Entry.Updated)
	}
}
