package telegram

import (
	"reflect"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	cases := []struct {
		name  string
		text  string
		limit int
		want  []string
	}{
		{"fits", "abc", 10, []string{"abc"}},
		{"empty", "", 10, nil},
		{"at the last newline", "aaa\nbbb\nccc\n", 9, []string{"aaa\nbbb\n", "ccc\n"}},
		{"a long line at a space", "aaa bbb ccc", 8, []string{"aaa bbb ", "ccc"}},
		{"a long word hard", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"surrogate pairs count two", "😀😀😀", 4, []string{"😀😀", "😀"}},
		{"never inside a rune", "a😀", 2, []string{"a", "😀"}},
		{"limit below two is two", "abc", 1, []string{"ab", "c"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Split(c.text, c.limit); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Split(%q, %d) = %q, want %q", c.text, c.limit, got, c.want)
			}
		})
	}
}

func TestSplitMarkdownReopensTheCodeBlockItCuts(t *testing.T) {
	md := "intro\n```py\n" + strings.Repeat("print(1)\n", 10) + "```\nend\n"
	parts := splitMarkdown(md, 60)
	if len(parts) < 2 {
		t.Fatalf("got %d parts: %q", len(parts), parts)
	}
	for i, p := range parts {
		if utf16Len(p) > 60 {
			t.Errorf("part %d is %d units", i, utf16Len(p))
		}
		if strings.Count(p, "```")%2 != 0 {
			t.Errorf("part %d leaves a fence open: %q", i, p)
		}
		if i > 0 && strings.Contains(parts[i-1], "print") && strings.HasPrefix(p, "print") {
			t.Errorf("part %d continues code without reopening it: %q", i, p)
		}
	}
	if !strings.HasPrefix(parts[1], "```py\n") {
		t.Errorf("part 2 does not reopen with the opening line: %q", parts[1])
	}
}

func checkSplit(t *testing.T, text string, limit int) {
	parts := Split(text, limit)
	if strings.Join(parts, "") != text {
		t.Fatalf("Split(%q, %d) = %q does not add up to the text", text, limit, parts)
	}
	eff := max(limit, 2)
	for i, p := range parts {
		if p == "" {
			t.Fatalf("Split(%q, %d): part %d is empty", text, limit, i)
		}
		if utf16Len(p) > eff {
			t.Fatalf("Split(%q, %d): part %d has %d units", text, limit, i, utf16Len(p))
		}
		// A part ends at a newline whenever one fits: no line is broken
		// that could have been kept whole.
		if i < len(parts)-1 && !strings.HasSuffix(p, "\n") && strings.Contains(p, "\n") {
			t.Fatalf("Split(%q, %d): part %d = %q cuts after a newline it passed", text, limit, i, p)
		}
	}
}

func FuzzSplit(f *testing.F) {
	f.Add("aaa\nbbb\nccc", 5)
	f.Add("word word word", 4)
	f.Add("😀😀a😀", 3)
	f.Add("```go\nx\n```\n", 16)
	f.Add("\xff\xfe\n", 1)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		limit %= 5000
		checkSplit(t, text, limit)
		if limit < 0 {
			limit = -limit
		}
		md := splitMarkdown(text, limit)
		eff := max(limit, minMarkdownLimit)
		for i, p := range md {
			if n := utf16Len(p); n > eff {
				t.Fatalf("splitMarkdown(%q, %d): part %d has %d units", text, limit, i, n)
			}
			if html := RenderHTML(p); checkHTML(html) != "" {
				t.Fatalf("splitMarkdown(%q, %d): part %d renders badly: %s", text, limit, i, checkHTML(html))
			}
		}
	})
}
