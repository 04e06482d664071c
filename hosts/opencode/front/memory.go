package front

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/internal/redact"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence/memory"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// memoryService serves the memory tools for sessions: it picks the stores
// from the calling session's directory and tells the session's family what
// was written, so claims complete and the toast counts.
type memoryService struct {
	log   hclog.Logger
	mem   *memory.Store
	oc    *FrontEnd
	cache sync.Map // directory -> project store
}

// projectStore is the store of a directory's git remote ("global" without
// one). Remotes rarely change, so the answer is cached per directory.
func (m *memoryService) projectStore(dir string) string {
	if dir == "" {
		return memory.GlobalStore
	}
	if v, ok := m.cache.Load(dir); ok {
		return v.(string)
	}
	s := memory.ProjectStore(dir)
	m.cache.Store(dir, s)
	return s
}

// storesFor returns (project, global) store names for a caller: an
// opencode session (its family's directory), or, for a caller that is
// no opencode session (an MCP client: claude, codex, ...), the directory
// it works in.
func (m *memoryService) storesFor(c caller) (string, string) {
	if c.Directory != "" {
		return m.projectStore(c.Directory), memory.GlobalStore
	}
	return m.projectStore(m.oc.directoryOf(m.oc.dir.family(c.SessionID))), memory.GlobalStore
}

// storeOr is store, or the caller's project store when it is "".
func (m *memoryService) storeOr(store string, c caller) string {
	if store != "" {
		return store
	}
	project, _ := m.storesFor(c)
	return project
}

// caller names who calls a memory route: an opencode session (the
// plugin's tools) or a directory (thatch mcp, for any other agent).
type caller struct {
	SessionID string `json:"sessionID"`
	// Directory is the working directory of a caller that is no
	// opencode session; it picks the project store. It must be
	// absolute.
	Directory string `json:"directory"`
}

// valid answers 400 and says false for a caller that cannot be served.
func (c caller) valid(w http.ResponseWriter) bool {
	if c.Directory != "" && !filepath.IsAbs(c.Directory) {
		badRequest(w, "directory must be an absolute path")
		return false
	}
	return requireIDs(w, idField{"sessionID", c.SessionID, false})
}

// heartbeat renders the hygiene lines for a directory's stores ("" when
// nothing is raised).
func (m *memoryService) heartbeat(dir string) string {
	project := m.projectStore(dir)
	stores := memory.SessionStores(project)
	sig, err := m.mem.Hygiene(stores, func(store string) ([]string, bool) {
		if store != project || dir == "" {
			return nil, false
		}
		b, err := memory.GitBranches(dir)
		return b, err == nil
	})
	if err != nil {
		m.log.Warn("hygiene heartbeat failed", "error", err)
		return ""
	}
	return strings.Join(memory.HeartbeatLines(sig), "\n")
}

type rememberBody struct {
	caller
	Label      string `json:"label"`
	Content    string `json:"content"`
	Store      string `json:"store"`
	Branch     string `json:"branch"`
	Confidence int    `json:"confidence"`
	Overwrite  bool   `json:"overwrite"`
	Archived   bool   `json:"archived"`
	// Created and Updated are sent by `thatch memory import` only, to
	// keep an exported memory's times; zero means now.
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

type recallBody struct {
	caller
	Query  string `json:"query"`
	Store  string `json:"store"`
	Branch string `json:"branch"`
	Limit  int    `json:"limit"`
}

type forgetBody struct {
	caller
	Store string `json:"store"`
	Label string `json:"label"`
	Slug  string `json:"slug"`
}

type listBody struct {
	caller
	Store  string `json:"store"`
	Branch string `json:"branch"`
}

type resolveBody struct {
	Store   string `json:"store"`
	A       string `json:"a"`
	B       string `json:"b"`
	Verdict string `json:"verdict"`
}

func memoryError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, memory.ErrExists), errors.Is(err, memory.ErrInvalid):
		badRequest(w, err.Error())
	case errors.Is(err, redact.ErrSecret):
		// The store refused a memory holding a secret; the model reads
		// the reason (the kinds, never the secret) and can say it again
		// without it.
		badRequest(w, err.Error())
	case errors.Is(err, memory.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error(), false)
	default:
		writeError(w, http.StatusInternalServerError, err.Error(), false)
	}
}

