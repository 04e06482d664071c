package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/e2e/fakemodel"
	"github.com/thatch-run/thatch/e2e/ocenv"
	"github.com/thatch-run/thatch/hosts/opencode"
	"github.com/thatch-run/thatch/hosts/opencode/front"
	"github.com/thatch-run/thatch/hosts/opencode/install"
	"github.com/thatch-run/thatch/hosts/opencode/plugin"
	"github.com/thatch-run/thatch/persistence/memory"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

func init() {
	register(Bench{
		Name: "opencode",
		Doc: "added wall time of real opencode turns (prompt to idle) with the thatch plugin and daemon vs the same turns without, " +
			"and the full extraction round trip; needs opencode (e2e/install-opencode.sh), else a skipped record",
		Order: 70,
		Run:   benchOpenCode,
	})
}

// The opencode benchmark (issue 4 §7) runs two opencode servers side by
// side on one scripted fake model: one as a user without thatch has it,
// one with the thatch plugin, skill and commands installed and the daemon
// running (in this process). Both get the same parent turns: the model
// reads the README, lists the markdown files and answers. Each turn is
// timed from the prompt to the parent's session.idle; the difference is
// what thatch adds to the user's wait (the plugin's tool hook round trips
// to the daemon, the daemon's CPU). On the thatch side the extraction that
// idle starts runs afterwards; it is timed to the extraction child's
// deletion as an informational round trip, and the next turn waits for it
// so that the two sides never overlap. The sides alternate which goes
// first, so that a load change on the machine hits both alike.
//
// The fake model answers at once, so a turn here is opencode's own
// overhead only (about 150 ms); against a real model's seconds the same
// added milliseconds are a far smaller share.

const (
	ocTurnMarker      = "BENCH-TURN"
	ocExtractorMarker = "thatch-fact-extractor skill"
	ocParentRule      = "bench-parent"
	ocExtractorRule   = "bench-extractor"
	ocExtractionTitle = "thatch-extraction"
	ocReminder        = "thatch is watching this session"
	ocWait            = 60 * time.Second
)

var ocSessionInPrompt = regexp.MustCompile(`session_id "([^"]+)"`)

// ocSetup is what the benchmark needs from outside: the pinned opencode
// binary and a folder where @opencode-ai/plugin is already npm-installed.
type ocSetup struct {
	bin, version, deps string
}

// findOpenCode runs e2e/install-opencode.sh (quick when its cache holds the
// pinned version) and finds the dependency template the e2e suite keeps.
// A non-empty reason means the benchmark cannot run here. opencode's
// temporary files go under scratch.
func findOpenCode(c *Config, scratch string) (ocSetup, string) {
	script := ""
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			p := filepath.Join(dir, "e2e", "install-opencode.sh")
			if _, err := os.Stat(p); err == nil {
				script = p
				break
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	if script == "" {
		return ocSetup{}, "e2e/install-opencode.sh not found above the working directory"
	}
	ver, err := os.ReadFile(filepath.Join(filepath.Dir(script), "opencode.version"))
	if err != nil {
		return ocSetup{}, "no e2e/opencode.version: " + err.Error()
	}
	s := ocSetup{version: strings.TrimSpace(string(ver))}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c.Logf("opencode: %s", script)
	var stderr bytes.Buffer
	tmp := filepath.Join(scratch, "install-tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return ocSetup{}, "no scratch folder: " + err.Error()
	}
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return ocSetup{}, fmt.Sprintf("opencode is not installed (install-opencode.sh: %v: %s)", err, strings.TrimSpace(stderr.String()))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	s.bin = strings.TrimSpace(lines[len(lines)-1])
	if fi, err := os.Stat(s.bin); err != nil || fi.IsDir() {
		return ocSetup{}, fmt.Sprintf("opencode is not installed (install-opencode.sh printed %q)", s.bin)
	}
	// opencode's glob and skill tools run ripgrep; without one it would
	// try to download it.
	if _, err := exec.LookPath("rg"); err != nil {
		return ocSetup{}, "ripgrep (rg) is not on PATH; opencode's glob and skill tools need it"
	}
	cache := os.Getenv("THATCH_E2E_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ocSetup{}, "no home directory for the e2e cache"
		}
		cache = filepath.Join(home, ".cache", "thatch-e2e")
	}
	s.deps = filepath.Join(cache, "deps-"+s.version, "opencode")
	if !install.PackagePresent(s.deps) {
		// What the e2e suite does on its first run: one npm install of the
		// plugin package into the template, kept for later runs.
		c.Logf("opencode: npm-installing %s into %s", install.PluginPackage, s.deps)
		env := append(os.Environ(), "TMPDIR="+tmp, "npm_config_cache="+filepath.Join(cache, "npm"), "npm_config_update_notifier=false")
		_, err := install.Install(ctx, install.Options{Scope: install.Global, GlobalDir: s.deps, Environ: env,
			Paths:           plugin.Paths{StateFile: filepath.Join(s.deps, "unused.json"), TokenFile: filepath.Join(s.deps, "unused.token")},
			OpenCodeVersion: s.version})
		for _, sub := range []string{"plugin", "command", "skills"} {
			_ = os.RemoveAll(filepath.Join(s.deps, sub))
		}
		if err != nil {
			return ocSetup{}, fmt.Sprintf("cannot npm-install %s: %v", install.PluginPackage, err)
		}
	}
	return s, ""
}

