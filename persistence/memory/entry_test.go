package memory

import (
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSlugify(t *testing.T) {
	long := strings.Repeat("abcdefghij ", 10)
	tests := []struct {
		label, want string
	}{
		{"Pebble sync policy", "pebble-sync-policy"},
		{"  --Hello,   World!--  ", "hello-world"},
		{"CamelCase_and.dots/slashes", "camelcase-and-dots-slashes"},
		{"v1.2.3 release", "v1-2-3-release"},
		{"Ünïcödé Straße", "ünïcödé-straße"},
		{"数据库 连接", "数据库-连接"},
		{"a", "a"},
		// Cut slugs end in a hash of the whole slug.
		{long, "abcdefghij-abcdefghij-abcdefghij-abcdefghij-abcdefghi-" + fmt.Sprintf("%010x", fnv64(strings.Repeat("abcdefghij-", 9)+"abcdefghij")>>24)},
		// 64 bytes exactly: no hash.
		{strings.Repeat("x", 64), strings.Repeat("x", 64)},
	}
	for _, tt := range tests {
		t.Run(tt.label, func(t *testing.T) {
			got := Slugify(tt.label)
			if got != tt.want {
				t.Fatalf("Slugify(%q) = %q, want %q", tt.label, got, tt.want)
			}
			if len(got) > MaxSlugBytes || strings.HasPrefix(got, "-") || strings.HasSuffix(got, "-") || !utf8.ValidString(got) {
				t.Fatalf("Slugify(%q) = %q breaks the slug rules", tt.label, got)
			}
		})
	}
}

func TestSlugifyWithoutLettersIsStableAndDistinct(t *testing.T) {
	a, b := Slugify("!!!"), Slugify("???")
	if !strings.HasPrefix(a, "memory-") || a != Slugify("!!!") || a == b {
		t.Fatalf("slugs of symbol-only labels: %q, %q", a, b)
	}
}

func TestSlugifyCutsAtRuneBoundary(t *testing.T) {
	label := strings.Repeat("é", 40) // 80 bytes
	got := Slugify(label)
	if !utf8.ValidString(got) || len(got) > MaxSlugBytes || !strings.HasPrefix(got, strings.Repeat("é", 26)+"-") {
		t.Fatalf("Slugify of 40 é = %q (%d bytes)", got, len(got))
	}
}

func fnv64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// TestLongSlugsStayDistinct: labels that agree on their first 64 slug
// bytes used to share a slug, so that remembering one with overwrite
// replaced the other.
func TestLongSlugsStayDistinct(t *testing.T) {
	prefix := strings.Repeat("the deploy checklist for service ", 2) // 66 bytes of slug
	a, b := Slugify(prefix+"alpha"), Slugify(prefix+"beta")
	if a == b {
		t.Fatalf("labels that differ after 64 bytes share slug %q", a)
	}
	for _, s := range []string{a, b} {
		if len(s) > MaxSlugBytes || !strings.HasPrefix(s, "the-deploy-checklist-for-service-") || !utf8.ValidString(s) {
			t.Fatalf("slug %q (%d bytes) breaks the slug rules", s, len(s))
		}
	}
	if Slugify(prefix+"alpha") != a || Slugify(strings.ToUpper(prefix)+"ALPHA!") != a {
		t.Fatal("the slug of a long label is not stable, or depends on case and punctuation")
	}
}
