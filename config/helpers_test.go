package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// writeFile writes body to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// isolated returns options that never reach the real home directory or
// process environment: an empty temp home and an empty environment.
func isolated(t *testing.T) LoadOptions {
	t.Helper()
	return LoadOptions{HomeDir: t.TempDir(), Env: []string{}}
}

// problemKeys lists the keys a Validate error names, sorted.
func problemKeys(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error is %T (%v), want *ValidationError", err, err)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("errors.Is(err, ErrInvalid) = false")
	}
	var keys []string
	for _, p := range ve.Problems {
		keys = append(keys, p.Key)
	}
	slices.Sort(keys)
	return keys
}

// flatten turns a Redacted map into "a.b" -> value.
func flatten(m map[string]any) map[string]any {
	out := map[string]any{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			if prefix != "" {
				k = prefix + "." + k
			}
			if sub, ok := v.(map[string]any); ok {
				walk(k, sub)
				continue
			}
			out[k] = v
		}
	}
	walk("", m)
	return out
}

// stripLoadState clears what Load records besides the values, so that a
// loaded Config can be compared with one built by hand.
func stripLoadState(c *Config) *Config {
	cp := *c
	cp.source, cp.problems, cp.serverKeys = "", nil, nil
	return &cp
}
