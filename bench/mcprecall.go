package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thatch-run/thatch"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/persistence/memory"
)

func init() {
	register(Bench{
		Name: "mcp-recall",
		Doc: "memory_recall through `thatch mcp` (an agent's whole stdio round trip: MCP client, the subprocess, the control API, " +
			"the store) at 100,000 memories, p99, with the same recalls posted straight to the control API",
		Order: 62,
		Run:   benchMCPRecall,
	})
}

// The mcp-recall benchmark builds the thatch binary, starts the daemon's
// runtime in this process (opencode front end, control API on loopback)
// over the memstore bench's synthetic memories in the project store of a
// git checkout whose origin names memStore, and starts `thatch mcp` in that
// checkout as an agent does. Each query is sent both ways in turn, the
// order alternating: memory_recall over MCP, and POST /v1/memory/recall
// with the directory, which is what thatch mcp sends for it; for context
// it is also run on the runtime's store in process, as the route runs it.

const (
	// mcpRecallTarget is the target: recall through `thatch mcp`
	// p99 at 100,000 memories.
	mcpRecallTarget = 20 // ms
	// mcpCallTimeout bounds every call to the daemon or the subprocess.
	mcpCallTimeout = 10 * time.Second
)

func benchMCPRecall(c *Config) ([]Record, error) {
	n := c.Count(100_000, 10_000)
	dir, remove, err := c.TempDir("mcp-recall")
	if err != nil {
		return nil, err
	}
	defer remove()
	g := newTextGen(44)
	entries := memFixture(g, n)
	w, err := startMCPWorld(c, dir, entries)
	defer w.close()
	if err != nil {
		return nil, err
	}
	if err := checkMemories(w.rt.Memory(), entries, g); err != nil {
		return nil, err
	}
	warm, nq := c.Count(50, 20), c.Count(1000, 300)
	qs := memQueries(g, entries, warm+nq)
	c.Logf("mcp-recall: %d warm-up + %d recalls each way, alternating", warm, nq)
	m := startCPU()
	s, err := w.measure(qs, warm)
	if err != nil {
		return nil, err
	}
	mode := fmt.Sprintf("%d memories", n)
	if c.Quick {
		mode += " (QUICK MODE: the target is set for 100,000)"
	}
	return s.records(mode, nq, warm, m.String()), nil
}

// mcpWorld is what the benchmark runs: the daemon's runtime, a control API
// client, and one `thatch mcp` subprocess with its MCP client session.
type mcpWorld struct {
	project string
	rt      *thatch.Runtime
	direct  *control.Client
	sess    *mcp.ClientSession
	stderr  *ocLog
	closers []func()
}

// close undoes startMCPWorld, last step first.
func (w *mcpWorld) close() {
	for i := len(w.closers) - 1; i >= 0; i-- {
		w.closers[i]()
	}
}

// startMCPWorld builds the binary, writes the memories, makes the project
// checkout, starts the runtime and connects to `thatch mcp`. The caller
// must call close even when it fails.
func startMCPWorld(c *Config, dir string, entries []memEntry) (*mcpWorld, error) {
	w := &mcpWorld{project: filepath.Join(dir, "project"), stderr: &ocLog{}}
	c.Logf("mcp-recall: building cmd/thatch")
	bin, err := buildThatch(dir)
	if err != nil {
		return w, err
	}
	if err := gitProject(w.project, "https://github.com/"+memStore+".git"); err != nil {
		return w, err
	}
	data := filepath.Join(dir, "data")
	c.Logf("mcp-recall: writing %d memories through Remember (no fsync, bulk load)", len(entries))
	if err := buildMemories(filepath.Join(data, "journal"), entries, 2); err != nil {
		return w, err
	}
	cfg := config.Defaults()
	cfg.Data.Dir = data
	cfg.Control.TokenFile = filepath.Join(data, "control.token")
	cfg.Control.StateFile = filepath.Join(data, "control.json")
	c.Logf("mcp-recall: starting the daemon's runtime")
	_, rt, err := startRuntime(cfg)
	if err != nil {
		return w, err
	}
	w.rt = rt
	w.closers = append(w.closers, func() { _ = rt.Stop(context.Background()) })
	if w.direct, _, err = control.Dial(cfg.Control.StateFile, cfg.Control.TokenFile, mcpCallTimeout); err != nil {
		return w, err
	}
	cmd := exec.Command(bin, "mcp", "--state-file", cfg.Control.StateFile, "--token-file", cfg.Control.TokenFile, "--dir", w.project)
	cmd.Stderr = w.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "thatch-bench", Version: thatch.Version}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w.sess, err = client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		if cmd.Process != nil && cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		return w, fmt.Errorf("bench: mcp-recall: connect to thatch mcp: %w\n%s", err, w.stderr.tail())
	}
	// Closing the session closes the subprocess's stdin and waits for it.
	w.closers = append(w.closers, func() { _ = w.sess.Close() })
	return w, nil
}

