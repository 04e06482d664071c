// Package sweeper is the housekeeping entity: a timer-driven actor that
// periodically ages out runtime-state rows, returns stale claims to pending
// and heals stranded sessions. Its decision core is pure; the front end
// that registered a handler for each sweep effect (the opencode one) runs
// them.
//
// # Imports
//
// sweeper may import actors and messages only.
package sweeper

import (
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// KindName is the sweeper's kind; there is one entity, ID.
const (
	KindName = "sweeper"
	ID       = "main"
	timer    = "sweep"
)

// State is what the sweeper remembers.
type State struct {
	// LastRun is when the last round started (zero before the first).
	LastRun time.Time `json:"lastRun"`
	// Runs counts rounds since the entity was created.
	Runs int64 `json:"runs"`
}

func init() { messages.Register[State]("sweeper.state", 1) }

// Kind is the sweeper kind.
type Kind struct {
	// Interval is the time between rounds. Default: 1m.
	Interval time.Duration
	// RuntimeStateTTL is how long runtime-state rows live unrefreshed.
	// Default: 24h.
	RuntimeStateTTL time.Duration
}

var _ actors.Kind[State] = Kind{}

// Name returns KindName.
func (Kind) Name() string { return KindName }

// Initial is a sweeper that never ran.
func (Kind) Initial(string) *State { return &State{} }

// Active is always true: the sweeper is rehydrated on every start so that
// its timer runs.
func (Kind) Active(*State) bool { return true }

func (k Kind) interval() time.Duration {
	if k.Interval <= 0 {
		return time.Minute
	}
	return k.Interval
}

func (k Kind) ttl() time.Duration {
	if k.RuntimeStateTTL <= 0 {
		return 24 * time.Hour
	}
	return k.RuntimeStateTTL
}

// Decide arms the timer on recovery, and on each tick starts one round.
func (k Kind) Decide(s *State, msg any, now time.Time) actors.Decision {
	switch m := msg.(type) {
	case *actors.Recovered:
		if s.Runs == 0 {
			// A first round right away: a daemon that starts after a long
			// stop should not wait a whole interval to heal.
			return actors.Decision{Effects: []any{&actors.StartTimer{Name: timer, After: 0}}}
		}
		return actors.Decision{Effects: []any{&actors.StartTimer{Name: timer, After: k.interval()}}}
	case *actors.Tick:
		if m.Name != timer {
			return actors.Decision{}
		}
		return actors.Decision{
			Events: []any{&messages.SweepRan{At: now}},
			Effects: []any{
				&messages.SweepRuntimeState{Cutoff: now.Add(-k.ttl())},
				&messages.SweepStaleClaims{},
				&messages.SweepStrandedSessions{},
				&actors.StartTimer{Name: timer, After: k.interval()},
			},
		}
	}
	return actors.Decision{Unhandled: true}
}

// Apply folds SweepRan.
func (Kind) Apply(s *State, ev any) *State {
	if e, ok := ev.(*messages.SweepRan); ok {
		n := *s
		n.LastRun, n.Runs = e.At, s.Runs+1
		return &n
	}
	return s
}

// View shows the sweeper in status.
func (Kind) View(s *State) any { return *s }
