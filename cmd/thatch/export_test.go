package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/persistence/memory"
)

// directBackend opens the memory store of a fresh data directory, as the
// memory commands do when no daemon runs.
func directBackend(t *testing.T) *memoryBackend {
	t.Helper()
	cfg := config.Defaults()
	cfg.Data.Dir = t.TempDir()
	cfg.ResolvePaths(nil, t.TempDir())
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := openMemoryBackend(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if b.mem == nil {
		t.Fatal("the backend goes through a daemon")
	}
	t.Cleanup(b.close)
	return b
}

const importFile = `{"store":"global","label":"Use tabs","content":"Go code uses tabs.","confidence":7}
{"store":"acme/app","label":"Deploy","content":"make deploy","branch":"refs/heads/main"}

not json
{"store":"acme/app","label":"deploy","content":"the same label again"}
{"store":"acme/app","content":"no label"}
{"store":"acme/app","label":"Too sure","content":"x","confidence":11}
{"store":"acme/app","label":"Old build","content":"make all","archived":true,"confidence":2}
{"label":"No store","content":"lands in global","future_field":1}
`

func importString(t *testing.T, b *memoryBackend, s string) *importReport {
	t.Helper()
	rep, err := b.importFrom(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestImportIsIdempotentByLabel: an import adds what is missing, refuses
// bad lines by number and goes on, and a second import of the same file
// changes nothing.
func TestImportIsIdempotentByLabel(t *testing.T) {
	b := directBackend(t)
	rep := importString(t, b, importFile)
	if rep.Added != 4 || rep.Updated != 0 || rep.Unchanged != 0 {
		t.Errorf("first import: %+v, want 4 added", rep)
	}
	var lines []int
	for _, r := range rep.Refused {
		lines = append(lines, r.Line)
	}
	if want := []int{4, 5, 6, 7}; !slices.Equal(lines, want) {
		t.Errorf("refused lines %v (%+v), want %v", lines, rep.Refused, want)
	}
	for _, r := range rep.Refused {
		if r.Reason == "" {
			t.Errorf("line %d refused with no reason", r.Line)
		}
	}
	if !strings.Contains(rep.Refused[1].Reason, "line 2") {
		t.Errorf("the duplicate label does not name the first line: %q", rep.Refused[1].Reason)
	}
	before := exportString(t, b, "")

	again := importString(t, b, importFile)
	if again.Added != 0 || again.Updated != 0 || again.Unchanged != 4 || len(again.Refused) != 4 {
		t.Errorf("second import: %+v, want 4 unchanged and the same 4 refused", again)
	}
	if after := exportString(t, b, ""); after != before {
		t.Errorf("the second import changed the store:\nbefore %s\nafter  %s", before, after)
	}

	e, err := b.mem.Find("acme/app", "Deploy")
	if err != nil {
		t.Fatal(err)
	}
	if e.Branch != "main" || e.Confidence != memory.DefaultConfidence {
		t.Errorf("imported %+v: branch %q, confidence %d", e, e.Branch, e.Confidence)
	}
	if e, err := b.mem.Find(memory.GlobalStore, "No store"); err != nil || e.Content != "lands in global" {
		t.Errorf("a line with no store: %+v, %v", e, err)
	}

	changed := `{"store":"acme/app","label":"Deploy","content":"make deploy-prod","branch":"main"}` + "\n" +
		`{"store":"acme/app","label":"Old build","content":"make all","confidence":2}` + "\n"
	upd := importString(t, b, changed)
	if upd.Updated != 2 || upd.Added != 0 || upd.Unchanged != 0 {
		t.Errorf("changed content and archived flag: %+v, want 2 updated", upd)
	}
	if e, _ := b.mem.Find("acme/app", "Old build"); e.Archived {
		t.Error("the update did not unarchive")
	}
}

// TestExportImportRoundTrip: an export imported into a fresh store
// exports the same memories again, in the same stable order, and they are
// recalled: their embeddings were computed.
func TestExportImportRoundTrip(t *testing.T) {
	src := directBackend(t)
	importString(t, src, importFile)
	out := exportString(t, src, "")

	var prev memoryRecord
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r memoryRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("export line %d: %v", i+1, err)
		}
		if r.Store == "" || r.Label == "" || r.Content == "" || r.Slug == "" || r.Created.IsZero() || r.Updated.IsZero() || r.Confidence == 0 {
			t.Errorf("export line %d lacks a field: %s", i+1, line)
		}
		if i > 0 && (r.Store < prev.Store || r.Store == prev.Store && r.Slug <= prev.Slug) {
			t.Errorf("export line %d (%s/%s) is out of order after %s/%s", i+1, r.Store, r.Slug, prev.Store, prev.Slug)
		}
		prev = r
	}
	if only := exportString(t, src, "acme/app"); strings.Contains(only, `"store":"global"`) || !strings.Contains(only, "Deploy") {
		t.Errorf("export --store acme/app:\n%s", only)
	}

	dst := directBackend(t)
	rep := importString(t, dst, out)
	if rep.Added != 4 || len(rep.Refused) != 0 {
		t.Fatalf("import of an export: %+v", rep)
	}
	if got := exportString(t, dst, ""); stripRecalls(t, got) != stripRecalls(t, out) {
		t.Errorf("round trip differs:\nsrc %s\ndst %s", out, got)
	}
	if rep := importString(t, dst, out); rep.Unchanged != 4 {
		t.Errorf("importing the export again: %+v, want 4 unchanged", rep)
	}
	hits, err := dst.search("deploy", "acme/app", "main", 5)
	if err != nil || len(hits) == 0 || hits[0].Entry.Label != "Deploy" {
		t.Errorf("recall after import: %+v, %v", hits, err)
	}
}

func exportString(t *testing.T, b *memoryBackend, store string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := b.export(&buf, store); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// stripRecalls drops what an import cannot restore: the recall counts.
func stripRecalls(t *testing.T, export string) string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(export), "\n") {
		var r memoryRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(memoryRecord{Store: r.Store, Label: r.Label, Content: r.Content, Branch: r.Branch,
			Confidence: r.Confidence, Archived: r.Archived, Slug: r.Slug, Created: r.Created, Updated: r.Updated})
		out = append(out, string(b))
	}
	return strings.Join(out, "\n")
}

