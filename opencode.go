package thatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/session"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/hosts/opencode"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/supervisor"
)

// deliverTimeout bounds how long a plugin call waits for its message to be
// journaled.
const deliverTimeout = 30 * time.Second

// openCode is the opencode front end: it routes host events and plugin
// calls to session family entities, runs their effects against hosts, and
// keeps one event stream per connected server.
type openCode struct {
	log   hclog.Logger
	cfg   *config.Config
	tree  *supervisor.Tree
	dir   *sessionDirectory
	store func(directory string) (project, global string)
	// journaled reports whether a family entity has a journal.
	journaled func(family string) bool

	mu    sync.Mutex
	hosts map[string]*hostConn
}

// hostConn is one opencode server the daemon is connected to. Its stream
// goroutine is the host's single owner: it decodes events and delivers them
// in order.
type hostConn struct {
	name      string
	url       string
	info      HostInfo
	client    *opencode.Client
	stream    *opencode.Stream
	pid       int // of a plugin-registered server; 0 for a configured one
	directory string
}

func familyID(id string) actors.Identity { return actors.Identity{Kind: session.KindName, ID: id} }

// route returns the family entity a message concerns, recording what it
// learns (a child's parent, a family's host) before the message is
// delivered.
func (o *openCode) route(msg any) (actors.Identity, error) {
	switch m := msg.(type) {
	case *messages.SessionCreated:
		if m.ParentID != "" {
			fam, err := o.dir.link(m.SessionID, m.ParentID)
			if rec := o.dir.hostOf(fam); rec != "" && rec != m.Host && o.connected(rec) {
				m.Host = rec // the family's connection, as for its own events
			}
			return familyID(fam), err
		}
		if err := o.dir.setDirectory(m.SessionID, m.Directory); err != nil {
			return actors.Identity{}, err
		}
		// A new session needs no reconcile: thatch sees it from the start.
		var id actors.Identity
		id, m.Host = o.onHost(m.SessionID, m.Host, false)
		return id, nil
	case *messages.SessionIdle:
		var id actors.Identity
		id, m.Host = o.onHost(m.SessionID, m.Host, true) // records the host: see onHost
		return id, nil
	case *messages.SessionErrored:
		var id actors.Identity
		id, m.Host = o.onHost(m.SessionID, m.Host, true)
		return id, nil
	case *messages.SessionDeleted:
		return familyID(o.dir.family(m.SessionID)), nil
	case *messages.SessionCompacted:
		var id actors.Identity
		id, m.Host = o.onHost(m.SessionID, m.Host, true)
		return id, nil
	case *messages.ToolExecuted:
		// The plugin's calls name the server, not the directory-scoped
		// connection whose listing a reconcile reads: they record no host.
		return familyID(o.dir.family(m.Interaction.SessionID)), nil
	case *messages.CommandExecuting:
		return familyID(o.dir.family(m.SessionID)), nil
	case *messages.FetchPayload:
		return familyID(o.dir.family(m.CallerID)), nil
	case *messages.ExtractionDone:
		return familyID(o.dir.family(m.CallerID)), nil
	case *messages.MemoryWritten:
		return familyID(o.dir.family(m.CallerID)), nil
	}
	return actors.Identity{}, fmt.Errorf("thatch: no route for %T", msg)
}

// onHost returns the family of session and records the host it lives on,
// so that its host's reconciles reach it: a session thatch first meets
// through one of its stream events (it existed before the daemon started,
// or its session.created was lost) has no host recorded, and one whose
// opencode restarted on another port now lives on a new host. A recorded
// host that is still watched is kept: the same server watched under two
// names must not rewrite the record on every event. When reconcile is set
// and the record changes, the family is reconciled with the host at once
// (it may wait for calls its old host can no longer answer, it may have
// children thatch did not see, or it may be a child itself), before the
// event is delivered. Failing to record or reconcile is logged, not fatal:
// the event must not be lost over it.
//
// It also returns the host the event should name to the family: the
// recorded one. When one server is watched under two names (configured,
// and registered by its plugin), its events arrive twice; naming one host
// keeps the family's effects on one connection.
func (o *openCode) onHost(session, host string, reconcile bool) (actors.Identity, string) {
	fam := o.dir.family(session)
	if host == "" {
		return familyID(fam), host
	}
	changed := false
	err := o.dir.moveHost(fam, host, func(cur string) bool {
		changed = cur == "" || (!o.connected(cur) && o.connected(host))
		return changed
	})
	if err != nil {
		o.log.Warn("cannot record the host of a session", "session", session, "host", host, "error", err)
		return familyID(fam), host
	}
	if !changed {
		// This host, or another still watched: the event names that one.
		return familyID(fam), o.dir.hostOf(fam)
	}
	if reconcile {
		o.reconcileMoved(fam, host)
	}
	// The listing may have shown that session is a child of a family.
	return familyID(o.dir.family(session)), host
}

