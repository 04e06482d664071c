package messages

import "time"

// Sweeper names: each is one housekeeping job with its own timer and its
// own line in `thatch status`.
const (
	// SweepStrand heals sessions stranded in deleted directories.
	SweepStrand = "strand"
	// SweepRuntime drops runtime state nobody comes back for, forgets
	// deleted sessions' journals and nudges stale claims.
	SweepRuntime = "runtime-state"
)

// SweepRan is the sweeper's journaled event: one round of a sweep
// started. Sweep is empty in journals of an older thatch, which had one
// round for every sweep; it reads as SweepRuntime.
type SweepRan struct {
	At    time.Time `json:"at"`
	Sweep string    `json:"sweep,omitempty"`
	// After is how long after At the sweep runs again (zero in older
	// journals).
	After time.Duration `json:"after,omitempty"`
}

// SweepArmed is journaled when the sweeper (re)starts and arms a sweep's
// timer, or finds it disarmed by the config.
type SweepArmed struct {
	Sweep string    `json:"sweep"`
	At    time.Time `json:"at"`
	// After is how long after At the sweep runs first.
	After    time.Duration `json:"after,omitempty"`
	Disarmed bool          `json:"disarmed,omitempty"`
	// Interval is the time between rounds, for status.
	Interval time.Duration `json:"interval,omitempty"`
}

// SweepReported is journaled when a sweep's executor reports what a round
// did, so that `thatch status` shows it after a restart too.
type SweepReported struct {
	Report SweepReport `json:"report"`
}

// Effects of the sweeper. Each names a housekeeping job the executor runs;
// the executor answers with a *SweepReport.

// SweepRuntimeState drops runtime state (family journals, runtime-state
// rows) last written before Cutoff or whose directory is gone, keeps what
// a resumed session inherited, and forgets the journals of families whose
// parent was deleted before DeletedCutoff.
type SweepRuntimeState struct {
	Cutoff time.Time `json:"cutoff"`
	// DeletedCutoff bounds tombstones; zero means Cutoff.
	DeletedCutoff time.Time `json:"deletedCutoff,omitzero"`
}

// SweepStaleClaims sends StaleSweep to every family with unfinished work:
// stale accepted entries return to pending, host calls unanswered for the
// stale window are given up, and hung extraction children are deleted.
type SweepStaleClaims struct{}

// SweepStrandedSessions heals sessions whose directory no longer exists (a
// deleted worktree): machinery is deleted, real top-level sessions are
// moved to their project's canonical checkout, task children are left
// alone. It also stops watching plugin-registered servers whose process is
// gone. Every round runs here, in the sweeper's strand lane, one at a time.
type SweepStrandedSessions struct {
	// Host, when set, limits the round to that host (one that just
	// connected); its report is not a round of the timer's and arms
	// nothing.
	Host string `json:"host,omitempty"`
}

// SweepStrandHost asks the sweeper for a strand round of one host that
// just connected (its connect reconcile done), so that a start heals at
// once. The sweeper answers with SweepStrandedSessions{Host}, unless the
// strand sweep is off.
type SweepStrandHost struct {
	Host string `json:"host"`
}

// MaxReportItems bounds each list of a SweepReport; the counts stay exact.
const MaxReportItems = 50

// SweepReport is what one round of a sweep did. The executor sends it to
// the sweeper, which journals it (SweepReported) for status.
type SweepReport struct {
	Sweep    string    `json:"sweep"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Moved, Deleted and Dropped are what the round changed; Skipped what
	// it left alone on purpose, each with its reason. At most
	// MaxReportItems of each are listed; Counts has the totals.
	Moved   []SweepItem `json:"moved,omitempty"`
	Deleted []SweepItem `json:"deleted,omitempty"`
	Dropped []SweepItem `json:"dropped,omitempty"`
	Skipped []SweepItem `json:"skipped,omitempty"`
	Counts  SweepCounts `json:"counts"`
	// Notes are one-line remarks: a leg that failed (logged, not fatal),
	// a sweep that was disarmed, how many families were nudged.
	Notes []string `json:"notes,omitempty"`
	// Round marks the report of a round the sweeper started (its effect's
	// result), as opposed to one a front end ran on its own (the strand
	// sweep of a host that just connected): the sweeper arms the sweep's
	// next round when its round reports, so that rounds never pile up.
	Round bool `json:"round,omitempty"`
}

// SweepCounts are a round's totals.
type SweepCounts struct {
	Moved   int `json:"moved"`
	Deleted int `json:"deleted"`
	Dropped int `json:"dropped"`
	Skipped int `json:"skipped"`
	// Errors counts legs that failed (each logged).
	Errors int `json:"errors"`
}

// SweepItem is one thing a sweep acted on or skipped.
type SweepItem struct {
	ID     string `json:"id"`
	Host   string `json:"host,omitempty"`
	From   string `json:"from,omitempty"`
	To     string `json:"to,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Took is how long the round ran.
func (r *SweepReport) Took() time.Duration { return r.Finished.Sub(r.Started) }

// Add records an item in one of the report's lists (moved, deleted,
// dropped, skipped), keeping the list within MaxReportItems.
func (r *SweepReport) Add(list *[]SweepItem, it SweepItem) {
	switch list {
	case &r.Moved:
		r.Counts.Moved++
	case &r.Deleted:
		r.Counts.Deleted++
	case &r.Dropped:
		r.Counts.Dropped++
	case &r.Skipped:
		r.Counts.Skipped++
	}
	if len(*list) < MaxReportItems {
		*list = append(*list, it)
	}
}

// Acted reports whether the round changed anything.
func (r *SweepReport) Acted() bool {
	return r.Counts.Moved+r.Counts.Deleted+r.Counts.Dropped > 0
}

func init() {
	Register[SweepRan]("sweeper.ran", 1)
	Register[SweepArmed]("sweeper.armed", 1)
	Register[SweepReported]("sweeper.reported", 1)
}
