package front

import (
	"context"
	"errors"
	"time"

	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/persistence"
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
