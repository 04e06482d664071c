package memory

import (
	"fmt"
	"slices"
	"testing"
)

func TestTokenize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"persistence/memory/recall.go", []string{"persistence/memory/recall.go", "persistence", "memory", "recall", "go"}},
		{"ErrNotFound", []string{"errnotfound", "err", "not", "found"}},
		{"no such file", []string{"no", "file"}},
		{"snake_case", []string{"snake_case", "snake", "case"}},
		{"HTTPServer utf8", []string{"httpserver", "http", "server", "utf8", "utf", "8"}},
		{"`go run ./bench -only memstore`", []string{"go", "run", "bench", "only", "memstore"}},
		{`"pebble: closed"`, []string{"pebble", "closed"}},
		{"the files of flags", []string{"file", "flag"}},
		{"THATCH_IM__TELEGRAM__CHAT_ID", []string{"thatch_im__telegram__chat_id", "thatch", "im", "telegram", "chat", "id"}},
	} {
		if got := tokenize(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("tokenize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// textSlugs is what a text-only recall returns, as slugs.
func textSlugs(e *env, in RecallInput) []string {
	in.Mode = RecallText
	return slugsOf(e.recall(in))
}

// TestTextIndexFollowsWrites: overwrite, archive, forget and branches change
// what full-text recall finds, and a reopened store (which rebuilds the
// index from the entries) finds the same.
func TestTextIndexFollowsWrites(t *testing.T) {
	e := newEnv(t, Options{})
	const store = "o/r"
	stores := []string{store}
	e.remember(RememberInput{Store: store, Label: "frobnicate flag", Content: "pass --frobnicate to zqxtool"})
	e.remember(RememberInput{Store: store, Label: "branch note", Content: "plughbranchonly lives here", Branch: "feat/x"})
	check := func(step, query, branch string, want ...string) {
		t.Helper()
		got := textSlugs(e, RecallInput{Query: query, Stores: stores, Branch: branch})
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%s: text recall %q on %q = %q, want %q", step, query, branch, got, want)
		}
	}
	check("new", "zqxtool", "", "frobnicate-flag")
	check("new", "--frobnicate", "", "frobnicate-flag")
	check("branch", "plughbranchonly", "")
	check("branch", "plughbranchonly", "feat/x", "branch-note")

	e.remember(RememberInput{Store: store, Label: "frobnicate flag", Content: "pass --frob to quuxtool", Overwrite: true})
	check("overwrite", "zqxtool", "")
	check("overwrite", "quuxtool", "", "frobnicate-flag")

	e.remember(RememberInput{Store: store, Label: "frobnicate flag", Content: "pass --frob to quuxtool", Overwrite: true, Archived: true})
	check("archived", "quuxtool", "")
	e.reopen(Options{})
	check("archived, reopened", "quuxtool", "")
	e.remember(RememberInput{Store: store, Label: "frobnicate flag", Content: "pass --frob to quuxtool", Overwrite: true})
	check("unarchived", "quuxtool", "", "frobnicate-flag")

	e.reopen(Options{})
	check("reopened", "quuxtool", "", "frobnicate-flag")
	check("reopened", "plughbranchonly", "feat/x", "branch-note")

	if _, err := e.ms.Forget(store, "frobnicate flag"); err != nil {
		t.Fatal(err)
	}
	check("forgotten", "quuxtool", "")
	e.reopen(Options{})
	check("forgotten, reopened", "quuxtool", "")
	// The hybrid finds what the text index finds even when the vector
	// ranking alone would not put it first.
	if got := slugsOf(e.recall(RecallInput{Query: "plughbranchonly", Stores: stores, Branch: "feat/x"})); !slices.Contains(got, "branch-note") {
		t.Errorf("hybrid recall of plughbranchonly = %q", got)
	}
}

// TestTextIndexCompaction: after enough removals the postings are rebuilt,
// and search still returns exactly the live documents.
func TestTextIndexCompaction(t *testing.T) {
	sh := newShard("s", 4)
	n := 3 * compactAt
	for i := range n {
		sh.text.put(fmt.Sprintf("d%d", i), "", fmt.Sprintf("doc %d", i), fmt.Sprintf("common word%d", i%7))
	}
	for i := 0; i < n; i += 2 {
		sh.text.remove(fmt.Sprintf("d%d", i))
	}
	if sh.text.dead >= compactAt || len(sh.text.docs) == n {
		t.Fatalf("no compaction: %d dead of %d docs", sh.text.dead, len(sh.text.docs))
	}
	hits := searchText("common", []*shard{sh}, "", n)
	if len(hits) != n/2 {
		t.Fatalf("search after compaction found %d documents, want %d", len(hits), n/2)
	}
	for _, h := range hits {
		var i int
		fmt.Sscanf(h.slug, "d%d", &i)
		if i%2 == 0 {
			t.Fatalf("removed document %s found", h.slug)
		}
	}
	if got := searchText("doc 1", []*shard{sh}, "", 1); len(got) != 1 || got[0].slug != "d1" {
		t.Fatalf("search for doc 1 = %v", got)
	}
}

func TestRecallMode(t *testing.T) {
	e := newEnv(t, Options{})
	e.remember(RememberInput{Label: "a", Content: "alpha beta"})
	if _, err := e.ms.Recall(t.Context(), RecallInput{Query: "alpha", Mode: "fuzzy"}); err == nil {
		t.Fatal("recall with an unknown mode did not fail")
	}
	for _, m := range []RecallMode{"", RecallHybrid, RecallVector, RecallText} {
		if got := slugsOf(e.recall(RecallInput{Query: "alpha", Mode: m})); !slices.Equal(got, []string{"a"}) {
			t.Errorf("mode %q: %q", m, got)
		}
	}
}
