package front

import (
	"context"
	"fmt"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/ocregistry"
	"github.com/thatch-run/thatch/messages"
)

// route returns the family entity a message concerns. It is a lookup in
// the registry's state: it writes nothing and calls no host. What a
// stream event teaches the registry is recorded before it is delivered
// (see fromStream).
func (o *FrontEnd) route(msg any) (actors.Identity, error) {
	var session string
	switch m := msg.(type) {
	case *messages.SessionCreated:
		session = m.SessionID
		if m.ParentID != "" {
			session = m.ParentID // a child whose link could not be recorded
		}
	case *messages.SessionIdle:
		session = m.SessionID
	case *messages.SessionErrored:
		session = m.SessionID
	case *messages.SessionDeleted:
		session = m.SessionID
	case *messages.SessionCompacted:
		session = m.SessionID
	case *messages.ToolExecuted:
		session = m.Interaction.SessionID
	case *messages.CommandExecuting:
		session = m.SessionID
	case *messages.FetchPayload:
		session = m.CallerID
	case *messages.ExtractionDone:
		session = m.CallerID
	case *messages.MemoryWritten:
		session = m.CallerID
	default:
		return actors.Identity{}, fmt.Errorf("front: no route for %T", msg)
	}
	return familyID(o.dir.family(session)), nil
}

// fromStream takes one event of a host's stream. It tells the registry
// what the event teaches (record), routes it, and delivers it, waiting
// until its family has journaled it; it never reconciles (the stream's
// goroutine does, in OnConnect, before a connection's first event). An
// event that moves its family to a new host is held instead, and so is every later
// stream event of that family while the registry's ReconcileFamily effect
// reconciles it (see holds): fromStream then returns at once, and done
// gets the outcome of the event's delivery. A failure to record is logged
// and never loses the event: the stream has no replay, and a lost
// session.created is a lost start reminder.
func (o *FrontEnd) fromStream(ctx context.Context, msg any) (done <-chan error, err error) {
	id, err := o.route(msg)
	if err != nil {
		return nil, err
	}
	fam := id.ID
	if done, ok := o.holds.join(fam, msg); ok {
		return done, nil
	}
	cmd := o.teaches(fam, msg)
	c, _ := cmd.(*ocregistry.FamilySeen)
	if c == nil || !c.Reconcile || c.Host == "" {
		o.record(ctx, cmd)
		return nil, o.deliver(ctx, msg)
	}
	hold, done := o.holds.open(fam, msg)
	if hold == 0 {
		return done, nil // it joined a hold opened since the lookup
	}
	c.Hold = hold
	moved, err := o.dir.seen(ctx, c)
	if err != nil {
		o.log.Warn("cannot record the host of a session", "session", fam, "host", c.Host, "error", err)
	}
	if !moved || err != nil {
		// No reconcile comes to let the hold go.
		o.releaseHold(ctx, fam, hold)
	}
	return done, nil
}

// teaches returns the registry command that records what the stream event
// msg of family fam teaches beyond the registry's state as the router last
// saw it, or nil when it teaches nothing new: a child's link, or a
// family's directory and host. It is a lookup: it reads that state and
// whether hosts are connected, and changes nothing.
//
// A family's host is recorded when none is (the session existed before
// the daemon started, or its session.created was lost) or when the
// recorded one is no longer watched and the event's is (its opencode
// restarted on another port). A recorded host that is still watched is
// kept: when one server is watched under two names (configured, and
// registered by its plugin), its events arrive twice, and the family's
// effects must stay on one connection. A host that changes for an event
// other than a session.created asks for a reconcile (it may wait for calls
// its old host can no longer answer, have children thatch did not see, or
// be a child itself); a new session needs none: thatch sees it from its
// start. Plugin calls name the server, not the directory-scoped connection
// whose listing a reconcile reads: they teach nothing.
func (o *FrontEnd) teaches(fam string, msg any) any {
	var host, dir string
	reconcile := true
	switch m := msg.(type) {
	case *messages.SessionCreated:
		if m.ParentID != "" {
			v := o.dir.view()
			if m.SessionID == fam || v.Linked(m.SessionID) == fam {
				return nil
			}
			return &messages.RegistryLink{Child: m.SessionID, Parent: m.ParentID}
		}
		host, dir, reconcile = m.Host, m.Directory, false
	case *messages.SessionIdle:
		host = m.Host
	case *messages.SessionErrored:
		host = m.Host
	case *messages.SessionCompacted:
		host = m.Host
	default:
		return nil
	}
	v := o.dir.view()
	c := &ocregistry.FamilySeen{Family: fam, Reconcile: reconcile}
	if dir != "" && v.Directory(fam) != dir {
		c.Directory = dir
	}
	if cur := v.Host(fam); host != "" && cur != host && (cur == "" || (!o.connected(cur) && o.connected(host))) {
		c.Host, c.IfCurrent = host, cur
	}
	if c.Directory == "" && c.Host == "" {
		return nil
	}
	return c
}