// written tells the caller's family about a memory write. A session that
// thatch does not know (no family journal) still gets its write; the
// notice then only creates an empty family, which is harmless.
func (m *memoryService) written(ctx context.Context, session string, op messages.MemoryOp) {
	if session == "" {
		return
	}
	if err := m.oc.deliver(ctx, &messages.MemoryWritten{CallerID: session, Op: op}); err != nil {
		m.log.Warn("cannot record memory write for its session", "session", session, "error", err)
	}
}

func (m *memoryService) mount(s frontend.Mux) {
	s.MountFunc("POST /v1/memory/remember", m.remember)
	s.MountFunc("POST /v1/memory/recall", m.recall)
	s.MountFunc("POST /v1/memory/forget", m.forget)
	s.MountFunc("POST /v1/memory/list", m.list)
	s.MountFunc("POST /v1/memory/show", m.show)
	s.MountFunc("GET /v1/memory/hygiene", m.hygiene)
	s.MountFunc("POST /v1/memory/resolve", m.resolve)
	s.MountFunc("POST /v1/memory/reminder", m.reminder)
}

type reminderBody struct {
	// Directory is where the agent works (absolute); its project store's
	// hygiene is reported.
	Directory string `json:"directory"`
}

// reminder serves POST /v1/memory/reminder: the session-start reminder
// for an agent that is no opencode session (thatch mcp's instructions,
// claude's SessionStart hook), with the hygiene lines of its stores.
func (m *memoryService) reminder(w http.ResponseWriter, r *http.Request) {
	var b reminderBody
	if !decodeBody(w, r, &b) || !(caller{Directory: b.Directory}).valid(w) {
		return
	}
	control.WriteJSON(w, http.StatusOK, map[string]string{"text": withHygiene(memoryToolsReminder, m.heartbeat(b.Directory))})
}

// remember serves POST /v1/memory/remember.
func (m *memoryService) remember(w http.ResponseWriter, r *http.Request) {
	var b rememberBody
	if !decodeBody(w, r, &b) || !b.valid(w) {
		return
	}
	store := m.storeOr(b.Store, b.caller)
	res, err := m.mem.Remember(r.Context(), memory.RememberInput{Label: b.Label, Content: b.Content, Store: store,
		Branch: b.Branch, Confidence: b.Confidence, Overwrite: b.Overwrite, Archived: b.Archived,
		Created: b.Created, Updated: b.Updated})
	if err != nil {
		memoryError(w, err)
		return
	}
	op := messages.MemoryCreated
	if res.Op == memory.OpUpdated {
		op = messages.MemoryUpdated
	}
	m.written(r.Context(), b.SessionID, op)
	out := map[string]any{"slug": res.Entry.Slug, "store": res.Entry.Store, "op": res.Op}
	if len(res.Similar) > 0 {
		var names []string
		for _, s := range res.Similar {
			names = append(names, s.Label+" ("+s.Slug+")")
		}
		out["similar"] = res.Similar
		out["warning"] = "saved, but it is close to existing memories: " + strings.Join(names, ", ") +
			"; consider updating one of them with overwrite instead"
	}
	control.WriteJSON(w, http.StatusOK, out)
}

// recall serves POST /v1/memory/recall.
func (m *memoryService) recall(w http.ResponseWriter, r *http.Request) {
	var b recallBody
	if !decodeBody(w, r, &b) || !b.valid(w) {
		return
	}
	stores := []string(nil)
	if b.Store != "" {
		stores = []string{b.Store}
	} else {
		p, _ := m.storesFor(b.caller)
		stores = memory.SessionStores(p)
	}
	hits, err := m.mem.Recall(r.Context(), memory.RecallInput{Query: b.Query, Stores: stores, Branch: b.Branch, Limit: b.Limit})
	if err != nil {
		memoryError(w, err)
		return
	}
	if hits == nil {
		hits = []memory.Hit{}
	}
	control.WriteJSON(w, http.StatusOK, map[string]any{"hits": hits})
}

