// Package front is the opencode front end: it watches opencode servers
// (one event stream per server), routes their events and the plugin's calls
// to the session family entities (package actors/ocfamily), carries out
// the families' effects against the servers, and serves the plugin's and
// the memory tools' control routes.
//
// It implements frontend.FrontEnd; the root package composes it with the
// others. See ARCHITECTURE.md for the path of one event through it.
//
// # Imports
//
// front may import the opencode client (hosts/opencode), the control API
// (hosts/control), the decision cores it runs (actors/...), the supervisor
// and its frontend contract, persistence and config. It must not import
// another front end (im/...).
package front

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/ocbudget"
	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/actors/ocregistry"
	"github.com/thatch-run/thatch/actors/sweeper"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/opencode"
	"github.com/thatch-run/thatch/internal/redact"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/supervisor"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// deliverTimeout bounds how long a plugin call waits for its message to be
// journaled.
const deliverTimeout = 30 * time.Second

// Name is the front end's name in logs and status.
const Name = "opencode"

// Options are what an embedder may supply beyond the config.
type Options struct {
	// Hosts are opencode hosts whose clients the embedder supplies, by host
	// name; they have no event stream of their own (the embedder delivers
	// events with DeliverHostEvent, and reconciles with ReconcileHost).
	// Tests use recording fakes here.
	Hosts map[string]HostInfo
	// Reminder, when set, replaces the session-start reminder's text.
	Reminder func(ctx context.Context, directory string) string
}

// FrontEnd is the opencode front end: it routes host events and plugin
// calls to session family entities, runs their effects against hosts, and
// keeps one event stream per connected server.
type FrontEnd struct {
	cfg  *config.Config
	opts Options

	// Set by Open.
	log    hclog.Logger
	rows   *persistence.Rows
	jr     *persistence.Journal
	now    func() time.Time
	dir    *sessionDirectory
	memSvc *memoryService
	// red cuts secrets from plugin calls before they are journaled (nil:
	// memory.redact.enabled is false). It is the runtime's (Core.Redactor),
	// the one the memory store refuses secrets with.
	red *redact.Redactor
	// Set by Mount.
	tree frontend.Tree

	mu    sync.Mutex
	hosts map[string]*hostConn
	// holds are the stream events waiting for their family's reconcile.
	holds *holds

	// touched rate-limits the runtime-state stamps; inherit is what
	// resumed opencode processes inherited.
	touched touches
	inherit inherited
}

var (
	_ frontend.FrontEnd = (*FrontEnd)(nil)
	_ frontend.Reporter = (*FrontEnd)(nil)
)

// New makes the opencode front end for cfg. Nothing runs until the
// runtime opens and starts it.
func New(cfg *config.Config, o Options) *FrontEnd {
	return &FrontEnd{cfg: cfg, opts: o, hosts: map[string]*hostConn{}, holds: newHolds()}
}

// Name returns Name.
func (o *FrontEnd) Name() string { return Name }

// Open loads the session directory and returns the family kind and the
// handlers of every effect the front end carries out.
func (o *FrontEnd) Open(_ context.Context, c frontend.Core) (frontend.Parts, error) {
	o.log = c.Logger
	o.rows = c.Store.Rows()
	o.jr = c.Store.Journal()
	o.now = c.Clock.Now
	o.dir = newDirectory()
	o.memSvc = &memoryService{log: o.log.Named("memory"), mem: c.Memory, oc: o}
	o.red = c.Redactor
	for name, h := range o.opts.Hosts {
		o.hosts[name] = &hostConn{name: name, info: h, pid: h.PID}
	}
	grace := o.cfg.OpenCode.FinishGrace
	if grace == 0 {
		grace = ocfamily.NoGrace // the config allows "0s": no grace, not the default
	}
	family := ocfamily.New(ocfamily.Config{
		BufferLimit:     o.cfg.OpenCode.BufferLimit,
		StaleAfter:      o.cfg.OpenCode.StaleAfter,
		FinishGrace:     grace,
		ExitRetryWindow: o.cfg.OpenCode.ExitRetryWindow,
	})
	// The sweeper's rounds are all this front end's to run: a runtime
	// without it has no sweeper (and no sweep effects nobody handles).
	sw := sweeper.Kind{
		Interval:        o.cfg.Sweep.Interval,
		RuntimeStateTTL: o.cfg.Sweep.RuntimeStateTTL,
		DeletedTTL:      o.cfg.Sweep.DeletedSessionTTL,
		StrandInterval:  o.cfg.Sweep.StrandInterval,
		NoStrand:        !o.cfg.Sweep.Strand,
	}
	return frontend.Parts{
		Kinds: []supervisor.Spec{
			supervisor.Entity[ocfamily.State](family),
			supervisor.Entity[ocregistry.State](ocregistry.Kind{}),
			supervisor.Entity[sweeper.State](sw),
			supervisor.Entity[ocbudget.State](ocbudget.Kind{}),
		},
		Effects: o.handlers(),
		Wake:    []actors.Identity{sweeper.Identity},
	}, nil
}

// Mount reads the registry (the routing state) and adds the plugin's and
// the memory tools' routes.
func (o *FrontEnd) Mount(ctx context.Context, t frontend.Tree, m frontend.Mux) error {
	o.tree = t
	o.dir.request = func(ctx context.Context, msg any) (any, error) {
		return t.RequestContext(ctx, registryID, msg, registryTimeout)
	}
	if err := o.dir.load(ctx, o.rows); err != nil {
		return err
	}
	o.mountPlugin(m)
	o.memSvc.mount(m)
	m.MountFunc("POST /v1/opencode/extraction/resume", o.serveResume)
	return nil
}

