package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// The fuzz targets hold Load to its contract on any file content: it never
// panics; it returns either no config and ErrParse (the file is not TOML or
// YAML), or a config together with Validate's verdict, every problem naming
// a key. `go test` runs the seeds in testdata/fuzz; `go test -run=^$
// -fuzz=FuzzLoadTOML` searches for more.

// The seeds are small on purpose: the fuzzer minimizes every input that
// finds new code, and minimizing the 4 KB example takes it a minute.

func FuzzLoadTOML(f *testing.F) {
	dir := f.TempDir() // one per worker process, whose inputs run one at a time
	f.Add([]byte("[[opencode.servers]]\nname = \"a\"\nurl = \"http://u:pw@127.0.0.1:1/?token=x\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) { checkLoad(t, filepath.Join(dir, "c.toml"), dir, data) })
}

func FuzzLoadYAML(f *testing.F) {
	dir := f.TempDir()
	f.Add([]byte("opencode:\n  servers:\n    -\n"))
	f.Fuzz(func(t *testing.T, data []byte) { checkLoad(t, filepath.Join(dir, "c.yaml"), dir, data) })
}

// checkLoad loads data as the config file path, with home as the home
// directory and an empty environment, and checks what came back.
func checkLoad(t *testing.T, path, home string, data []byte) {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(LoadOptions{File: path, Env: []string{}, HomeDir: home})
	if c == nil {
		if !errors.Is(err, ErrParse) {
			t.Fatalf("no config, and the error is not ErrParse: %v", err)
		}
		return
	}
	// Whatever was loaded can be shown; check-config does it.
	shown := c.Redacted()
	again := c.Validate()
	if err == nil {
		if again != nil {
			t.Fatalf("Load accepted a config that Validate then refuses: %v", again)
		}
		if _, err := json.Marshal(shown); err != nil {
			t.Fatalf("a valid config cannot be printed: %v", err)
		}
		return
	}
	var ve *ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("config with an error that is not a *ValidationError: %T %v", err, err)
	}
	if len(ve.Problems) == 0 {
		t.Fatal("ValidationError without problems")
	}
	for _, p := range ve.Problems {
		if p == nil || p.Key == "" || p.Msg == "" {
			t.Fatalf("problem without key or message: %#v", p)
		}
		// Problems go to a terminal: the file's bytes come quoted.
		if strings.ContainsFunc(p.Key+p.Msg, unicode.IsControl) {
			t.Fatalf("problem with a raw control character: %q: %q", p.Key, p.Msg)
		}
	}
	if again == nil || again.Error() != err.Error() {
		t.Fatalf("Validate disagrees with Load:\n%v\nvs\n%v", again, err)
	}
}