// forget serves POST /v1/memory/forget.
func (m *memoryService) forget(w http.ResponseWriter, r *http.Request) {
	var b forgetBody
	if !decodeBody(w, r, &b) || !b.valid(w) {
		return
	}
	key := b.Slug
	if key == "" {
		key = b.Label
	}
	store := m.storeOr(b.Store, b.caller)
	e, err := m.mem.Forget(store, key)
	if errors.Is(err, memory.ErrNotFound) && b.Store == "" && store != memory.GlobalStore {
		e, err = m.mem.Forget(memory.GlobalStore, key)
	}
	if err != nil {
		memoryError(w, err)
		return
	}
	m.written(r.Context(), b.SessionID, messages.MemoryDeleted)
	control.WriteJSON(w, http.StatusOK, map[string]any{"forgotten": e})
}

// list serves POST /v1/memory/list.
func (m *memoryService) list(w http.ResponseWriter, r *http.Request) {
	var b listBody
	if !decodeBody(w, r, &b) || !b.valid(w) {
		return
	}
	var stores []string
	switch {
	case b.Store != "":
		stores = []string{b.Store}
	case b.SessionID != "" || b.Directory != "":
		p, _ := m.storesFor(b.caller)
		stores = memory.SessionStores(p)
	default:
		stores = m.mem.Stores()
	}
	out := []memory.Entry{}
	for _, st := range stores {
		es, err := m.mem.List(st, b.Branch)
		if err != nil {
			memoryError(w, err)
			return
		}
		out = append(out, es...)
	}
	control.WriteJSON(w, http.StatusOK, map[string]any{"entries": out})
}

// show serves POST /v1/memory/show.
func (m *memoryService) show(w http.ResponseWriter, r *http.Request) {
	var b forgetBody
	if !decodeBody(w, r, &b) {
		return
	}
	store := b.Store
	if store == "" {
		store = memory.GlobalStore
	}
	e, err := m.mem.Find(store, firstNonEmpty(b.Slug, b.Label))
	if err != nil {
		memoryError(w, err)
		return
	}
	control.WriteJSON(w, http.StatusOK, e)
}

// hygiene serves GET /v1/memory/hygiene.
func (m *memoryService) hygiene(w http.ResponseWriter, r *http.Request) {
	control.WriteJSON(w, http.StatusOK, memory.HygieneReport(m.mem))
}

// resolve serves POST /v1/memory/resolve.
func (m *memoryService) resolve(w http.ResponseWriter, r *http.Request) {
	var b resolveBody
	if !decodeBody(w, r, &b) {
		return
	}
	if err := m.mem.ResolvePair(b.Store, b.A, b.B, memory.Verdict(b.Verdict)); err != nil {
		memoryError(w, err)
		return
	}
	control.WriteJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// reminderText is the session-start reminder for a session in directory,
// with the hygiene heartbeat of its stores when any signal is raised.
func (o *FrontEnd) reminderText(ctx context.Context, dir string) string {
	if o.opts.Reminder != nil {
		return o.opts.Reminder(ctx, dir)
	}
	return withHygiene(sessionStartReminder, o.memSvc.heartbeat(dir))
}

// withHygiene is a reminder with the hygiene lines of its stores, when
// any signal is raised (hb is not "").
func withHygiene(reminder, hb string) string {
	if hb == "" {
		return reminder
	}
	return reminder + "\n\nMemory hygiene (fix with memory_recall / memory_remember overwrite / memory_forget):\n" + hb
}

// memoryToolsReminder says which memory tools there are and when to use
// them; it is what every agent is told at its start.
const memoryToolsReminder = `thatch keeps a durable memory shared by every agent on this machine. Its tools:
- memory_recall(query): look up durable facts saved from earlier sessions before you re-discover them;
- memory_remember(label, content): save a fact that will still be true and useful weeks from now (one fact per memory, a specific label; secrets are refused);
- memory_forget(label) and memory_list(): correct or review what is stored.`

// sessionStartReminder is an opencode session's reminder: the tools, and
// the extraction thatch runs for it.
const sessionStartReminder = "thatch is watching this session. " + memoryToolsReminder + `
Buffered tool calls are turned into memories automatically when the session goes idle.`
