package front

import "github.com/thatch-run/thatch/persistence"

// RowForTest reads one row of the front end's tables, for tests that check
// what the sweeps and the exit wrap-up record.
func (o *FrontEnd) RowForTest(table, key string) (persistence.Row, bool, error) {
	return o.rows.Get(table, key)
}

// JournalForTest is the journal, for tests that check its indexes.
func (o *FrontEnd) JournalForTest() *persistence.Journal { return o.jr }