func benchOpenCode(c *Config) ([]Record, error) {
	dir, remove, err := c.TempDir("opencode")
	if err != nil {
		return nil, err
	}
	defer remove()
	setup, skip := findOpenCode(c, dir)
	if skip != "" {
		c.Logf("opencode: skipped: %s", skip)
		return []Record{newRecord("opencode.skipped", 0, "-", "skipped: "+skip)}, nil
	}
	n := c.Count(40, 6)
	warm := 2
	if c.Quick {
		warm = 1
	}
	p, err := startOCPair(c, dir, setup)
	defer p.close()
	if err != nil {
		return nil, err
	}
	c.Logf("opencode: %d warm-up + %d measured turns on each side, alternating", warm, n)
	s, err := p.runTurns(warm, n)
	if err != nil {
		return nil, err
	}
	if err := p.check(warm + n); err != nil {
		return nil, err
	}
	return s.records(n, warm, setup.version), nil
}

// ocPair is the benchmark's two sides: a baseline opencode server and one
// with thatch installed and its daemon running, each with its own fake
// model and one parent session.
type ocPair struct {
	baseModel, thatchModel *fakemodel.Server
	base, with             *ocWorld
	rt                     *thatch.Runtime
	bs, ts                 *ocServer
	bp, tp                 string // the parent session on each side
	closers                []func()
}

// close undoes startOCPair, last step first.
func (p *ocPair) close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
}