// reconcileMoved reconciles one family with the host its events now come
// from, bounded by the request timeout: it runs on that host's stream.
func (o *openCode) reconcileMoved(fam, host string) {
	l, err := o.listerOf(host)
	if err == nil {
		// Two requests: a listing and the statuses.
		ctx, cancel := context.WithTimeout(context.Background(), 2*o.cfg.OpenCode.RequestTimeout)
		err = o.reconcileOnly(ctx, host, l, map[string]bool{fam: true})
		cancel()
	}
	if err != nil {
		o.log.Warn("cannot reconcile a session with its new host", "session", fam, "host", host, "error", err)
	}
}

// connected reports whether a host of that name is being watched and
// reachable now: its event stream is up (a configured server stays known
// while it is down). A host an embedder supplies has no stream and counts
// as connected.
func (o *openCode) connected(name string) bool {
	o.mu.Lock()
	h, ok := o.hosts[name]
	o.mu.Unlock()
	return ok && (h.stream == nil || h.stream.Up())
}

// deliver routes msg and waits until its family has journaled it.
func (o *openCode) deliver(msg any) error {
	id, err := o.route(msg)
	if err != nil {
		return err
	}
	if err := o.tree.Deliver(id, msg, deliverTimeout); err != nil {
		return err
	}
	if d, ok := msg.(*messages.SessionDeleted); ok && d.SessionID == id.ID {
		// The parent is gone and its family journaled that: its children's
		// links and its host record route nothing any more.
		return o.dir.forget(id.ID)
	}
	return nil
}

// request routes msg and returns the family's reply.
func (o *openCode) request(msg any) (any, error) {
	id, err := o.route(msg)
	if err != nil {
		return nil, err
	}
	return o.tree.Request(id, msg, deliverTimeout)
}

// hostInfo is the executor's view of connected hosts.
func (o *openCode) hostInfo(name string) (HostInfo, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	h, ok := o.hosts[name]
	if !ok {
		return HostInfo{}, false
	}
	return h.info, true
}

// addStatic registers a host whose client the embedder supplies (tests use a
// recording fake). It has no event stream; the embedder delivers events.
func (o *openCode) addStatic(name string, info HostInfo) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.hosts[name] = &hostConn{name: name, info: info}
}

// connect starts watching an opencode server. A server already known by
// name is left as it is.
func (o *openCode) connect(ctx context.Context, s config.Server, pid int, directory string) (*hostConn, error) {
	o.mu.Lock()
	if h, ok := o.hosts[s.Name]; ok {
		o.mu.Unlock()
		return h, nil
	}
	o.mu.Unlock()
	client, err := opencode.New(opencode.Options{
		BaseURL:   s.URL,
		Host:      s.Name,
		Directory: directory,
		Username:  s.Username,
		Password:  s.Password.Reveal(),
		Timeout:   o.cfg.OpenCode.RequestTimeout,
		Logger:    o.log.Named("client").With("host", s.Name),
	})
	if err != nil {
		return nil, err
	}
	api := s.API
	if api == "" || api == config.APIAuto {
		// opencode 1.18 serves both surfaces; thatch speaks v1 wherever the
		// v1 session routes answer, and degrades to v2 only without them.
		dctx, cancel := context.WithTimeout(ctx, o.cfg.OpenCode.RequestTimeout)
		api = config.APIV1
		if _, lerr := client.ListSessions(dctx); lerr != nil {
			if d, derr := client.Detect(dctx); derr == nil && d == config.APIV2 {
				api = config.APIV2
			} else {
				o.log.Warn("cannot reach the server's session API yet; assuming v1", "host", s.Name, "error", lerr)
			}
		}
		cancel()
	}
	// The event stream and reconcile stay on the v1 client; effects go to
	// the v2 surface when the server speaks only that.
	info := HostInfo{Client: client, API: api}
	if api == config.APIV2 {
		info.Client = client.V2()
	}
	h := &hostConn{name: s.Name, url: s.URL, client: client, pid: pid, directory: directory, info: info}
	h.stream, err = opencode.NewStream(opencode.StreamOptions{
		Client:    client,
		Handler:   func(msg any) { o.onEvent(h, msg) },
		OnConnect: func(ctx context.Context) { o.reconcileRetrying(ctx, h.name, client) },
		Logger:    o.log.Named("stream").With("host", s.Name),
	})
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	if prev, ok := o.hosts[s.Name]; ok { // lost a race with another connect
		o.mu.Unlock()
		return prev, nil
	}
	o.hosts[s.Name] = h
	o.mu.Unlock()
	h.stream.Start()
	o.log.Info("watching opencode server", "host", s.Name, "url", redactURL(s.URL), "api", api)
	return h, nil
}

