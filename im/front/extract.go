package front

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/agentmem"
	"github.com/thatch-run/thatch/actors/ocbudget"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/im/agents"
	"github.com/thatch-run/thatch/internal/redact"
	"github.com/thatch-run/thatch/persistence/memory"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// Bounds of what an extraction child is given and may take.
const (
	// extractTimeout bounds an extraction child's run.
	extractTimeout = 10 * time.Minute
	// maxToolInput and maxToolOutput cut what one tool call keeps.
	maxToolInput  = 4 << 10
	maxToolOutput = 8 << 10
)

// toolReader reads the tool calls of claude's and codex's transcripts for
// their sessions' memory (actors/agentmem): the chat front end's follower
// hands it what it reads of a bound session, the agents front end's what
// it reads of a session started by hand.
type toolReader struct {
	cfg      *config.Config
	agents   *agents.Registry
	redactor *redact.Redactor
	log      hclog.Logger
	// tree is set at Mount.
	tree frontend.Tree
	// dirs is the directory each transcript's session works in (path ->
	// dir), as its lines said.
	dirs sync.Map
}

// extracts reports whether the memory of agent's sessions is extracted:
// claude's and codex's (whose tool calls thatch reads), unless
// memory.extractor is off.
func (r *toolReader) extracts(agent string) bool {
	return r.cfg.Memory.Extractor != "off" && (agent == agents.Claude || agent == agents.Codex)
}

// sessionMemory is the entity of the memory of the session whose
// transcript is path: "<agent>:<file name without .jsonl>".
func sessionMemory(agent, path string) actors.Identity {
	return actors.Identity{Kind: agentmem.KindName, ID: agent + ":" + strings.TrimSuffix(filepath.Base(path), ".jsonl")}
}

// read hands the tool calls, results and turn ends of a transcript read
// to the memory of its session, redacted: nothing secret is journaled,
// with the directory the session works in. binding is the chat thread
// that follows the session ("" for one started by hand).
func (r *toolReader) read(ctx context.Context, binding, agent, path string, from, to int64, lines [][]byte, ends []int64) error {
	a, ok := r.agents.Get(agent)
	if !ok || !r.extracts(agent) {
		return nil
	}
	m := &agentmem.ToolsRead{Agent: agent, Path: path, From: from, To: to, Thread: binding}
	for i, line := range lines {
		end := ends[i]
		if d := agents.LineCwd(line); d != "" {
			m.Dir = d
		}
		for _, it := range a.TurnItems(line) {
			switch it.Kind {
			case agents.ItemTool:
				if !memoryTool(it.Name) {
					m.Calls = append(m.Calls, agentmem.Call{ID: it.ID, Tool: it.Name, Input: r.scrub(it.Input, maxToolInput), End: end})
				}
			case agents.ItemResult:
				m.Results = append(m.Results, agentmem.Result{ID: it.ID, Output: r.scrub(it.Output, maxToolOutput), Failed: it.Failed, End: end})
			case agents.ItemEnd:
				m.TurnEnded = true
			}
		}
	}
	// The session's directory: codex says it only in its session's
	// first lines, before any tool call; a read that says nothing else
	// is handed over when it tells a directory not told before.
	told := false
	if m.Dir == "" {
		if d, ok := r.dirs.Load(path); ok {
			m.Dir = d.(string)
		}
	} else if old, ok := r.dirs.Swap(path, m.Dir); !ok || old.(string) != m.Dir {
		told = true
	}
	if len(m.Calls) == 0 && len(m.Results) == 0 && !m.TurnEnded && !told {
		return nil
	}
	return r.deliver(ctx, path, agent, m)
}

// deliver hands m to the memory of the session of path.
func (r *toolReader) deliver(ctx context.Context, path, agent string, m *agentmem.ToolsRead) error {
	err := r.tree.DeliverContext(ctx, sessionMemory(agent, path), m, deliverTimeout)
	if err != nil && refused(err) {
		r.log.Error("a session's memory refused its tool calls; they are not extracted", "path", path, "error", err)
		return nil
	}
	return err
}

