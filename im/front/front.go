// Package front is the IM front end: it binds chat threads (Telegram forum
// topics, private chats; Feishu chats) to agent sessions running in tmux
// windows. It reads the chat adapters' updates, checks them at the edge
// (allow-list, size, valid text), hands them to the thread's binding
// entity (actors/imbinding), carries out the bindings' effects against
// tmux, the agents' files and the chats, and follows the agents'
// transcripts to relay their replies.
//
// It implements frontend.FrontEnd beside the opencode front end; the root
// package composes the two.
//
// # Imports
//
// front may import the IM parts (im/tmux, im/agents, im/chat), the
// decision core it runs (actors/imbinding), the supervisor and its
// frontend contract, persistence and config. It must not import another
// front end (hosts/...). It speaks to every chat platform through
// chat.Adapter only; chats.go alone names the platforms, to build the
// adapters the config asks for (today im/telegram).
//
// # Delivery
//
// An update is confirmed to its platform only after its binding
// journaled it (the adapter's Run calls handle in order and waits), and a
// binding drops an update id it has handled already, so no update is
// handled twice across a crash and none is lost. Each adapter's cursor
// (chat.Update.Cursor) is also kept in the row table im.<platform> (key
// "offset"; im.telegram for Telegram), so a restart asks for what follows
// it.
package front

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/imbinding"
	"github.com/thatch-run/thatch/actors/imboard"
	"github.com/thatch-run/thatch/actors/imnotice"
	"github.com/thatch-run/thatch/actors/imtranscripts"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/im/agents"
	"github.com/thatch-run/thatch/im/tmux"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/persistence/memory"
	"github.com/thatch-run/thatch/supervisor"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// Name is the front end's name in logs and status.
const Name = "im"

// deliverTimeout bounds how long an update waits for its binding to
// journal it.
const deliverTimeout = 30 * time.Second

// Options are what an embedder (or a test) may set beyond the config.
type Options struct {
	// Home is the user's home directory, where the agents keep their
	// sessions and "~" points. Default: os.UserHomeDir.
	Home string
	// PollTimeout is the long-poll timeout of the adapters that poll
	// (Telegram's getUpdates). Default: the adapter's.
	PollTimeout time.Duration
	// ChatInterval is the least time between two sends to one chat, for
	// the adapters that pace their sends (Telegram). Default: the
	// config's (im.telegram.chat_interval); negative: no spacing and no
	// limit a minute (tests).
	ChatInterval time.Duration
	// FindTimeout bounds the search for a newly started agent's session
	// id. Default: 15s.
	FindTimeout time.Duration
	// Zoxide is the zoxide binary for quick jumps; "" looks it up on PATH,
	// "-" disables quick jumps from zoxide.
	Zoxide string
	// Trace, when set, is called as an update passes each stage:
	// "received" (an adapter handed it over) and "typed" (its text was typed
	// into the window). Benchmarks measure latency with it. It must not
	// block.
	Trace func(stage string, updateID int64)
	// Agents is the agents front end, opened before this one: the IM
	// front end shares its agent registry, its tool reader and its launch
	// files (nil: it makes its own).
	Agents *Agents
}

// FrontEnd is the IM front end.
type FrontEnd struct {
	cfg  *config.Config
	opts Options

	// Set by Open.
	log  hclog.Logger
	rows *persistence.Rows
	jr   *persistence.Journal
	// chats are the chat adapters, one per platform, each with its
	// cursor row.
	chats    []*chatPort
	tmux     *tmux.Client // thatch's own server, where windows are made
	wins     *servers     // every server a binding's window may be on
	agents   *agents.Registry
	roots    []string
	hookFile string
	// mask is the last step of every text and picture sent to a chat.
	mask *masker
	// tools hands the tool calls of the transcripts followed to their
	// sessions' memory (the agents front end's entities).
	tools *toolReader
	// mem is the memory store /recall and /remember use (nil: none).
	mem *memory.Store
	// memRepl replicates it in a cluster (nil: no cluster).
	memRepl *memoryReplica
	// edits spaces the live edits of each chat (live.go).
	edits editGates
	// launch is what every agent thatch starts is given: claude's
	// settings (--settings, whose SessionStart hook reports the session)
	// and the memory's MCP server.
	launch agents.Extras
	// withheldEnv names the daemon's variables that config.ChildEnv keeps
	// from the tmux server (its secrets), computed once with the server's
	// environment.
	withheldEnv []string
	follow      *follower
	watch       *watcher
	// cl is this node's part of a cluster; nil for a single node.
	cl *clusterPart
	// boardsOut holds the board reports on their way to the cluster
	// (clusterboard.go); nil for a single node. Made with the front end,
	// as bindings report before the cluster is started.
	boardsOut *boardOutbox
	// Set by Mount.
	tree frontend.Tree

	mu     sync.Mutex
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// runCtx ends at Stop; chat sends run under it.
	runCtx    context.Context
	runCancel context.CancelFunc
}