// disconnect stops a host's stream. Its sessions' state stays journaled.
func (o *openCode) disconnect(name, why string) {
	o.mu.Lock()
	h, ok := o.hosts[name]
	delete(o.hosts, name)
	o.mu.Unlock()
	if !ok {
		return
	}
	if h.stream != nil {
		h.stream.Stop()
	}
	if h.client != nil {
		h.client.CloseIdleConnections()
	}
	o.log.Info("stopped watching opencode server", "host", name, "reason", why)
}

// stop disconnects every host.
func (o *openCode) stop(context.Context) error {
	o.mu.Lock()
	names := make([]string, 0, len(o.hosts))
	for n := range o.hosts {
		names = append(names, n)
	}
	o.mu.Unlock()
	for _, n := range names {
		o.disconnect(n, "shutdown")
	}
	return nil
}

// onEvent runs on the host's stream goroutine: it delivers each session
// event in stream order and waits for it to be journaled.
func (o *openCode) onEvent(h *hostConn, msg any) {
	switch msg.(type) {
	case *opencode.Connected, *opencode.Heartbeat, nil:
		return
	}
	if err := o.deliver(msg); err != nil {
		o.log.Error("cannot deliver host event", "host", h.name, "event", fmt.Sprintf("%T", msg), "error", err)
	}
}

// sessionLister is what a reconcile reads from a host.
type sessionLister interface {
	ListSessions(ctx context.Context) ([]opencode.Session, error)
	SessionStatus(ctx context.Context) (map[string]opencode.SessionStatus, error)
}

// reconcile runs after every (re)connect: the stream has no replay, so
// thatch compares what the host lists with what it holds.
func (o *openCode) reconcile(ctx context.Context, host string, l sessionLister) error {
	return o.reconcileOnly(ctx, host, l, nil)
}

