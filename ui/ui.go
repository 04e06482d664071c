package ui

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/persistence/memory"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// ErrNoBrowserMux is returned by Mount when the mux it is given cannot
// mount browser routes (it is not the control API's server).
var ErrNoBrowserMux = errors.New("ui: the control API does not mount browser routes")

// CodePath is the bearer-token route `thatch ui` calls for a login code.
const CodePath = "/v1/ui/code"

// CodeAnswer is what CodePath answers.
type CodeAnswer struct {
	// URL is the page's one-time login URL, on the address the request was
	// sent to.
	URL     string    `json:"url"`
	Expires time.Time `json:"expires"`
}

// Memory is what the page does with the memory store; *memory.Store is
// one. Edit and archive are a Remember with Overwrite of the same label.
type Memory interface {
	Stores() []string
	List(store, branch string) ([]memory.Entry, error)
	Find(store, labelOrSlug string) (memory.Entry, error)
	Recall(ctx context.Context, in memory.RecallInput) ([]memory.Hit, error)
	Remember(ctx context.Context, in memory.RememberInput) (memory.RememberResult, error)
	Forget(store, labelOrSlug string) (memory.Entry, error)
	Pairs(store string) ([]memory.Pair, error)
	ResolvePair(store, a, b string, v memory.Verdict) error
}

var _ Memory = (*memory.Store)(nil)

// StatusFunc returns the runtime's status report (thatch.Status); the page
// renders it from its JSON.
type StatusFunc func(ctx context.Context) (any, error)

// Options configure the page.
type Options struct {
	// Logger: default discarded.
	Logger hclog.Logger
	// Memory overrides the store the runtime opens (tests, benchmarks).
	// Default: the runtime's memory store, given at Open.
	Memory Memory
	// Now is the clock of codes and sessions. Default: time.Now.
	Now func() time.Time
	// PageSize is how many memories one page lists. Default: 100.
	PageSize int
}

// UI is the page, a front end of the runtime with routes and nothing else.
type UI struct {
	log   hclog.Logger
	auth  *auth
	pages *template.Template
	size  int

	mu     sync.Mutex
	mem    Memory
	status StatusFunc
}

var _ frontend.FrontEnd = (*UI)(nil)

//go:embed assets
var assets embed.FS

// New prepares the page.
func New(o Options) *UI {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.PageSize <= 0 {
		o.PageSize = 100
	}
	return &UI{log: o.Logger, auth: newAuth(o.Now), pages: parsePages(), size: o.PageSize, mem: o.Memory}
}

// SetStatus gives the page the runtime's status report. Until it is set
// the status pages say that there is none.
func (u *UI) SetStatus(f StatusFunc) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.status = f
}

func (u *UI) memory() Memory {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.mem
}

func (u *UI) statusFunc() StatusFunc {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.status
}

// Name is "ui".
func (u *UI) Name() string { return "ui" }

// Open takes the runtime's memory store (unless Options gave one).
func (u *UI) Open(_ context.Context, c frontend.Core) (frontend.Parts, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.mem == nil && c.Memory != nil {
		u.mem = c.Memory
	}
	return frontend.Parts{}, nil
}

// browserMux is the part of control.Server the pages need.
type browserMux interface {
	MountBrowser(pattern string, h http.Handler)
}

var _ browserMux = (*control.Server)(nil)

// Mount adds the code route (bearer token) and the pages (session cookie).
func (u *UI) Mount(_ context.Context, _ frontend.Tree, m frontend.Mux) error {
	bm, ok := m.(browserMux)
	if !ok {
		return ErrNoBrowserMux
	}
	m.MountFunc("POST "+CodePath, u.serveCode)
	u.MountPages(bm)
	return nil
}

// MountPages mounts the pages alone (Mount does it; tests and benchmarks
// call it on a server of their own).
func (u *UI) MountPages(bm browserMux) {
	bm.MountBrowser("GET /ui/login", u.headers(http.HandlerFunc(u.serveLogin)))
	bm.MountBrowser("GET /ui/assets/", u.headers(http.StripPrefix("/ui/", http.FileServerFS(assets))))
	get := func(p string, h func(http.ResponseWriter, *http.Request, *view)) {
		bm.MountBrowser("GET "+p, u.headers(u.page(h)))
	}
	post := func(p string, h func(http.ResponseWriter, *http.Request, *view)) {
		bm.MountBrowser("POST "+p, u.headers(u.form(h)))
	}
	get("/ui/{$}", func(w http.ResponseWriter, r *http.Request, _ *view) {
		http.Redirect(w, r, "/ui/memories", http.StatusSeeOther)
	})
	get("/ui/memories", u.serveMemories)
	get("/ui/memory", u.serveMemory)
	get("/ui/hygiene", u.serveHygiene)
	get("/ui/sessions", u.serveSessions)
	get("/ui/im", u.serveIM)
	post("/ui/memory/edit", u.postEdit)
	post("/ui/memory/forget", u.postForget)
	post("/ui/memory/archive", u.postArchive)
	post("/ui/hygiene/resolve", u.postResolve)
	post("/ui/logout", u.postLogout)
}