// record sends the registry cmd, a command of teaches (nil: nothing),
// without holding anything: a reconcile it calls for runs as the
// registry's effect, and the event does not wait for it. Failures are
// logged.
func (o *FrontEnd) record(ctx context.Context, cmd any) {
	switch c := cmd.(type) {
	case *messages.RegistryLink:
		if _, err := o.dir.link(ctx, c.Child, c.Parent); err != nil {
			o.log.Error("cannot record a child's family; delivering its creation anyway", "session", c.Child, "parent", c.Parent, "error", err)
		}
	case *ocregistry.FamilySeen:
		if _, err := o.dir.seen(ctx, c); err != nil {
			o.log.Error("cannot record a session's directory or host; delivering its event anyway", "session", c.Family, "error", err)
		}
	}
}

// releaseHold delivers the events held on family fam (hold id), in order,
// until none is left, and lifts the hold. The event that opened it told
// the registry what it teaches then; the others do now, routed as the
// registry's state is now (the reconcile may have shown fam to be a
// child). It does nothing when that hold was lifted or is being released
// already.
func (o *FrontEnd) releaseHold(ctx context.Context, fam string, id uint64) {
	if !o.holds.take(fam, id) {
		return
	}
	for {
		ev, ok := o.holds.next(fam, id)
		if !ok {
			return
		}
		if to, err := o.route(ev.msg); err == nil && !ev.taught {
			o.record(ctx, o.teaches(to.ID, ev.msg))
		}
		err := o.deliver(ctx, ev.msg)
		if err != nil {
			o.log.Error("cannot deliver a host event held behind its family's reconcile", "family", fam, "event", fmt.Sprintf("%T", ev.msg), "error", err)
		}
		ev.done <- err
	}
}

// reconcileFamily carries out the registry's ReconcileFamily: it
// reconciles the family with the host its events now come from, then
// lets go of the family's events held meanwhile. It runs on the effect
// dispatcher, in the registry's reconcile lane, so that Tree.Quiesce
// waits for it; the stream that carried the event reads on, and the
// events of every other family are delivered meanwhile.
func (o *FrontEnd) reconcileFamily(ctx context.Context, _ actors.Identity, e *ocregistry.ReconcileFamily) any {
	defer o.releaseHold(ctx, e.Family, e.Hold)
	// The effect went out with the answer that moved the family, which
	// the router may not have installed yet; the reconcile plans from a
	// view that holds the move.
	if err := o.dir.refresh(ctx); err != nil {
		o.log.Warn("cannot read the registry to reconcile a session with its new host", "session", e.Family, "host", e.Host, "error", err)
		return nil
	}
	// The listing may show that the family is a child of another: its
	// held events are routed after this.
	o.reconcileMoved(ctx, e.Family, e.Host)
	return nil
}

// reconcileMoved reconciles one family with the host its events now come
// from, bounded by the request timeout.
func (o *FrontEnd) reconcileMoved(ctx context.Context, fam, host string) {
	l, err := o.listerOf(host)
	if err == nil {
		// Two requests: a listing and the statuses.
		ctx, cancel := context.WithTimeout(ctx, 2*o.cfg.OpenCode.RequestTimeout)
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
func (o *FrontEnd) connected(name string) bool {
	o.mu.Lock()
	h, ok := o.hosts[name]
	o.mu.Unlock()
	return ok && (h.stream == nil || h.stream.Up())
}

// deliver routes msg and waits until its family has journaled it.
func (o *FrontEnd) deliver(ctx context.Context, msg any) error {
	id, err := o.route(msg)
	if err != nil {
		return err
	}
	if err := o.tree.DeliverContext(ctx, id, msg, deliverTimeout); err != nil {
		return err
	}
	switch msg.(type) {
	case *messages.ToolExecuted, *messages.SessionCreated:
		// The family's state was written: its runtime-state TTL restarts.
		o.touchFamily(id.ID)
	}
	if d, ok := msg.(*messages.SessionDeleted); ok && d.SessionID == id.ID {
		// The parent is gone and its family journaled that: its children's
		// links and its host record route nothing any more. The event is
		// journaled: a failure here is only logged.
		if err := o.dir.forget(ctx, id.ID); err != nil {
			o.log.Error("cannot forget a deleted family's links", "family", id.ID, "error", err)
		}
	}
	return nil
}

// request routes msg and returns the family's reply.
func (o *FrontEnd) request(ctx context.Context, msg any) (any, error) {
	id, err := o.route(msg)
	if err != nil {
		return nil, err
	}
	return o.tree.RequestContext(ctx, id, msg, deliverTimeout)
}