// startOCPair scripts the two fake models, makes both worlds, starts the
// daemon and both servers, and creates a parent session on each side. The
// caller must call close even when it fails.
func startOCPair(c *Config, dir string, setup ocSetup) (*ocPair, error) {
	p := &ocPair{baseModel: fakemodel.New(), thatchModel: fakemodel.New()}
	p.closers = append(p.closers, p.baseModel.Close, p.thatchModel.Close)
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	p.closers = append(p.closers, hc.CloseIdleConnections)
	var err error
	if p.base, err = newOCWorld(filepath.Join(dir, "baseline"), setup, p.baseModel); err != nil {
		return p, err
	}
	if p.with, err = newOCWorld(filepath.Join(dir, "thatch"), setup, p.thatchModel); err != nil {
		return p, err
	}
	var labels atomic.Int64
	p.baseModel.On(ocParentScript(p.base.project))
	p.thatchModel.On(ocParentScript(p.with.project))
	p.thatchModel.On(ocExtractorScript(&labels))

	logs := &ocLog{}
	logger := hclog.New(&hclog.LoggerOptions{Name: "thatch", Level: hclog.Debug, Output: logs})
	if p.rt, err = startOCDaemon(p.with, logger); err != nil {
		return p, err
	}
	p.closers = append(p.closers, func() { _ = p.rt.Stop(context.Background()) })

	c.Logf("opencode: starting two servers (%s)", setup.version)
	if p.bs, err = startOCServer(p.base, setup, hc); err != nil {
		return p, err
	}
	p.closers = append(p.closers, p.bs.stop)
	if p.ts, err = startOCServer(p.with, setup, hc); err != nil {
		return p, err
	}
	p.closers = append(p.closers, p.ts.stop)
	if err := logs.wait(`reconciled: host=`+regexp.QuoteMeta("opencode@"+p.ts.hostPort), ocWait); err != nil {
		return p, fmt.Errorf("opencode: the daemon never watched the thatch server: %w", err)
	}
	// Measure at the level a user runs the daemon with.
	logger.SetLevel(hclog.Info)
	return p, p.createParents()
}

// startOCDaemon installs thatch into the world as a user would (the
// package is seeded, so no npm) and starts the daemon on it.
func startOCDaemon(with *ocWorld, logger hclog.Logger) (*thatch.Runtime, error) {
	cfg := config.Defaults()
	cfg.Data.Dir = filepath.Join(with.root, "thatch")
	cfg.Control.StateFile = filepath.Join(cfg.Data.Dir, "control.json")
	cfg.Control.TokenFile = filepath.Join(cfg.Data.Dir, "control.token")
	if _, err := install.Install(context.Background(), install.Options{Scope: install.Global, GlobalDir: with.configDir,
		Environ: with.env, HomeDir: with.home, Paths: plugin.Paths{StateFile: cfg.Control.StateFile, TokenFile: cfg.Control.TokenFile},
		SkipNPM: true}); err != nil {
		return nil, fmt.Errorf("opencode: thatch install: %w", err)
	}
	rt, err := thatch.New(cfg, thatch.Options{Logger: logger, FrontEnds: []frontend.FrontEnd{front.New(cfg, front.Options{})}})
	if err != nil {
		return nil, err
	}
	if err := rt.Start(context.Background()); err != nil {
		return nil, err
	}
	return rt, nil
}

// createParents creates the parent session on each side and waits for
// thatch's session-start reminder on its own.
func (p *ocPair) createParents() error {
	var err error
	if p.bp, err = p.bs.createSession(); err != nil {
		return err
	}
	if p.tp, err = p.ts.createSession(); err != nil {
		return err
	}
	if err := p.ts.waitUserText(p.tp, ocReminder, ocWait); err != nil {
		return fmt.Errorf("opencode: no session-start reminder: %w", err)
	}
	return nil
}

// ocSamples are the measured turns of both sides.
type ocSamples struct {
	baseTurns, thatchTurns, roundTrips, extractions []time.Duration
	diffs                                           []float64 // thatch minus baseline of each pair, ms
}

// runTurns runs warm + n turns on each side, alternating which side goes
// first, and keeps the last n.
func (p *ocPair) runTurns(warm, n int) (*ocSamples, error) {
	s := &ocSamples{}
	for i := range warm + n {
		text := fmt.Sprintf("%s %d: how do I build this project?", ocTurnMarker, i)
		var b, t ocTurn
		var err error
		run := func(s *ocServer, id string, extract bool, into *ocTurn) {
			if err == nil {
				*into, err = s.turn(id, text, extract)
			}
		}
		if i%2 == 0 {
			run(p.bs, p.bp, false, &b)
			run(p.ts, p.tp, true, &t)
		} else {
			run(p.ts, p.tp, true, &t)
			run(p.bs, p.bp, false, &b)
		}
		if err != nil {
			return nil, fmt.Errorf("opencode: turn %d: %w", i, err)
		}
		if i < warm {
			continue
		}
		s.diffs = append(s.diffs, ms(t.idle)-ms(b.idle))
		s.baseTurns = append(s.baseTurns, b.idle)
		s.thatchTurns = append(s.thatchTurns, t.idle)
		s.roundTrips = append(s.roundTrips, t.deleted)
		s.extractions = append(s.extractions, t.deleted-t.idle)
	}
	return s, nil
}

