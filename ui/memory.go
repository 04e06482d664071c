package ui

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/thatch-run/thatch/internal/redact"
	"github.com/thatch-run/thatch/persistence/memory"
)

// recallLimit is how many hits a search shows.
const recallLimit = 50

// row is one memory as a list shows it.
type row struct {
	Store, Slug, Label, Branch, Content string
	Confidence                          int
	Archived                            bool
	Updated                             string
	Recalls                             int64
	Score                               string
}

func rowOf(e memory.Entry) row {
	return row{Store: e.Store, Slug: e.Slug, Label: e.Label, Branch: e.Branch, Content: e.Content,
		Confidence: e.Confidence, Archived: e.Archived, Updated: e.Updated.Local().Format(time.DateTime), Recalls: e.RecallCount}
}

// memoriesPage is the data of the memory list.
type memoriesPage struct {
	Stores   []string
	Store    string
	Branch   string
	Branches []string
	Query    string
	Rows     []row
	Total    int
	Page     int
	Pages    int
	First    int
	Last     int
	PrevURL  string
	NextURL  string
	Back     string
	Searched bool
	Err      string
}

func (u *UI) serveMemories(w http.ResponseWriter, r *http.Request, v *view) {
	mem := u.memory()
	if mem == nil {
		u.renderError(w, http.StatusServiceUnavailable, "The memory store is not open.")
		return
	}
	q := r.URL.Query()
	p := memoriesPage{Stores: mem.Stores(), Store: q.Get("store"), Branch: q.Get("branch"), Query: strings.TrimSpace(q.Get("q")), Back: r.URL.RequestURI()}
	if p.Store == "" && len(p.Stores) > 0 {
		p.Store = p.Stores[0]
		if slices.Contains(p.Stores, memory.GlobalStore) {
			p.Store = memory.GlobalStore
		}
	}
	page, _ := strconv.Atoi(q.Get("page"))
	p.Page = max(page, 1)
	v.Title, v.Nav, v.Data = "memories", "memories", &p
	if p.Store == "" {
		u.render(w, http.StatusOK, "memories", v)
		return
	}
	if p.Query != "" {
		p.Searched = true
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		hits, err := mem.Recall(ctx, memory.RecallInput{Query: p.Query, Stores: []string{p.Store}, Branch: p.Branch, Limit: recallLimit})
		if err != nil {
			p.Err = err.Error()
		}
		for _, h := range hits {
			rw := rowOf(h.Entry)
			rw.Score = strconv.FormatFloat(h.Score, 'f', 2, 64)
			p.Rows = append(p.Rows, rw)
		}
		p.Total = len(p.Rows)
		u.render(w, http.StatusOK, "memories", v)
		return
	}
	if lp, ok := mem.(Pager); ok {
		u.pageFast(lp, &p)
	} else {
		u.pageList(mem, &p)
	}
	link := func(n int) string {
		qs := url.Values{"store": {p.Store}, "page": {strconv.Itoa(n)}}
		if p.Branch != "" {
			qs.Set("branch", p.Branch)
		}
		return "/ui/memories?" + qs.Encode()
	}
	if p.Page > 1 {
		p.PrevURL = link(p.Page - 1)
	}
	if p.Page < p.Pages {
		p.NextURL = link(p.Page + 1)
	}
	u.render(w, http.StatusOK, "memories", v)
}

// editPage is the data of one memory's edit form.
type editPage struct {
	Row  row
	Back string
}

func (u *UI) serveMemory(w http.ResponseWriter, r *http.Request, v *view) {
	mem := u.memory()
	if mem == nil {
		u.renderError(w, http.StatusServiceUnavailable, "The memory store is not open.")
		return
	}
	q := r.URL.Query()
	e, err := mem.Find(q.Get("store"), q.Get("slug"))
	if err != nil {
		u.renderError(w, statusOf(err), err.Error())
		return
	}
	v.Title, v.Nav, v.Data = "edit "+e.Label, "memories", &editPage{Row: rowOf(e), Back: "/ui/memories?" + url.Values{"store": {e.Store}}.Encode()}
	u.render(w, http.StatusOK, "memory", v)
}

