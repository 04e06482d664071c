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