// check verifies that what was timed is what was meant: every turn ran its
// two tool calls, every thatch turn was extracted into one memory by a
// child that was then deleted, and the baseline never extracted.
func (p *ocPair) check(turns int) error {
	for _, m := range []*fakemodel.Server{p.baseModel, p.thatchModel} {
		if got := m.Served(ocParentRule, 2); got != turns {
			return fmt.Errorf("opencode: %d parent turns answered their final step, want %d", got, turns)
		}
	}
	if got := p.thatchModel.Served(ocExtractorRule, 4); got != turns {
		return fmt.Errorf("opencode: %d extraction children finished, want %d", got, turns)
	}
	if got := len(p.bs.children(p.bp)); got != 0 {
		return fmt.Errorf("opencode: the baseline server made %d children", got)
	}
	mems, err := p.rt.Memory().List(memory.GlobalStore, "")
	if err != nil {
		return err
	}
	if len(mems) != turns {
		return fmt.Errorf("opencode: %d memories saved, want one per turn (%d)", len(mems), turns)
	}
	return nil
}

// records turns the samples into the opencode records.
func (s *ocSamples) records(n, warm int, version string) []Record {
	baseTurns, thatchTurns, roundTrips, extractions, diffs := s.baseTurns, s.thatchTurns, s.roundTrips, s.extractions, s.diffs
	slices.Sort(baseTurns)
	slices.Sort(thatchTurns)
	slices.Sort(roundTrips)
	slices.Sort(extractions)
	b50, b90 := percentile(baseTurns, 50), percentile(baseTurns, 90)
	t50, t90 := percentile(thatchTurns, 50), percentile(thatchTurns, 90)
	added := (ms(t50)/ms(b50) - 1) * 100
	mean, half := meanCI(diffs)
	added90 := (ms(t90)/ms(b90) - 1) * 100
	params := fmt.Sprintf("%d turns per side after %d warm-up, each prompt -> read + glob -> answer -> session.idle, opencode %s, fake model",
		n, warm, version)
	return []Record{
		newRecord("opencode.turn.p50", ms(t50), "ms", "with thatch; baseline: the same turns on a server without thatch. "+params).
			withBaseline(ms(b50)),
		newRecord("opencode.turn.p90", ms(t90), "ms", "with thatch; baseline: without").withBaseline(ms(b90)),
		newRecord("opencode.overhead", added, "%",
			fmt.Sprintf("added wall time of a turn (prompt to parent idle), p50 with vs without thatch: %.1f vs %.1f ms; at p90 %+.1f%% (%.1f vs %.1f ms); paired differences (each turn with minus the one without, run back to back): median %+.1f ms, mean %+.1f ms ± %.1f ms (95%% CI, ± %.1f%% of the baseline p50: the resolution of this run)",
				ms(t50), ms(b50), added90, ms(t90), ms(b90), median(diffs), mean, half, half/ms(b50)*100)).atMost(5),
		newRecord("opencode.roundtrip.p50", ms(percentile(roundTrips, 50)), "ms",
			fmt.Sprintf("informational: prompt -> parent idle -> extraction child (skill, payload, remember, ack) -> child deleted; p90 %.1f ms; after idle alone p50 %.1f ms, p90 %.1f ms",
				ms(percentile(roundTrips, 90)), ms(percentile(extractions, 50)), ms(percentile(extractions, 90)))),
	}
}