// Start does nothing: the page has no outside world.
func (u *UI) Start(context.Context) error { return nil }

// Stop does nothing.
func (u *UI) Stop(context.Context) error { return nil }

// MintURL makes a login code and returns its URL on host (host:port).
func (u *UI) MintURL(host string) CodeAnswer {
	code, exp := u.auth.mint()
	return CodeAnswer{URL: "http://" + host + "/ui/login?code=" + url.QueryEscape(code), Expires: exp.UTC()}
}

func (u *UI) serveCode(w http.ResponseWriter, r *http.Request) {
	control.WriteJSON(w, http.StatusOK, u.MintURL(r.Host))
	u.log.Info("login code issued", "expires_in", CodeTTL)
}

// headers sets what every answer of the page carries: no caching, no
// framing, a referrer only to the page itself, and a CSP that allows this
// page's own script and style only. (Referrer-Policy no-referrer would make
// Chromium send "Origin: null" on the page's own form POSTs, which the
// Origin check refuses; the login URL, the one that holds a code, answers
// with a redirect and loads nothing.)
func (u *UI) headers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

func (u *UI) serveLogin(w http.ResponseWriter, r *http.Request) {
	id, _, ok := u.auth.redeem(r.URL.Query().Get("code"))
	if !ok {
		u.log.Info("login refused: unknown, used or expired code")
		u.renderError(w, http.StatusForbidden, "This login link is unknown, used or expired. Run `thatch ui` for a new one.")
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: id, Path: "/ui", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: int(SessionTTL / time.Second),
	})
	u.log.Info("browser logged in")
	http.Redirect(w, r, "/ui/memories", http.StatusSeeOther)
}

// view is what every page template gets besides its own data.
type view struct {
	CSRF  string
	Title string
	Nav   string
	Flash string
	Data  any
}

// page wraps a GET handler: the session cookie must name a live session.
func (u *UI) page(h func(http.ResponseWriter, *http.Request, *view)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		csrf, ok := u.session(r)
		if !ok {
			u.renderError(w, http.StatusUnauthorized, "Not logged in. Run `thatch ui` and open the URL it prints.")
			return
		}
		h(w, r, &view{CSRF: csrf, Flash: r.URL.Query().Get("flash")})
	})
}

// form wraps a POST handler: a live session, the page's own Origin (the
// guard has checked that one sent is the page's own; here it must be
// there), a same-origin fetch when the browser says, and the session's
// form token.
func (u *UI) form(h func(http.ResponseWriter, *http.Request, *view)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		csrf, ok := u.session(r)
		if !ok {
			u.renderError(w, http.StatusUnauthorized, "Not logged in. Run `thatch ui` and open the URL it prints.")
			return
		}
		if r.Header.Get("Origin") != "http://"+r.Host {
			u.renderError(w, http.StatusForbidden, "A form must come from this page (Origin missing or foreign).")
			return
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
			u.renderError(w, http.StatusForbidden, "A form must come from this page (Sec-Fetch-Site "+site+").")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		if err := r.ParseForm(); err != nil {
			u.renderError(w, http.StatusBadRequest, "Cannot read the form: "+err.Error())
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(csrf)) != 1 {
			u.renderError(w, http.StatusForbidden, "The form token is missing or stale; reload the page.")
			return
		}
		h(w, r, &view{CSRF: csrf})
	})
}

func (u *UI) session(r *http.Request) (string, bool) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return "", false
	}
	return u.auth.lookup(c.Value)
}

func (u *UI) postLogout(w http.ResponseWriter, r *http.Request, _ *view) {
	if c, err := r.Cookie(CookieName); err == nil {
		u.auth.logout(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/ui", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	u.renderError(w, http.StatusOK, "Logged out.")
}

// back returns where a form goes after it is done: its "back" field when
// that is a path of the page, else def; flash is added as a message.
func back(r *http.Request, def, flash string) string {
	to := r.PostForm.Get("back")
	p, err := url.Parse(to)
	if to == "" || err != nil || p.Scheme != "" || p.Host != "" || !strings.HasPrefix(p.Path, "/ui/") || strings.HasPrefix(to, "//") || strings.Contains(to, `\`) {
		p, _ = url.Parse(def)
	}
	q := p.Query()
	q.Set("flash", flash)
	p.RawQuery = q.Encode()
	return p.String()
}

func (u *UI) renderError(w http.ResponseWriter, status int, msg string) {
	u.render(w, status, "message", &view{Title: "thatch", Data: msg})
}

func (u *UI) render(w http.ResponseWriter, status int, name string, v *view) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	if err := u.pages.ExecuteTemplate(&b, name, v); err != nil {
		u.log.Error("render a page", "page", name, "error", err)
		http.Error(w, fmt.Sprintf("ui: render %s: %v", name, err), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}
