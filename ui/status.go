package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// table is a list of JSON objects as rows and columns: the page shows
// status views of other front ends without importing them, so a field one
// of them adds (a cost, a failure count) shows up without a change here.
type table struct {
	Name    string
	Columns []string
	Rows    [][]string
}

// cellLimit bounds what one cell shows of a nested value.
const cellLimit = 160

// tableOf turns a JSON array of objects into a table. first names the
// columns that go first, in that order, when present; the rest follow
// sorted. derived columns are computed per row and put after first.
func tableOf(name string, v any, first []string, derived map[string]func(map[string]any) string) table {
	t := table{Name: name}
	var items []any
	switch x := v.(type) {
	case nil:
		return t
	case []any:
		items = x
	case map[string]any:
		// One object (a summary, counters by name): one row a key.
		t.Columns = []string{"name", "value"}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			t.Rows = append(t.Rows, []string{k, cell(x[k])})
		}
		return t
	default:
		t.Columns, t.Rows = []string{"value"}, [][]string{{cell(v)}}
		return t
	}
	if len(items) == 0 {
		return t
	}
	keys := map[string]bool{}
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			for k := range m {
				keys[k] = true
			}
		}
	}
	var cols []string
	for _, k := range first {
		if keys[k] {
			cols = append(cols, k)
			delete(keys, k)
		}
	}
	dnames := make([]string, 0, len(derived))
	for k := range derived {
		dnames = append(dnames, k)
	}
	slices.Sort(dnames)
	cols = append(cols, dnames...)
	rest := make([]string, 0, len(keys))
	for k := range keys {
		rest = append(rest, k)
	}
	slices.Sort(rest)
	cols = append(cols, rest...)
	t.Columns = cols
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			t.Rows = append(t.Rows, []string{cell(it)})
			continue
		}
		r := make([]string, len(cols))
		for i, c := range cols {
			if f, ok := derived[c]; ok {
				r[i] = f(m)
			} else if val, ok := m[c]; ok {
				r[i] = cell(val)
			}
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

// cell renders one JSON value: scalars as they are, nested values as
// compact JSON, cut at cellLimit.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	s := string(b)
	if r := []rune(s); len(r) > cellLimit {
		s = string(r[:cellLimit-1]) + "…"
	}
	return s
}

// report reads the status report as generic JSON.
func (u *UI) report(ctx context.Context) (map[string]any, error) {
	f := u.statusFunc()
	if f == nil {
		return nil, fmt.Errorf("ui: no status report is wired to the page")
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	st, err := f(ctx)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("ui: encode the status report: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("ui: decode the status report: %w", err)
	}
	return m, nil
}

// frontEnd returns one front end's report from the status ({} if absent).
func frontEnd(st map[string]any, name string) map[string]any {
	fes, _ := st["frontEnds"].(map[string]any)
	fe, _ := fes[name].(map[string]any)
	if fe == nil {
		return map[string]any{}
	}
	return fe
}

// statusPage is the data of the sessions and IM pages.
type statusPage struct {
	Err     string
	Health  string
	Total   string
	Main    table
	Details []table
}

// claimed sums a family's claims: its fetchers' claims and its children's.
func claimed(m map[string]any) string {
	n := 0.0
	if cs, ok := m["claims"].(map[string]any); ok {
		for _, c := range cs {
			f, _ := c.(float64)
			n += f
		}
	}
	if ch, ok := m["children"].([]any); ok {
		for _, c := range ch {
			if cm, ok := c.(map[string]any); ok {
				f, _ := cm["claimed"].(float64)
				n += f
			}
		}
	}
	return strconv.FormatFloat(n, 'f', -1, 64)
}

func (u *UI) statusPage(r *http.Request, name string, first []string, derived map[string]func(map[string]any) string) *statusPage {
	p, _ := u.statusPageOf(r, name, first, derived)
	return p
}

// statusPageOf is statusPage, and the report it was made of (nil when it
// could not be read).
func (u *UI) statusPageOf(r *http.Request, name string, first []string, derived map[string]func(map[string]any) string) (*statusPage, map[string]any) {
	p := &statusPage{}
	st, err := u.report(r.Context())
	if err != nil {
		p.Err = err.Error()
		return p, nil
	}
	fe := frontEnd(st, name)
	if h, ok := fe["health"].(map[string]any); ok {
		p.Health = cell(h["state"])
		if e := cell(h["lastError"]); e != "" {
			p.Health += " (" + e + ")"
		}
	}
	p.Total = cell(fe["total"])
	p.Main = tableOf(name, fe["entities"], first, derived)
	details, _ := fe["details"].(map[string]any)
	names := make([]string, 0, len(details))
	for k := range details {
		names = append(names, k)
	}
	// Extractions first: the page names them in its menu.
	slices.SortFunc(names, func(a, b string) int {
		ea, eb := strings.Contains(strings.ToLower(a), "extract"), strings.Contains(strings.ToLower(b), "extract")
		if ea != eb {
			if ea {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, k := range names {
		p.Details = append(p.Details, tableOf(k, details[k], nil, nil))
	}
	return p, st
}

func (u *UI) serveSessions(w http.ResponseWriter, r *http.Request, v *view) {
	p := u.statusPage(r, "opencode", []string{"sessionID", "host", "pending", "accepted"}, map[string]func(map[string]any) string{"claimed": claimed})
	v.Title, v.Nav, v.Data = "sessions", "sessions", p
	u.render(w, http.StatusOK, "status", v)
}

func (u *UI) serveIM(w http.ResponseWriter, r *http.Request, v *view) {
	p, st := u.statusPageOf(r, "im", []string{"thread", "displayName", "state", "agent", "window", "session", "lastMessage"}, nil)
	if st != nil {
		// The claude and codex sessions whose memory thatch extracts (the
		// agents front end's), bound to a chat or started by hand.
		if xs := frontEnd(st, "agents")["entities"]; xs != nil {
			p.Details = append([]table{tableOf("extractions", xs, []string{"session", "agent", "watch", "pending", "claimed", "extracted"}, nil)}, p.Details...)
		}
	}
	v.Title, v.Nav, v.Data = "IM bindings", "im", p
	u.render(w, http.StatusOK, "status", v)
}