// meanCI is the mean of xs and the half-width of its 95% confidence
// interval (normal approximation).
func meanCI(xs []float64) (mean, half float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, 1.96 * math.Sqrt(ss/float64(len(xs)-1)/float64(len(xs)))
}

// ocParentScript is every parent turn in project: read the README, list
// the markdown files, answer.
func ocParentScript(project string) fakemodel.Rule {
	return fakemodel.Rule{Name: ocParentRule, Match: fakemodel.LastUserContains(ocTurnMarker), Steps: []fakemodel.Step{
		{ToolCalls: []fakemodel.ToolCall{{Name: "read", Args: map[string]any{"filePath": filepath.Join(project, "README.md")}}}},
		{ToolCalls: []fakemodel.ToolCall{{Name: "glob", Args: map[string]any{"pattern": "*.md", "path": project}}}},
		{Text: "Build with make build; the tests need CGO_ENABLED=1."},
	}}
}

// ocExtractorScript is an extraction child that follows the skill: load
// it, fetch the payload, save one memory (a new label each time), ack.
func ocExtractorScript(labels *atomic.Int64) fakemodel.Rule {
	return fakemodel.Rule{Name: ocExtractorRule, Match: fakemodel.FirstUserContains(ocExtractorMarker), Steps: []fakemodel.Step{
		{ToolCalls: []fakemodel.ToolCall{{Name: "skill", Args: map[string]any{"name": install.SkillName}}}},
		{ToolCalls: []fakemodel.ToolCall{{Name: "thatch_get_extraction_payload", ArgsFrom: func(r *fakemodel.Request) any {
			id := ""
			if m := ocSessionInPrompt.FindStringSubmatch(r.FirstUser()); m != nil {
				id = m[1]
			}
			return map[string]any{"session_id": id}
		}}}},
		{ToolCalls: []fakemodel.ToolCall{{Name: "memory_remember", ArgsFrom: func(*fakemodel.Request) any {
			return map[string]any{"label": fmt.Sprintf("build: make build (bench %d)", labels.Add(1)),
				"content": "The project builds with `make build`; its tests need CGO_ENABLED=1.", "confidence": 8}
		}}}},
		{ToolCalls: []fakemodel.ToolCall{{Name: "thatch_extraction_done", Args: map[string]any{}}}},
		{Text: "Extraction complete."},
	}}
}

// ocWorld is one side's private machine: HOME and the XDG folders, a
// project with a README and an opencode.json for the fake model, and the
// plugin's npm package seeded into the global config folder.
type ocWorld struct {
	root, home, configDir, project string
	env                            []string
}

