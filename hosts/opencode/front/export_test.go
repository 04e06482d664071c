package front

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/supervisor"
)

// RowForTest reads one row of the front end's tables, for tests that check
// what the sweeps and the exit wrap-up record.
func (o *FrontEnd) RowForTest(table, key string) (persistence.Row, bool, error) {
	return o.rows.Get(table, key)
}

// JournalForTest is the journal, for tests that check its indexes.
func (o *FrontEnd) JournalForTest() *persistence.Journal { return o.jr }

// RoutingForTest answers how the front end routes a session now: its
// family, and that family's recorded host and directory.
func (o *FrontEnd) RoutingForTest(session string) (family, host, dir string) {
	fam := o.dir.family(session)
	return fam, o.dir.hostOf(fam), o.dir.directory(fam)
}

// BreakRegistryForTest makes every later change of the registry fail, as a
// full disk would.
func (o *FrontEnd) BreakRegistryForTest() {
	o.dir.request = func(context.Context, any) (any, error) {
		return nil, errors.New("registry: scripted failure")
	}
}

// LiveFamiliesForTest lists the family entities that are awake now (not
// passivated), without waking any.
func (o *FrontEnd) LiveFamiliesForTest() ([]string, error) {
	return o.tree.LiveIDs(ocfamily.KindName, 10*time.Second)
}

// ReconcileHost lists a connected host's sessions and reconciles every
// family on it, and records what a resumed opencode process inherited, as
// a (re)connect of its event stream does (the strand sweep then runs on
// its interval). A host supplied in Options.Hosts is connected from Open
// but has no stream: call this after Start, and after the host was
// unreachable, so that families rehydrated by the start resume their host
// calls. Its client must also offer ListSessions and SessionStatus.
func (o *FrontEnd) ReconcileHost(ctx context.Context, host string) error {
	if o.tree == nil {
		return errNotStarted
	}
	if err := o.reconcileHost(ctx, host); err != nil {
		return err
	}
	o.noteInherited(ctx, host)
	return nil
}

// Inspect returns the status view of the family entity named family (what `thatch
// status` shows of it, with its host from the registry).
func (o *FrontEnd) Inspect(family string) (any, error) {
	if o.tree == nil {
		return nil, errNotStarted
	}
	res, err := o.tree.Request(familyID(family), &supervisor.Inspect{}, 10*time.Second)
	if err != nil {
		return nil, err
	}
	in, ok := res.(*supervisor.Inspection)
	if !ok {
		return nil, fmt.Errorf("front: inspect answered %T", res)
	}
	return o.withHost(in.View), nil
}

// ProjectStore is the memory store of a directory's project (its git
// remote; "global" without one).
func (o *FrontEnd) ProjectStore(dir string) string { return o.memSvc.projectStore(dir) }
