package telegram

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// RenderHTML turns the Markdown an agent writes into Telegram's HTML parse
// mode, so that replies keep their emphasis and code without ever being
// refused for a stray '<'. Every <, > and & of the text is escaped; the only
// tags are the ones it emits, each closed in the order opened: <b> (**x**,
// __x__, # headings), <i> (*x*, _x_), <s> (~~x~~), <code> (`x`), <pre> (```
// blocks, with <code class="language-x"> when a language is given) and
// <a href> ([text](url) whose scheme is http, https, tg or mailto; any other
// link stays text). A delimiter without its partner is text. Rendering only
// removes characters, so the visible text is never longer than md: a part
// that fits before rendering fits after.
func RenderHTML(md string) string {
	md = strings.ToValidUTF8(md, "\uFFFD")
	var out strings.Builder
	var code strings.Builder
	inCode, lang := false, ""
	for _, line := range strings.SplitAfter(md, "\n") {
		body, nl := strings.CutSuffix(line, "\n")
		if isFence(body) {
			if !inCode {
				inCode, lang = true, fenceLang(body)
				code.Reset()
				continue
			}
			writeCode(&out, code.String(), lang)
			inCode = false
			if nl {
				out.WriteString("\n")
			}
			continue
		}
		if inCode {
			code.WriteString(line)
			continue
		}
		out.WriteString(renderLine(body))
		if nl {
			out.WriteString("\n")
		}
	}
	if inCode {
		writeCode(&out, code.String(), lang)
	}
	return out.String()
}

// writeCode writes one fenced block, its last newline dropped.
func writeCode(out *strings.Builder, content, lang string) {
	content = strings.TrimSuffix(content, "\n")
	if lang != "" {
		out.WriteString(`<pre><code class="language-` + lang + `">`)
		out.WriteString(escapeHTML(content))
		out.WriteString("</code></pre>")
		return
	}
	out.WriteString("<pre>")
	out.WriteString(escapeHTML(content))
	out.WriteString("</pre>")
}

// fenceLang is the language named on an opening fence, "" when there is
// none or it holds characters a class name should not.
func fenceLang(line string) string {
	lang := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "`"))
	if lang == "" || len(lang) > 32 {
		return ""
	}
	for _, r := range lang {
		if !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("+-_.#", r))) {
			return ""
		}
	}
	return lang
}

// renderLine renders one line outside code blocks: a heading is bold, a
// list bullet becomes "•", the rest is inline Markdown.
func renderLine(line string) string {
	trimmed := strings.TrimLeft(line, " ")
	indent := line[:len(line)-len(trimmed)]
	if n := headingLevel(trimmed); n > 0 && strings.TrimSpace(trimmed[n+1:]) != "" {
		return indent + "<b>" + inline(trimmed[n+1:], true) + "</b>"
	}
	if strings.HasPrefix(trimmed, "* ") || strings.HasPrefix(trimmed, "- ") {
		return indent + "• " + inline(trimmed[2:], true)
	}
	return inline(line, true)
}

// headingLevel is the number of '#' opening an ATX heading ("## x"), or 0.
func headingLevel(s string) int {
	n := 0
	for n < len(s) && n < 6 && s[n] == '#' {
		n++
	}
	if n == 0 || n >= len(s) || s[n] != ' ' {
		return 0
	}
	return n
}

// escapeHTML escapes the three characters Telegram's HTML mode reserves.
func escapeHTML(s string) string {
	if !strings.ContainsAny(s, "<>&") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		writeEscaped(&b, s[i])
	}
	return b.String()
}

// writeEscaped writes one byte of text, as an entity when it is reserved.
func writeEscaped(b *strings.Builder, c byte) {
	switch c {
	case '<':
		b.WriteString("&lt;")
	case '>':
		b.WriteString("&gt;")
	case '&':
		b.WriteString("&amp;")
	default:
		b.WriteByte(c)
	}
}

// escapeAttr escapes a value for a double-quoted attribute.
func escapeAttr(s string) string {
	return strings.ReplaceAll(escapeHTML(s), `"`, "&quot;")
}

// inline renders the spans of one line. Each construct is emitted as open
// tag, rendered inner text, close tag, so tags nest by construction.
func inline(s string, links bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if html, n := span(s, i, links); n > 0 {
			b.WriteString(html)
			i += n
			continue
		}
		if s[i] == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]) {
			i++ // a backslash makes the next punctuation literal
		}
		writeEscaped(&b, s[i])
		i++
	}
	return b.String()
}

