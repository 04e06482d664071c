package front

import (
	"strings"
	"testing"

	"github.com/thatch-run/thatch/internal/redact"
	"github.com/thatch-run/thatch/messages"
)

func testMasker(t *testing.T) *masker {
	t.Helper()
	red, err := redact.New(redact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return newMasker(red)
}

// A key in a terminal's text is found whatever colours surround it (a
// colour change right before it would hide its edge from a search of the
// raw text) and replaced by the marker, the escape sequences inside it
// kept after the marker so that the colours after it stay right.
func TestAKeyInAColouredPaneIsMasked(t *testing.T) {
	m := testMasker(t)
	const key = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
	for _, c := range []struct{ raw, want string }{
		{"token: \x1b[32m" + key + "\x1b[0m done", "token: \x1b[32m[redacted:github_token]\x1b[0m done"},
		{"\x1b[1m" + key[:10] + "\x1b[0m" + key[10:] + "\n", "\x1b[1m[redacted:github_token]\x1b[0m\n"},
		{"\x1b]0;title\x07plain text", "\x1b]0;title\x07plain text"},
	} {
		if got := m.pane(c.raw); got != c.want {
			t.Errorf("pane(%q) = %q, want %q", c.raw, got, c.want)
		}
	}
	if got := m.masked()["github_token"]; got != 2 {
		t.Fatalf("counted %d github_token, want 2", got)
	}
}

// A button's label is masked (an agent's option may quote a command with
// a key in it); its data, thatch's own, is left as it is.
func TestAButtonLabelIsMasked(t *testing.T) {
	m := testMasker(t)
	rows := m.buttons([][]messages.IMButton{{{Text: "Yes, run curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwx'", Data: "1:a:0"}}})
	if b := rows[0][0]; b.Data != "1:a:0" || b.Text == "Yes, run curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwx'" ||
		!strings.Contains(b.Text, "[redacted:") || strings.Contains(b.Text, "abcdefghijklmnopqrstuvwx") {
		t.Fatalf("button %+v", b)
	}
	var none *masker
	if none.text("x") != "x" || none.masked() != nil {
		t.Fatal("a nil masker changed a text")
	}
}
