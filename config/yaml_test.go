package config

import (
	"slices"
	"strings"
	"testing"
)

// TestYAMLEmptyServerEntry: a lone "-" under servers is a nil list item.
// It used to reach decodeServers' describe(nil) and panic; it must be a
// problem that names the element instead.
func TestYAMLEmptyServerEntry(t *testing.T) {
	cases := map[string]struct {
		body string
		want []string
	}{
		"only item": {
			"opencode:\n  servers:\n    -\n",
			[]string{"opencode.servers[0]"},
		},
		"between two servers": {
			"opencode:\n  servers:\n    - name: a\n      url: http://127.0.0.1:1\n    -\n    - name: b\n      url: http://127.0.0.1:2\n",
			[]string{"opencode.servers[1]"},
		},
		"empty flow table": {
			"opencode:\n  servers:\n    - {}\n",
			[]string{"opencode.servers[0].name", "opencode.servers[0].url"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := isolated(t)
			o.File = writeFile(t, t.TempDir(), "c.yaml", tc.body)
			c, err := Load(o)
			if c == nil {
				t.Fatalf("Load returned no config: %v", err)
			}
			if got := problemKeys(t, err); !slices.Equal(got, tc.want) {
				t.Errorf("problems %v, want %v (%v)", got, tc.want, err)
			}
			if strings.Contains(tc.body, "-\n") && !strings.Contains(err.Error(), "empty entry") {
				t.Errorf("error does not say the entry is empty:\n%v", err)
			}
		})
	}
}

// TestServerProblemsNameTheFileIndex: a malformed item is left out of
// Servers, but the problems of the items after it must still name their
// place in the file, or the user is sent to fix the wrong server.
func TestServerProblemsNameTheFileIndex(t *testing.T) {
	cases := map[string]struct {
		name, body string
		want       []string
	}{
		"yaml empty item first": {"c.yaml",
			"opencode:\n  servers:\n    -\n    - name: b\n    - name: b\n      url: http://127.0.0.1:2\n",
			[]string{"opencode.servers[0]", "opencode.servers[1].url", "opencode.servers[2].name"}},
		"toml scalar item first": {"c.toml",
			"[opencode]\nservers = [\"a\", 2, {url = \"http://127.0.0.1:1\"}, {name = \"x\", url = \"http://127.0.0.1:1\", api = \"v9\"}]\n",
			[]string{"opencode.servers[0]", "opencode.servers[1]", "opencode.servers[2].name", "opencode.servers[3].api"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := isolated(t)
			o.File = writeFile(t, t.TempDir(), tc.name, tc.body)
			_, err := Load(o)
			if got := problemKeys(t, err); !slices.Equal(got, tc.want) {
				t.Errorf("problems %v, want %v (%v)", got, tc.want, err)
			}
			if strings.Contains(tc.name, "yaml") && !strings.Contains(err.Error(), `duplicate name "b", also used by opencode.servers[1]`) {
				t.Errorf("duplicate does not name the first user's place in the file:\n%v", err)
			}
		})
	}
}

// TestOddKeysAreNamed: an unknown key that is empty, or holds spaces or
// control characters, is still named in a way a person can read and find.
func TestOddKeysAreNamed(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"c.toml", "\"\" = 1\n", `""`},
		{"c.yaml", "\"\": 1\n", `""`},
		{"c.toml", "[log]\n\"\" = 2\n", `log.""`},
		{"c.toml", "[\"\"]\nx = 1\n", `"".x`},
		{"c.toml", "\"a b\" = 1\n", `"a b"`},
		{"c.yaml", "\"\\e[31mred\": 1\n", `"\x1b[31mred"`},
		{"c.toml", "[[opencode.servers]]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\n\"\" = 1\n", `opencode.servers[0].""`},
	}
	for _, tc := range cases {
		o := isolated(t)
		o.File = writeFile(t, t.TempDir(), tc.name, tc.body)
		_, err := Load(o)
		if got := problemKeys(t, err); !slices.Equal(got, []string{tc.want}) {
			t.Errorf("%q: problems %q, want [%s] (%v)", tc.body, got, tc.want, err)
		}
	}
}