// buildThatch builds cmd/thatch into dir.
func buildThatch(dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "thatch")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/thatch-run/thatch/cmd/thatch")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("bench: mcp-recall: build thatch: %w\n%s", err, out)
	}
	return bin, nil
}

// gitProject makes dir a git checkout whose origin is remote: the daemon
// names a directory's project store after it.
func gitProject(dir, remote string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q"}, {"remote", "add", "origin", remote}} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			return fmt.Errorf("bench: mcp-recall: git %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	if got := memory.ProjectStore(dir); got != memStore {
		return fmt.Errorf("bench: mcp-recall: the checkout's project store is %q, want %q", got, memStore)
	}
	return nil
}

// recallAnswer is the daemon's answer to a recall, as both ways get it.
type recallAnswer struct {
	Hits []struct {
		Entry struct {
			Store string `json:"store"`
			Label string `json:"label"`
		} // memory.Hit has no JSON tags
	} `json:"hits"`
}

// viaMCP calls memory_recall on the subprocess.
func (w *mcpWorld) viaMCP(args map[string]any) (recallAnswer, error) {
	var a recallAnswer
	ctx, cancel := context.WithTimeout(context.Background(), mcpCallTimeout)
	defer cancel()
	res, err := w.sess.CallTool(ctx, &mcp.CallToolParams{Name: "memory_recall", Arguments: args})
	if err != nil {
		return a, fmt.Errorf("bench: mcp-recall: memory_recall: %w\n%s", err, w.stderr.tail())
	}
	var text strings.Builder
	for _, ct := range res.Content {
		if t, ok := ct.(*mcp.TextContent); ok {
			text.WriteString(t.Text)
		}
	}
	if res.IsError {
		return a, fmt.Errorf("bench: mcp-recall: memory_recall answered an error: %s", text.String())
	}
	if err := json.Unmarshal([]byte(text.String()), &a); err != nil {
		return a, fmt.Errorf("bench: mcp-recall: memory_recall's answer: %w: %.200s", err, text.String())
	}
	return a, nil
}

// viaControl posts the same recall straight to the control API, as
// thatch mcp does.
func (w *mcpWorld) viaControl(args map[string]any) (recallAnswer, error) {
	var a recallAnswer
	body := map[string]any{"directory": w.project}
	for k, v := range args {
		body[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), mcpCallTimeout)
	defer cancel()
	if err := w.direct.Do(ctx, "POST", "/v1/memory/recall", body, &a); err != nil {
		return a, fmt.Errorf("bench: mcp-recall: POST /v1/memory/recall: %w", err)
	}
	return a, nil
}

// inProcess runs the same recall on the runtime's memory store, as the
// route does, without the control API.
func (w *mcpWorld) inProcess(args map[string]any) error {
	in := memory.RecallInput{Query: args["query"].(string), Stores: memory.SessionStores(memStore)}
	in.Branch, _ = args["branch"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), mcpCallTimeout)
	defer cancel()
	if _, err := w.rt.Memory().Recall(ctx, in); err != nil {
		return fmt.Errorf("bench: mcp-recall: recall in process: %w", err)
	}
	return nil
}

// mcpSamples are the measured recalls of both ways.
type mcpSamples struct {
	viaMCP, direct latencies
	store          latencies // the same recall on the runtime's store, in process
	diffs          []float64 // MCP minus direct of each query, ms
	hits, empty    int       // over the MCP answers
}