var (
	_ frontend.FrontEnd = (*FrontEnd)(nil)
	_ frontend.Reporter = (*FrontEnd)(nil)
)

// healthGrace is how long a platform may be unreachable before the front
// end counts as down.
const healthGrace = 30 * time.Second

// Health says how receiving goes: a refused credential, or a platform
// that cannot be reached, shows here and makes `thatch status` exit
// non-zero, rather than messages going unanswered without a word. With
// more than one adapter, each says its state, and the front end is down
// when one is.
func (f *FrontEnd) Health() frontend.Health {
	var h frontend.Health
	if len(f.chats) == 0 {
		h.State = "not started"
		return h
	}
	h.OK = true
	var states []string
	for i, p := range f.chats {
		c := p.a.Health()
		if f.cl != nil {
			c = f.clusterReceiving(p, c)
		}
		// A refusal is down at once; a failure to reach the platform only
		// once it has lasted (one failed poll is a blip, retried at once).
		ok := c.Up || (!c.Refused && (c.Since.IsZero() || time.Since(c.Since) < healthGrace))
		state := c.State
		if len(f.chats) > 1 {
			state = p.a.Name() + ": " + state
		}
		states = append(states, state)
		if i == 0 || (h.OK && !ok) { // the first one down says why
			h.LastError, h.Since = c.LastError, c.Since
		}
		h.OK = h.OK && ok
	}
	h.State = strings.Join(states, "; ")
	return h
}

// New makes the IM front end for cfg; nothing runs until the runtime opens
// and starts it.
func New(cfg *config.Config, o Options) *FrontEnd {
	f := &FrontEnd{cfg: cfg, opts: o}
	if cfg.Cluster.Enabled() {
		f.boardsOut = newBoardOutbox()
	}
	return f
}

// Name returns Name.
func (f *FrontEnd) Name() string { return Name }

// Open builds the parts: the binding kind and the handlers of its effects.
func (f *FrontEnd) Open(_ context.Context, c frontend.Core) (frontend.Parts, error) {
	f.log = c.Logger
	f.mask = newMasker(c.Redactor)
	f.mem = c.Memory
	f.rows = c.Store.Rows()
	if err := f.openMemoryReplica(); err != nil {
		return frontend.Parts{}, err
	}
	f.jr = c.Store.Journal()
	im := f.cfg.IM
	home := f.opts.Home
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return frontend.Parts{}, fmt.Errorf("im: no home directory for ~ and the agents' sessions: %w", err)
		}
		home = h
	}
	f.opts.Home = home
	f.roots = expandRoots(im.Roots, home)
	for _, r := range f.roots {
		if !isDir(r) {
			f.log.Warn("an im.roots directory does not exist; the setup browser cannot show it", "root", r)
		}
	}
	f.runCtx, f.runCancel = context.WithCancel(context.Background())
	f.hookFile = filepath.Join(f.cfg.Data.Dir, "im", "claude-sessions.json")

	specs, bcfg := agentSpecs(&im)
	if ag := f.opts.Agents; ag != nil && ag.agents != nil {
		// Its registry, tool reader and launch files are the same ones.
		f.agents, f.tools, f.launch = ag.agents, ag.tools, ag.launch
	} else {
		reg, err := agents.NewRegistry(home, specs)
		if err != nil {
			return frontend.Parts{}, fmt.Errorf("im: %w", err)
		}
		f.agents = reg
		f.tools = &toolReader{cfg: f.cfg, agents: reg, redactor: c.Redactor, log: f.log}
		if f.launch, err = writeLaunchFiles(filepath.Join(f.cfg.Data.Dir, "im"), f.cfg.Control.StateFile, f.cfg.Control.TokenFile); err != nil {
			return frontend.Parts{}, fmt.Errorf("im: %w", err)
		}
	}
	// The tmux server takes its environment from the client that starts
	// it, and every agent takes the server's: thatch's secrets stay out.
	// What ChildEnv withholds is also what Start clears from a server an
	// older thatch started.
	environ := os.Environ()
	childEnv := f.cfg.ChildEnv(environ)
	f.withheldEnv = withheld(environ, childEnv)
	var err error
	if f.tmux, err = tmux.New(tmux.Options{Socket: im.Tmux.Socket, Session: im.Tmux.Session, Logger: f.log.Named("tmux"),
		Env: childEnv}); err != nil {
		return frontend.Parts{}, fmt.Errorf("im: %w", err)
	}
	f.watch = newWatcher()
	f.tmux.OnActivity(f.watch.active)
	if f.wins, err = newServers(f.tmux, im.Tmux.AdoptSockets, f.log); err != nil {
		return frontend.Parts{}, fmt.Errorf("im: %w", err)
	}
	if err := f.openChats(); err != nil {
		return frontend.Parts{}, err
	}
	kind := imbinding.New(bcfg)
	return frontend.Parts{
		Kinds: []supervisor.Spec{supervisor.Entity[imbinding.State](kind), supervisor.Entity[imnotice.State](imnotice.Kind{}),
			supervisor.Entity[imtranscripts.State](imtranscripts.Kind{}),
			supervisor.Entity[imboard.State](imboard.Kind{Every: im.BoardInterval, Cluster: f.cfg.Cluster.Enabled()})},
		Effects: f.handlers(),
	}, nil
}

