package thatch

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportBoundaries turns the package rules of DESIGN.md into a failing
// test: each listed folder may not import the named packages (directly, in
// non-test files).
func TestImportBoundaries(t *testing.T) {
	const mod = "github.com/thatch-run/thatch/"
	rules := []struct {
		dir       string
		forbidden []string
	}{
		{"messages", []string{mod, "github.com/cockroachdb/pebble", "net/http", "github.com/asynkron/protoactor-go"}},
		{"actors", []string{"net/http", "github.com/cockroachdb/pebble", mod + "hosts", mod + "im", mod + "supervisor", mod + "config"}},
		{"persistence", []string{mod + "actors", mod + "supervisor", mod + "hosts", mod + "im", "github.com/asynkron/protoactor-go"}},
		{"supervisor", []string{mod + "hosts", mod + "im", "net/http"}},
		{"hosts", []string{mod + "actors", mod + "supervisor", mod + "persistence", "github.com/cockroachdb/pebble"}},
		{"im", []string{mod + "actors", mod + "supervisor", mod + "persistence", "github.com/cockroachdb/pebble"}},
		{"config", []string{mod, "github.com/cockroachdb/pebble", "github.com/asynkron/protoactor-go", "net/http"}},
	}
	checked := 0
	for _, r := range rules {
		err := filepath.WalkDir(r.dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			checked++
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				for _, bad := range r.forbidden {
					if p == bad || strings.HasPrefix(p, strings.TrimSuffix(bad, "/")+"/") || (strings.HasSuffix(bad, "/") && strings.HasPrefix(p, bad)) {
						// messages may import nothing of thatch but itself.
						if strings.HasPrefix(p, mod+r.dir) {
							continue
						}
						t.Errorf("%s imports %s, which %s/ must not import (DESIGN.md, package boundaries)", path, p, r.dir)
					}
				}
			}
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	if checked == 0 {
		t.Fatal("no files checked")
	}
}
