package control

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/config"
)

var (
	// ErrNotLoopback is returned by Start for a listen address that is not
	// on a loopback interface.
	ErrNotLoopback = errors.New("control: listen address is not loopback")
	// ErrNoDaemon is returned by clients when the state file is missing: no
	// daemon is running with that data directory.
	ErrNoDaemon = errors.New("control: no running daemon found")
	// ErrStaleState is returned by Dial when a state file exists but no
	// daemon stands behind it, as after a crash. It matches ErrNoDaemon
	// too, so a caller that falls back without a daemon needs one check.
	ErrStaleState = fmt.Errorf("%w (stale state file)", ErrNoDaemon)
	// ErrUnauthorized is returned by clients whose token the daemon refused.
	ErrUnauthorized = errors.New("control: token refused")
)

// PIDHeader is the header in which /healthz names the daemon's process id.
// It tells a client that the port answers as thatch, and as the very daemon
// that wrote the state file, before the client sends it the token.
const PIDHeader = "Thatch-Pid"

// State is what the state file publishes.
type State struct {
	// Addr is the bound loopback host:port.
	Addr string `json:"addr"`
	// PID is the daemon's process id. 0 (absent) means unknown: Dial then
	// trusts the answer of /healthz alone.
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"startedAt"`
	Version   string    `json:"version"`
	DataDir   string    `json:"dataDir"`
}

// Options configure a Server.
type Options struct {
	Listen    string // loopback host:port; port 0 picks one
	TokenFile string
	StateFile string
	Version   string
	DataDir   string
	Logger    hclog.Logger
}

// Server is the control API server.
type Server struct {
	o      Options
	log    hclog.Logger
	mux    *http.ServeMux
	token  string
	ln     net.Listener
	srv    *http.Server
	done   chan struct{}
	mu     sync.Mutex
	closed bool
}

// New prepares a server: it loads or creates the token. Routes may be
// mounted before Start.
func New(o Options) (*Server, error) {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	tok, err := LoadOrCreateToken(o.TokenFile)
	if err != nil {
		return nil, err
	}
	s := &Server{o: o, log: o.Logger, mux: http.NewServeMux(), token: tok, done: make(chan struct{})}
	pid := strconv.Itoa(os.Getpid())
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(PIDHeader, pid)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	return s, nil
}

// Mount registers an authenticated handler for a ServeMux pattern such as
// "GET /v1/status".
func (s *Server) Mount(pattern string, h http.Handler) {
	s.mux.Handle(pattern, s.auth(h))
}

// MountFunc is Mount for a handler function.
func (s *Server) MountFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	s.Mount(pattern, http.HandlerFunc(h))
}

func (s *Server) auth(h http.Handler) http.Handler {
	want := []byte("Bearer " + s.token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			WriteError(w, http.StatusUnauthorized, "missing or wrong bearer token; read it from the token file")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// BrowserPrefix is the path under which MountBrowser routes live: the only
// paths a request with an Origin header may reach.
const BrowserPrefix = "/ui/"

// MountBrowser registers a handler for a web page of the control API's own
// (thatch ui): a ServeMux pattern under BrowserPrefix, not behind the
// bearer token (the handler authenticates its requests itself, with a
// session cookie). Host is checked as on every route; an Origin header is
// accepted on these routes only, and only when it names the very origin the
// request was sent to (http://HOST:PORT, HOST one of the loopback names the
// guard accepts). It panics on a pattern outside BrowserPrefix: a mistake
// of the caller's that would put a browser on a token route.
func (s *Server) MountBrowser(pattern string, h http.Handler) {
	p := pattern
	if _, rest, ok := strings.Cut(p, " "); ok {
		p = rest
	}
	if !strings.HasPrefix(p, BrowserPrefix) {
		panic(fmt.Sprintf("control: MountBrowser pattern %q is not under %s", pattern, BrowserPrefix))
	}
	s.mux.Handle(pattern, h)
}

// guard refuses, before any route (also the unauthenticated ones), what can
// only come from a web browser: a request whose Host is not one of this
// server's own loopback names with its port, and a request that carries an
// Origin header. A page that rebinds its own DNS name to 127.0.0.1 sends
// that name as Host; a cross-origin fetch sends Origin. Local clients (the
// plugin, the CLI, Go's and Node's HTTP clients) send neither.
//
// The one exception is thatch's own page (MountBrowser): a same-origin form
// POST from it carries Origin http://HOST:PORT, which is accepted on the
// paths under BrowserPrefix when it equals "http://" + Host exactly.
func (s *Server) guard(addr string, h http.Handler) http.Handler {
	allowed := allowedHosts(addr)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowed[strings.ToLower(r.Host)] {
			s.log.Debug("refused a request for a foreign host", "host", r.Host, "path", r.URL.Path)
			WriteError(w, http.StatusForbidden, fmt.Sprintf("Host %q is refused: the control API answers only to its loopback address (%s)", r.Host, addr))
			return
		}
		if origins, ok := r.Header["Origin"]; ok && !ownOrigin(origins, r) {
			s.log.Debug("refused a request with an Origin header", "origin", r.Header.Get("Origin"), "path", r.URL.Path)
			WriteError(w, http.StatusForbidden, "requests with an Origin header are refused: the control API serves local programs, not web pages")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ownOrigin reports whether a request's Origin header values name the
// server's own origin on a browser path: exactly one value, equal to
// "http://" + Host (Host already checked), and a path that is under
// BrowserPrefix both as sent and once cleaned, so that /ui/../v1/status
// does not count.
func ownOrigin(origins []string, r *http.Request) bool {
	if len(origins) != 1 || !strings.EqualFold(origins[0], "http://"+r.Host) {
		return false
	}
	p := r.URL.Path
	if strings.Contains(r.URL.RawPath, "%") || strings.Contains(p, "..") {
		return false
	}
	return strings.HasPrefix(p, BrowserPrefix) && strings.HasPrefix(path.Clean(p)+"/", BrowserPrefix)
}

// allowedHosts lists, lower case, the Host values a local client may send to
// the listener at addr: its own address and the usual loopback names, each
// with addr's port.
func allowedHosts(addr string) map[string]bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return map[string]bool{strings.ToLower(addr): true}
	}
	out := map[string]bool{}
	for _, h := range []string{host, "127.0.0.1", "localhost", "::1"} {
		out[strings.ToLower(net.JoinHostPort(h, port))] = true
	}
	return out
}

// Start binds the listener, publishes the state file and serves in a
// goroutine that Stop ends.
func (s *Server) Start() error {
	host, _, err := net.SplitHostPort(s.o.Listen)
	if err != nil {
		return fmt.Errorf("control: listen %q: %w", s.o.Listen, err)
	}
	if !isLoopback(host) {
		return fmt.Errorf("%w: %q", ErrNotLoopback, s.o.Listen)
	}
	ln, err := net.Listen("tcp", s.o.Listen)
	if err != nil {
		return fmt.Errorf("control: listen %s: %w", s.o.Listen, err)
	}
	s.ln = ln
	s.srv = &http.Server{
		Handler:           s.guard(ln.Addr().String(), s.mux),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          s.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	st := State{Addr: ln.Addr().String(), PID: os.Getpid(), StartedAt: time.Now().UTC(), Version: s.o.Version, DataDir: s.o.DataDir}
	if s.o.StateFile != "" {
		if err := writeJSONAtomic(s.o.StateFile, st); err != nil {
			ln.Close()
			return err
		}
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("control API stopped", "error", err)
		}
	}()
	return nil
}

// Addr is the bound address ("" before Start).
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Stop shuts the server down, waiting up to ctx for requests in flight, and
// removes the state file.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.closed || s.srv == nil {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	err := s.srv.Shutdown(ctx)
	<-s.done
	if s.o.StateFile != "" {
		if rmErr := os.Remove(s.o.StateFile); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			s.log.Warn("cannot remove state file", "path", s.o.StateFile, "error", rmErr)
		}
	}
	return err
}

// isLoopback is config's loopback check: what check-config accepts, the
// server serves.
func isLoopback(host string) bool { return config.IsLoopbackHost(host) }

// LoadOrCreateToken reads the bearer token from path, or creates one (32
// random bytes, hex) with mode 0600. A token file readable by others is
// tightened to 0600.
func LoadOrCreateToken(path string) (string, error) {
	if path == "" {
		return "", errors.New("control: no token file configured")
	}
	b, err := os.ReadFile(path)
	if err == nil {
		tok := strings.TrimSpace(string(b))
		if len(tok) < 16 {
			return "", fmt.Errorf("control: token file %s holds no usable token (delete it to make a new one)", path)
		}
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(path, 0o600); err != nil {
				return "", fmt.Errorf("control: tighten %s to 0600: %w", path, err)
			}
		}
		return tok, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("control: read token: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("control: make token: %w", err)
	}
	tok := hex.EncodeToString(raw)
	if err := writeFileAtomic(path, []byte(tok+"\n")); err != nil {
		return "", err
	}
	return tok, nil
}

func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("control: encode %s: %w", path, err)
	}
	return writeFileAtomic(path, append(b, '\n'))
}

func writeFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("control: create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("control: write %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("control: write %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("control: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("control: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("control: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("control: write %s: %w", path, err)
	}
	ok = true
	return nil
}

// WriteJSON writes v as a JSON response.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// WriteError writes {"error": msg}.
func WriteError(w http.ResponseWriter, status int, msg string) {
	WriteJSON(w, status, map[string]string{"error": msg})
}