// agentSpecs maps im's agents onto the registry's specs, and im onto
// the binding kind's config.
func agentSpecs(im *config.IM) (map[string]agents.Spec, imbinding.Config) {
	specs := map[string]agents.Spec{}
	bc := imbinding.Config{Resumable: map[string]bool{}, Modes: map[string]string{}, RenameTimeout: im.RenameTimeout,
		KillOnClose: im.OnClose == config.OnCloseKill, Live: im.Live == config.LiveTurn, LiveEvery: im.LiveEvery,
		ShowTools: im.ShowTools, AlertAfter: im.AlertAfter}
	for _, a := range im.Agents.ByName() {
		specs[a.Name] = agents.Spec{Launch: a.Launch, Resume: a.Resume, Detect: a.Detect, Input: a.Input,
			Prompt: agents.PromptPatterns{Option: a.PromptOption, Question: a.PromptQuestion, Top: a.PromptTop,
				Ignore: a.PromptIgnore, Keys: a.PromptKeys}}
		bc.Resumable[a.Name] = a.Resume != ""
		switch a.Mode {
		case config.ModeOff:
		case config.ModeCycle:
			bc.Modes[a.Name] = imbinding.ModeCycle
		default:
			bc.Modes[a.Name] = a.Mode // a slash command
		}
		bc.Agents = append(bc.Agents, a.Name)
	}
	return specs, bc
}

// Rows the front end keeps.
const (
	recentTable = "im.recent"
)

// Mount records the tree; the IM front end adds no control routes.
func (f *FrontEnd) Mount(_ context.Context, t frontend.Tree, mux frontend.Mux) error {
	f.tree = t
	f.tools.tree = t // the same tree, whichever front end made the reader
	capture := func(ctx context.Context, window string) (string, error) {
		return f.wins.Capture(ctx, window, paneLines)
	}
	fl, err := newFollower(f.log.Named("follow"), f.parseLine, f.deliverReplies, capture, f.hookFile, f.tools.read)
	if err != nil {
		return fmt.Errorf("im: transcript watcher: %w", err)
	}
	f.follow = fl
	return nil
}