// span tries each inline construct at s[i] and returns its HTML and the
// bytes it consumed, or 0 when none starts there.
func span(s string, i int, links bool) (string, int) {
	switch s[i] {
	case '`':
		return codeSpan(s, i)
	case '*', '_', '~':
		return emphasis(s, i, links)
	case '[':
		if links {
			return link(s, i)
		}
	}
	return "", 0
}

// codeSpan renders `x` (or “x“ with a longer run) as <code>.
func codeSpan(s string, i int) (string, int) {
	run := 0
	for i+run < len(s) && s[i+run] == '`' {
		run++
	}
	delim := s[i : i+run]
	rest := s[i+run:]
	j := strings.Index(rest, delim)
	for j >= 0 && j+run < len(rest) && rest[j+run] == '`' {
		// A longer run of backticks is not the closer; skip past it.
		k := j + run
		for k < len(rest) && rest[k] == '`' {
			k++
		}
		next := strings.Index(rest[k:], delim)
		if next < 0 {
			j = -1
			break
		}
		j = k + next
	}
	if j <= 0 {
		return "", 0
	}
	return "<code>" + escapeHTML(rest[:j]) + "</code>", run + j + run
}

// emphasis renders **x**, __x__ and ~~x~~ (bold, bold, strike) and *x*, _x_
// (italic). An opener must be followed by a non-space and a closer preceded
// by one; '_' also must not touch a letter or digit outside, so that
// snake_case stays as written.
func emphasis(s string, i int, links bool) (string, int) {
	c := s[i]
	double := i+1 < len(s) && s[i+1] == c
	if c == '~' && !double {
		return "", 0
	}
	if c == '_' && i > 0 && isWordByte(s[i-1]) {
		return "", 0
	}
	delim, tag := string(c), "i"
	if double {
		delim = string([]byte{c, c})
		tag = "b"
		if c == '~' {
			tag = "s"
		}
	}
	start := i + len(delim)
	if start >= len(s) || s[start] == ' ' || s[start] == c {
		return "", 0
	}
	for j := start + 1; j+len(delim) <= len(s); j++ {
		if s[j:j+len(delim)] != delim || s[j-1] == ' ' {
			continue
		}
		end := j + len(delim)
		if !double && end < len(s) && s[end] == c {
			continue // part of a longer run: not this closer
		}
		if c == '_' && end < len(s) && isWordByte(s[end]) {
			continue
		}
		return "<" + tag + ">" + inline(s[start:j], links) + "</" + tag + ">", end - i
	}
	return "", 0
}

// link renders [text](url) as <a href> when the url's scheme is safe.
func link(s string, i int) (string, int) {
	closeText := strings.Index(s[i:], "](")
	if closeText < 0 {
		return "", 0
	}
	text := s[i+1 : i+closeText]
	urlStart := i + closeText + 2
	closeURL := strings.IndexByte(s[urlStart:], ')')
	if closeURL < 0 || text == "" || strings.Contains(text, "[") {
		return "", 0
	}
	url := s[urlStart : urlStart+closeURL]
	if !safeURL(url) {
		return "", 0
	}
	return `<a href="` + escapeAttr(url) + `">` + inline(text, false) + "</a>", closeText + 2 + closeURL + 1
}

// safeURL admits the schemes a link may carry; javascript: and data: and
// anything else are left as text.
func safeURL(u string) bool {
	if strings.ContainsAny(u, " \t\"'<>") || u == "" {
		return false
	}
	lower := strings.ToLower(u)
	for _, scheme := range []string{"http://", "https://", "tg://", "mailto:"} {
		if strings.HasPrefix(lower, scheme) && len(u) > len(scheme) {
			return true
		}
	}
	return false
}

func isWordByte(c byte) bool {
	return c >= utf8.RuneSelf || c == '_' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isASCIIPunct(c byte) bool {
	return strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) >= 0
}

// visibleText is what Telegram shows of HTML that RenderHTML produced: tags
// dropped and the four entities it emits decoded. Send uses it to skip
// parts that would show nothing.
func visibleText(html string) string {
	var b strings.Builder
	for i := 0; i < len(html); {
		switch html[i] {
		case '<':
			j := strings.IndexByte(html[i:], '>')
			if j < 0 {
				b.WriteString(html[i:])
				return b.String()
			}
			i += j + 1
			continue
		case '&':
			decoded := false
			for ent, ch := range map[string]string{"&lt;": "<", "&gt;": ">", "&amp;": "&", "&quot;": `"`} {
				if strings.HasPrefix(html[i:], ent) {
					b.WriteString(ch)
					i += len(ent)
					decoded = true
					break
				}
			}
			if decoded {
				continue
			}
		}
		b.WriteByte(html[i])
		i++
	}
	return b.String()
}
