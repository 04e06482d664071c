package main

import (
	"fmt"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/supervisor"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

func init() {
	register(Bench{
		Name:  "status",
		Doc:   "a status report over passivated entities (read from the journal) vs asking each entity (which wakes it)",
		Order: 45,
		Run:   benchStatus,
	})
}

// statusTimeout is the per-entity timeout of the status reports.
const statusTimeout = time.Minute

// statusConcurrency is how many entities the baseline asks at once, as
// frontend.Report does.
const statusConcurrency = 16

func benchStatus(c *Config) ([]Record, error) {
	n := c.Count(10_000, 2_000)
	dir, remove, err := c.TempDir("status")
	if err != nil {
		return nil, err
	}
	defer remove()
	c.Logf("status: journaling %d entities x %d events (not active)", n, memoryEvents)
	if err := fillJournal(dir, n, memoryEvents); err != nil {
		return nil, err
	}
	st, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	a, err := startTree(st)
	if err != nil {
		return nil, err
	}
	defer a.stop()

	c.Logf("status: report over %d passivated entities", n)
	h0 := sampleHeap()
	start := time.Now()
	views, total := frontend.Entities(a.tree, st.Journal(), benchKind, "id", 0, statusTimeout)
	peeked := time.Since(start)
	h1 := sampleHeap()
	if err := checkViews(views, total, n); err != nil {
		return nil, err
	}
	woke, err := a.tree.LiveIDs(benchKind, time.Minute)
	if err != nil {
		return nil, err
	}

	c.Logf("status: asking each of the %d entities (wakes them)", n)
	start = time.Now()
	if err := askEach(a.tree, n); err != nil {
		return nil, err
	}
	asked := time.Since(start)
	h2 := sampleHeap()
	awake, err := a.tree.LiveIDs(benchKind, time.Minute)
	if err != nil {
		return nil, err
	}
	if len(awake) != n {
		return nil, fmt.Errorf("bench: %d entities live after asking %d, want all", len(awake), n)
	}
	notes := fmt.Sprintf("frontend.Entities (as thatch status --all) over %d passivated entities x %d events, read from the journal (Tree.Peek), %d at a time: Go heap after it %s B more than before; "+
		"baseline: the same views asked of each entity (Request Inspect, as status did before), which spawns and rehydrates every one: heap %s B more, all %d live afterwards",
		n, memoryEvents, statusConcurrency, formatNumber(diff(h0.alloc, h1.alloc)), formatNumber(diff(h1.alloc, h2.alloc)), n)
	return []Record{
		newRecord("status.report_passivated", ms(peeked), "ms", notes).withBaseline(ms(asked)),
		newRecord("status.report_passivated.woken", float64(len(woke)), "entities",
			fmt.Sprintf("entities live after the report over %d passivated ones; target: it wakes none", n)).atMost(0),
	}, nil
}

// checkViews checks that the report has every entity's view, none an error.
func checkViews(views []any, total, n int) error {
	if total != n || len(views) != n {
		return fmt.Errorf("bench: the report lists %d of %d entities, want %d", len(views), total, n)
	}
	for i, v := range views {
		s, ok := v.(entityView)
		if !ok {
			return fmt.Errorf("bench: the report's view %d is %v", i, v)
		}
		if s.ID != entityID(i) || s.Seq != memoryEvents {
			return fmt.Errorf("bench: the report's view %d is %+v, want %s at seq %d", i, s, entityID(i), memoryEvents)
		}
	}
	return nil
}

// askEach asks every entity for its inspection, statusConcurrency at a
// time, as status did before it read passivated entities from the journal.
func askEach(t *supervisor.Tree, n int) error {
	return forEachParallel(statusConcurrency, n, func(i int) error {
		res, err := t.Request(actors.Identity{Kind: benchKind, ID: entityID(i)}, &supervisor.Inspect{}, statusTimeout)
		if _, ok := res.(*supervisor.Inspection); err == nil && !ok {
			err = fmt.Errorf("inspect answered %T", res)
		}
		return err
	})
}