// Start runs every chat adapter's Run until Stop. A tmux server that an
// older thatch started first loses the secrets it took from that one's
// environment.
func (f *FrontEnd) Start(context.Context) error {
	f.scrubTmuxEnv(f.withheldEnv)
	ctx, cancel := context.WithCancel(context.Background())
	f.mu.Lock()
	f.cancel = cancel
	f.mu.Unlock()
	if f.cfg.Cluster.Enabled() {
		// Receiving is the lease holder's; every node sends.
		if err := f.startCluster(ctx); err != nil {
			cancel()
			return err
		}
	}
	for _, p := range f.chats {
		if f.cl == nil {
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				if err := p.a.Run(ctx, f.handler(p)); err != nil && ctx.Err() == nil {
					f.log.Error("receiving from the chat stopped", "platform", p.a.Name(), "error", err)
				}
			}()
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.setCommands(ctx, p.a)
		}()
	}
	signs := make(chan string, 64)
	f.wg.Add(2)
	go func() {
		defer f.wg.Done()
		f.runWatch(ctx, signs)
	}()
	go func() {
		defer f.wg.Done()
		f.runSigns(ctx, signs)
	}()
	return nil
}

// scrubTmuxEnv removes the variables named in drop (what ChildEnv kept
// from the server's environment, f.withheldEnv) from the tmux server's
// global environment (best effort).
func (f *FrontEnd) scrubTmuxEnv(drop []string) {
	if len(drop) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(f.runCtx, effectTimeout)
	defer cancel()
	if err := f.tmux.UnsetGlobalEnv(ctx, drop...); err != nil {
		f.log.Warn("cannot clear thatch's secrets from the tmux server's environment", "error", err)
	}
}

// withheld returns the names of the variables of environ that kept
// (environ filtered by config.ChildEnv) left out, in environ's order.
func withheld(environ, kept []string) []string {
	in := map[string]bool{}
	for _, kv := range kept {
		name, _, _ := strings.Cut(kv, "=")
		in[name] = true
	}
	var out []string
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); !in[name] && name != "" {
			out = append(out, name)
		}
	}
	return out
}

// Stop ends receiving and following, then closes tmux's control client.
func (f *FrontEnd) Stop(context.Context) error {
	f.mu.Lock()
	cancel := f.cancel
	f.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	f.wg.Wait()
	for _, p := range f.chats {
		p.cursor.stop()
	}
	f.stopCluster()
	if f.runCancel != nil {
		f.runCancel()
	}
	var errs []error
	if f.follow != nil {
		errs = append(errs, f.follow.Close())
	}
	if f.wins != nil {
		f.wins.Close()
	}
	if f.tmux != nil {
		errs = append(errs, f.tmux.Close())
	}
	return errors.Join(errs...)
}

// Report is the front end's status: the bindings' views, sorted by
// thread, at most limit (0: all), and how its chats' receiving goes.
func (f *FrontEnd) Report(limit int) frontend.Report {
	h := f.Health()
	rep := frontend.Report{Health: &h}
	if f.tree != nil {
		rep.Entities, rep.Total = frontend.Entities(f.tree, f.jr, imbinding.KindName, "thread", limit, 5*time.Second)
		all := rep.Entities
		if limit > 0 && rep.Total > len(all) {
			all, _ = frontend.Entities(f.tree, f.jr, imbinding.KindName, "thread", 0, 5*time.Second)
		}
		rep.Details = map[string]any{}
		if ws := f.untracked(all); len(ws) > 0 {
			rep.Details[DetailUntracked] = ws
		}
	}
	if f.cl != nil {
		if rep.Details == nil {
			rep.Details = map[string]any{}
		}
		ctx, cancel := context.WithTimeout(f.runCtx, 5*time.Second)
		rep.Details[DetailCluster] = f.cl.node.Status(ctx)
		cancel()
	}
	if masked := f.mask.masked(); masked != nil {
		if rep.Details == nil {
			rep.Details = map[string]any{}
		}
		rep.Details[DetailMasked] = masked
	}
	if len(rep.Details) == 0 {
		rep.Details = nil
	}
	return rep
}

// Names of the report's details: the untracked windows, the cluster as
// this node sees it (cluster.Status), and how many secrets of each kind
// were masked in what was sent to the chats.
const (
	DetailUntracked = "untrackedWindows"
	DetailCluster   = "cluster"
	DetailMasked    = "maskedSecrets"
)

// UntrackedWindow is a window on thatch's tmux server that no binding
// owns (an ended binding's kept window, one a user opened there).
type UntrackedWindow struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Dir   string `json:"dir"`
	Agent string `json:"agent,omitempty"`
}

