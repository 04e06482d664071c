package control

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/thatch-run/thatch/config"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newServer(t *testing.T, listen string) (*Server, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := New(Options{Listen: listen, TokenFile: filepath.Join(dir, "control.token"), StateFile: filepath.Join(dir, "control.json"), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

func TestAuthStateFileAndShutdown(t *testing.T) {
	s, dir := newServer(t, "127.0.0.1:0")
	s.MountFunc("GET /v1/ping", func(w http.ResponseWriter, _ *http.Request) { WriteJSON(w, 200, map[string]string{"pong": "yes"}) })
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	stateFile, tokenFile := filepath.Join(dir, "control.json"), filepath.Join(dir, "control.token")
	for _, f := range []string{stateFile, tokenFile} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	var st State
	b, _ := os.ReadFile(stateFile)
	if err := json.Unmarshal(b, &st); err != nil || st.Addr != s.Addr() || st.PID != os.Getpid() {
		t.Fatalf("state file %s: %+v (%v)", b, st, err)
	}

	// /healthz is open; everything else needs the token.
	resp, err := http.Get("http://" + s.Addr() + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	for _, auth := range []string{"", "Bearer wrong", "Basic abc"} {
		req, _ := http.NewRequest("GET", "http://"+s.Addr()+"/v1/ping", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("auth %q: status %d, want 401", auth, resp.StatusCode)
		}
	}
	c, _, err := Dial(stateFile, tokenFile, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]string
	if err := c.Do(context.Background(), "GET", "/v1/ping", nil, &out); err != nil || out["pong"] != "yes" {
		t.Fatalf("authorised call: %v %v", out, err)
	}
	c.http.CloseIdleConnections()

	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stateFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("state file left after stop: %v", err)
	}
	if _, _, err := Dial(stateFile, tokenFile, time.Second); !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("dial after stop: %v", err)
	}
}

func TestTokenIsStableAndTightened(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tok")
	a, err := LoadOrCreateToken(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := LoadOrCreateToken(path)
	if err != nil || a != b || len(a) != 64 {
		t.Fatalf("second load: %q vs %q (%v)", a, b, err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file not tightened: %v", fi.Mode().Perm())
	}
	if err := os.WriteFile(path, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateToken(path); err == nil || !strings.Contains(err.Error(), "no usable token") {
		t.Fatalf("short token accepted: %v", err)
	}
}

func TestRefusesNonLoopback(t *testing.T) {
	s, _ := newServer(t, "0.0.0.0:0")
	if err := s.Start(); !errors.Is(err, ErrNotLoopback) {
		t.Fatalf("start on 0.0.0.0: %v", err)
	}
}

// What check-config accepts as loopback, the server serves: the two
// once disagreed on "LOCALHOST".
func TestServesEveryListenAddressCheckConfigAccepts(t *testing.T) {
	for _, addr := range []string{"LOCALHOST:0", "localhost:0", "127.0.0.1:0", "[::1]:0"} {
		cfg := config.Defaults()
		cfg.Control.Listen = addr
		cfg.ResolvePaths(nil, t.TempDir())
		if err := cfg.Validate(); err != nil {
			t.Fatalf("check-config refuses %s: %v", addr, err)
		}
		s, _ := newServer(t, addr)
		err := s.Start()
		if err != nil && addr == "[::1]:0" && strings.Contains(err.Error(), "cannot assign requested address") {
			continue // no IPv6 loopback on this machine
		}
		if err != nil {
			t.Fatalf("check-config accepts %s, the server refuses it: %v", addr, err)
		}
		if err := s.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
