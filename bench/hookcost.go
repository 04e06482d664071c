package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/e2e/fakeanthropic"
	"github.com/thatch-run/thatch/im/agents"
)

// The agent-memory-overhead benchmark runs the real claude CLI headless
// (claude -p, the version e2e/install-agents.sh pins) against the
// scripted local model e2e/fakeanthropic, with a daemon runtime in this
// process (opencode front end, control API on loopback), turn by turn:
// with what thatch gives every claude it launches (--settings with the
// SessionStart hook `thatch hook claude`, --mcp-config starting `thatch
// mcp`, both naming the daemon's control files) and without either, the
// two alternating.
const (
	// hookCostLimit is the target: the hook and MCP add at most
	// 5% to a scripted claude turn.
	hookCostLimit = 1.05
	// hookTurnTimeout bounds one claude run.
	hookTurnTimeout = 2 * time.Minute
	// hookPrompt starts every turn's prompt; the model echoes it.
	hookPrompt = "hello"
	// hookReminderMark is in the daemon's memory reminder, which the
	// hook gives claude (additionalContext).
	hookReminderMark = "memory_recall(query)"
)

func init() {
	register(Bench{
		Name: "agent-memory-overhead",
		Doc: "a scripted headless claude turn (claude -p against a local fake model) with thatch's SessionStart hook and MCP server " +
			"vs without, alternating, median wall time <= 1.05x; needs claude (e2e/install-agents.sh), else a skipped record",
		Order: 64,
		Run:   benchHookCost,
	})
}

func benchHookCost(c *Config) ([]Record, error) {
	dir, remove, err := c.TempDir("amo")
	if err != nil {
		return nil, err
	}
	defer remove()
	claude, version, skip := findClaude(c, dir)
	if skip != "" {
		c.Logf("agent-memory-overhead: skipped: %s", skip)
		return []Record{newRecord("agent-memory-overhead.skipped", 0, "-", "skipped: "+skip)}, nil
	}
	n, warm := c.Count(10, 3), 1
	w, err := startHookWorld(c, dir, claude)
	defer w.close()
	if err != nil {
		return nil, err
	}
	c.Logf("agent-memory-overhead: claude %s, %d warm-up + %d measured turns each way, alternating", version, warm, n)
	m := startCPU()
	s, err := w.turns(warm, n)
	if err != nil {
		return nil, err
	}
	cpu := m.String()
	if err := w.check(warm + n); err != nil {
		return nil, err
	}
	return s.records(version, n, warm, cpu), nil
}

// findClaude runs e2e/install-agents.sh (quick when the pinned CLIs are in
// its cache) and returns the claude it names and its version, or why
// there is none.
func findClaude(c *Config, scratch string) (bin, version, skip string) {
	root, err := moduleRoot()
	if err != nil {
		return "", "", err.Error()
	}
	script := filepath.Join(root, "e2e", "install-agents.sh")
	ver, err := os.ReadFile(filepath.Join(root, "e2e", "claude.version"))
	if err != nil {
		return "", "", "no e2e/claude.version: " + err.Error()
	}
	tmp := filepath.Join(scratch, "install-tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", "", "no scratch folder: " + err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c.Logf("agent-memory-overhead: %s", script)
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Sprintf("claude is not installed (install-agents.sh: %v: %s)", err, strings.TrimSpace(stderr.String()))
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "claude="); ok {
			bin = v
		}
	}
	if fi, err := os.Stat(bin); bin == "" || err != nil || fi.IsDir() {
		return "", "", fmt.Sprintf("claude is not installed (install-agents.sh printed %q)", strings.TrimSpace(string(out)))
	}
	return bin, strings.TrimSpace(string(ver)), ""
}

// hookWorld is what the benchmark runs: the daemon's runtime, the fake
// model, and claude's home, project and the two launch files.
type hookWorld struct {
	claude, project     string
	settings, mcpConfig string
	env                 []string
	model               *fakeanthropic.Server
	closers             []func()
}

// close undoes startHookWorld, last step first.
func (w *hookWorld) close() {
	for i := len(w.closers) - 1; i >= 0; i-- {
		w.closers[i]()
	}
}

