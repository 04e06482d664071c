package front

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/thatch-run/thatch/hosts/opencode"
	"github.com/thatch-run/thatch/messages"
)

// sessionLister is what a reconcile reads from a host.
type sessionLister interface {
	ListSessions(ctx context.Context) ([]opencode.Session, error)
	SessionStatus(ctx context.Context) (map[string]opencode.SessionStatus, error)
}

// reconcile runs after every (re)connect: the stream has no replay, so
// thatch compares what the host lists with what it holds.
func (o *FrontEnd) reconcile(ctx context.Context, host string, l sessionLister) error {
	return o.reconcileOnly(ctx, host, l, nil)
}

// reconcileOnly is reconcile limited to the families in only (all of the
// host's when only is nil). It reads the host, plans with planReconcile,
// and applies the plan: links first (so children route to their
// families), then strays and directories, then one delivery per family,
// then the forgets of families whose parent is gone.
func (o *FrontEnd) reconcileOnly(ctx context.Context, host string, l sessionLister, only map[string]bool) error {
	sessions, err := l.ListSessions(ctx)
	if err != nil {
		return fmt.Errorf("cannot list sessions: %w", err)
	}
	statuses, err := l.SessionStatus(ctx)
	if err != nil {
		return fmt.Errorf("cannot read session statuses: %w", err)
	}
	plan := planReconcile(reconcileInput{
		Host:   host,
		Listed: opencode.ToHostSessions(sessions, statuses),
		Known:  o.dir.familiesOn(host),
		Family: o.dir.family,
		Only:   only,
	})
	for _, ln := range plan.Links {
		if _, err := o.dir.link(ctx, ln.Child, ln.Parent); err != nil {
			return fmt.Errorf("cannot record child: %w", err)
		}
	}
	for _, id := range plan.Strays {
		o.strayChild(ctx, host, id)
	}
	for _, fam := range sortedKeys(plan.Directories) {
		// A family first met through its events has no directory yet, and
		// its payload would name the global store only.
		if err := o.dir.adoptDirectory(ctx, fam, plan.Directories[fam]); err != nil {
			o.log.Error("reconcile: cannot record directory", "family", fam, "error", err)
		}
	}
	if plan.KeptAll {
		o.log.Warn("reconcile: host lists no sessions; keeping families", "host", host)
	}
	for _, fr := range plan.Deliveries {
		id := fr.Parent.SessionID
		if err := o.tree.DeliverContext(ctx, familyID(id), fr, deliverTimeout); err != nil {
			o.log.Error("reconcile: cannot deliver", "family", id, "error", err)
			continue
		}
		if !fr.Present {
			// The family journaled its parent's deletion: like a
			// session.deleted, its links and host record route nothing.
			if err := o.dir.forget(ctx, id); err != nil {
				o.log.Error("reconcile: cannot forget family", "family", id, "error", err)
			}
		}
	}
	o.log.Debug("reconciled", "host", host, "sessions", len(sessions), "families", len(plan.Deliveries))
	return nil
}

// reconcileInput is what a host-level reconcile plans from: what the host
// lists and what the session directory knows.
type reconcileInput struct {
	Host string
	// Listed are the host's sessions with their statuses.
	Listed []messages.HostSession
	// Known are the families the directory records on Host.
	Known []string
	// Family maps a session to its family as the directory knows it now
	// (before the listing's links are recorded).
	Family func(session string) string
	// Only limits the reconcile to these families (nil: every one).
	Only map[string]bool
}

// link is one child-to-parent link a listing shows.
type link struct{ Child, Parent string }

// reconcilePlan is what a reconcile does, in the order reconcileOnly
// applies it.
type reconcilePlan struct {
	// Links are every parent link the listing shows, to record first.
	Links []link
	// Strays are "families" the listing shows to be children: their
	// family record goes, and an entity their calls made is ended.
	Strays []string
	// Directories are the directories of listed parents, to adopt where
	// none is recorded.
	Directories map[string]string
	// Deliveries are one FamilyReconciled per family to reconcile, sorted
	// by family id. A family with Present false is forgotten once its
	// delivery is journaled.
	Deliveries []*messages.FamilyReconciled
	// KeptAll is set when the host listed nothing although it has
	// families: more likely a project mismatch than every session
	// deleted, so no family is told anything.
	KeptAll bool
}

