package front

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// A sender's file name becomes one name right inside the inbox: never a
// path, never "." or "..", no control characters, not too long.
func TestSafeNameKeepsTheSendersNameInsideTheInbox(t *testing.T) {
	long := strings.Repeat("é", 200) + ".tar.gz"
	cases := []struct{ name, kind, want string }{
		{"report.pdf", "document", "report.pdf"},
		{"../../etc/passwd", "document", "passwd"},
		{`..\..\windows\win.ini`, "document", "win.ini"},
		{"/abs/path/x.png", "document", "x.png"},
		{"", "photo", "photo.jpg"},
		{"", "voice", "voice.ogg"},
		{"", "document", "file"},
		{".", "document", "file"},
		{"..", "document", "file"},
		{"...", "document", "file"},
		{"dir/..", "document", "file"},
		{"a\x00b\nc\rd.txt", "document", "a_b_c_d.txt"},
		{"x:y.txt", "document", "x_y.txt"},
		{"  spaced .md ", "document", "spaced .md"},
		{"\xff\xfe.bin", "document", "_.bin"},
		{"rtl\u202egnp.exe", "document", "rtl_gnp.exe"},
	}
	for _, c := range cases {
		if got := safeName(c.name, c.kind, ""); got != c.want {
			t.Errorf("safeName(%q, %s) = %q, want %q", c.name, c.kind, got, c.want)
		}
	}
	got := safeName(long, "document", "")
	if len(got) > maxFileName || !utf8.ValidString(got) || !strings.HasSuffix(got, ".gz") {
		t.Errorf("safeName of a long name = %q (%d bytes), want at most %d bytes of valid UTF-8 with its extension", got, len(got), maxFileName)
	}
}

func TestInsideTakesOnlyAFileRightInTheInbox(t *testing.T) {
	inbox := "/p/.thatch/inbox"
	for path, want := range map[string]bool{
		"/p/.thatch/inbox/20260101-120000-a.txt": true,
		"/p/.thatch/inbox":                       false,
		"/p/.thatch/inbox/../x":                  false,
		"/p/.thatch/inbox/sub/x":                 false,
		"/etc/passwd":                            false,
		"/p/.thatch/inbox2/x":                    false,
	} {
		if got := inside(inbox, path); got != want {
			t.Errorf("inside(%q, %q) = %v, want %v", inbox, path, got, want)
		}
	}
}

// The inbox is made inside the binding's directory (or where an absolute
// im.inbox_dir says), private, with a .gitignore that hides it from git;
// a name taken gets a number, and "../../etc/passwd" lands inside.
func TestTheInboxIsPrivateIgnoredAndKeepsNamesInside(t *testing.T) {
	dir := t.TempDir()
	inbox, err := makeInbox(dir, ".thatch/inbox")
	if err != nil {
		t.Fatal(err)
	}
	if inbox != filepath.Join(dir, ".thatch", "inbox") {
		t.Fatalf("inbox %s", inbox)
	}
	st, err := os.Stat(inbox)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("inbox mode %v, %v; want 0700", st.Mode(), err)
	}
	b, err := os.ReadFile(filepath.Join(inbox, ".gitignore"))
	if err != nil || !strings.Contains(string(b), "\n*\n") {
		t.Fatalf(".gitignore %q, %v", b, err)
	}
	// A .gitignore of the user's is left as it is.
	if err := os.WriteFile(filepath.Join(inbox, ".gitignore"), []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := makeInbox(dir, ".thatch/inbox"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(inbox, ".gitignore")); string(b) != "mine\n" {
		t.Fatalf(".gitignore rewritten: %q", b)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	p, err := inboxPath(inbox, at, "../../etc/passwd", "document", "")
	if err != nil || p != filepath.Join(inbox, "20260102-030405-passwd") {
		t.Fatalf("inboxPath = %q, %v", p, err)
	}
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if p2, err := inboxPath(inbox, at, "passwd", "document", ""); err != nil || p2 != filepath.Join(inbox, "20260102-030405-2-passwd") {
		t.Fatalf("a second file of the same name and second: %q, %v", p2, err)
	}
	abs := filepath.Join(t.TempDir(), "elsewhere")
	if got, err := makeInbox(dir, abs); err != nil || got != abs {
		t.Fatalf("an absolute im.inbox_dir: %q, %v", got, err)
	}
	if _, err := makeInbox("relative/dir", ".thatch/inbox"); err == nil {
		t.Fatal("a relative binding directory was taken")
	}
	gone := filepath.Join(dir, "gone")
	if _, err := makeInbox(gone, ".thatch/inbox"); err == nil {
		t.Fatal("an inbox was made in a directory that is not there")
	}
	if _, err := os.Stat(gone); err == nil {
		t.Fatal("the missing binding directory was made")
	}
}