// startHookWorld builds thatch, starts the daemon's runtime and the fake
// model, and writes claude's home and the launch files as the IM front
// end writes them (writeLaunchFiles), naming the built binary. The
// caller must call close even when it fails.
func startHookWorld(c *Config, dir, claude string) (*hookWorld, error) {
	w := &hookWorld{claude: claude, project: filepath.Join(dir, "project")}
	c.Logf("agent-memory-overhead: building cmd/thatch")
	bin, err := buildThatch(dir)
	if err != nil {
		return w, err
	}
	cfg := config.Defaults()
	cfg.Data.Dir = filepath.Join(dir, "data")
	cfg.Control.TokenFile = filepath.Join(cfg.Data.Dir, "control.token")
	cfg.Control.StateFile = filepath.Join(cfg.Data.Dir, "control.json")
	c.Logf("agent-memory-overhead: starting the daemon's runtime")
	_, rt, err := startRuntime(cfg)
	if err != nil {
		return w, err
	}
	w.closers = append(w.closers, func() { _ = rt.Stop(context.Background()) })
	w.model = fakeanthropic.New()
	w.closers = append(w.closers, w.model.Close)

	home, tmp := filepath.Join(dir, "home"), filepath.Join(dir, "t")
	for _, d := range []string{w.project, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return w, err
		}
	}
	if err := fakeanthropic.PrepareHome(home, fakeanthropic.APIKey, w.project); err != nil {
		return w, err
	}
	ctl := []string{"--state-file", cfg.Control.StateFile, "--token-file", cfg.Control.TokenFile}
	srv := agents.MCPServer{Name: agents.MemoryServer, Command: bin, Args: append([]string{"mcp"}, ctl...)}
	w.settings, w.mcpConfig = filepath.Join(dir, "claude-settings.json"), filepath.Join(dir, "mcp-claude.json")
	for path, body := range map[string]string{
		w.settings:  agents.ClaudeLaunchSettings(bin, ctl, agents.MemoryServer),
		w.mcpConfig: agents.ClaudeMCPConfig(srv),
	} {
		if err := os.WriteFile(path, []byte(body+"\n"), 0o600); err != nil {
			return w, err
		}
	}
	// claude gets nothing of this process's environment but PATH: its
	// home, a short TMPDIR of its own (it makes sockets there), and what
	// keeps it talking to the fake model only.
	w.env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp, "LANG=C.UTF-8"}, w.model.Env("")...)
	return w, nil
}

// turn runs one headless claude turn on prompt, with thatch's hook and
// MCP server or without, and returns its wall time from the process's
// start to its exit.
func (w *hookWorld) turn(prompt string, with bool) (time.Duration, error) {
	args := []string{"-p", prompt}
	if with {
		args = append(args, "--settings", w.settings, "--mcp-config", w.mcpConfig)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hookTurnTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.claude, args...)
	cmd.Dir, cmd.Env = w.project, w.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Its own process group, so that nothing it started outlives it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 10 * time.Second
	t0 := time.Now()
	err := cmd.Run()
	took := time.Since(t0)
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group's leftovers, if any
	}
	if err != nil {
		return 0, fmt.Errorf("bench: agent-memory-overhead: claude -p %q (with=%v): %w\nstdout: %s\nstderr: %s",
			prompt, with, err, tailOf(stdout.String()), tailOf(stderr.String()))
	}
	if want := fakeanthropic.Echo(&fakeanthropic.Request{UserText: prompt}); !strings.Contains(stdout.String(), want) {
		return 0, fmt.Errorf("bench: agent-memory-overhead: claude -p %q (with=%v) printed %q, want %q", prompt, with, tailOf(stdout.String()), want)
	}
	return took, nil
}

// tailOf is the end of a process's output, for an error.
func tailOf(s string) string {
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return strings.TrimSpace(s)
}

// hookSamples are the measured turns of both ways.
type hookSamples struct {
	with, without latencies
	diffs         []float64 // with minus without of each pair, ms
}

