package messages

import "time"

// SweepRan is the sweeper's journaled event: one round of sweeps started.
type SweepRan struct {
	At time.Time `json:"at"`
}

// Effects of the sweeper. Each names a housekeeping job the executor runs.

// SweepRuntimeState deletes runtime-state rows last written before Cutoff,
// and forgets the journals of families whose parent was deleted before it.
type SweepRuntimeState struct {
	Cutoff time.Time `json:"cutoff"`
}

// SweepStaleClaims sends StaleSweep to every family with unfinished work:
// stale accepted entries return to pending, host calls unanswered for the
// stale window are given up, and hung extraction children are deleted.
type SweepStaleClaims struct{}

// SweepStrandedSessions moves sessions whose directory no longer exists (a
// deleted worktree) back to their project's worktree, and stops watching
// plugin-registered servers whose process is gone.
type SweepStrandedSessions struct{}

func init() {
	Register[SweepRan]("sweeper.ran", 1)
}