// measure sends every query both ways and runs it in process, the order
// alternating, and keeps the timings after the first warm. It checks that both ways got the same
// hits, from the checkout's project store or the global one.
func (w *mcpWorld) measure(qs []string, warm int) (*mcpSamples, error) {
	s := &mcpSamples{}
	for i, q := range qs {
		args := map[string]any{"query": q}
		if i%4 == 0 {
			args["branch"] = "b3"
		}
		var a, b recallAnswer
		var ta, tb, tc time.Duration
		var err error
		viaMCP := func() {
			t0 := time.Now()
			a, err = w.viaMCP(args)
			ta = time.Since(t0)
		}
		direct := func() {
			t0 := time.Now()
			b, err = w.viaControl(args)
			tb = time.Since(t0)
		}
		store := func() {
			t0 := time.Now()
			err = w.inProcess(args)
			tc = time.Since(t0)
		}
		steps := []func(){viaMCP, direct, store}
		if i%2 == 1 {
			steps = []func(){store, direct, viaMCP}
		}
		for _, step := range steps {
			if step(); err != nil {
				return nil, err
			}
		}
		if err := sameHits(q, a, b); err != nil {
			return nil, err
		}
		if i < warm {
			continue
		}
		s.viaMCP = append(s.viaMCP, ta)
		s.direct = append(s.direct, tb)
		s.store = append(s.store, tc)
		s.diffs = append(s.diffs, ms(ta)-ms(tb))
		s.hits += len(a.Hits)
		if len(a.Hits) == 0 {
			s.empty++
		}
	}
	slices.Sort(s.viaMCP)
	slices.Sort(s.direct)
	slices.Sort(s.store)
	if s.hits == 0 {
		return nil, errors.New("bench: mcp-recall: no recall through thatch mcp found anything")
	}
	return s, nil
}

// sameHits checks that the two answers to q name the same memories, all
// of them in memStore or the global store.
func sameHits(q string, a, b recallAnswer) error {
	labels := func(r recallAnswer) []string {
		var out []string
		for _, h := range r.Hits {
			out = append(out, h.Entry.Store+": "+h.Entry.Label)
		}
		return out
	}
	la, lb := labels(a), labels(b)
	slices.Sort(la)
	slices.Sort(lb)
	if !slices.Equal(la, lb) {
		return fmt.Errorf("bench: mcp-recall: %q: thatch mcp found %v, the control API %v", q, la, lb)
	}
	for _, h := range a.Hits {
		if h.Entry.Store != memStore && h.Entry.Store != memory.GlobalStore {
			return fmt.Errorf("bench: mcp-recall: %q: a hit from store %q, want %q or %q", q, h.Entry.Store, memStore, memory.GlobalStore)
		}
	}
	return nil
}

// records turns the samples into the mcp-recall records.
func (s *mcpSamples) records(mode string, nq, warm int, cpu string) []Record {
	mcp99, direct99 := ms(s.viaMCP.p(99)), ms(s.direct.p(99))
	mean, half := meanCI(s.diffs)
	params := fmt.Sprintf("%s in %q as the memstore bench writes them, in the data directory of a daemon runtime (opencode front end, control API on loopback) in the bench process; "+
		"`thatch mcp --dir <git checkout with origin github.com/%s>` started as a subprocess and driven by the go-sdk MCP client over stdio; "+
		"%d memory_recall calls after %d warm-up (queries: fresh text, the start of a memory, a memory half rewritten; 1 in 4 on a branch; default limit), "+
		"each also posted straight to POST /v1/memory/recall with the checkout's directory, the order alternating; both answers checked equal",
		mode, memStore, memStore, nq, warm)
	return []Record{
		newRecord("mcp-recall.p99", mcp99, "ms",
			fmt.Sprintf("p99 of memory_recall through thatch mcp (the agent's whole round trip: MCP client, stdio, thatch mcp, control API, recall, back); %s; "+
				"through thatch mcp: %v; direct: %v; %d hits, %d empty answers; %s; baseline is the %d ms limit, not a measurement",
				params, s.viaMCP, s.direct, s.hits, s.empty, cpu, mcpRecallTarget)).
			withBaseline(mcpRecallTarget).atMost(mcpRecallTarget),
		newRecord("mcp-recall.p99.vs_direct", mcp99, "ms",
			fmt.Sprintf("p99 through thatch mcp against the p99 of the same recalls posted straight to the control API in turn with them (the baseline): "+
				"p50 %.2f vs %.2f ms; the same recall on the runtime's store in process, in turn with both: %v", ms(s.viaMCP.p(50)), ms(s.direct.p(50)), s.store)).
			withBaseline(direct99),
		newRecord("mcp-recall.overhead", median(slices.Clone(s.diffs)), "ms",
			fmt.Sprintf("what thatch mcp adds to a recall: median of the paired differences (each call through thatch mcp minus the same query posted straight, back to back); "+
				"mean %+.2f ms ± %.2f ms (95%% CI); the p99 through thatch mcp minus the direct p99: %+.2f ms", mean, half, mcp99-direct99)),
	}
}
