package tmux

import (
	"strconv"
	"strings"
)

// controlLine encodes one command for tmux's command parser as one line
// of control-mode input. Every argument is single-quoted, so that the
// parser sees no separator (;), comment (#), variable ($), home directory
// (~) or escape (\) in it. A control-mode line ends at a newline, so
// control characters (and DEL) leave the quotes and go as octal escapes
// in double quotes, which the parser turns back into the byte.
func controlLine(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		quoteArg(&b, a)
	}
	return b.String()
}

func quoteArg(b *strings.Builder, s string) {
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\'':
			b.WriteString(`'"'"'`)
		case ch < 0x20 || ch == 0x7f:
			o := strconv.FormatInt(int64(ch), 8)
			b.WriteString(`'"\`)
			b.WriteString(strings.Repeat("0", 3-len(o)))
			b.WriteString(o)
			b.WriteString(`"'`)
		default:
			b.WriteByte(ch)
		}
	}
	b.WriteByte('\'')
}

// execArg protects an argument of a forked tmux client. tmux splits its
// command-line arguments into commands at any argument that ends in ';'
// and turns a final "\;" into ';', so a final ';' is sent as "\;".
func execArg(s string) string {
	if strings.HasSuffix(s, ";") {
		return s[:len(s)-1] + `\;`
	}
	return s
}

// formatLiteral escapes s for an argument that tmux expands as a format
// (new-window -n and -c, rename-window), so that "#{...}" in a name or a
// directory stays as typed.
func formatLiteral(s string) string {
	return strings.ReplaceAll(s, "#", "##")
}

// validID reports whether id is a tmux window id: '@' and digits. Nothing
// else is used as a target, so that no id can name a session, a pane, or
// another window by name or index.
func validID(id string) bool {
	if len(id) < 2 || id[0] != '@' {
		return false
	}
	for i := 1; i < len(id); i++ {
		if id[i] < '0' || id[i] > '9' {
			return false
		}
	}
	return true
}