func newOCWorld(root string, s ocSetup, model *fakemodel.Server) (*ocWorld, error) {
	w := &ocWorld{root: root, home: filepath.Join(root, "home"), configDir: filepath.Join(root, "config", "opencode"),
		project: filepath.Join(root, "project")}
	for _, d := range []string{w.home, w.configDir, w.project, filepath.Join(root, "data"), filepath.Join(root, "cache"),
		filepath.Join(root, "state"), filepath.Join(root, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	w.env = []string{
		"PATH=" + filepath.Dir(s.bin) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + w.home,
		"XDG_CONFIG_HOME=" + filepath.Join(root, "config"),
		"XDG_DATA_HOME=" + filepath.Join(root, "data"),
		"XDG_CACHE_HOME=" + filepath.Join(root, "cache"),
		"XDG_STATE_HOME=" + filepath.Join(root, "state"),
		"TMPDIR=" + filepath.Join(root, "tmp"),
		"LANG=C.UTF-8",
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_CLAUDE_CODE=1",
		// How often the plugin looks for the daemon; only start-up waits on it.
		"OPENCODE_THATCH_POLL_MS=200",
	}
	readme := "# demo\n\nBuild with `make build`; the tests need CGO_ENABLED=1.\n"
	if err := os.WriteFile(filepath.Join(w.project, "README.md"), []byte(readme), 0o644); err != nil {
		return nil, err
	}
	if err := ocenv.WriteProjectConfig(w.project, model.BaseURL(), fakemodel.ModelID); err != nil {
		return nil, err
	}
	// Both sides get the package, so that neither opencode runs npm.
	if err := ocenv.CopyTree(s.deps, w.configDir); err != nil {
		return nil, fmt.Errorf("opencode: seed %s: %w", s.deps, err)
	}
	return w, nil
}

// ocEvent is one frame of a server's /event stream, stamped when it was
// read.
type ocEvent struct {
	typ, session, parent, title string
	at                          time.Time
}

// ocServer is one `opencode serve` started by the benchmark, with a
// recorder of its event stream.
type ocServer struct {
	w        *ocWorld
	cmd      *exec.Cmd
	url      string
	hostPort string
	hc       *http.Client

	mu      sync.Mutex
	events  []ocEvent
	changed chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}
}

var ocListening = regexp.MustCompile(`opencode server listening on (http://[0-9.]+:\d+)`)

// startOCServer runs opencode in the world's project on a free loopback
// port, boots the project's instance (which loads the plugins) and starts
// recording events.
func startOCServer(w *ocWorld, s ocSetup, hc *http.Client) (*ocServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	srv := &ocServer{w: w, hc: hc, changed: make(chan struct{})}
	lines := &ocLog{}
	srv.cmd = exec.Command(s.bin, "serve", "--hostname", "127.0.0.1", "--port", strconv.Itoa(port))
	srv.cmd.Dir, srv.cmd.Env = w.project, w.env
	srv.cmd.Stdout, srv.cmd.Stderr = lines, lines
	// Tool subprocesses may hold the pipes after opencode is gone.
	srv.cmd.WaitDelay = 2 * time.Second
	if err := srv.cmd.Start(); err != nil {
		return nil, fmt.Errorf("opencode: start: %w", err)
	}
	if err := lines.wait(ocListening.String(), 90*time.Second); err != nil {
		srv.stop()
		return nil, fmt.Errorf("opencode: the server never listened: %w\n%s", err, lines.tail())
	}
	srv.url = ocListening.FindStringSubmatch(lines.String())[1]
	srv.hostPort = strings.TrimPrefix(srv.url, "http://")
	srv.record()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := srv.call("GET", "/session", nil, nil)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			srv.stop()
			return nil, fmt.Errorf("opencode: the project never loaded: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return srv, nil
}

// stop ends the event recorder and the server (SIGTERM, then SIGKILL),
// by its own PID.
func (s *ocServer) stop() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
		s.cancel = nil
	}
	if s.cmd.Process == nil || s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan struct{})
	go func() {
		_ = s.cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-exited
	}
}

func (s *ocServer) record() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	connected := make(chan struct{})
	var once sync.Once
	go func() {
		defer close(s.done)
		ocenv.Follow(ctx, s.hc.Transport, s.endpoint("/event"), func(data []byte) {
			at := time.Now()
			var raw struct {
				Type       string `json:"type"`
				Properties struct {
					SessionID string `json:"sessionID"`
					Info      struct {
						ID       string `json:"id"`
						ParentID string `json:"parentID"`
						Title    string `json:"title"`
					} `json:"info"`
				} `json:"properties"`
			}
			if json.Unmarshal(data, &raw) != nil {
				return
			}
			ev := ocEvent{typ: raw.Type, session: raw.Properties.SessionID, parent: raw.Properties.Info.ParentID,
				title: raw.Properties.Info.Title, at: at}
			if ev.session == "" {
				ev.session = raw.Properties.Info.ID
			}
			if ev.typ == "server.connected" {
				once.Do(func() { close(connected) })
			}
			s.mu.Lock()
			s.events = append(s.events, ev)
			close(s.changed)
			s.changed = make(chan struct{})
			s.mu.Unlock()
		})
	}()
	select {
	case <-connected:
	case <-time.After(ocWait):
	}
}