// memoryTool reports whether a tool is the memory's own (its calls are
// not extracted again): claude names it mcp__thatch__<tool>, and codex's
// namespaced calls are read under the same name (agents.TurnItems).
func memoryTool(name string) bool {
	return strings.HasPrefix(name, "mcp__"+agents.MemoryServer+"__")
}

// scrub is s with every secret the memory's redactor finds cut, and cut
// to n bytes.
func (r *toolReader) scrub(s string, n int) string {
	if r.redactor != nil {
		s, _ = r.redactor.Redact(s)
	}
	return cleanText(s, n)
}

// extractionPrompt is what an extraction child is asked.
const extractionPrompt = `You are thatch's memory extractor for a %s session that worked in %s. Use only thatch's tools:
1. Call extraction_payload once. It returns the session's tool calls and their outputs.
2. For each durable fact they show (still true and useful weeks from now: how to build, test, run and deploy this project, its conventions, pitfalls and their fixes), call memory_remember with one fact per memory and a short specific label. Use memory_recall first, and update an existing memory (overwrite) rather than add a near duplicate. Never save a secret.
3. Always call extraction_done at the end, even if you saved nothing. Do nothing else.`

// startExtractor runs an extraction child: the extractor agent's CLI
// headless, in a directory of thatch's own (so that no binding takes its
// transcript for the chat session's), with thatch's MCP server for the
// session's directory and this child. It types nothing anywhere. Its
// result is the child's end.
func (f *Agents) startExtractor(ctx context.Context, _ actors.Identity, e *agentmem.StartExtractor) any {
	out := &agentmem.Exited{Child: e.Child}
	if why := f.budgetPaused(ctx, e.Dir); why != "" {
		out.Err = why
		return out
	}
	cmd, cleanup, err := f.extractorCommand(e)
	if err != nil {
		out.Err = err.Error()
		return out
	}
	defer cleanup()
	ctx, cancel := context.WithTimeout(ctx, extractTimeout)
	defer cancel()
	stop := context.AfterFunc(f.runCtx, cancel) // thatch stops: so does the child
	defer stop()
	var tail tailBuffer
	cmd.Stdout, cmd.Stderr = &tail, &tail
	started := time.Now()
	err = runGroup(ctx, cmd)
	f.log.Info("an extraction child ended", "child", e.Child, "extractor", cmp.Or(f.cfg.Memory.Extractor, e.Agent), "took", time.Since(started).Round(time.Millisecond), "error", err)
	if err != nil {
		out.Err = f.tools.scrub(fmt.Sprintf("%v: %s", err, strings.TrimSpace(tail.String())), 512)
	}
	return out
}

// extractorCommand is the child's command line, in its scratch directory,
// and what removes its files.
func (f *Agents) extractorCommand(e *agentmem.StartExtractor) (*exec.Cmd, func(), error) {
	name := cmp.Or(f.cfg.Memory.Extractor, e.Agent)
	a, ok := f.agents.Get(name)
	if !ok {
		return nil, nil, fmt.Errorf("unknown extractor agent %s", name)
	}
	dir := filepath.Join(f.cfg.Data.Dir, "im", "extract")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	srv := f.launch.MCP
	if e.Dir == "" {
		return nil, nil, errors.New("the session's directory is not known")
	}
	srv.Args = append(append([]string(nil), srv.Args...), "--dir", e.Dir, "--extraction", e.Child)
	safe := strings.NewReplacer(":", "_", "#", "_", "/", "_").Replace(e.Child)
	srv.ClaudeConfig = filepath.Join(dir, safe+".mcp.json")
	if err := writeIfChanged(srv.ClaudeConfig, []byte(agents.ClaudeMCPConfig(srv)+"\n")); err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.Remove(srv.ClaudeConfig) }
	line, err := a.HeadlessLine(fmt.Sprintf(extractionPrompt, e.Agent, e.Dir), srv)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", line) // the line execs the agent: the one process to kill
	cmd.Dir = dir
	// The child's own SessionStart hook (thatch install claude) must not
	// tell the daemon of the child as a session started by hand.
	cmd.Env = append(f.cfg.ChildEnv(os.Environ()), agents.ExtractionChildEnv+"=1")
	return cmd, cleanup, nil
}

// runGroup runs cmd in a process group of its own, killed whole when ctx
// ends or thatch dies.
func runGroup(ctx context.Context, cmd *exec.Cmd) error {
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return ctx.Err()
	}
}

