// Package sweeper is the housekeeping entity: a timer-driven actor with
// two sweeps, each on its own timer. The runtime-state sweep drops
// runtime state nobody comes back for, forgets deleted sessions' journals
// and returns stale claims to pending; the strand sweep heals sessions
// stranded in deleted directories. Its decision core is pure; the front end
// that registered a handler for each sweep effect (the opencode one) runs
// them and answers with a messages.SweepReport, which the sweeper journals
// so that `thatch status` can show what each sweep last did.
//
// # Imports
//
// sweeper may import actors and messages only.
package sweeper

import (
	"slices"
	"sort"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// KindName is the sweeper's kind; there is one entity, ID.
const (
	KindName = "sweeper"
	ID       = "main"
	// timerRuntime is the runtime-state sweep's timer; its name is the one
	// the single timer of an older sweeper had.
	timerRuntime = "sweep"
	timerStrand  = "strand"
)

// Identity is the sweeper entity's identity.
var Identity = actors.Identity{Kind: KindName, ID: ID}

// State is what the sweeper remembers.
type State struct {
	// LastRun is when the last round of any sweep started (zero before
	// the first).
	LastRun time.Time `json:"lastRun"`
	// Runs counts rounds since the entity was created.
	Runs int64 `json:"runs"`
	// Sweeps is each sweep's own record, by sweep name.
	Sweeps map[string]*Sweep `json:"sweeps,omitempty"`
}

// Sweep is the record of one sweep.
type Sweep struct {
	// LastStart is when its last round started.
	LastStart time.Time `json:"lastStart,omitzero"`
	// Next is when it runs next (zero when disarmed).
	Next     time.Time     `json:"next,omitzero"`
	Interval time.Duration `json:"interval,omitempty"`
	Disarmed bool          `json:"disarmed,omitempty"`
	Runs     int64         `json:"runs,omitempty"`
	// Last is the report of its last finished round.
	Last *messages.SweepReport `json:"last,omitempty"`
}

func init() { messages.Register[State]("sweeper.state", 1) }

// Kind is the sweeper kind.
type Kind struct {
	// Interval is the time between runtime-state rounds (which also nudge
	// stale claims). Default: 1m.
	Interval time.Duration
	// RuntimeStateTTL is how long runtime state lives unrefreshed.
	// Default: 168h (7 days).
	RuntimeStateTTL time.Duration
	// DeletedTTL is how long a deleted session's family is kept (to
	// ignore the session's late events) before its journal is forgotten.
	// Default: 24h.
	DeletedTTL time.Duration
	// StrandInterval is the time between strand rounds. Default: 5m.
	StrandInterval time.Duration
	// NoStrand disarms the strand sweep completely. Default: false (armed).
	NoStrand bool
}

var _ actors.Kind[State] = Kind{}

// Name returns KindName.
func (Kind) Name() string { return KindName }

// Effects are the effects the sweeper releases (actors.EffectLister).
func (Kind) Effects() []any { return []any{(*messages.SweepStrandedSessions)(nil)} }

// Initial is a sweeper that never ran.
func (Kind) Initial(string) *State { return &State{} }

// Active is always true: the sweeper is rehydrated on every start so that
// its timers run.
func (Kind) Active(*State) bool { return true }

func or(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func (k Kind) interval() time.Duration       { return or(k.Interval, time.Minute) }
func (k Kind) ttl() time.Duration            { return or(k.RuntimeStateTTL, 7*24*time.Hour) }
func (k Kind) deletedTTL() time.Duration     { return or(k.DeletedTTL, 24*time.Hour) }
func (k Kind) strandInterval() time.Duration { return or(k.StrandInterval, 5*time.Minute) }

// Decide arms the timers on recovery, starts a round on each tick, and
// journals the reports the executor sends back.
func (k Kind) Decide(s *State, msg any, now time.Time) actors.Decision {
	switch m := msg.(type) {
	case *actors.Recovered:
		return k.recovered(s, m, now)
	case *actors.Tick:
		switch m.Name {
		// A round's next one is armed when it reports (see SweepReport),
		// not when it starts: a round that outlasts the interval (a hung
		// host) never has another piled up behind it.
		case timerRuntime:
			return actors.Decision{
				Events: []any{&messages.SweepRan{At: now, Sweep: messages.SweepRuntime}},
				Effects: []any{
					&messages.SweepRuntimeState{Cutoff: now.Add(-k.ttl()), DeletedCutoff: now.Add(-k.deletedTTL())},
					&messages.SweepStaleClaims{},
				},
			}
		case timerStrand:
			if k.NoStrand {
				return actors.Decision{}
			}
			return actors.Decision{
				Events:  []any{&messages.SweepRan{At: now, Sweep: messages.SweepStrand}},
				Effects: []any{&messages.SweepStrandedSessions{}},
			}
		}
		return actors.Decision{}
	case *messages.SweepStrandHost:
		if k.NoStrand || m.Host == "" {
			return actors.Decision{}
		}
		return actors.Decision{Effects: []any{&messages.SweepStrandedSessions{Host: m.Host}}}
	case *messages.SweepReport:
		if m.Sweep == "" {
			return actors.Decision{}
		}
		// The journaled copy shares nothing with the sender's report.
		r := *m
		r.Moved, r.Deleted = slices.Clone(m.Moved), slices.Clone(m.Deleted)
		r.Dropped, r.Skipped = slices.Clone(m.Dropped), slices.Clone(m.Skipped)
		r.Notes = slices.Clone(m.Notes)
		d := actors.Decision{Events: []any{&messages.SweepReported{Report: r}}}
		if timer, after, ok := k.rearm(m); ok {
			d.Events = append(d.Events, &messages.SweepArmed{Sweep: m.Sweep, At: now, After: after, Interval: after})
			d.Effects = append(d.Effects, &actors.StartTimer{Name: timer, After: after})
		}
		return d
	}
	return actors.Decision{Unhandled: true}
}

// rearm returns the timer that starts the next round of the sweep whose
// round reported, and when; ok is false for a report that is not a
// round's, or of a sweep that is off.
func (k Kind) rearm(r *messages.SweepReport) (timer string, after time.Duration, ok bool) {
	if !r.Round {
		return "", 0, false
	}
	switch r.Sweep {
	case messages.SweepRuntime:
		return timerRuntime, k.interval(), true
	case messages.SweepStrand:
		return timerStrand, k.strandInterval(), !k.NoStrand
	}
	return "", 0, false
}

// recovered arms both timers. The runtime-state sweep runs at once on the
// first start ever (a daemon that starts after a long stop should not wait
// a whole interval), else after one interval; the strand sweep runs at
// every start, since hosts met at start are where strands are found, but
// not again right away after a restart of the entity itself.
func (k Kind) recovered(s *State, m *actors.Recovered, now time.Time) actors.Decision {
	var d actors.Decision
	after := k.interval()
	if s.Runs == 0 {
		after = 0
	}
	d.Events = append(d.Events, &messages.SweepArmed{Sweep: messages.SweepRuntime, At: now, After: after, Interval: k.interval()})
	d.Effects = append(d.Effects, &actors.StartTimer{Name: timerRuntime, After: after})
	if k.NoStrand {
		d.Events = append(d.Events, &messages.SweepArmed{Sweep: messages.SweepStrand, At: now, Disarmed: true})
		return d
	}
	after = 0
	if m.Restarted {
		after = k.strandInterval()
	}
	d.Events = append(d.Events, &messages.SweepArmed{Sweep: messages.SweepStrand, At: now, After: after, Interval: k.strandInterval()})
	d.Effects = append(d.Effects, &actors.StartTimer{Name: timerStrand, After: after})
	return d
}

// Apply folds the sweeper's events.
func (Kind) Apply(s *State, ev any) *State {
	switch e := ev.(type) {
	case *messages.SweepRan:
		n := s.clone()
		n.LastRun, n.Runs = e.At, s.Runs+1
		name := e.Sweep
		if name == "" {
			name = messages.SweepRuntime
		}
		sw := n.sweep(name)
		sw.LastStart, sw.Runs = e.At, sw.Runs+1
		if e.After > 0 {
			sw.Next, sw.Interval = e.At.Add(e.After), e.After // an older sweeper's round
		} else {
			sw.Next = time.Time{} // running: the next is armed when it reports
		}
		return n
	case *messages.SweepArmed:
		n := s.clone()
		sw := n.sweep(e.Sweep)
		sw.Disarmed = e.Disarmed
		sw.Next = time.Time{}
		if !e.Disarmed {
			sw.Next, sw.Interval = e.At.Add(e.After), e.Interval
		}
		return n
	case *messages.SweepReported:
		n := s.clone()
		r := e.Report
		n.sweep(r.Sweep).Last = &r
		return n
	}
	return s
}

// clone copies s and its sweep records (the reports they point at are
// never changed in place, so they are shared).
func (s *State) clone() *State {
	n := *s
	n.Sweeps = make(map[string]*Sweep, len(s.Sweeps)+1)
	for k, v := range s.Sweeps {
		c := *v
		n.Sweeps[k] = &c
	}
	return &n
}

func (s *State) sweep(name string) *Sweep {
	sw := s.Sweeps[name]
	if sw == nil {
		sw = &Sweep{}
		s.Sweeps[name] = sw
	}
	return sw
}

// View is what status shows of the sweeper: one entry per sweep, by name.
type View struct {
	Sweeps []SweepView `json:"sweeps"`
}

// SweepView is one sweep in status.
type SweepView struct {
	// Sweeper is the sweep's name (messages.SweepStrand, ...).
	Sweeper  string        `json:"sweeper"`
	Disarmed bool          `json:"disarmed,omitempty"`
	Interval time.Duration `json:"interval,omitempty"`
	// LastRun is when its last round started; TookMS how long its last
	// finished round ran.
	LastRun *time.Time `json:"lastRun,omitempty"`
	TookMS  int64      `json:"tookMs"`
	// NextRun is when it runs next (absent when disarmed, or while a
	// round runs: the next is armed when it reports).
	NextRun *time.Time `json:"nextRun,omitempty"`
	// Running: a round started and has not reported yet.
	Running bool                  `json:"running,omitempty"`
	Runs    int64                 `json:"runs"`
	Last    *messages.SweepReport `json:"last,omitempty"`
}

// View shows the sweeper in status, its sweeps sorted by name.
func (Kind) View(s *State) any {
	v := View{Sweeps: []SweepView{}}
	for name, sw := range s.Sweeps {
		sv := SweepView{Sweeper: name, Disarmed: sw.Disarmed, Interval: sw.Interval, Runs: sw.Runs, Last: sw.Last}
		if !sw.LastStart.IsZero() {
			at := sw.LastStart
			sv.LastRun = &at
		}
		if !sw.Next.IsZero() && !sw.Disarmed {
			at := sw.Next
			sv.NextRun = &at
		}
		sv.Running = sw.Next.IsZero() && !sw.Disarmed && !sw.LastStart.IsZero()
		if sw.Last != nil {
			sv.TookMS = sw.Last.Took().Milliseconds()
		}
		v.Sweeps = append(v.Sweeps, sv)
	}
	sort.Slice(v.Sweeps, func(i, j int) bool { return v.Sweeps[i].Sweeper < v.Sweeps[j].Sweeper })
	return v
}