// Start watches every configured opencode server. A server that cannot be
// reached now is logged; its stream keeps trying.
func (o *FrontEnd) Start(ctx context.Context) error {
	for _, s := range o.cfg.OpenCode.Servers {
		if _, err := o.connect(ctx, s, 0, ""); err != nil {
			o.log.Error("cannot watch configured opencode server", "host", s.Name, "error", err)
		}
	}
	return nil
}

// DeliverHostEvent hands a decoded host event (a *messages.SessionCreated,
// *messages.SessionIdle, ...) to its session family as an event stream
// does, and waits until it is journaled, also when it waits behind its
// family's reconcile with a new host (a stream reads on meanwhile).
// Embedders with their own host connection, and tests, use it.
func (o *FrontEnd) DeliverHostEvent(msg any) error {
	if o.tree == nil {
		return errNotStarted
	}
	done, err := o.fromStream(context.Background(), msg)
	if err != nil || done == nil {
		return err
	}
	// A reconcile is two requests; the registry's answer and the delivery
	// have their own bounds.
	wait := time.NewTimer(2*o.cfg.OpenCode.RequestTimeout + registryTimeout + deliverTimeout)
	defer wait.Stop()
	select {
	case err := <-done:
		return err
	case <-wait.C:
		return errStillHeld
	}
}

var (
	errNotStarted = fmt.Errorf("front: the opencode front end is not started")
	errStillHeld  = fmt.Errorf("front: the event still waits for its family's reconcile")
	errStopping   = fmt.Errorf("front: the opencode front end stopped before the event's family was reconciled")
)

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
	// ctx bounds the deliveries of the host's events; disconnect ends it.
	ctx    context.Context
	cancel context.CancelFunc
}

func familyID(id string) actors.Identity { return actors.Identity{Kind: ocfamily.KindName, ID: id} }

// hostInfo is the executor's view of connected hosts.
func (o *FrontEnd) hostInfo(name string) (HostInfo, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	h, ok := o.hosts[name]
	if !ok {
		return HostInfo{}, false
	}
	return h.info, true
}

// connect starts watching an opencode server. A server already known by
// name is left as it is.
func (o *FrontEnd) connect(ctx context.Context, s config.Server, pid int, directory string) (*hostConn, error) {
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
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.stream, err = opencode.NewStream(opencode.StreamOptions{
		Client:  client,
		Handler: func(msg any) { o.onEvent(h, msg) },
		OnConnect: func(ctx context.Context) {
			o.reconcileRetrying(ctx, h.name, client)
			o.strandOnConnect(ctx, h.name)
		},
		Logger: o.log.Named("stream").With("host", s.Name),
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
	o.log.Info("watching opencode server", "host", s.Name, "url", config.RedactURL(s.URL), "api", api)
	return h, nil
}

// disconnect stops a host's stream. Its sessions' state stays journaled.
func (o *FrontEnd) disconnect(name, why string) {
	o.mu.Lock()
	h, ok := o.hosts[name]
	delete(o.hosts, name)
	o.mu.Unlock()
	if !ok {
		return
	}
	if h.cancel != nil {
		h.cancel()
	}
	if h.stream != nil {
		h.stream.Stop()
	}
	if h.client != nil {
		h.client.CloseIdleConnections()
	}
	o.log.Info("stopped watching opencode server", "host", name, "reason", why)
}

// Stop disconnects every host.
func (o *FrontEnd) Stop(context.Context) error {
	o.mu.Lock()
	names := make([]string, 0, len(o.hosts))
	for n := range o.hosts {
		names = append(names, n)
	}
	o.mu.Unlock()
	for _, n := range names {
		o.disconnect(n, "shutdown")
	}
	// No stream delivers any more. Events held for a reconcile are lost
	// like any a stream read and did not deliver: the next start's
	// reconcile makes up for them.
	o.holds.abandon(errStopping)
	return nil
}

// onEvent runs on the host's stream goroutine: it delivers each session
// event in stream order and waits for it to be journaled, unless the
// event waits for its family's reconcile (see fromStream).
func (o *FrontEnd) onEvent(h *hostConn, msg any) {
	switch msg.(type) {
	case *opencode.Connected, *opencode.Heartbeat, nil:
		return
	}
	if err := checkEventIDs(msg); err != nil {
		// What a family journals it must replay: an id the plugin's routes
		// would refuse is refused here too, and the stream goes on.
		o.log.Warn("dropped a host event with an invalid id", "host", h.name, "event", fmt.Sprintf("%T", msg), "error", err)
		return
	}
	if _, err := o.fromStream(h.ctx, msg); err != nil {
		o.log.Error("cannot deliver host event", "host", h.name, "event", fmt.Sprintf("%T", msg), "error", err)
	}
}

// checkEventIDs checks the session ids of an event from a host's stream
// the way the plugin's routes check theirs (checkID).
func checkEventIDs(msg any) error {
	switch m := msg.(type) {
	case *messages.SessionCreated:
		return checkIDs(idField{"sessionID", m.SessionID, true}, idField{"parentID", m.ParentID, false})
	case *messages.SessionIdle:
		return checkID("sessionID", m.SessionID, true)
	case *messages.SessionErrored:
		return checkID("sessionID", m.SessionID, true)
	case *messages.SessionDeleted:
		return checkID("sessionID", m.SessionID, true)
	case *messages.SessionCompacted:
		return checkID("sessionID", m.SessionID, true)
	case *messages.CommandExecuting:
		return checkID("sessionID", m.SessionID, true)
	case *messages.ToolExecuted:
		return checkIDs(idField{"sessionID", m.Interaction.SessionID, true}, idField{"callID", m.Interaction.ID, false})
	}
	return nil
}