// TestImportKeepsTimes: the created and updated times of an export are
// kept by an import into a fresh store; a line without them is written
// now.
func TestImportKeepsTimes(t *testing.T) {
	const file = `{"store":"acme/app","label":"Deploy","content":"make deploy","created":"2025-01-02T03:04:05.123456789Z","updated":"2025-02-03T04:05:06Z"}
{"store":"global","label":"Use tabs","content":"Go code uses tabs.","created":"2024-06-01T10:00:00+02:00"}
{"store":"global","label":"No times","content":"written now"}
`
	src := directBackend(t)
	start := time.Now()
	if rep := importString(t, src, file); rep.Added != 3 || len(rep.Refused) != 0 {
		t.Fatalf("import: %+v", rep)
	}
	deploy, err := src.mem.Find("acme/app", "deploy")
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC); !deploy.Created.Equal(want) {
		t.Errorf("created = %v, want %v", deploy.Created, want)
	}
	if want := time.Date(2025, 2, 3, 4, 5, 6, 0, time.UTC); !deploy.Updated.Equal(want) {
		t.Errorf("updated = %v, want %v", deploy.Updated, want)
	}
	tabs, _ := src.mem.Find("global", "use-tabs")
	if want := time.Date(2024, 6, 1, 8, 0, 0, 0, time.UTC); !tabs.Created.Equal(want) || tabs.Updated.Before(start) {
		t.Errorf("created only: created %v, updated %v; want %v and now", tabs.Created, tabs.Updated, want)
	}
	if now, _ := src.mem.Find("global", "no-times"); now.Created.Before(start) || now.Updated.Before(start) {
		t.Errorf("no times: created %v, updated %v, want now", now.Created, now.Updated)
	}

	out := exportString(t, src, "")
	dst := directBackend(t)
	if rep := importString(t, dst, out); rep.Added != 3 || len(rep.Refused) != 0 {
		t.Fatalf("import of the export: %+v", rep)
	}
	if got := exportString(t, dst, ""); got != out {
		t.Errorf("export -> import -> export changed the times:\nsrc %s\ndst %s", out, got)
	}
}

// TestImportRefusesSecrets: with no daemon, a line whose memory holds a
// secret is refused by the store's guard ([memory.redact], as for
// memory_remember), reported by line number and kind and never with the
// secret; the other lines are imported and the exit code is 1.
func TestImportRefusesSecrets(t *testing.T) {
	const token, key = "glpat-x9Kd3LmQ2pX7vB1nC4tW", "AKIAQ3EGRT7XK2MZP4WN"
	file := `{"store":"acme/app","label":"Deploy","content":"make deploy"}
{"store":"acme/app","label":"Deploy token","content":"GITLAB_TOKEN=` + token + `"}
{"store":"acme/app","label":"key ` + key + `","content":"the AWS key of CI"}
{"store":"acme/app","label":"Token","content":"the deploy token is GITLAB_TOKEN in the CI settings"}
`
	b := directBackend(t)
	rep := importString(t, b, file)
	if rep.Added != 2 || len(rep.Refused) != 2 {
		t.Fatalf("import: %+v, want 2 added and 2 refused", rep)
	}
	for i, want := range []struct {
		line int
		kind string
	}{{2, "gitlab_token"}, {3, "aws_access_key"}} {
		r := rep.Refused[i]
		if r.Line != want.line || !strings.Contains(r.Reason, want.kind) || !strings.Contains(r.Reason, "secret") {
			t.Errorf("refused %+v, want line %d for a %s", r, want.line, want.kind)
		}
	}
	var stdout, stderr bytes.Buffer
	rep.print(&stdout, &stderr)
	js, _ := json.Marshal(rep)
	for _, shown := range []string{stdout.String(), stderr.String(), string(js)} {
		if strings.Contains(shown, token) || strings.Contains(shown, key) {
			t.Errorf("the report shows a secret:\n%s", shown)
		}
	}
	if !strings.Contains(stderr.String(), "line 2") || !strings.Contains(stderr.String(), "line 3") {
		t.Errorf("the refused lines are not named:\n%s", stderr.String())
	}
	if es, _ := b.list("", ""); len(es) != 2 {
		t.Errorf("stored %d memories, want 2: %+v", len(es), es)
	}
	if code := runImport(b, strings.NewReader(file), true); code != 1 {
		t.Errorf("exit code %d, want 1 when a line was refused", code)
	}
}
