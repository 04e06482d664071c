package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/actors/agentmem"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/im/agents"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/supervisor"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// AgentsName is the agents front end's name.
const AgentsName = "agents"

// Agents is the front end of the memory of claude's and codex's sessions,
// whether a chat binds them or a user started them by hand: it runs with
// or without a chat. It holds their memory entities (actors/agentmem),
// runs their extraction children (extract.go) and serves the children's
// fetch and completion. A session a chat binds is read by the chat front
// end's follower; one started by hand is told by its hook (`thatch hook
// claude` or `thatch hook codex`, which `thatch install` sets up) through
// POST /v1/agent/sessions, and this front end follows its transcript
// itself (handFollower), from where its memory says it was read.
type Agents struct {
	cfg  *config.Config
	opts Options

	// Set by Open.
	home   string
	log    hclog.Logger
	jr     *persistence.Journal
	agents *agents.Registry
	launch agents.Extras
	tools  *toolReader
	hand   *handFollower
	runCtx context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// Set by Mount.
	tree frontend.Tree
}

var (
	_ frontend.FrontEnd = (*Agents)(nil)
	_ frontend.Reporter = (*Agents)(nil)
)

// NewAgents makes the agents front end for cfg.
func NewAgents(cfg *config.Config, o Options) *Agents { return &Agents{cfg: cfg, opts: o} }

// Name returns AgentsName.
func (f *Agents) Name() string { return AgentsName }

// Open builds the memory kind and the extraction child's handler.
func (f *Agents) Open(_ context.Context, c frontend.Core) (frontend.Parts, error) {
	f.log = c.Logger
	f.jr = c.Store.Journal()
	home := f.opts.Home
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return frontend.Parts{}, fmt.Errorf("agents: no home directory for the agents' sessions: %w", err)
		}
		home = h
	}
	f.home = home
	specs, _ := agentSpecs(&f.cfg.IM)
	reg, err := agents.NewRegistry(home, specs)
	if err != nil {
		return frontend.Parts{}, fmt.Errorf("agents: %w", err)
	}
	f.agents = reg
	if f.launch, err = writeLaunchFiles(filepath.Join(f.cfg.Data.Dir, "im"), f.cfg.Control.StateFile, f.cfg.Control.TokenFile); err != nil {
		return frontend.Parts{}, fmt.Errorf("agents: %w", err)
	}
	f.tools = &toolReader{cfg: f.cfg, agents: reg, redactor: c.Redactor, log: f.log}
	f.hand = newHandFollower(f.tools, f.log.Named("hand"))
	f.runCtx, f.cancel = context.WithCancel(context.Background())
	return frontend.Parts{
		Kinds: []supervisor.Spec{supervisor.Entity[agentmem.State](agentmem.New(agentmem.Config{IdleAfter: f.cfg.Memory.IdleAfter,
			Off: f.cfg.Memory.Extractor == "off"}))},
		// A child runs for minutes: in a lane of its own.
		Effects: []supervisor.Handler{supervisor.Handle(f.startExtractor, supervisor.Lane("extract"))},
	}, nil
}

// Mount records the tree and mounts the children's and the hook's routes.
func (f *Agents) Mount(_ context.Context, t frontend.Tree, mux frontend.Mux) error {
	f.tree = t
	f.tools.tree = t
	f.mountExtraction(mux)
	mux.MountFunc("POST /v1/agent/sessions", f.serveSession)
	return nil
}

// Start follows again the sessions started by hand that were followed
// before the restart (those whose transcript changed within handIdle).
func (f *Agents) Start(context.Context) error {
	views, _ := frontend.Entities(f.tree, f.jr, agentmem.KindName, "session", 0, 5*time.Second)
	for _, raw := range views {
		st, ok := raw.(agentmem.Status)
		if !ok || st.Watch == "" {
			continue
		}
		if fi, err := os.Stat(st.Watch); err == nil && time.Since(fi.ModTime()) < handIdle {
			f.hand.follow(st.Agent, st.Watch, st.Read)
		}
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.hand.run(f.runCtx)
	}()
	return nil
}

// Stop ends the following and, through their context, the children.
func (f *Agents) Stop(context.Context) error {
	if f.cancel != nil {
		f.cancel()
	}
	f.wg.Wait()
	return nil
}

// Report lists the sessions whose memory thatch extracts (agentmem.Status).
func (f *Agents) Report(limit int) frontend.Report {
	n := f.hand.count()
	h := frontend.Health{OK: true, State: fmt.Sprintf("following %d session%s started by hand", n, plural(n))}
	rep := frontend.Report{Health: &h}
	if f.tree != nil {
		rep.Entities, rep.Total = frontend.Entities(f.tree, f.jr, agentmem.KindName, "session", limit, 5*time.Second)
	}
	return rep
}

// sessionBody is what a hook tells of a session started by hand.
type sessionBody struct {
	Agent      string `json:"agent"`
	Transcript string `json:"transcript"`
	Dir        string `json:"dir"`
}

// serveSession serves POST /v1/agent/sessions: a session started by hand
// (its hook tells it) is followed from where its memory was read.
func (f *Agents) serveSession(w http.ResponseWriter, r *http.Request) {
	var b sessionBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<10)).Decode(&b); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body: " + err.Error()})
		return
	}
	if err := b.check(f.home); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	if !f.tools.extracts(b.Agent) {
		writeJSON(w, http.StatusOK, map[string]any{"following": false, "why": "memory.extractor is off"})
		return
	}
	ans, err := f.tree.RequestContext(r.Context(), sessionMemory(b.Agent, b.Transcript),
		&agentmem.Watch{Agent: b.Agent, Path: b.Transcript, Dir: b.Dir}, deliverTimeout)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	from, _ := ans.(int64)
	f.hand.follow(b.Agent, b.Transcript, from)
	writeJSON(w, http.StatusOK, map[string]any{"following": true, "from": from})
}

// check says what is wrong with a session's body. A transcript is an
// agent's file under the user's home (where claude and codex keep them):
// the daemon reads nothing else for the memory, also through a link.
func (b sessionBody) check(home string) error {
	switch {
	case b.Agent != agents.Claude && b.Agent != agents.Codex:
		return fmt.Errorf("agent must be %s or %s, not %q", agents.Claude, agents.Codex, b.Agent)
	case !filepath.IsAbs(b.Transcript) || filepath.Clean(b.Transcript) != b.Transcript || !strings.HasSuffix(b.Transcript, ".jsonl"):
		return errors.New("transcript must be a clean absolute path of a .jsonl file")
	case !under(b.Transcript, home):
		return fmt.Errorf("transcript must be under %s", home)
	case b.Dir != "" && !filepath.IsAbs(b.Dir):
		return errors.New("dir must be absolute")
	}
	if real, err := filepath.EvalSymlinks(b.Transcript); err == nil && !under(real, home) {
		return fmt.Errorf("transcript leads out of %s", home)
	}
	return nil
}

// under reports whether path is inside dir.
func under(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