// planReconcile decides a host-level reconcile. It is pure: it reads only
// its input and calls nothing.
func planReconcile(in reconcileInput) reconcilePlan {
	var plan reconcilePlan
	parents := map[string]string{}
	for _, s := range in.Listed {
		if s.ParentID != "" {
			plan.Links = append(plan.Links, link{Child: s.SessionID, Parent: s.ParentID})
			parents[s.SessionID] = s.ParentID
		}
	}
	// family follows the listing's links, then the directory's.
	family := func(id string) string {
		for range 64 { // nested sub-agents; the bound guards a cycle
			p, ok := parents[id]
			if !ok {
				break
			}
			id = p
		}
		return in.Family(id)
	}
	families := map[string]*messages.FamilyReconciled{}
	for _, fam := range in.Known {
		if in.Only != nil && !in.Only[fam] {
			continue
		}
		if family(fam) != fam {
			plan.Strays = append(plan.Strays, fam)
			continue
		}
		families[fam] = &messages.FamilyReconciled{Host: in.Host, Parent: messages.HostSession{SessionID: fam}}
	}
	sort.Strings(plan.Strays)
	for _, s := range in.Listed {
		fam := family(s.SessionID)
		fr, known := families[fam]
		if !known {
			continue // a family thatch never saw: nothing to reconcile
		}
		if s.SessionID == fam {
			fr.Present, fr.Parent = true, s
			if s.Directory != "" {
				if plan.Directories == nil {
					plan.Directories = map[string]string{}
				}
				plan.Directories[fam] = s.Directory
			}
		} else {
			fr.Children = append(fr.Children, s)
		}
	}
	if len(in.Listed) == 0 && len(in.Known) > 0 {
		plan.KeptAll = true
		return plan
	}
	for _, id := range sortedKeys(families) {
		fr := families[id]
		if !fr.Present && in.Only != nil {
			// A listing read for one family's first event proves little
			// by leaving it out (it lists one directory, and a session can
			// run elsewhere): its deletion is left to session.deleted and
			// to the host's connect reconcile.
			continue
		}
		plan.Deliveries = append(plan.Deliveries, fr)
	}
	return plan
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// strayChild handles a "family" that a listing shows to be a child (its
// session.created was lost, so thatch met it through its own events): its
// host record goes, and its events route to its real family from now on.
// If its plugin calls already made an entity of it, that entity is ended
// like a deleted parent: what it buffered are the child's own calls, which
// are never extracted, and the sweep forgets it later.
func (o *FrontEnd) strayChild(ctx context.Context, host, id string) {
	if err := o.dir.dropFamilyRecord(ctx, id); err != nil {
		o.log.Error("reconcile: cannot drop a child's family record", "session", id, "error", err)
		return
	}
	if high, err := o.jr.HighestSeq(familyID(id)); err != nil || high == 0 {
		return
	}
	fr := &messages.FamilyReconciled{Host: host, Parent: messages.HostSession{SessionID: id}}
	if err := o.tree.DeliverContext(ctx, familyID(id), fr, deliverTimeout); err != nil {
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
func (o *FrontEnd) reconcileRetrying(ctx context.Context, host string, l sessionLister) {
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
func (o *FrontEnd) listerOf(name string) (sessionLister, error) {
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
func (o *FrontEnd) reconcileHost(ctx context.Context, name string) error {
	l, err := o.listerOf(name)
	if err != nil {
		return err
	}
	if err := o.reconcile(ctx, name, l); err != nil {
		return fmt.Errorf("thatch: reconcile %s: %w", name, err)
	}
	return nil
}