func statusOf(err error) int {
	switch {
	case errors.Is(err, memory.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, memory.ErrInvalid), errors.Is(err, redact.ErrSecret):
		// An edit holding a secret is refused by the store (its guard);
		// the page says which kinds, and the user writes it again
		// without.
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// rewrite stores e again with change applied (same label, so the same
// slug): an edit or an archive.
func (u *UI) rewrite(r *http.Request, change func(*memory.RememberInput) error) (memory.Entry, error) {
	mem := u.memory()
	if mem == nil {
		return memory.Entry{}, errors.New("ui: the memory store is not open")
	}
	e, err := mem.Find(r.PostForm.Get("store"), r.PostForm.Get("slug"))
	if err != nil {
		return memory.Entry{}, err
	}
	in := memory.RememberInput{Label: e.Label, Content: e.Content, Store: e.Store, Branch: e.Branch, Confidence: e.Confidence, Archived: e.Archived, Overwrite: true}
	if err := change(&in); err != nil {
		return memory.Entry{}, err
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	res, err := mem.Remember(ctx, in)
	return res.Entry, err
}

func (u *UI) postEdit(w http.ResponseWriter, r *http.Request, _ *view) {
	e, err := u.rewrite(r, func(in *memory.RememberInput) error {
		in.Content = r.PostForm.Get("content")
		c, err := strconv.Atoi(r.PostForm.Get("confidence"))
		if err != nil {
			return errors.New("ui: confidence is not a number")
		}
		in.Confidence = c
		return nil
	})
	if err != nil {
		u.renderError(w, statusOf(err), "Edit failed: "+err.Error())
		return
	}
	u.log.Info("memory edited", "store", e.Store, "slug", e.Slug)
	http.Redirect(w, r, back(r, "/ui/memories", "saved "+e.Label), http.StatusSeeOther)
}

func (u *UI) postArchive(w http.ResponseWriter, r *http.Request, _ *view) {
	archive := r.PostForm.Get("archived") != "false"
	e, err := u.rewrite(r, func(in *memory.RememberInput) error {
		in.Archived = archive
		return nil
	})
	if err != nil {
		u.renderError(w, statusOf(err), "Archive failed: "+err.Error())
		return
	}
	what := "archived "
	if !archive {
		what = "restored "
	}
	u.log.Info("memory "+strings.TrimSpace(what), "store", e.Store, "slug", e.Slug)
	http.Redirect(w, r, back(r, "/ui/memories", what+e.Label), http.StatusSeeOther)
}

func (u *UI) postForget(w http.ResponseWriter, r *http.Request, _ *view) {
	mem := u.memory()
	if mem == nil {
		u.renderError(w, http.StatusServiceUnavailable, "The memory store is not open.")
		return
	}
	e, err := mem.Forget(r.PostForm.Get("store"), r.PostForm.Get("slug"))
	if err != nil {
		u.renderError(w, statusOf(err), "Forget failed: "+err.Error())
		return
	}
	u.log.Info("memory forgotten", "store", e.Store, "slug", e.Slug)
	http.Redirect(w, r, back(r, "/ui/memories", "forgot "+e.Label), http.StatusSeeOther)
}

// hygieneStore is one store's pairs, with the labels and contents.
type hygieneStore struct {
	Store string
	Pairs []pairRow
	Err   string
}

type pairRow struct {
	A, B  row
	Score string
}

func (u *UI) serveHygiene(w http.ResponseWriter, _ *http.Request, v *view) {
	mem := u.memory()
	if mem == nil {
		u.renderError(w, http.StatusServiceUnavailable, "The memory store is not open.")
		return
	}
	var out []hygieneStore
	for _, s := range mem.Stores() {
		pairs, err := mem.Pairs(s)
		hs := hygieneStore{Store: s}
		if err != nil {
			hs.Err = err.Error()
		}
		for _, p := range pairs {
			pr := pairRow{Score: strconv.FormatFloat(p.Score, 'f', 2, 64)}
			pr.A, pr.B = u.rowFor(s, p.A), u.rowFor(s, p.B)
			hs.Pairs = append(hs.Pairs, pr)
		}
		if len(hs.Pairs) > 0 || hs.Err != "" {
			out = append(out, hs)
		}
	}
	v.Title, v.Nav, v.Data = "hygiene", "hygiene", out
	u.render(w, http.StatusOK, "hygiene", v)
}

func (u *UI) rowFor(store, slug string) row {
	if e, err := u.memory().Find(store, slug); err == nil {
		return rowOf(e)
	}
	return row{Store: store, Slug: slug, Label: slug}
}

func (u *UI) postResolve(w http.ResponseWriter, r *http.Request, _ *view) {
	mem := u.memory()
	if mem == nil {
		u.renderError(w, http.StatusServiceUnavailable, "The memory store is not open.")
		return
	}
	f := r.PostForm
	v := memory.Verdict(f.Get("verdict"))
	if err := mem.ResolvePair(f.Get("store"), f.Get("a"), f.Get("b"), v); err != nil {
		u.renderError(w, statusOf(err), "Judging the pair failed: "+err.Error())
		return
	}
	u.log.Info("hygiene pair judged", "store", f.Get("store"), "a", f.Get("a"), "b", f.Get("b"), "verdict", v)
	http.Redirect(w, r, back(r, "/ui/hygiene", "recorded: "+f.Get("a")+" and "+f.Get("b")+" are "+string(v)), http.StatusSeeOther)
}

// Pager is a memory store that lists one page of a store without reading
// the rest: ListPage returns the entries offset..offset+limit of store in
// slug order (on branch only, when branch is not ""), the store's total
// (with the same filter) and its branches. The page uses it when the store
// offers it; List reads and decodes every entry of the store, which is
// what bounds the page's time at 10,000 memories.
type Pager interface {
	ListPage(store, branch string, offset, limit int) (entries []memory.Entry, total int, branches []string, err error)
}

// pageFast fills p.Rows from one ListPage call.
func (u *UI) pageFast(lp Pager, p *memoriesPage) {
	lo := (p.Page - 1) * u.size
	entries, total, branches, err := lp.ListPage(p.Store, p.Branch, lo, u.size)
	if err != nil {
		p.Err = err.Error()
	}
	p.Total, p.Branches = total, branches
	p.Pages = max(1, (p.Total+u.size-1)/u.size)
	for _, e := range entries {
		p.Rows = append(p.Rows, rowOf(e))
	}
	p.First, p.Last = lo+1, lo+len(entries)
}

// pageList fills p.Rows from the whole list of the store.
func (u *UI) pageList(mem Memory, p *memoriesPage) {
	all, err := mem.List(p.Store, "")
	if err != nil {
		p.Err = err.Error()
	}
	seen := map[string]bool{}
	entries := all
	if p.Branch != "" {
		entries = nil
	}
	for i := range all {
		b := all[i].Branch
		if b != "" && !seen[b] {
			seen[b] = true
			p.Branches = append(p.Branches, b)
		}
		if p.Branch != "" && b == p.Branch {
			entries = append(entries, all[i])
		}
	}
	slices.Sort(p.Branches)
	p.Total = len(entries)
	p.Pages = max(1, (p.Total+u.size-1)/u.size)
	p.Page = min(p.Page, p.Pages)
	lo := (p.Page - 1) * u.size
	hi := min(lo+u.size, p.Total)
	for _, e := range entries[lo:hi] {
		p.Rows = append(p.Rows, rowOf(e))
	}
	p.First, p.Last = lo+1, hi
}
