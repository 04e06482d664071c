// Package ocbudget is the decision core of one memory store's extraction
// budget (memory.daily_budget_tokens): what the payloads fetched for the
// store cost, hour by hour, and whether extraction for it is paused
// today. The first extraction the budget stops pauses the store and asks
// for its toast (once a day: the pause is journaled); a resume lifts the
// pause for the rest of the UTC day. Extraction children are created by
// the opencode front end only after asking the store's entity (Check).
package ocbudget

import (
	"maps"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/messages"
)

// KindName is the kind of the budget entities; an entity's id is its
// store's name.
const KindName = "opencode.budget"

// Keep is how long an hour's cost is kept: the status shows 7 days.
const Keep = 8 * 24 * time.Hour

// Cost is what the payloads of one hour cost.
type Cost struct {
	Bytes  int64 `json:"bytes"`
	Tokens int64 `json:"tokens"`
}

// State is one store's costs and today's pause.
type State struct {
	Store string `json:"store"`
	// Hours are the costs by UTC hour ("2006-01-02T15"), the last Keep.
	Hours map[string]Cost `json:"hours,omitempty"`
	// Day is the UTC day ("2006-01-02") of Paused and Resumed.
	Day     string `json:"day,omitempty"`
	Paused  bool   `json:"paused,omitempty"`
	Resumed bool   `json:"resumed,omitempty"`
	// Used is the tokens counted when the store paused.
	Used int64 `json:"used,omitempty"`
}

// Commands.
type (
	// AddCost adds a fetched payload of Bytes, fetched At, to the store's
	// hour. Reply: nil.
	AddCost struct {
		Bytes int64
		At    time.Time
	}
	// Check asks whether extraction for the store is paused now under
	// Budget tokens a day (0: no budget). Reply: *Answer.
	Check struct{ Budget int64 }
	// Resume lifts the store's pause for the rest of the UTC day; with
	// OnlyPaused, only a store paused today is resumed. Reply: bool,
	// whether it was resumed.
	Resume struct{ OnlyPaused bool }
)

// Answer is Check's reply.
type Answer struct {
	Paused bool
	// Toast: this check paused the store, and its toast is to be shown
	// (once a day).
	Toast bool
	// Used is today's tokens so far.
	Used int64
}

// Events.
type (
	// CostAdded adds Cost to Hour and forgets the hours before Before.
	CostAdded struct {
		Hour   string `json:"hour"`
		Cost   Cost   `json:"cost"`
		Before string `json:"before,omitempty"`
	}
	// Paused records the store paused on Day, with Used tokens.
	Paused struct {
		Day  string `json:"day"`
		Used int64  `json:"used"`
	}
	// Resumed records the store resumed on Day.
	Resumed struct {
		Day string `json:"day"`
	}
)

func init() {
	messages.Register[State]("opencode.budget.state", 1)
	messages.Register[CostAdded]("opencode.budget.cost_added", 1)
	messages.Register[Paused]("opencode.budget.paused", 1)
	messages.Register[Resumed]("opencode.budget.resumed", 1)
}

func hour(t time.Time) string { return t.UTC().Format("2006-01-02T15") }
func day(t time.Time) string  { return t.UTC().Format("2006-01-02") }

// Kind is the budget kind.
type Kind struct{}

var _ actors.Kind[State] = Kind{}

// Name returns KindName.
func (Kind) Name() string { return KindName }

// Initial is a store that cost nothing yet.
func (Kind) Initial(id string) *State { return &State{Store: id} }

// Active is false: a budget has nothing to do until it is asked.
func (Kind) Active(*State) bool { return false }

// Effects: a budget releases none (actors.EffectLister).
func (Kind) Effects() []any { return nil }

// Decide handles one message.
func (k Kind) Decide(s *State, msg any, now time.Time) actors.Decision {
	p := actors.NewPlan(s, k.Apply, nil)
	switch m := msg.(type) {
	case *AddCost:
		at := m.At
		if at.IsZero() {
			at = now
		}
		p.Event(&CostAdded{Hour: hour(at), Cost: Cost{Bytes: m.Bytes, Tokens: ocfamily.EstimateTokens(m.Bytes)}, Before: hour(now.Add(-Keep))})
	case *Check:
		p.Reply(k.check(&p, m.Budget, now))
	case *Resume:
		today := day(now)
		paused := s.Day == today && s.Paused && !s.Resumed
		if m.OnlyPaused && !paused {
			p.Reply(false)
			break
		}
		if !(s.Day == today && s.Resumed) {
			p.Event(&Resumed{Day: today})
		}
		p.Reply(true)
	case *actors.Recovered:
	default:
		return actors.Decision{Unhandled: true}
	}
	return p.Decision()
}

// check decides whether extraction is paused now.
func (Kind) check(p *actors.Plan[State], budget int64, now time.Time) *Answer {
	s := p.S
	today := day(now)
	if budget <= 0 || (s.Day == today && s.Resumed) {
		return &Answer{}
	}
	used := s.Since(now.UTC().Truncate(24 * time.Hour))
	if used < budget {
		return &Answer{Used: used}
	}
	a := &Answer{Paused: true, Used: used}
	if !(s.Day == today && s.Paused) {
		p.Event(&Paused{Day: today, Used: used})
		a.Toast = true
	}
	return a
}

// Since sums the tokens of the hours from since's hour on.
func (s *State) Since(since time.Time) int64 {
	from := hour(since)
	var n int64
	for h, c := range s.Hours {
		if h >= from {
			n += c.Tokens
		}
	}
	return n
}

// PausedOn reports whether the store is paused on now's UTC day.
func (s *State) PausedOn(now time.Time) bool {
	return s.Day == day(now) && s.Paused && !s.Resumed
}

// Apply returns the state after ev; s is left as it was.
func (Kind) Apply(s *State, ev any) *State {
	n := *s
	switch e := ev.(type) {
	case *CostAdded:
		n.Hours = maps.Clone(s.Hours)
		if n.Hours == nil {
			n.Hours = map[string]Cost{}
		}
		for h := range n.Hours {
			if h < e.Before {
				delete(n.Hours, h)
			}
		}
		c := n.Hours[e.Hour]
		c.Bytes += e.Cost.Bytes
		c.Tokens += e.Cost.Tokens
		n.Hours[e.Hour] = c
	case *Paused:
		if s.Day != e.Day {
			n.Resumed = false
		}
		n.Day, n.Paused, n.Used = e.Day, true, e.Used
	case *Resumed:
		if s.Day != e.Day {
			n.Paused, n.Used = false, 0
		}
		n.Day, n.Resumed = e.Day, true
	default:
		return s
	}
	return &n
}

// View is what `thatch status` shows of a store's budget: the state
// itself (a copy; its hours map is never changed in place, see Apply).
func (Kind) View(s *State) any { return *s }
