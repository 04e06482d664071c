package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/opencode/front"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

func init() {
	register(Bench{
		Name:  "host",
		Doc:   "p99 from an opencode SSE event received to the REST call it causes, through the real daemon and a fake opencode server",
		Order: 60,
		Run:   benchHost,
	})
}

// fakeOpencode is just enough of an opencode server for the daemon's host
// connection: an event stream the benchmark writes frames into, an empty
// session list and status map, and the REST routes an extraction calls.
// It records when the first request about each parent arrives.
type fakeOpencode struct {
	frames chan string

	mu       sync.Mutex
	firstHit map[string]time.Time // parent id -> first children/create request
	hit      chan string
}

func newFakeOpencode() *fakeOpencode {
	return &fakeOpencode{frames: make(chan string, 64), firstHit: map[string]time.Time{}, hit: make(chan string, 4096)}
}

func (f *fakeOpencode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case r.Method == "GET" && p == "/event":
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		fmt.Fprint(w, "data: {\"type\":\"server.connected\",\"properties\":{}}\n\n")
		fl.Flush()
		for {
			select {
			case <-r.Context().Done():
				return
			case fr := <-f.frames:
				fmt.Fprintf(w, "data: %s\n\n", fr)
				fl.Flush()
			}
		}
	case r.Method == "GET" && p == "/session":
		_, _ = w.Write([]byte("[]"))
	case r.Method == "GET" && p == "/session/status":
		_, _ = w.Write([]byte("{}"))
	case r.Method == "GET" && strings.HasSuffix(p, "/children"):
		f.record(strings.TrimSuffix(strings.TrimPrefix(p, "/session/"), "/children"))
		_, _ = w.Write([]byte("[]"))
	case r.Method == "POST" && p == "/session":
		var b struct {
			ParentID string `json:"parentID"`
		}
		_ = json.NewDecoder(r.Body).Decode(&b)
		f.record(b.ParentID)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "ses_child_" + b.ParentID, "parentID": b.ParentID, "title": "thatch-extraction"})
	case r.Method == "POST" && strings.HasSuffix(p, "/prompt_async"):
		w.WriteHeader(http.StatusNoContent)
	default:
		_, _ = w.Write([]byte("true"))
	}
}

func (f *fakeOpencode) record(parent string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.firstHit[parent]; !ok {
		f.firstHit[parent] = time.Now()
		f.hit <- parent
	}
}

func benchHost(c *Config) ([]Record, error) {
	n := c.Count(1000, 150)
	dir, cleanup, err := c.TempDir("host")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	fake := newFakeOpencode()
	addr, stopFake, err := serveFake(fake)
	if err != nil {
		return nil, err
	}
	defer stopFake()
	oc, rt, err := startRuntime(hostConfig(dir, "http://"+addr))
	if err != nil {
		return nil, err
	}
	defer func() { _ = rt.Stop(context.Background()) }()

	c.Logf("host: %d parents with a pending interaction", n)
	parents, err := seedParents(oc, n)
	if err != nil {
		return nil, err
	}
	c.Logf("host: %d session.idle events, one at a time", n)
	lat, err := idlesToREST(fake, parents)
	if err != nil {
		return nil, err
	}
	return hostRecords(lat), nil
}

// serveFake serves fake on a loopback port and returns its address and a
// function that shuts it down.
func serveFake(fake http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: fake, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		srv.Close()
	}, nil
}

// hostConfig is the daemon's default configuration with its files in dir
// and one opencode server, "bench", at url.
func hostConfig(dir, url string) *config.Config {
	cfg := config.Defaults()
	cfg.Data.Dir = dir
	cfg.Control.TokenFile = filepath.Join(dir, "control.token")
	cfg.Control.StateFile = filepath.Join(dir, "control.json")
	cfg.OpenCode.Servers = []config.Server{{Name: "bench", URL: url, API: config.APIV1, Username: "opencode"}}
	return cfg
}

// startRuntime builds and starts the runtime with the opencode front end
// on cfg, logging nowhere.
func startRuntime(cfg *config.Config) (*front.FrontEnd, *thatch.Runtime, error) {
	oc := front.New(cfg, front.Options{})
	rt, err := thatch.New(cfg, thatch.Options{Logger: hclog.NewNullLogger(), FrontEnds: []frontend.FrontEnd{oc}})
	if err != nil {
		return nil, nil, err
	}
	if err := rt.Start(context.Background()); err != nil {
		return nil, nil, err
	}
	return oc, rt, nil
}

// seedParents makes n families with one pending interaction each, known to
// the daemon, and returns their session ids.
func seedParents(oc *front.FrontEnd, n int) ([]string, error) {
	parents := make([]string, n)
	for i := range parents {
		id := fmt.Sprintf("ses_bench_%05d", i)
		parents[i] = id
		if err := oc.DeliverHostEvent(&messages.SessionCreated{Host: "bench", SessionID: id, Title: "bench"}); err != nil {
			return nil, err
		}
		if err := oc.DeliverHostEvent(&messages.ToolExecuted{Host: "bench", Interaction: messages.Interaction{
			ID: "c1", SessionID: id, Tool: "bash", Args: json.RawMessage(`{"command":"make test"}`), Output: "ok"}}); err != nil {
			return nil, err
		}
	}
	return parents, nil
}

// idlesToREST sends one idle at a time, so each sample is the path's own
// latency: the frame is written, the daemon decodes it, journals the
// decision (fsync), and the executor makes its first REST call. It returns
// the latencies, sorted.
func idlesToREST(fake *fakeOpencode, parents []string) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, len(parents))
	for _, id := range parents {
		sent := time.Now()
		fake.frames <- fmt.Sprintf(`{"type":"session.idle","properties":{"sessionID":%q}}`, id)
		select {
		case got := <-fake.hit:
			if got != id {
				return nil, fmt.Errorf("host: expected a call about %s, got %s", id, got)
			}
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("host: no REST call for %s within 10s", id)
		}
		fake.mu.Lock()
		at := fake.firstHit[id]
		fake.mu.Unlock()
		lat = append(lat, at.Sub(sent))
	}
	slices.Sort(lat)
	return lat, nil
}

// hostRecords turns the sorted latencies into the host records.
func hostRecords(lat []time.Duration) []Record {
	p50, p99, worst := percentile(lat, 50), percentile(lat, 99), lat[len(lat)-1]
	notes := fmt.Sprintf("%d idles through SSE -> decode -> family (journaled, fsync) -> executor -> first REST call (GET children); p50 %.3f ms, max %.3f ms", len(lat), ms(p50), ms(worst))
	return []Record{
		newRecord("host.sse_to_rest.p99", ms(p99), "ms", notes).addTarget("< 2", ms(p99) < 2),
		newRecord("host.sse_to_rest.p50", ms(p50), "ms", ""),
	}
}
