package actors

// Plan collects one Decision of a kind whose state is S, for kinds whose
// decisions take several steps: each event is applied at once, so that
// the steps after it decide on the state it made. S starts as the
// caller's state, which Decide must not change: a kind whose Apply
// returns a new state leaves Clone nil; a kind whose Apply changes the
// state it is given sets Clone, and the first event then applies to a
// clone.
type Plan[S any] struct {
	// S is the state as the events so far left it.
	S *S
	// Apply is the kind's Apply; Clone, when set, copies a state deeply
	// enough for Apply to change the copy.
	Apply func(s *S, ev any) *S
	Clone func(s *S) *S

	events, effects []any
	reply           any
	cloned          bool
}

// NewPlan starts a decision on s.
func NewPlan[S any](s *S, apply func(*S, any) *S, clone func(*S) *S) Plan[S] {
	return Plan[S]{S: s, Apply: apply, Clone: clone}
}

// Event journals ev and applies it at once.
func (p *Plan[S]) Event(ev any) {
	if p.Clone != nil && !p.cloned {
		p.S, p.cloned = p.Clone(p.S), true
	}
	p.events = append(p.events, ev)
	p.S = p.Apply(p.S, ev)
}

// EventLast journals ev without applying it: for the last event of a hot
// path, where nothing reads the state afterwards.
func (p *Plan[S]) EventLast(ev any) { p.events = append(p.events, ev) }

// Effect releases effects, in order, once the events are durable.
func (p *Plan[S]) Effect(effects ...any) { p.effects = append(p.effects, effects...) }

// Reply sets the decision's reply.
func (p *Plan[S]) Reply(r any) { p.reply = r }

// Decision is what the plan collected.
func (p *Plan[S]) Decision() Decision {
	return Decision{Events: p.events, Effects: p.effects, Reply: p.reply}
}
