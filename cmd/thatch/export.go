package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/thatch-run/thatch/internal/redact"
	"github.com/thatch-run/thatch/persistence/memory"
)

const exportLong = `Writes one JSON object per line, ordered by store and slug: store, label,
content, branch, confidence, archived, slug, created, updated, recall_count
and last_recalled. 'thatch memory import' reads it back.
`

const importLong = `Reads JSON lines as 'thatch memory export' writes them (- reads stdin) and
remembers each by its store and label: a memory that is not there is added,
one whose content, branch, confidence or archived flag differ is updated, an
equal one is left alone, so importing a file twice changes nothing the second
time. Embeddings are computed afresh, as for any memory written. Only store,
label and content are needed on a line (store defaults to global). The
created and updated times of a line are kept (now when a line has none);
slug and recall counts are not restored. A memory holding a secret (as
[memory.redact] finds them, daemon or not) is refused, as one the agent
would remember is: its line is reported with the kinds of secret, never the
secret. A line that cannot be imported is reported with its number and
reason and the rest is imported; the exit code is then 1.
`

// memoryRecord is one line of an export. Its fields are the memory's own;
// import needs only Label and Content and takes Store, Branch, Confidence
// and Archived when set.
type memoryRecord struct {
	Store   string `json:"store"`
	Label   string `json:"label"`
	Content string `json:"content"`
	// Branch is "" for a project-wide memory.
	Branch string `json:"branch,omitempty"`
	// Confidence 0 means the default (memory.DefaultConfidence).
	Confidence int  `json:"confidence,omitempty"`
	Archived   bool `json:"archived,omitempty"`
	// Created and Updated are restored by import (zero: now). Slug,
	// RecallCount and LastRecalled are exported for a reader's sake;
	// import derives the slug from the label and cannot restore the
	// others.
	Slug         string    `json:"slug,omitempty"`
	Created      time.Time `json:"created,omitzero"`
	Updated      time.Time `json:"updated,omitzero"`
	RecallCount  int64     `json:"recall_count,omitempty"`
	LastRecalled time.Time `json:"last_recalled,omitzero"`
}

func recordOf(e memory.Entry) memoryRecord {
	return memoryRecord{
		Store: e.Store, Label: e.Label, Content: e.Content, Branch: e.Branch, Confidence: e.Confidence,
		Archived: e.Archived, Slug: e.Slug, Created: e.Created, Updated: e.Updated,
		RecallCount: e.RecallCount, LastRecalled: e.LastRecalled,
	}
}

