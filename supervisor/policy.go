package supervisor

import (
	"math/rand/v2"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/thatch-run/thatch/internal/retry"
)

// Policy is the restart policy of every kind supervisor.
type Policy struct {
	// MaxRestarts is how many failures within Window an entity may have
	// before it is stopped instead of restarted. Default: 5.
	MaxRestarts int
	// Window is the period MaxRestarts counts over. Default: 1m.
	Window time.Duration
	// BackoffBase is the delay before the first restart. Each further
	// failure within Window doubles it. Default: 50ms.
	BackoffBase time.Duration
	// BackoffMax caps the delay. Default: 30s.
	BackoffMax time.Duration
}

func (p Policy) withDefaults() Policy {
	if p.MaxRestarts == 0 {
		p.MaxRestarts = 5
	}
	if p.Window <= 0 {
		p.Window = time.Minute
	}
	if p.BackoffBase <= 0 {
		p.BackoffBase = 50 * time.Millisecond
	}
	if p.BackoffMax < p.BackoffBase {
		p.BackoffMax = 30 * time.Second
	}
	return p
}

// Backoff is the delay before restart number n (1-based) within the window:
// BackoffBase * 2^(n-1), capped at BackoffMax, with "equal jitter" (a random
// point in the upper half, drawn by rnd) so that entities failing together
// on a shared journal do not retry in lockstep. It is thatch's one backoff,
// retry.Backoff.
func (p Policy) Backoff(n int, rnd func() float64) time.Duration {
	return retry.Backoff{Base: p.BackoffBase, Max: p.BackoffMax, Rand: rnd}.Delay(n)
}

// strategy implements protoactor's SupervisorStrategy with Policy. It
// replaces protoactor's own "exponential backoff" strategy, whose delay
// grows linearly and which never gives up.
type strategy struct {
	policy Policy
	after  func(time.Duration, func())
	rnd    func() float64
	onFail func(child *actor.PID, reason any, restarts int, stopped bool, delay time.Duration)
}

func newStrategy(p Policy, after func(time.Duration, func()), onFail func(*actor.PID, any, int, bool, time.Duration)) *strategy {
	return &strategy{policy: p.withDefaults(), after: after, rnd: rand.Float64, onFail: onFail}
}

func (s *strategy) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason any, _ any) {
	rs.Fail()
	n := rs.NumberOfFailures(s.policy.Window)
	if n > s.policy.MaxRestarts {
		rs.Reset()
		s.onFail(child, reason, n, true, 0)
		sup.StopChildren(child)
		return
	}
	delay := s.policy.Backoff(n, s.rnd)
	s.onFail(child, reason, n, false, delay)
	s.after(delay, func() { sup.RestartChildren(child) })
}