// waitEvent returns the first event from index from on that matches.
func (s *ocServer) waitEvent(from int, match func(ocEvent) bool) (ocEvent, error) {
	deadline := time.After(ocWait)
	for {
		s.mu.Lock()
		for ; from < len(s.events); from++ {
			if match(s.events[from]) {
				ev := s.events[from]
				s.mu.Unlock()
				return ev, nil
			}
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			return ocEvent{}, errors.New("timed out waiting for an event")
		}
	}
}

func (s *ocServer) eventCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}

// children lists the sessions whose creation under parent was announced.
func (s *ocServer) children(parent string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.events {
		if e.typ == "session.created" && e.parent == parent {
			out = append(out, e.session)
		}
	}
	return out
}

// ocTurn is one timed turn: to the parent's idle and, with thatch, to the
// deletion of the extraction child that idle started.
type ocTurn struct {
	idle, deleted time.Duration
}

// turn prompts session id and waits for its idle; with extract, it then
// waits for the extraction child to come and go.
func (s *ocServer) turn(id, text string, extract bool) (ocTurn, error) {
	from := s.eventCount()
	start := time.Now()
	in := map[string]any{"parts": []map[string]any{{"type": "text", "text": text}}}
	if err := s.call("POST", "/session/"+id+"/prompt_async", in, nil); err != nil {
		return ocTurn{}, err
	}
	idle, err := s.waitEvent(from, func(e ocEvent) bool { return e.typ == "session.idle" && e.session == id })
	if err != nil {
		return ocTurn{}, fmt.Errorf("parent idle: %w", err)
	}
	t := ocTurn{idle: idle.at.Sub(start)}
	if !extract {
		return t, nil
	}
	child, err := s.waitEvent(from, func(e ocEvent) bool {
		return e.typ == "session.created" && e.parent == id && e.title == ocExtractionTitle
	})
	if err != nil {
		return ocTurn{}, fmt.Errorf("no extraction child: %w", err)
	}
	gone, err := s.waitEvent(from, func(e ocEvent) bool { return e.typ == "session.deleted" && e.session == child.session })
	if err != nil {
		return ocTurn{}, fmt.Errorf("extraction child never deleted: %w", err)
	}
	t.deleted = gone.at.Sub(start)
	return t, nil
}

func (s *ocServer) endpoint(path string) string {
	return s.url + path + "?" + url.Values{"directory": {s.w.project}}.Encode()
}

func (s *ocServer) call(method, path string, in, out any) error {
	return ocenv.CallJSON(s.hc, method, s.endpoint(path), in, out)
}

func (s *ocServer) createSession() (string, error) {
	var sess struct {
		ID string `json:"id"`
	}
	if err := s.call("POST", "/session", map[string]any{}, &sess); err != nil {
		return "", err
	}
	if sess.ID == "" {
		return "", errors.New("opencode: POST /session returned no id")
	}
	return sess.ID, nil
}

// waitUserText polls session id until one of its user messages contains
// text.
func (s *ocServer) waitUserText(id, text string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var msgs []opencode.Message
		if err := s.call("GET", "/session/"+id+"/message", nil, &msgs); err == nil {
			for _, m := range msgs {
				for _, p := range m.Parts {
					if m.Info.Role == "user" && strings.Contains(p.Text, text) {
						return nil
					}
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no user message with %q in %s", text, id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ocLog collects a process's or logger's output for the start-up waits.
type ocLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *ocLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Only start-up is waited on; keep memory bounded after that.
	if l.buf.Len() < 8<<20 {
		l.buf.Write(p)
	}
	return len(p), nil
}

func (l *ocLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *ocLog) tail() string {
	s := l.String()
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}

// wait polls until the output matches re.
func (l *ocLog) wait(re string, timeout time.Duration) error {
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(timeout)
	for !rx.MatchString(l.String()) {
		if time.Now().After(deadline) {
			return fmt.Errorf("no %q within %s", re, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}
