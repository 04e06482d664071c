package tmux

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thatch-run/thatch/internal/testwait"
)

// hostile are single lines that a shell, tmux's command parser, its
// format expander or its key names would each read as something else.
var hostile = []string{
	`$(touch MARKER)`,
	"`touch MARKER`",
	`; rm -rf ~`,
	`~ and ~/x`,
	`#{window_name} #W ##`,
	`C-c`,
	`Enter`,
	`-l`,
	`--`,
	`it's "quoted" 'twice'`,
	`\n is not a newline, \t not a tab, \033 not an escape`,
	`{ braces } %if "1" %endif`,
	`ends with a semicolon;`,
	`ends with an escaped semicolon\;`,
	`;`,
	"tab\tinside",
	`unicode: ÿ é 日本語 🦀`,
	`trailing backslash\`,
}

func TestSendTextArrivesLiterally(t *testing.T) {
	for _, mode := range []struct {
		name string
		exec bool
	}{{"control", false}, {"exec", true}} {
		t.Run(mode.name, func(t *testing.T) {
			c := newTestClient(t, func(o *Options) { o.ExecOnly = mode.exec })
			w, file := catWindow(t, c, "cat")
			marker := filepath.Join(w.Dir, "MARKER")
			var want strings.Builder
			for _, line := range hostile {
				line = strings.ReplaceAll(line, "MARKER", marker)
				if err := c.SendText(testCtx(t), w.ID, line); err != nil {
					t.Fatalf("SendText(%q): %v", line, err)
				}
				want.WriteString(line + "\n")
			}
			want.WriteString("done\n")
			if err := c.SendText(testCtx(t), w.ID, "done"); err != nil {
				t.Fatal(err)
			}
			if got := waitFile(t, file, "done"); got != want.String() {
				t.Fatalf("typed:\n%q\nwant:\n%q", got, want.String())
			}
			if _, err := os.Stat(marker); !os.IsNotExist(err) {
				t.Fatalf("a command substitution ran: %s exists (%v)", marker, err)
			}
		})
	}
}

// catV renders bytes as cat -v shows them.
func catV(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 0x80 {
			b.WriteString("M-")
			ch -= 0x80
		}
		switch {
		case ch == '\n' || ch == '\t':
			b.WriteByte(ch)
		case ch < 0x20:
			b.WriteByte('^')
			b.WriteByte(ch + 0x40)
		case ch == 0x7f:
			b.WriteString("^?")
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}

func TestMultiLineTextArrivesAsOneBracketedPaste(t *testing.T) {
	for _, mode := range []struct {
		name string
		exec bool
	}{{"control", false}, {"exec", true}} {
		t.Run(mode.name, func(t *testing.T) {
			c := newTestClient(t, func(o *Options) { o.ExecOnly = mode.exec })
			file := filepath.Join(t.TempDir(), "pasted")
			// The program asks for bracketed paste, as agent CLIs do, and
			// says READY once it has; tmux reads the pane's output in order,
			// so READY on the screen means the request was seen.
			script := `printf '\033[?2004hREADY\n'; exec cat -v > "$0"`
			w, err := c.NewWindow(testCtx(t), "paste", t.TempDir(), "", []string{"sh", "-c", script, file})
			if err != nil {
				t.Fatal(err)
			}
			testwait.UntilReason(t, "the pane is ready", func() (bool, string) {
				s, err := c.Capture(testCtx(t), w.ID, 5)
				return err == nil && strings.Contains(s, "READY"), fmt.Sprintf("%q, %v", s, err)
			})
			text := strings.Join(append([]string{"first line"}, hostile...), "\n") + "\nlast line"
			if err := c.SendText(testCtx(t), w.ID, text); err != nil {
				t.Fatal(err)
			}
			want := "^[[200~" + catV(text) + "^[[201~\n"
			if got := waitFile(t, file, "last line^[[201~"); got != want {
				t.Fatalf("pasted:\n%q\nwant:\n%q", got, want)
			}
			if bufs := tmuxCmd(t, c, "list-buffers"); bufs != "" {
				t.Fatalf("the paste buffer was left behind: %q", bufs)
			}
		})
	}
}

// TestArgumentsSurviveTheCommandParser sends each hostile string, and
// multi-line ones with every control character, through set-buffer and
// reads the buffer back from a file, over both paths.
func TestArgumentsSurviveTheCommandParser(t *testing.T) {
	var ctl strings.Builder
	for ch := 1; ch < 0x20; ch++ {
		ctl.WriteByte(byte(ch))
	}
	ctl.WriteString("\x7f")
	cases := append([]string{ctl.String(), "a\nb\r\nc\n", "\n", "'", `\`, `'\''`, `"\"`, "$HOME ${HOME} $", "#", "~"}, hostile...)
	for _, mode := range []struct {
		name string
		exec bool
	}{{"control", false}, {"exec", true}} {
		t.Run(mode.name, func(t *testing.T) {
			c := newTestClient(t, func(o *Options) { o.ExecOnly = mode.exec })
			if _, err := c.NewWindow(testCtx(t), "w", "", "", []string{"sleep", "1000"}); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			for i, s := range cases {
				file := filepath.Join(dir, fmt.Sprint(i))
				if _, err := c.run(testCtx(t), false, "set-buffer", "-b", "rt", "--", s); err != nil {
					t.Fatalf("set-buffer %q: %v", s, err)
				}
				if _, err := c.run(testCtx(t), false, "save-buffer", "-b", "rt", file); err != nil {
					t.Fatalf("save-buffer: %v", err)
				}
				if got, err := os.ReadFile(file); err != nil || string(got) != s {
					t.Errorf("round trip of %q gave %q (%v)", s, got, err)
				}
			}
		})
	}
}

func TestPrintableDropsWhatATerminalActsOn(t *testing.T) {
	for in, want := range map[string]string{
		"plain text":                      "plain text",
		"tab\tand\nnewline":               "tab\tand\nnewline",
		"\x04touch /tmp/x":                "touch /tmp/x",
		"\x03\x1a\x1b[31mred\x7f":         "[31mred",
		"crlf\r\nand cr\rend":             "crlf\nand cr\nend",
		"c1 \u0085\u009b here, é ok \x00": "c1  here, é ok ",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
