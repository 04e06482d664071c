package telegram

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRenderHTML(t *testing.T) {
	cases := []struct{ name, md, want string }{
		{"script is text", "<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"},
		{"ampersand", "a & b && c", "a &amp; b &amp;&amp; c"},
		{"entity-looking text stays text", "&lt; is not <", "&amp;lt; is not &lt;"},
		{"bold", "**bold** text", "<b>bold</b> text"},
		{"bold underscores", "__bold__", "<b>bold</b>"},
		{"italic", "*it* and _it_", "<i>it</i> and <i>it</i>"},
		{"strike", "~~gone~~", "<s>gone</s>"},
		{"nested", "**bold _it_**", "<b>bold <i>it</i></b>"},
		{"unclosed bold is text", "**unclosed <b>", "**unclosed &lt;b&gt;"},
		{"spaced stars are text", "2 * 3 * 4", "2 * 3 * 4"},
		{"snake_case stays", "call my_func_name now", "call my_func_name now"},
		{"inline code escapes", "run `a<b && c` now", "run <code>a&lt;b &amp;&amp; c</code> now"},
		{"no markup inside code", "`**x**`", "<code>**x**</code>"},
		{"double backtick code", "``a ` b``", "<code>a ` b</code>"},
		{"fenced block with language", "```go\nif a < b {\n}\n```", "<pre><code class=\"language-go\">if a &lt; b {\n}</code></pre>"},
		{"fenced block without language", "```\n<x>\n```\nafter", "<pre>&lt;x&gt;</pre>\nafter"},
		{"unclosed fence is closed", "```\ncode & more", "<pre>code &amp; more</pre>"},
		{"odd language is dropped", "```\"><script>\nx\n```", "<pre>x</pre>"},
		{"link", "see [docs](https://e.com/a?b=1&c=2)", "see <a href=\"https://e.com/a?b=1&amp;c=2\">docs</a>"},
		{"link text markup", "[**go**](http://e.com)", "<a href=\"http://e.com\"><b>go</b></a>"},
		{"javascript link is text", "[x](javascript:alert(1))", "[x](javascript:alert(1))"},
		{"quote in url is text", "[x](https://e.com/\"onclick)", "[x](https://e.com/\"onclick)"},
		{"heading", "## Plan <v2>", "<b>Plan &lt;v2&gt;</b>"},
		{"bullets", "- one\n  * two", "• one\n  • two"},
		{"backslash escapes", `\*not\* \<`, "*not* &lt;"},
		{"emoji", "**😀**", "<b>😀</b>"},
		{"empty", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := RenderHTML(c.md)
			if got != c.want {
				t.Errorf("RenderHTML(%q)\n got %q\nwant %q", c.md, got, c.want)
			}
			if err := checkHTML(got); err != "" {
				t.Errorf("RenderHTML(%q) = %q: %s", c.md, got, err)
			}
		})
	}
}

// checkHTML reports what is wrong with html as Telegram would parse it:
// an unknown or unbalanced tag, or a <, > or & outside tags and entities.
// "" means it is fine.
func checkHTML(html string) string {
	var stack []string
	for i := 0; i < len(html); {
		switch html[i] {
		case '<':
			j := strings.IndexByte(html[i:], '>')
			if j < 0 {
				return "unterminated tag"
			}
			body := html[i+1 : i+j]
			if name, ok := strings.CutPrefix(body, "/"); ok {
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return "unbalanced </" + name + ">"
				}
				stack = stack[:len(stack)-1]
			} else {
				name := strings.Fields(body + " ")[0]
				switch name {
				case "b", "i", "s", "code", "pre", "a":
				default:
					return "unexpected tag <" + name + ">"
				}
				stack = append(stack, name)
			}
			i += j + 1
		case '&':
			ok := false
			for _, e := range []string{"&lt;", "&gt;", "&amp;", "&quot;"} {
				if strings.HasPrefix(html[i:], e) {
					i += len(e)
					ok = true
					break
				}
			}
			if !ok {
				return "bare &"
			}
		case '>':
			return "bare >"
		default:
			i++
		}
	}
	if len(stack) > 0 {
		return "unclosed <" + stack[len(stack)-1] + ">"
	}
	return ""
}

func FuzzRenderHTML(f *testing.F) {
	for _, s := range []string{
		"**a** _b_ `c` ~~d~~", "```go\nx<y\n```", "[t](https://x.y)", "<>&\"'", "# h\n- l\n* m",
		"***", "_*_*_", "``` ```", "\\", "**`**`**", "[a](b)(c)", "\xff\xfe", "😀*😀*",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		html := RenderHTML(md)
		if !utf8.ValidString(html) {
			t.Fatalf("RenderHTML(%q) is not UTF-8", md)
		}
		if err := checkHTML(html); err != "" {
			t.Fatalf("RenderHTML(%q) = %q: %s", md, html, err)
		}
		// The split budget relies on this: rendering never lengthens the text.
		if shown, src := utf16Len(visibleText(html)), utf16Len(md); shown > src {
			t.Fatalf("RenderHTML(%q) shows %d units, more than the %d of the source", md, shown, src)
		}
	})
}