// reconcileOnly is reconcile limited to the families in only (all of the
// host's when only is nil).
func (o *openCode) reconcileOnly(ctx context.Context, host string, l sessionLister, only map[string]bool) error {
	sessions, err := l.ListSessions(ctx)
	if err != nil {
		return fmt.Errorf("cannot list sessions: %w", err)
	}
	statuses, err := l.SessionStatus(ctx)
	if err != nil {
		return fmt.Errorf("cannot read session statuses: %w", err)
	}
	listed := opencode.ToHostSessions(sessions, statuses)
	byID := map[string]messages.HostSession{}
	for _, s := range listed {
		byID[s.SessionID] = s
	}
	// Learn links first, so children route to their families.
	for _, s := range listed {
		if s.ParentID != "" {
			if _, err := o.dir.link(s.SessionID, s.ParentID); err != nil {
				return fmt.Errorf("cannot record child: %w", err)
			}
		}
	}
	families := map[string]*messages.FamilyReconciled{}
	known := o.dir.familiesOn(host)
	for _, fam := range known {
		if only != nil && !only[fam] {
			continue
		}
		if o.dir.family(fam) != fam {
			o.strayChild(host, fam)
			continue
		}
		families[fam] = &messages.FamilyReconciled{Host: host, Parent: messages.HostSession{SessionID: fam}}
	}
	for _, s := range listed {
		fam := o.dir.family(s.SessionID)
		fr, known := families[fam]
		if !known {
			continue // a family thatch never saw: nothing to reconcile
		}
		if s.SessionID == fam {
			fr.Present, fr.Parent = true, s
			// A family first met through its events has no directory yet,
			// and its payload would name the global store only.
			if err := o.dir.adoptDirectory(fam, s.Directory); err != nil {
				o.log.Error("reconcile: cannot record directory", "family", fam, "error", err)
			}
		} else {
			fr.Children = append(fr.Children, s)
		}
	}
	ids := make([]string, 0, len(families))
	for id := range families {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fr := families[id]
		if !fr.Present && len(sessions) == 0 && len(known) > 0 {
			// An empty list for a host with families is more likely a
			// project mismatch than every session deleted: don't wipe.
			o.log.Warn("reconcile: host lists no sessions; keeping families", "host", host)
			return nil
		}
		if !fr.Present && only != nil {
			// A listing read for one family's first event proves little
			// by leaving it out (it lists one directory, and a session
			// can run elsewhere): its deletion is left to session.deleted
			// and to the host's connect reconcile.
			continue
		}
		if err := o.tree.Deliver(familyID(id), fr, deliverTimeout); err != nil {
			o.log.Error("reconcile: cannot deliver", "family", id, "error", err)
			continue
		}
		if !fr.Present {
			// The family journaled its parent's deletion: like a
			// session.deleted, its links and host record route nothing.
			if err := o.dir.forget(id); err != nil {
				o.log.Error("reconcile: cannot forget family", "family", id, "error", err)
			}
		}
	}
	o.log.Debug("reconciled", "host", host, "sessions", len(listed), "families", len(families))
	return nil
}

// strayChild handles a "family" that a listing shows to be a child (its
// session.created was lost, so thatch met it through its own events): its
// host record goes, and its events route to its real family from now on.
// If its plugin calls already made an entity of it, that entity is ended
// like a deleted parent: what it buffered are the child's own calls, which
// are never extracted, and the sweep forgets it later.
func (o *openCode) strayChild(host, id string) {
	if err := o.dir.dropFamilyRecord(id); err != nil {
		o.log.Error("reconcile: cannot drop a child's family record", "session", id, "error", err)
		return
	}
	if o.journaled == nil || !o.journaled(id) {
		return
	}
	fr := &messages.FamilyReconciled{Host: host, Parent: messages.HostSession{SessionID: id}}
	if err := o.tree.Deliver(familyID(id), fr, deliverTimeout); err != nil {
		o.log.Error("reconcile: cannot end a child's stray family", "session", id, "error", err)
	}
}

// reconcileAttempts is how often a connect tries its reconcile before it
// gives up until the next connect; the waits between tries double from
// reconcileRetryWait.
const reconcileAttempts = 3

var reconcileRetryWait = time.Second // a variable for the tests

