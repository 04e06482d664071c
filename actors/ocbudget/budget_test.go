package ocbudget

import (
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors/kindtest"
)

// run decides msg at now as the runtime would and returns the new state
// and the reply.
func run(t *testing.T, s *State, msg any, now time.Time) (*State, any) {
	t.Helper()
	s, d := kindtest.Step(t, Kind{}, s, msg, now)
	return s, d.Reply
}

// Past the day's budget the store pauses, and only the check that paused
// it asks for the toast; a resume lifts the pause for the rest of the
// day; the next day starts unpaused, counting only its own hours.
func TestTheBudgetPausesOnceADayAndAResumeLiftsIt(t *testing.T) {
	day1 := time.Date(2026, 12, 7, 9, 30, 0, 0, time.UTC)
	s := Kind{}.Initial("proj")
	s, _ = run(t, s, &AddCost{Bytes: 400}, day1) // 100 tokens
	s, r := run(t, s, &Check{Budget: 150}, day1)
	if a := r.(*Answer); a.Paused || a.Used != 100 {
		t.Fatalf("under the budget: %+v", a)
	}
	s, _ = run(t, s, &AddCost{Bytes: 400, At: day1.Add(time.Hour)}, day1.Add(time.Hour))
	s, r = run(t, s, &Check{Budget: 150}, day1.Add(time.Hour))
	if a := r.(*Answer); !a.Paused || !a.Toast || a.Used != 200 {
		t.Fatalf("over the budget: %+v, want paused with its toast", a)
	}
	s, r = run(t, s, &Check{Budget: 150}, day1.Add(2*time.Hour))
	if a := r.(*Answer); !a.Paused || a.Toast {
		t.Fatalf("checked again: %+v, want paused, no second toast", a)
	}
	if !s.PausedOn(day1) {
		t.Fatal("the status does not show the pause")
	}
	s, r = run(t, s, &Resume{OnlyPaused: true}, day1.Add(3*time.Hour))
	if r != true || s.PausedOn(day1) {
		t.Fatalf("resume answered %v, paused %v", r, s.PausedOn(day1))
	}
	s, r = run(t, s, &Check{Budget: 150}, day1.Add(4*time.Hour))
	if a := r.(*Answer); a.Paused {
		t.Fatalf("resumed today, checked again: %+v", a)
	}
	if _, r := run(t, s, &Resume{OnlyPaused: true}, day1.Add(5*time.Hour)); r != false {
		t.Fatalf("resuming every paused store resumed one that is not: %v", r)
	}

	day2 := day1.Add(24 * time.Hour)
	s, r = run(t, s, &Check{Budget: 150}, day2)
	if a := r.(*Answer); a.Paused || a.Used != 0 {
		t.Fatalf("the next day: %+v, want a fresh day", a)
	}
	s, _ = run(t, s, &AddCost{Bytes: 800}, day2)
	if _, r = run(t, s, &Check{Budget: 150}, day2); !r.(*Answer).Toast {
		t.Fatalf("the next day's pause: %+v, want its own toast", r)
	}
	if got := s.Since(day1.Add(-time.Hour)); got != 400 {
		t.Fatalf("tokens over both days %d, want 400", got)
	}
}

// Hours older than Keep are forgotten as new costs come; without a
// budget nothing pauses.
func TestOldHoursAreForgottenAndNoBudgetNeverPauses(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := Kind{}.Initial("proj")
	s, _ = run(t, s, &AddCost{Bytes: 4000}, t0)
	s, _ = run(t, s, &AddCost{Bytes: 4}, t0.Add(Keep+time.Hour))
	if len(s.Hours) != 1 || s.Since(t0) != 1 {
		t.Fatalf("hours %v after Keep", s.Hours)
	}
	if _, r := run(t, s, &Check{Budget: 0}, t0.Add(Keep+time.Hour)); r.(*Answer).Paused {
		t.Fatal("paused without a budget")
	}
}