// turns runs warm+n pairs of turns, one with and one without, the order
// alternating, and keeps the timings after the first warm.
func (w *hookWorld) turns(warm, n int) (*hookSamples, error) {
	s := &hookSamples{}
	for i := range warm + n {
		var tw, tb time.Duration
		var err error
		withTurn := func() { tw, err = w.turn(fmt.Sprintf("%s w%03d", hookPrompt, i), true) }
		bareTurn := func() { tb, err = w.turn(fmt.Sprintf("%s b%03d", hookPrompt, i), false) }
		steps := []func(){withTurn, bareTurn}
		if i%2 == 1 {
			steps = []func(){bareTurn, withTurn}
		}
		for _, step := range steps {
			if step(); err != nil {
				return nil, err
			}
		}
		if i < warm {
			continue
		}
		s.with = append(s.with, tw)
		s.without = append(s.without, tb)
		s.diffs = append(s.diffs, ms(tw)-ms(tb))
	}
	slices.Sort(s.with)
	slices.Sort(s.without)
	return s, nil
}

// check makes sure that the turns measured what they claim: every turn
// reached the model once, and exactly those with thatch carried the
// hook's context (the daemon's memory reminder, which the hook asked
// for) and thatch mcp's tools (listed by the server, which asked the
// daemon for its instructions first).
func (w *hookWorld) check(pairs int) error {
	turns := w.model.UserTurns()
	if len(turns) != 2*pairs {
		return fmt.Errorf("bench: agent-memory-overhead: the model got %d turns, want %d: %q", len(turns), 2*pairs, w.model.UserTexts())
	}
	tool := []byte("mcp__" + agents.MemoryServer + "__memory_recall")
	for _, r := range turns {
		with := strings.Contains(r.UserText, " w")
		hooked := slices.ContainsFunc(r.Messages, func(m fakeanthropic.Message) bool {
			return slices.ContainsFunc(m.Blocks, func(b fakeanthropic.Block) bool { return strings.Contains(b.Text, hookReminderMark) })
		})
		served := bytes.Contains(r.Body, tool)
		if hooked != with || served != with {
			return fmt.Errorf("bench: agent-memory-overhead: turn %q: the hook's reminder %v, thatch mcp's tools %v; want both %v",
				r.UserText, hooked, served, with)
		}
	}
	return nil
}

// records turns the samples into the agent-memory-overhead records.
func (s *hookSamples) records(version string, n, warm int, cpu string) []Record {
	withMed, bareMed := ms(s.with.p(50)), ms(s.without.p(50))
	mean, half := meanCI(s.diffs)
	notes := fmt.Sprintf("median wall time of a scripted headless claude turn (claude %s: `claude -p \"hello ...\"` against e2e/fakeanthropic on loopback, "+
		"which echoes it; from the process's start to its exit) with thatch's launch extras vs without (the baseline): --settings "+
		"with the SessionStart hook `thatch hook claude --state-file S --token-file T` and --mcp-config starting `thatch mcp` with the "+
		"same files, the built binary, a daemon runtime (opencode front end, control API on loopback) in the bench process answering both; "+
		"claude starts its MCP servers and runs its hooks concurrently with its own start-up, so only the whole turn's wall time says "+
		"what they add; %d pairs after %d warm-up, the order alternating; every turn checked to reach the model once, the hook's "+
		"memory reminder and thatch mcp's tools in exactly the turns with them; with: %v; without: %v; paired differences (with "+
		"minus without, back to back): median %+.0f ms, mean %+.0f ms ± %.0f ms (95%% CI); %s",
		version, n, warm, s.with, s.without, median(slices.Clone(s.diffs)), mean, half, cpu)
	return []Record{
		newRecord("agent-memory-overhead.turn", withMed, "ms", notes).withBaseline(bareMed).ratioAtMost(hookCostLimit),
		newRecord("agent-memory-overhead.added", median(slices.Clone(s.diffs)), "ms",
			fmt.Sprintf("what the hook and thatch mcp add to a turn: median of the paired differences; %.1f%% of the median turn without",
				100*median(slices.Clone(s.diffs))/bareMed)),
	}
}