// untracked lists the windows of thatch's tmux server that none of the
// bindings (their status views) owns.
func (f *FrontEnd) untracked(views []any) []UntrackedWindow {
	if f.tmux == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(f.runCtx, 5*time.Second)
	defer cancel()
	ws, err := f.tmux.Windows(ctx)
	if err != nil {
		return nil // no server: no window at all
	}
	var out []UntrackedWindow
	for _, w := range freeWindows(ws, views) {
		out = append(out, UntrackedWindow{ID: w.ID, Name: w.Name, Dir: w.Dir, Agent: f.detect(w)})
	}
	return out
}

// freeWindows are the windows of ws that no binding (views) owns: none
// bound to it, none in a flow that made or adopted it (its tag names a
// binding that did not end).
func freeWindows(ws []tmux.Window, views []any) []tmux.Window {
	owned, live := map[string]bool{}, map[string]bool{}
	for _, raw := range views {
		v, ok := raw.(imbinding.View)
		if !ok || v.State == imbinding.PhaseEnded {
			continue
		}
		live[v.Thread] = true
		if v.Window != "" {
			owned[v.Window] = true
		}
	}
	var out []tmux.Window
	for _, w := range ws {
		key, tagged := tagKey(w.Tag)
		if !owned[w.ID] && !(tagged && live[key]) {
			out = append(out, w)
		}
	}
	return out
}

// tagKey reads the binding key of a window tag ("thatch:<key>:<gen>").
func tagKey(tag string) (string, bool) {
	rest, ok := strings.CutPrefix(tag, "thatch:")
	i := strings.LastIndexByte(rest, ':')
	if !ok || i <= 0 {
		return "", false
	}
	return rest[:i], true
}

func bindingID(key string) actors.Identity {
	return actors.Identity{Kind: imbinding.KindName, ID: key}
}

// noticeID is the identity of the notices of the thread named by key
// (actors/imnotice).
func noticeID(key string) actors.Identity {
	return actors.Identity{Kind: imnotice.KindName, ID: key}
}

// expandRoots turns the configured roots into clean absolute paths.
func expandRoots(roots []string, home string) []string {
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		switch {
		case r == "~":
			r = home
		case len(r) > 2 && r[:2] == "~/":
			r = filepath.Join(home, r[2:])
		}
		out = append(out, filepath.Clean(r))
	}
	return out
}

// writeLaunchFiles writes, into dir, the files thatch passes to the
// agents it starts (each only adds to the user's own configuration and
// changes none of it), and returns what every launch line is given:
//   - claude's settings (--settings FILE): a SessionStart hook that runs
//     this binary's `hook claude`, so that the session in a window is known
//     from its start, after /clear and after /resume, with no setup by the
//     user (the hook also gives claude the memory's reminder); and the
//     permission rules that let the memory's tools run;
//   - the memory's MCP server (`thatch mcp`, naming this daemon's control
//     files), in claude's form (--mcp-config) and copilot's
//     (--additional-mcp-config); codex takes it on its line.
func writeLaunchFiles(dir, stateFile, tokenFile string) (agents.Extras, error) {
	exe, err := os.Executable()
	if err != nil {
		return agents.Extras{}, fmt.Errorf("the agents' hook and MCP server need thatch's own path: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return agents.Extras{}, fmt.Errorf("launch files directory: %w", err)
	}
	ctl := []string{"--state-file", stateFile, "--token-file", tokenFile}
	x := agents.Extras{
		ClaudeSettings: filepath.Join(dir, "claude-settings.json"),
		MCP: agents.MCPServer{Name: agents.MemoryServer, Command: exe, Args: append([]string{"mcp"}, ctl...),
			ClaudeConfig: filepath.Join(dir, "mcp-claude.json"), CopilotConfig: filepath.Join(dir, "mcp-copilot.json")},
	}
	files := map[string]string{
		x.ClaudeSettings:    agents.ClaudeLaunchSettings(exe, ctl, agents.MemoryServer),
		x.MCP.ClaudeConfig:  agents.ClaudeMCPConfig(x.MCP),
		x.MCP.CopilotConfig: agents.CopilotMCPConfig(x.MCP),
	}
	for path, body := range files {
		if err := writeIfChanged(path, []byte(body+"\n")); err != nil {
			return agents.Extras{}, err
		}
	}
	return x, nil
}

// writeIfChanged replaces path's content with body, atomically, unless it
// holds it already.
func writeIfChanged(path string, body []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, body) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, body, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}