// reconcileRetrying runs a connect's reconcile, trying again a few times:
// families that a restart left waiting for their host resume only on a
// reconcile, so one failed listing must not leave them until the next
// reconnect. The stream's events wait meanwhile.
func (o *openCode) reconcileRetrying(ctx context.Context, host string, l sessionLister) {
	wait := reconcileRetryWait
	for try := 1; ; try++ {
		err := o.reconcile(ctx, host, l)
		if err == nil {
			return
		}
		if try == reconcileAttempts || ctx.Err() != nil {
			o.log.Warn("reconcile failed; the next connect tries again", "host", host, "tries", try, "error", err)
			return
		}
		o.log.Debug("reconcile failed; trying again", "host", host, "in", wait, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// listerOf returns what lists a connected host's sessions: its client, or
// an embedder's client that can.
func (o *openCode) listerOf(name string) (sessionLister, error) {
	o.mu.Lock()
	h, ok := o.hosts[name]
	o.mu.Unlock()
	switch {
	case !ok:
		return nil, fmt.Errorf("thatch: host %q is not connected", name)
	case h.client != nil:
		return h.client, nil
	}
	if c, ok := h.info.Client.(sessionLister); ok {
		return c, nil
	}
	return nil, fmt.Errorf("thatch: host %q cannot list its sessions", name)
}

// reconcileHost reconciles a connected host on demand; a host supplied by
// an embedder must be able to list its sessions.
func (o *openCode) reconcileHost(ctx context.Context, name string) error {
	l, err := o.listerOf(name)
	if err != nil {
		return err
	}
	if err := o.reconcile(ctx, name, l); err != nil {
		return fmt.Errorf("thatch: reconcile %s: %w", name, err)
	}
	return nil
}

// healStranded moves sessions whose directory was deleted (a removed git
// worktree) back to the project's worktree, on every connected host, and
// stops watching plugin-registered servers whose process exited.
func (o *openCode) healStranded(ctx context.Context) {
	o.reapGone()
	o.mu.Lock()
	hosts := make([]*hostConn, 0, len(o.hosts))
	for _, h := range o.hosts {
		if h.client != nil {
			hosts = append(hosts, h)
		}
	}
	o.mu.Unlock()
	for _, h := range hosts {
		sessions, err := h.client.ListSessions(ctx)
		if err != nil {
			continue
		}
		var project *opencode.Project
		for _, s := range sessions {
			if s.Directory == "" || s.ParentID != "" {
				continue
			}
			if _, err := os.Stat(s.Directory); !errors.Is(err, os.ErrNotExist) {
				continue
			}
			if project == nil {
				p, err := h.client.CurrentProject(ctx)
				if err != nil || p.Worktree == "" || p.Worktree == "/" {
					break
				}
				project = &p
			}
			if s.Directory == project.Worktree {
				continue
			}
			if err := h.client.MoveSession(ctx, s.ID, project.Worktree); err != nil {
				o.log.Warn("cannot move stranded session", "host", h.name, "session", s.ID, "from", s.Directory, "error", err)
				continue
			}
			o.log.Info("moved stranded session to the project worktree", "host", h.name, "session", s.ID, "from", s.Directory, "to", project.Worktree)
		}
	}
}

// reapGone disconnects plugin-registered hosts whose process is gone.
func (o *openCode) reapGone() {
	o.mu.Lock()
	var gone []string
	for n, h := range o.hosts {
		if h.pid > 0 && syscall.Kill(h.pid, 0) == syscall.ESRCH {
			gone = append(gone, n)
		}
	}
	o.mu.Unlock()
	for _, n := range gone {
		o.disconnect(n, "its process exited")
	}
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = url.User(u.User.Username())
	return u.String()
}

// Plugin routes. Every body is JSON; every answer is JSON.

type toolBody struct {
	Host      string          `json:"host"`
	SessionID string          `json:"sessionID"`
	CallID    string          `json:"callID"`
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args"`
	Title     string          `json:"title"`
	Output    string          `json:"output"`
}

type commandBody struct {
	Host      string `json:"host"`
	SessionID string `json:"sessionID"`
	Command   string `json:"command"`
	Arguments string `json:"arguments"`
}

type callerBody struct {
	SessionID string `json:"sessionID"`
	// Target is the payload tool's optional session_id argument.
	Target string `json:"target"`
}

type registerBody struct {
	URL       string `json:"url"`
	Directory string `json:"directory"`
	PID       int    `json:"pid"`
	Username  string `json:"username"`
	Password  string `json:"password"`
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20))
	if err := dec.Decode(v); err != nil {
		control.WriteError(w, http.StatusBadRequest, "bad JSON body: "+err.Error())
		return false
	}
	return true
}

func (o *openCode) mount(s *control.Server) {
	s.MountFunc("POST /v1/opencode/tool", func(w http.ResponseWriter, r *http.Request) {
		var b toolBody
		if !decodeBody(w, r, &b) {
			return
		}
		if b.SessionID == "" || b.Tool == "" {
			control.WriteError(w, http.StatusBadRequest, "sessionID and tool are required")
			return
		}
		msg := &messages.ToolExecuted{Host: b.Host, Interaction: messages.Interaction{
			ID: b.CallID, SessionID: b.SessionID, Tool: b.Tool, Args: b.Args, Title: b.Title, Output: b.Output}}
		if err := o.deliver(msg); err != nil {
			control.WriteError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		control.WriteJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	s.MountFunc("POST /v1/opencode/command", func(w http.ResponseWriter, r *http.Request) {
		var b commandBody
		if !decodeBody(w, r, &b) {
			return
		}
		if b.SessionID == "" || b.Command == "" {
			control.WriteError(w, http.StatusBadRequest, "sessionID and command are required")
			return
		}
		cmd := strings.TrimPrefix(b.Command, "/")
		if err := o.deliver(&messages.CommandExecuting{Host: b.Host, SessionID: b.SessionID, Command: cmd, Arguments: b.Arguments}); err != nil {
			control.WriteError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		control.WriteJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	s.MountFunc("POST /v1/opencode/payload", func(w http.ResponseWriter, r *http.Request) {
		var b callerBody
		if !decodeBody(w, r, &b) || !requireSession(w, b.SessionID) {
			return
		}
		res, err := o.request(&messages.FetchPayload{CallerID: b.SessionID, TargetID: b.Target})
		if err != nil {
			control.WriteError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		p, ok := res.(*messages.PayloadFetched)
		if !ok {
			control.WriteError(w, http.StatusInternalServerError, fmt.Sprintf("unexpected answer %T", res))
			return
		}
		if len(p.Interactions) == 0 {
			control.WriteJSON(w, http.StatusOK, nil)
			return
		}
		project, global := "global", "global"
		if o.store != nil {
			project, global = o.store(o.directoryOf(p.ParentID))
		}
		control.WriteJSON(w, http.StatusOK, map[string]any{
			"interactions": p.Interactions, "projectStore": project, "globalStore": global})
	})
	s.MountFunc("POST /v1/opencode/done", func(w http.ResponseWriter, r *http.Request) {
		var b callerBody
		if !decodeBody(w, r, &b) || !requireSession(w, b.SessionID) {
			return
		}
		res, err := o.request(&messages.ExtractionDone{CallerID: b.SessionID})
		if err != nil {
			control.WriteError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		control.WriteJSON(w, http.StatusOK, res)
	})
	s.MountFunc("POST /v1/opencode/register", func(w http.ResponseWriter, r *http.Request) {
		var b registerBody
		if !decodeBody(w, r, &b) {
			return
		}
		u, err := url.Parse(b.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			control.WriteError(w, http.StatusBadRequest, "url must be the opencode server's http URL")
			return
		}
		if !isLoopbackHost(u.Hostname()) {
			control.WriteError(w, http.StatusBadRequest, "only opencode servers on loopback can register")
			return
		}
		srv := config.Server{Name: "opencode@" + u.Host, URL: b.URL, API: config.APIAuto,
			Username: b.Username, Password: config.Secret(b.Password)}
		if srv.Username == "" {
			srv.Username = config.DefaultServerUsername
		}
		o.reapGone()
		h, err := o.connect(context.WithoutCancel(r.Context()), srv, b.PID, b.Directory)
		if err != nil {
			control.WriteError(w, http.StatusBadGateway, err.Error())
			return
		}
		control.WriteJSON(w, http.StatusOK, map[string]string{"host": h.name, "api": h.info.API})
	})
}

// directoryOf returns the directory a family's parent session runs in, as
// its host reported it (empty when unknown).
func (o *openCode) directoryOf(family string) string {
	return o.dir.directory(family)
}

func requireSession(w http.ResponseWriter, id string) bool {
	if id == "" {
		control.WriteError(w, http.StatusBadRequest, "sessionID is required")
		return false
	}
	return true
}

func isLoopbackHost(h string) bool {
	return h == "localhost" || strings.HasPrefix(h, "127.") || h == "::1"
}

// sessionViews lists every family's status view, live ones first asked
// directly; passivated families are woken to answer, which is fine for a
// command a person runs.
func (o *openCode) sessionViews(ids []string) []any {
	out := make([]any, 0, len(ids))
	for _, id := range ids {
		res, err := o.tree.Request(familyID(id), &actors.Inspect{}, 5*time.Second)
		if err != nil {
			out = append(out, map[string]string{"family": id, "error": err.Error()})
			continue
		}
		if in, ok := res.(*actors.Inspection); ok {
			out = append(out, in.View)
		}
	}
	return out
}