// budgetPaused says why no child may start now when the store of dir
// reached memory.daily_budget_tokens today ("" when it may).
func (f *Agents) budgetPaused(ctx context.Context, dir string) string {
	budget := int64(f.cfg.Memory.DailyBudgetTokens)
	if budget <= 0 {
		return ""
	}
	project, _ := stores(dir)
	ans, err := f.tree.RequestContext(ctx, actors.Identity{Kind: ocbudget.KindName, ID: project}, &ocbudget.Check{Budget: budget}, deliverTimeout)
	if a, ok := ans.(*ocbudget.Answer); err == nil && ok && a.Paused {
		return fmt.Sprintf("extraction for %s is paused: it used its daily budget (%d tokens)", project, a.Used)
	}
	return ""
}

// tailBuffer keeps the last 2 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2048 {
		t.b = t.b[len(t.b)-2048:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

// mountExtraction mounts the routes an extraction child's MCP server
// calls: its fetch (which claims) and its completion (which consumes).
func (f *Agents) mountExtraction(mux frontend.Mux) {
	mux.MountFunc("POST /v1/agent/payload", f.servePayload)
	mux.MountFunc("POST /v1/agent/done", f.serveDone)
}

// childSession is the memory entity of child ("<session>#<n>").
func childSession(child string) (actors.Identity, bool) {
	session, _, ok := strings.Cut(child, "#")
	return actors.Identity{Kind: agentmem.KindName, ID: session}, ok && strings.Contains(session, ":")
}

type childBody struct {
	Child string `json:"child"`
	// Wrote is how many memories the child wrote (its completion says).
	Wrote int `json:"wrote"`
}

func (f *Agents) childOf(w http.ResponseWriter, r *http.Request) (childBody, actors.Identity, bool) {
	var b childBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&b); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body: " + err.Error()})
		return b, actors.Identity{}, false
	}
	id, ok := childSession(b.Child)
	if !ok || b.Wrote < 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "child must be <agent>:<session>#<n>, wrote >= 0"})
		return b, actors.Identity{}, false
	}
	return b, id, true
}

// servePayload serves POST /v1/agent/payload: the child claims what its
// session buffered; the payload's size counts against the store's budget.
func (f *Agents) servePayload(w http.ResponseWriter, r *http.Request) {
	b, id, ok := f.childOf(w, r)
	if !ok {
		return
	}
	ans, err := f.tree.RequestContext(r.Context(), id, &agentmem.FetchPayload{Child: b.Child}, deliverTimeout)
	p, _ := ans.(*agentmem.Payload)
	switch {
	case err != nil:
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	case p == nil:
		writeJSON(w, http.StatusConflict, map[string]string{"error": "no payload"})
		return
	case p.Err != "":
		writeJSON(w, http.StatusConflict, map[string]string{"error": p.Err})
		return
	}
	project, _ := stores(p.Dir)
	body := map[string]any{"interactions": p.Interactions, "agent": p.Agent, "directory": p.Dir,
		"projectStore": project, "globalStore": memory.GlobalStore}
	raw, _ := json.Marshal(body)                         // plain values
	if f.cfg.Memory.DailyBudgetTokens > 0 && p.New > 0 { // a fetch again costs nothing new
		err := f.tree.DeliverContext(r.Context(), actors.Identity{Kind: ocbudget.KindName, ID: project}, &ocbudget.AddCost{Bytes: int64(len(raw))}, deliverTimeout)
		if err != nil {
			f.log.Warn("an extraction's cost was not counted", "store", project, "error", err)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(raw)
}

// serveDone serves POST /v1/agent/done: the child's completion consumes
// its claim.
func (f *Agents) serveDone(w http.ResponseWriter, r *http.Request) {
	b, id, ok := f.childOf(w, r)
	if !ok {
		return
	}
	ans, err := f.tree.RequestContext(r.Context(), id, &agentmem.Done{Child: b.Child, Wrote: b.Wrote}, deliverTimeout)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	n, _ := ans.(int)
	writeJSON(w, http.StatusOK, map[string]int{"completed": n})
}

// writeJSON answers a route with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
