package ui

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/internal/redact"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/persistence/memory"
)

// clock is a settable clock for codes and sessions.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// rig is a control API on 127.0.0.1 with the page mounted on a real memory
// store.
type rig struct {
	t     *testing.T
	srv   *control.Server
	mem   *memory.Store
	ui    *UI
	clock *clock
	token string
	base  string
}

func newRig(t *testing.T, status StatusFunc) *rig {
	t.Helper()
	return newRigWith(t, status, memory.Options{})
}

// newRigWith is newRig with the memory store opened with mo.
func newRigWith(t *testing.T, status StatusFunc, mo memory.Options) *rig {
	t.Helper()
	dir := t.TempDir()
	st, err := persistence.Open(filepath.Join(dir, "journal"), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mem, err := memory.Open(st, mo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close(); st.Close() })
	tokFile := filepath.Join(dir, "control.token")
	tok, err := control.LoadOrCreateToken(tokFile)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := control.New(control.Options{Listen: "127.0.0.1:0", TokenFile: tokFile})
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	u := New(Options{Memory: mem, Now: c.now, PageSize: 100})
	u.SetStatus(status)
	if err := u.Mount(context.Background(), nil, srv); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	return &rig{t: t, srv: srv, mem: mem, ui: u, clock: c, token: tok, base: "http://" + srv.Addr()}
}

func (r *rig) remember(store, label, content string) {
	r.t.Helper()
	if _, err := r.mem.Remember(context.Background(), memory.RememberInput{Label: label, Content: content, Store: store, Confidence: 5}); err != nil {
		r.t.Fatal(err)
	}
}

// code asks the token route for a login URL, as `thatch ui` does.
func (r *rig) code() string {
	r.t.Helper()
	req, _ := http.NewRequest("POST", r.base+CodePath, nil)
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`"url": "([^"]+)"`).FindStringSubmatch(string(b))
	if resp.StatusCode != 200 || m == nil {
		r.t.Fatalf("POST %s: %d %s", CodePath, resp.StatusCode, b)
	}
	return strings.ReplaceAll(m[1], `\u0026`, "&")
}

// browser is an HTTP client with a cookie jar that sends the Origin a
// browser sends on a form POST.
type browser struct {
	t      *testing.T
	c      *http.Client
	origin string
}

func (r *rig) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: r.t, c: &http.Client{Jar: jar, Timeout: 10 * time.Second}, origin: r.base}
}

