package front

import (
	"context"
	"fmt"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// route returns the family entity a message concerns. It is a lookup in
// the session directory: it writes nothing and calls no host. What a
// message teaches about the directory is recorded by learn, before.
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

// learn records what a host event teaches (a child's parent, a family's
// directory and host) in the registry, which owns those facts: the family
// keeps none of them, and its effects go to the host the registry records
// (familyHost). A failure to record is logged and never loses the event:
// the stream has no replay, and a lost session.created is a lost start
// reminder.
func (o *FrontEnd) learn(ctx context.Context, msg any) {
	switch m := msg.(type) {
	case *messages.SessionCreated:
		if m.ParentID != "" {
			if _, err := o.dir.link(ctx, m.SessionID, m.ParentID); err != nil {
				o.log.Error("cannot record a child's family; delivering its creation anyway", "session", m.SessionID, "parent", m.ParentID, "error", err)
			}
			return
		}
		if err := o.dir.setDirectory(ctx, m.SessionID, m.Directory); err != nil {
			o.log.Error("cannot record a session's directory; delivering its creation anyway", "session", m.SessionID, "error", err)
		}
		// A new session needs no reconcile: thatch sees it from the start.
		o.onHost(ctx, m.SessionID, m.Host, false)
	case *messages.SessionIdle:
		o.onHost(ctx, m.SessionID, m.Host, true) // records the host: see onHost
	case *messages.SessionErrored:
		o.onHost(ctx, m.SessionID, m.Host, true)
	case *messages.SessionCompacted:
		o.onHost(ctx, m.SessionID, m.Host, true)
	}
	// Plugin calls name the server, not the directory-scoped connection
	// whose listing a reconcile reads: they record no host.
}

// onHost records the host session's family lives on, so that its host's
// reconciles reach it and its effects go there: a session thatch first
// meets through one of its stream events (it existed before the daemon
// started, or its session.created was lost) has no host recorded, and one
// whose opencode restarted on another port now lives on a new host. A
// recorded host that is still watched is kept: when one server is watched
// under two names (configured, and registered by its plugin), its events
// arrive twice, and the family's effects must stay on one connection. When
// reconcile is set and the record changes, the family is reconciled with
// the host at once (it may wait for calls its old host can no longer
// answer, it may have children thatch did not see, or it may be a child
// itself), before the event is delivered. Failing to record or reconcile
// is logged, not fatal: the event must not be lost over it.
func (o *FrontEnd) onHost(ctx context.Context, session, host string, reconcile bool) {
	fam := o.dir.family(session)
	if host == "" {
		return
	}
	changed := false
	err := o.dir.moveHost(ctx, fam, host, func(cur string) bool {
		changed = cur == "" || (!o.connected(cur) && o.connected(host))
		return changed
	})
	if err != nil {
		o.log.Warn("cannot record the host of a session", "session", session, "host", host, "error", err)
		return
	}
	if changed && reconcile {
		// The listing may show that session is a child of a family: route
		// reads the directory after this.
		o.reconcileMoved(ctx, fam, host)
	}
}

// reconcileMoved reconciles one family with the host its events now come
// from, bounded by the request timeout: it runs on that host's stream.
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

// deliver records what msg teaches, routes it and waits until its family
// has journaled it.
func (o *FrontEnd) deliver(ctx context.Context, msg any) error {
	o.learn(ctx, msg)
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
