package memory

import (
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
		{long, "abcdefghij-abcdefghij-abcdefghij-abcdefghij-abcdefghij-abcdefghi"},
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
	if !utf8.ValidString(got) || len(got) != 64 {
		t.Fatalf("Slugify of 40 é = %q (%d bytes)", got, len(got))
	}
}