// export writes the memories of store ("" for every store) to w, one JSON
// object a line, ordered by store and slug.
func (b *memoryBackend) export(w io.Writer, store string) error {
	es, err := b.list(store, "")
	if err != nil {
		return err
	}
	slices.SortFunc(es, func(x, y memory.Entry) int {
		return cmp.Or(cmp.Compare(x.Store, y.Store), cmp.Compare(x.Slug, y.Slug))
	})
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, e := range es {
		if err := enc.Encode(recordOf(e)); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// importReport says what an import did.
type importReport struct {
	Added     int `json:"added"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
	// Refused lists the lines not imported, in file order.
	Refused []refusedLine `json:"refused"`
}

// refusedLine is a line an import could not take.
type refusedLine struct {
	Line   int    `json:"line"`
	Label  string `json:"label,omitempty"`
	Reason string `json:"reason"`
}

func (r *importReport) print(stdout, stderr io.Writer) {
	for _, l := range r.Refused {
		if l.Label != "" {
			fmt.Fprintf(stderr, "line %d (%q): %s\n", l.Line, l.Label, l.Reason)
		} else {
			fmt.Fprintf(stderr, "line %d: %s\n", l.Line, l.Reason)
		}
	}
	fmt.Fprintf(stdout, "added %d, updated %d, unchanged %d, refused %d\n", r.Added, r.Updated, r.Unchanged, len(r.Refused))
}

// maxImportLine bounds one line of an import: a memory's content is at
// most memory.MaxContentSize bytes, and JSON escaping can grow it sixfold.
const maxImportLine = 8*memory.MaxContentSize + 64<<10

// importKey names a memory the way Remember matches one: store and slug.
type importKey struct{ store, slug string }

// importFrom remembers every line of r by store and label (see
// importLong). It fails only when it cannot read the current memories or
// r itself; a bad line is refused and the rest imported.
func (b *memoryBackend) importFrom(r io.Reader) (*importReport, error) {
	current, err := b.list("", "")
	if err != nil {
		return nil, fmt.Errorf("read the current memories: %w", err)
	}
	have := map[importKey]memory.Entry{}
	for _, e := range current {
		// Keyed by the slug of the label too: an entry stored under the
		// older cut slug of a long label is the same memory to Remember.
		have[importKey{e.Store, e.Slug}] = e
		have[importKey{e.Store, memory.Slugify(e.Label)}] = e
	}
	seen := map[importKey]int{}
	rep := &importReport{Refused: []refusedLine{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxImportLine)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		in, reason := parseRecord(line)
		if reason != "" {
			rep.Refused = append(rep.Refused, refusedLine{Line: n, Label: in.Label, Reason: reason})
			continue
		}
		k := importKey{in.Store, memory.Slugify(in.Label)}
		if first, dup := seen[k]; dup {
			rep.Refused = append(rep.Refused, refusedLine{Line: n, Label: in.Label,
				Reason: fmt.Sprintf("line %d already has this label in store %q (slug %s)", first, in.Store, k.slug)})
			continue
		}
		seen[k] = n
		old, exists := have[k]
		if exists && sameMemory(old, in) {
			rep.Unchanged++
			continue
		}
		in.Overwrite = exists
		op, err := b.remember(in)
		if err != nil {
			label := in.Label
			if isSecretRefusal(err) {
				label = "" // the secret may be in the label: the line number names it
			}
			rep.Refused = append(rep.Refused, refusedLine{Line: n, Label: label, Reason: err.Error()})
			continue
		}
		if op == memory.OpUpdated {
			rep.Updated++
		} else {
			rep.Added++
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("line %d is longer than %d bytes: %w", n+1, maxImportLine, err)
		}
		return rep, err
	}
	return rep, nil
}

// parseRecord reads one line into what Remember takes, normalized as
// Remember normalizes it; a non-empty reason says why the line cannot be
// imported.
func parseRecord(line string) (memory.RememberInput, string) {
	var rec memoryRecord
	dec := json.NewDecoder(strings.NewReader(line))
	if err := dec.Decode(&rec); err != nil {
		return memory.RememberInput{}, "not a JSON object: " + err.Error()
	}
	if dec.More() {
		return memory.RememberInput{}, "more than one JSON value on the line"
	}
	in := memory.RememberInput{
		Label:      strings.TrimSpace(rec.Label),
		Content:    strings.TrimSpace(rec.Content),
		Store:      strings.TrimSpace(rec.Store),
		Branch:     strings.TrimPrefix(strings.TrimSpace(rec.Branch), "refs/heads/"),
		Confidence: rec.Confidence,
		Archived:   rec.Archived,
		Created:    rec.Created,
		Updated:    rec.Updated,
	}
	if in.Store == "" {
		in.Store = memory.GlobalStore
	}
	if in.Confidence == 0 {
		in.Confidence = memory.DefaultConfidence
	}
	switch {
	case in.Label == "":
		return in, "no label"
	case in.Content == "":
		return in, "no content"
	}
	return in, ""
}

// sameMemory reports whether importing in over e would change nothing a
// memory holds.
func sameMemory(e memory.Entry, in memory.RememberInput) bool {
	return e.Label == in.Label && e.Content == in.Content && e.Branch == in.Branch &&
		e.Confidence == in.Confidence && e.Archived == in.Archived
}

// isSecretRefusal reports whether err is the store refusing a memory that
// holds a secret. The daemon's answer carries only the store's text, so
// that text is matched when no error chain came along.
func isSecretRefusal(err error) bool {
	return errors.Is(err, redact.ErrSecret) || strings.Contains(err.Error(), redact.ErrSecret.Error())
}

// remember writes one memory through the daemon or the store and returns
// Remember's op (memory.OpNew or memory.OpUpdated). Either way the memory
// store's guard, built from [memory.redact] (thatch.OpenMemory), refuses a
// memory holding a secret: the daemon's store has it, and so has the one
// this process opens.
func (b *memoryBackend) remember(in memory.RememberInput) (string, error) {
	if b.client != nil {
		var res struct {
			Op string `json:"op"`
		}
		body := map[string]any{
			"label": in.Label, "content": in.Content, "store": in.Store, "branch": in.Branch,
			"confidence": in.Confidence, "overwrite": in.Overwrite, "archived": in.Archived,
		}
		if !in.Created.IsZero() {
			body["created"] = in.Created
		}
		if !in.Updated.IsZero() {
			body["updated"] = in.Updated
		}
		err := b.call("/v1/memory/remember", body, &res)
		return res.Op, err
	}
	res, err := b.mem.Remember(context.Background(), in)
	return res.Op, err
}
