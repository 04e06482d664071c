package control

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// get sends GET path to s with the given Host and extra headers, and
// returns the status and the decoded JSON error, if any.
func get(t *testing.T, s *Server, path, host string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+s.Addr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Authorization", "Bearer "+s.token)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	c := &http.Client{Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Error string `json:"error"`
	}
	if resp.StatusCode != http.StatusOK {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s Host %q: Content-Type %q, want application/json", path, host, ct)
		}
		if err := json.Unmarshal(b, &e); err != nil || e.Error == "" {
			t.Errorf("%s Host %q: body %q is not a JSON error", path, host, b)
		}
	}
	return resp.StatusCode, e.Error
}

// TestRefusesForeignHostAndOrigin: a web page that rebinds its own name to
// 127.0.0.1 sends its name as Host, and a browser adds Origin to
// cross-origin requests. Both are refused on every route, /healthz too,
// while the Go client and plain loopback requests go through.
func TestRefusesForeignHostAndOrigin(t *testing.T) {
	s, dir := newServer(t, "127.0.0.1:0")
	s.MountFunc("GET /v1/ping", func(w http.ResponseWriter, _ *http.Request) { WriteJSON(w, 200, map[string]string{"pong": "yes"}) })
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	_, port, _ := net.SplitHostPort(s.Addr())
	otherPort := "1"
	if port == otherPort {
		otherPort = "2"
	}

	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LocalHost:" + port, "[::1]:" + port} {
		for _, path := range []string{"/healthz", "/v1/ping"} {
			if code, msg := get(t, s, path, host, nil); code != http.StatusOK {
				t.Errorf("%s Host %q: %d %q, want 200", path, host, code, msg)
			}
		}
	}
	refusedHosts := []string{
		"evil.example:" + port, "evil.example", "127.0.0.1", "localhost", "127.0.0.1:" + otherPort,
		"localhost.evil.example:" + port, "127.0.0.1.nip.io:" + port, "0.0.0.0:" + port, "[::1]",
	}
	for _, host := range refusedHosts {
		for _, path := range []string{"/healthz", "/v1/ping", "/nowhere"} {
			if code, msg := get(t, s, path, host, nil); code != http.StatusForbidden {
				t.Errorf("%s Host %q: %d %q, want 403", path, host, code, msg)
			}
		}
	}
	for _, origin := range []string{"http://evil.example", "http://127.0.0.1:" + port, "null", ""} {
		for _, path := range []string{"/healthz", "/v1/ping"} {
			if code, msg := get(t, s, path, "127.0.0.1:"+port, map[string]string{"Origin": origin}); code != http.StatusForbidden {
				t.Errorf("%s Origin %q: %d %q, want 403", path, origin, code, msg)
			}
		}
	}

	// The package's own client sends a proper Host and no Origin.
	c, _, err := Dial(filepath.Join(dir, "control.json"), filepath.Join(dir, "control.token"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.http.CloseIdleConnections()
	var out map[string]string
	if err := c.Do(context.Background(), "GET", "/v1/ping", nil, &out); err != nil || out["pong"] != "yes" {
		t.Fatalf("client call: %v %v", out, err)
	}
}