func (b *browser) get(u string) (int, string) {
	b.t.Helper()
	resp, err := b.c.Get(u)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (b *browser) post(u string, form url.Values) (int, string) {
	b.t.Helper()
	req, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if b.origin != "" {
		req.Header.Set("Origin", b.origin)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var csrfRx = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRx.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no form token in the page:\n%s", page)
	}
	return m[1]
}

// TestLoginCodeWorksOnceAndExpires: the code of `thatch ui` logs a browser
// in once, with an HttpOnly, SameSite=Strict cookie on /ui; a used or
// expired code and a missing cookie get no page.
func TestLoginCodeWorksOnceAndExpires(t *testing.T) {
	r := newRig(t, nil)
	r.remember(memory.GlobalStore, "tabs", "indent with tabs")
	b := r.browser()
	if code, _ := b.get(r.base + "/ui/memories"); code != http.StatusUnauthorized {
		t.Fatalf("page before login: %d, want 401", code)
	}
	login := r.code()
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(login)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ck := resp.Header.Get("Set-Cookie")
	for _, want := range []string{CookieName + "=", "Path=/ui", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(ck, want) {
			t.Errorf("Set-Cookie %q lacks %q", ck, want)
		}
	}
	if code, _ := b.get(login); code != http.StatusForbidden {
		t.Fatalf("second use of a code: %d, want 403", code)
	}
	login = r.code()
	if code, body := b.get(login); code != http.StatusOK || !strings.Contains(body, "indent with tabs") {
		t.Fatalf("login: %d\n%s", code, body)
	}
	r.clock.add(CodeTTL + time.Second)
	if code, _ := r.browser().get(r.code()); code != http.StatusOK {
		t.Fatalf("a fresh code after a while: %d, want 200", code)
	}
	stale := r.code()
	r.clock.add(CodeTTL + time.Second)
	if code, _ := r.browser().get(stale); code != http.StatusForbidden {
		t.Fatalf("expired code: %d, want 403", code)
	}
	r.clock.add(SessionTTL)
	if code, _ := b.get(r.base + "/ui/memories"); code != http.StatusUnauthorized {
		t.Fatalf("page after the session expired: %d, want 401", code)
	}
	if code, _ := r.browser().get(r.base + "/ui/login?code=" + strings.Repeat("0", 48)); code != http.StatusForbidden {
		t.Fatalf("made-up code: %d, want 403", code)
	}
}

// TestFormsNeedTokenAndOrigin: a POST without the session's form token,
// without Origin, or from another origin changes nothing; with both, the
// memory is forgotten and gone from the list.
func TestFormsNeedTokenAndOrigin(t *testing.T) {
	r := newRig(t, nil)
	r.remember(memory.GlobalStore, "tabs", "indent with tabs")
	b := r.browser()
	_, page := b.get(r.code())
	csrf := csrfOf(t, page)
	form := url.Values{"store": {memory.GlobalStore}, "slug": {"tabs"}}
	if code, _ := b.post(r.base+"/ui/memory/forget", form); code != http.StatusForbidden {
		t.Errorf("forget without form token: %d, want 403", code)
	}
	form.Set("csrf", csrf)
	b.origin = ""
	if code, _ := b.post(r.base+"/ui/memory/forget", form); code != http.StatusForbidden {
		t.Errorf("forget without Origin: %d, want 403", code)
	}
	b.origin = "http://evil.example"
	if code, _ := b.post(r.base+"/ui/memory/forget", form); code != http.StatusForbidden {
		t.Errorf("forget from another origin: %d, want 403", code)
	}
	other := r.browser()
	other.get(r.code())
	if code, _ := other.post(r.base+"/ui/memory/forget", url.Values{"store": {memory.GlobalStore}, "slug": {"tabs"}, "csrf": {csrf}}); code != http.StatusForbidden {
		t.Errorf("forget with another session's form token: %d, want 403", code)
	}
	if _, err := r.mem.Find(memory.GlobalStore, "tabs"); err != nil {
		t.Fatalf("a refused form forgot the memory: %v", err)
	}
	b.origin = r.base
	code, body := b.post(r.base+"/ui/memory/forget", form)
	if code != http.StatusOK || !strings.Contains(body, "forgot tabs") || strings.Contains(body, "indent with tabs") {
		t.Fatalf("forget: %d\n%s", code, body)
	}
	if _, err := r.mem.Find(memory.GlobalStore, "tabs"); err == nil {
		t.Fatal("the memory is still there")
	}
}

// TestPagesEscapeAndPage: a memory's text is shown as text, never markup;
// the list is paged; edit and archive rewrite the memory.
func TestPagesEscapeAndPage(t *testing.T) {
	r := newRig(t, nil)
	r.remember("acme/app", "xss", `<script>alert("x")</script> and <b>bold</b>`)
	for i := range 250 {
		r.remember("acme/app", fmt.Sprintf("note %03d", i), fmt.Sprintf("the note number %d about topic %d", i, i%7))
	}
	b := r.browser()
	if code, _ := b.get(r.code()); code != http.StatusOK {
		t.Fatalf("login: %d", code)
	}
	_, page := b.get(r.base + "/ui/memories?store=acme%2Fapp&page=3")
	if strings.Contains(page, "<script>alert") || strings.Contains(page, "<b>bold") {
		t.Fatalf("memory content rendered as markup:\n%s", page)
	}
	if !strings.Contains(page, "251 memories in acme/app, 201–251 (page 3 of 3)") {
		t.Fatalf("page 3 of 251:\n%s", page)
	}
	if n := strings.Count(page, "<tr data-slug="); n != 51 {
		t.Fatalf("page 3 has %d rows, want 51", n)
	}
	if !strings.Contains(page, "&lt;script&gt;") {
		t.Fatalf("escaped script missing from the page:\n%s", page)
	}
	csrf := csrfOf(t, page)
	code, body := b.post(r.base+"/ui/memory/edit", url.Values{"csrf": {csrf}, "store": {"acme/app"}, "slug": {"note-001"}, "content": {"edited <i>text</i>"}, "confidence": {"9"}, "back": {"/ui/memory?store=acme%2Fapp&slug=note-001"}})
	if code != http.StatusOK || !strings.Contains(body, "edited &lt;i&gt;text&lt;/i&gt;") {
		t.Fatalf("edit: %d\n%s", code, body)
	}
	if e, _ := r.mem.Find("acme/app", "note-001"); e.Content != "edited <i>text</i>" || e.Confidence != 9 {
		t.Fatalf("edit stored %+v", e)
	}
	if code, _ := b.post(r.base+"/ui/memory/archive", url.Values{"csrf": {csrf}, "store": {"acme/app"}, "slug": {"note-002"}, "back": {"https://evil.example/"}}); code != http.StatusOK {
		t.Fatalf("archive: %d", code)
	}
	if e, _ := r.mem.Find("acme/app", "note-002"); !e.Archived {
		t.Fatal("archive did not archive")
	}
	_, page = b.get(r.base + "/ui/memories?store=acme%2Fapp&q=note+number+17")
	if !strings.Contains(page, "hits for") || !strings.Contains(page, "note 017") {
		t.Fatalf("search:\n%s", page)
	}
}

// TestEditHoldingASecretIsRefused: an edit whose text holds a secret is
// refused with the kind shown on the page, and the memory keeps its old
// text; an archive of it still works.
func TestEditHoldingASecretIsRefused(t *testing.T) {
	red, err := redact.New(redact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The guard the runtime gives the store (thatch.OpenMemory).
	r := newRigWith(t, nil, memory.Options{Guard: func(label, content string) error { return red.Refuse(label, content) }})
	r.remember("acme/app", "deploy", "deploy with make ship")
	b := r.browser()
	if code, _ := b.get(r.code()); code != http.StatusOK {
		t.Fatalf("login: %d", code)
	}
	_, page := b.get(r.base + "/ui/memory?store=acme%2Fapp&slug=deploy")
	csrf := csrfOf(t, page)
	const secret = "glpat-x9Kd3LmQ2pX7vB1nC4tW"
	code, body := b.post(r.base+"/ui/memory/edit", url.Values{"csrf": {csrf}, "store": {"acme/app"}, "slug": {"deploy"},
		"content": {"deploy with GITLAB_TOKEN=" + secret + " make ship"}, "confidence": {"5"}, "back": {"/ui/memories"}})
	if code != http.StatusBadRequest || !strings.Contains(body, "Edit failed") || !strings.Contains(body, "gitlab_token") || strings.Contains(body, secret) {
		t.Fatalf("edit holding a secret: %d\n%s", code, body)
	}
	if e, _ := r.mem.Find("acme/app", "deploy"); e.Content != "deploy with make ship" {
		t.Fatalf("the refused edit was stored: %+v", e)
	}
	code, _ = b.post(r.base+"/ui/memory/edit", url.Values{"csrf": {csrf}, "store": {"acme/app"}, "slug": {"deploy"},
		"content": {"deploy with make ship; the token is GITLAB_TOKEN in CI"}, "confidence": {"5"}, "back": {"/ui/memories"}})
	if e, _ := r.mem.Find("acme/app", "deploy"); code != http.StatusOK || !strings.Contains(e.Content, "in CI") {
		t.Fatalf("edit without the secret: %d, stored %+v", code, e)
	}
}

// TestHygienePairsAreJudged: a possible duplicate shows with its two
// memories, and a verdict from the page records it.
func TestHygienePairsAreJudged(t *testing.T) {
	r := newRig(t, nil)
	r.remember("acme/app", "run tests", "run the tests with make test before every commit")
	r.remember("acme/app", "run the tests", "run the tests with make test before each commit")
	pairs, _ := r.mem.Pairs("acme/app")
	if len(pairs) != 1 {
		t.Fatalf("setup: pairs %v", pairs)
	}
	b := r.browser()
	if code, _ := b.get(r.code()); code != http.StatusOK {
		t.Fatalf("login: %d", code)
	}
	_, page := b.get(r.base + "/ui/hygiene")
	if !strings.Contains(page, `data-a="run-tests"`) {
		t.Fatalf("pair missing:\n%s", page)
	}
	code, body := b.post(r.base+"/ui/hygiene/resolve", url.Values{"csrf": {csrfOf(t, page)}, "store": {"acme/app"}, "a": {"run-tests"}, "b": {"run-the-tests"}, "verdict": {"distinct"}})
	if code != http.StatusOK || !strings.Contains(body, "are distinct") || !strings.Contains(body, `id="clean"`) {
		t.Fatalf("resolve: %d\n%s", code, body)
	}
	if pairs, _ := r.mem.Pairs("acme/app"); len(pairs) != 0 {
		t.Fatalf("pairs after the verdict: %v", pairs)
	}
}

// TestStatusPagesShowWhatTheReportHas: the sessions page shows each
// family's counts, claimed summed, and every detail of the report
// (extractions first), escaped; the IM page shows the bindings and the
// extraction of the claude and codex sessions.
func TestStatusPagesShowWhatTheReportHas(t *testing.T) {
	status := func(context.Context) (any, error) {
		return map[string]any{"frontEnds": map[string]any{
			"opencode": map[string]any{
				"total": 1,
				"entities": []any{map[string]any{"sessionID": "ses_1", "pending": 3, "accepted": 2,
					"claims": map[string]int{"f": 1}, "children": []any{map[string]any{"sessionID": "ses_2", "claimed": 4}}}},
				"details": map[string]any{
					"sweepers":    []any{map[string]any{"sweep": "strand"}},
					"extractions": []any{map[string]any{"session": "ses_1", "facts": 5, "costUSD": 0.0123, "error": "<img src=x>"}},
				},
			},
			"im": map[string]any{"total": 1, "health": map[string]any{"ok": true, "state": "polling Telegram"},
				"entities": []any{map[string]any{"thread": "tg:1:2", "state": "bound", "agent": "claude"}},
			},
			"agents": map[string]any{"total": 1, "health": map[string]any{"ok": true, "state": "following 0 sessions started by hand"},
				"entities": []any{map[string]any{"session": "claude:5f0e", "pending": 0, "extracted": 3}}},
		}}, nil
	}
	r := newRig(t, status)
	b := r.browser()
	b.get(r.code())
	_, page := b.get(r.base + "/ui/sessions")
	for _, want := range []string{"ses_1", "<th>claimed</th>", "<td>5</td>", "<td>0.0123</td>", "&lt;img src=x&gt;", "costUSD"} {
		if !strings.Contains(page, want) {
			t.Errorf("sessions page lacks %q", want)
		}
	}
	if strings.Index(page, "extractions") > strings.Index(page, "sweepers") {
		t.Error("extractions are not shown first")
	}
	if !regexp.MustCompile(`<td>ses_1</td><td>3</td><td>2</td><td>5</td>`).MatchString(page) {
		t.Errorf("family row (sessionID, pending, accepted, claimed) wrong:\n%s", page)
	}
	_, page = b.get(r.base + "/ui/im")
	for _, want := range []string{"tg:1:2", "bound", "polling Telegram", "extractions", "claude:5f0e"} {
		if !strings.Contains(page, want) {
			t.Errorf("IM page lacks %q", want)
		}
	}
}

// pagedMemory offers ListPage, as a store that pages itself would.
type pagedMemory struct {
	*memory.Store
	calls int
}

func (p *pagedMemory) ListPage(store, branch string, offset, limit int) ([]memory.Entry, int, []string, error) {
	p.calls++
	all, err := p.List(store, "")
	var out []memory.Entry
	for _, e := range all {
		if branch == "" || e.Branch == branch {
			out = append(out, e)
		}
	}
	return out[min(offset, len(out)):min(offset+limit, len(out))], len(out), []string{"main"}, err
}

// TestListUsesPager: a store that pages itself is asked for the one page
// shown, and the page shows what it answered.
func TestListUsesPager(t *testing.T) {
	r := newRig(t, nil)
	for i := range 150 {
		r.remember("acme/app", fmt.Sprintf("note %03d", i), fmt.Sprintf("the note number %d", i))
	}
	pm := &pagedMemory{Store: r.mem}
	r.ui.mu.Lock()
	r.ui.mem = pm
	r.ui.mu.Unlock()
	b := r.browser()
	b.get(r.code())
	pm.calls = 0
	_, page := b.get(r.base + "/ui/memories?store=acme%2Fapp&page=2")
	if pm.calls != 1 || !strings.Contains(page, "150 memories in acme/app, 101–150 (page 2 of 2)") || !strings.Contains(page, "<option>main</option>") {
		t.Fatalf("ListPage calls %d, page:\n%s", pm.calls, page)
	}
	if n := strings.Count(page, "<tr data-slug="); n != 50 {
		t.Fatalf("page 2 has %d rows, want 50", n)
	}
}

// TestAssetsAndHeaders: the script and style load from the page itself,
// and every answer forbids framing, caching and foreign scripts.
func TestAssetsAndHeaders(t *testing.T) {
	r := newRig(t, nil)
	for _, p := range []string{"/ui/assets/ui.js", "/ui/assets/ui.css"} {
		resp, err := http.Get(r.base + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d", p, resp.StatusCode)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q", p, csp)
		}
	}
}

// TestBranchFilter: the branch menu lists the store's branches, and a
// branch shows its own memories only.
func TestBranchFilter(t *testing.T) {
	r := newRig(t, nil)
	r.remember("acme/app", "everywhere", "a project-wide note")
	if _, err := r.mem.Remember(context.Background(), memory.RememberInput{Label: "on feature", Content: "only on the feature branch", Store: "acme/app", Branch: "feature", Confidence: 5}); err != nil {
		t.Fatal(err)
	}
	b := r.browser()
	b.get(r.code())
	_, page := b.get(r.base + "/ui/memories?store=acme%2Fapp")
	if !strings.Contains(page, "2 memories in acme/app") || !strings.Contains(page, "<option>feature</option>") {
		t.Fatalf("all branches:\n%s", page)
	}
	_, page = b.get(r.base + "/ui/memories?store=acme%2Fapp&branch=feature")
	if !strings.Contains(page, "1 memories in acme/app on feature") || strings.Contains(page, "project-wide") {
		t.Fatalf("branch feature:\n%s", page)
	}
}
