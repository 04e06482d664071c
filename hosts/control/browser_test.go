package control

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestBrowserRoutesTakeOnlyTheirOwnOrigin: thatch's own page posts forms
// with Origin http://HOST:PORT. Under /ui/ exactly that origin goes
// through (and no token is asked for); any other origin is refused there,
// and every other route still refuses every Origin, the page's own too,
// also through a path that only looks like /ui/.
func TestBrowserRoutesTakeOnlyTheirOwnOrigin(t *testing.T) {
	s, _ := newServer(t, "127.0.0.1:0")
	s.MountFunc("GET /v1/ping", func(w http.ResponseWriter, _ *http.Request) { WriteJSON(w, 200, map[string]string{"pong": "yes"}) })
	s.MountBrowser("GET /ui/page", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { WriteJSON(w, 200, map[string]string{"page": "yes"}) }))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	_, port, _ := net.SplitHostPort(s.Addr())
	own := "127.0.0.1:" + port

	for _, host := range []string{own, "localhost:" + port} {
		if code, msg := get(t, s, "/ui/page", host, map[string]string{"Origin": "http://" + host}); code != http.StatusOK {
			t.Errorf("/ui/page Host %q with its own Origin: %d %q, want 200", host, code, msg)
		}
	}
	if code, msg := get(t, s, "/ui/page", own, nil); code != http.StatusOK {
		t.Errorf("/ui/page without Origin: %d %q, want 200", code, msg)
	}
	for _, origin := range []string{"http://evil.example", "http://localhost:" + port, "https://" + own, "http://" + own + ".evil.example", "null", "", "http://127.0.0.1:1"} {
		if code, msg := get(t, s, "/ui/page", own, map[string]string{"Origin": origin}); code != http.StatusForbidden {
			t.Errorf("/ui/page Origin %q: %d %q, want 403", origin, code, msg)
		}
	}
	for _, path := range []string{"/v1/ping", "/healthz", "/ui/../v1/ping", "/ui/%2e%2e/v1/ping", "/ui"} {
		if code, msg := get(t, s, path, own, map[string]string{"Origin": "http://" + own}); code != http.StatusForbidden {
			t.Errorf("%s with the page's own Origin: %d %q, want 403", path, code, msg)
		}
	}
	if code, msg := get(t, s, "/ui/page", "evil.example:"+port, map[string]string{"Origin": "http://evil.example:" + port}); code != http.StatusForbidden {
		t.Errorf("/ui/page for a foreign Host with its own Origin: %d %q, want 403", code, msg)
	}
}

// TestMountBrowserRefusesOtherPaths: a browser route outside /ui/ would
// put a page where only token holders may go.
func TestMountBrowserRefusesOtherPaths(t *testing.T) {
	s, _ := newServer(t, "127.0.0.1:0")
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "not under") {
			t.Fatalf("MountBrowser(GET /v1/x) did not panic: %v", r)
		}
	}()
	s.MountBrowser("GET /v1/x", http.NotFoundHandler())
}
