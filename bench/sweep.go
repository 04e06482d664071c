package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/hosts/opencode/front"
)

// The strand sweep's plan over a machine's worth of sessions: pure
// planning (no stat, no host call), against a fixed limit.
const (
	sweepSessions = 10_000
	sweepStranded = 100
	// sweepLimitMS is the target for planning one sweep.
	sweepLimitMS = 50.0
)

func init() {
	register(Bench{
		Name:  "sweep",
		Doc:   "plan a strand sweep of 10,000 sessions, 100 of them stranded (pure planning) against a 50 ms limit",
		Order: 80,
		Run:   runSweepBench,
	})
}

// strandInput builds n sessions over a few live worktrees, of which
// stranded are in deleted ones: a third machinery, a third task children,
// the rest real top-level sessions.
func strandInput(n, stranded int) front.StrandInput {
	in := front.StrandInput{
		Dead:      map[string]bool{},
		Checkouts: map[string]string{},
		Caps:      map[string]front.StrandHostCaps{"h": {Move: true, Delete: true}},
	}
	for p := range 20 {
		in.Checkouts[fmt.Sprintf("prj%d", p)] = fmt.Sprintf("/src/p%d/main", p)
		in.Dead[fmt.Sprintf("/src/p%d/main", p)] = false
	}
	for i := range n {
		r := front.StrandRow{ID: fmt.Sprintf("ses_%06d", i), Host: "h", ProjectID: fmt.Sprintf("prj%d", i%20), Title: "work"}
		if i < stranded {
			r.Directory = fmt.Sprintf("/src/p%d/wt-gone-%d", i%20, i%7)
			in.Dead[r.Directory] = true
			switch i % 3 {
			case 0:
				r.Title, r.ParentID = ocfamily.ExtractionTitle, "ses_parent"
			case 1:
				r.ParentID = "ses_parent"
			}
		} else {
			r.Directory = fmt.Sprintf("/src/p%d/wt-%d", i%20, i%50)
			in.Dead[r.Directory] = false
			if i%4 == 0 {
				r.Title, r.ParentID = ocfamily.ExtractionTitle, "ses_parent"
			}
		}
		in.Rows = append(in.Rows, r)
	}
	return in
}

func runSweepBench(c *Config) ([]Record, error) {
	n, stranded := c.Count(sweepSessions, sweepSessions), c.Count(sweepStranded, sweepStranded)
	in := strandInput(n, stranded)
	runs := c.Count(31, 7)
	c.Logf("sweep: planning %d sessions (%d stranded), %d runs", n, stranded, runs)
	times := make([]time.Duration, 0, runs)
	acted := 0
	for range runs {
		start := time.Now()
		acted = len(front.PlanStrandActions(in))
		times = append(times, time.Since(start))
	}
	if acted != stranded {
		return nil, fmt.Errorf("bench: the plan decided %d sessions, want the %d stranded", acted, stranded)
	}
	slices.Sort(times)
	p50, worst := times[len(times)/2], times[len(times)-1]
	ms := float64(p50) / float64(time.Millisecond)
	notes := fmt.Sprintf("p50 of %d runs of front.PlanStrandActions over %d rows (%d stranded: machinery, task children, top-level), slowest %v; "+
		"baseline is the issue's limit of %g ms, not a measurement", runs, n, stranded, worst, sweepLimitMS)
	return []Record{newRecord("sweep.strand_plan.vs_limit", ms, "ms", notes).withBaseline(sweepLimitMS).atMost(sweepLimitMS)}, nil
}
