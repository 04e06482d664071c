package sweeper

import (
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

var t0 = time.Unix(1_800_000_000, 0).UTC()

func apply(k Kind, s *State, d actors.Decision) *State {
	for _, ev := range d.Events {
		s = k.Apply(s, ev)
	}
	return s
}

func timers(d actors.Decision) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, e := range d.Effects {
		if st, ok := e.(*actors.StartTimer); ok {
			out[st.Name] = st.After
		}
	}
	return out
}

func TestRecoveryArmsBothSweepsAndTheStrandOneAtEveryStart(t *testing.T) {
	k := Kind{Interval: 5 * time.Minute, StrandInterval: 10 * time.Minute}
	for _, tc := range []struct {
		name              string
		runs              int64
		restarted         bool
		runtime, strandAt time.Duration
	}{
		{"first start ever", 0, false, 0, 0},
		{"later start", 3, false, 5 * time.Minute, 0},
		{"entity restart", 3, true, 5 * time.Minute, 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &State{Runs: tc.runs}
			d := k.Decide(s, &actors.Recovered{Restarted: tc.restarted}, t0)
			got := timers(d)
			if got[timerRuntime] != tc.runtime || got[timerStrand] != tc.strandAt || len(got) != 2 {
				t.Fatalf("timers %v, want runtime %v strand %v", got, tc.runtime, tc.strandAt)
			}
			s = apply(k, s, d)
			if n := s.Sweeps[messages.SweepStrand].Next; !n.Equal(t0.Add(tc.strandAt)) {
				t.Fatalf("strand next %v", n)
			}
		})
	}
}

func TestDisarmedStrandSweepNeverRuns(t *testing.T) {
	k := Kind{NoStrand: true}
	s := k.Initial(ID)
	d := k.Decide(s, &actors.Recovered{}, t0)
	if _, armed := timers(d)[timerStrand]; armed {
		t.Fatalf("strand timer armed: %+v", d)
	}
	s = apply(k, s, d)
	if !s.Sweeps[messages.SweepStrand].Disarmed {
		t.Fatalf("status does not show the strand sweep off: %+v", s.Sweeps[messages.SweepStrand])
	}
	if d := k.Decide(s, &actors.Tick{Name: timerStrand}, t0); len(d.Effects)+len(d.Events) != 0 {
		t.Fatalf("a stray strand tick acted: %+v", d)
	}
	v := k.View(s).(View)
	for _, sv := range v.Sweeps {
		if sv.Sweeper == messages.SweepStrand && (sv.NextRun != nil || !sv.Disarmed) {
			t.Fatalf("disarmed sweep shows a next run: %+v", sv)
		}
	}
}

func TestRoundsCarryTheirCutoffsAndRearm(t *testing.T) {
	k := Kind{Interval: 5 * time.Minute, RuntimeStateTTL: time.Hour, DeletedTTL: 2 * time.Hour, StrandInterval: 7 * time.Minute}
	s := k.Initial(ID)
	d := k.Decide(s, &actors.Tick{Name: timerRuntime}, t0)
	var rs *messages.SweepRuntimeState
	for _, e := range d.Effects {
		if x, ok := e.(*messages.SweepRuntimeState); ok {
			rs = x
		}
	}
	if rs == nil || !rs.Cutoff.Equal(t0.Add(-time.Hour)) || !rs.DeletedCutoff.Equal(t0.Add(-2*time.Hour)) {
		t.Fatalf("runtime round %+v", d)
	}
	if len(timers(d)) != 0 {
		t.Fatalf("armed %v when the round started, not when it reports", timers(d))
	}
	s = apply(k, s, d)
	d = k.Decide(s, &actors.Tick{Name: timerStrand}, t0.Add(time.Minute))
	if _, ok := d.Effects[0].(*messages.SweepStrandedSessions); !ok || len(timers(d)) != 0 {
		t.Fatalf("strand round %+v", d)
	}
	s = apply(k, s, d)
	if s.Runs != 2 || !s.LastRun.Equal(t0.Add(time.Minute)) {
		t.Fatalf("state %+v", s)
	}
	for _, sv := range k.View(s).(View).Sweeps {
		if sv.Sweeper == messages.SweepStrand && (!sv.Running || sv.NextRun != nil) {
			t.Fatalf("a running round shows %+v: running, no next run in the past", sv)
		}
	}
	// The strand round takes 20 minutes (a hung host): the next one is
	// 7 minutes after its report, not after its start.
	d = k.Decide(s, &messages.SweepReport{Sweep: messages.SweepStrand, Round: true}, t0.Add(21*time.Minute))
	if timers(d)[timerStrand] != 7*time.Minute || len(timers(d)) != 1 {
		t.Fatalf("re-arm after the report %v", timers(d))
	}
	s = apply(k, s, d)
	st := s.Sweeps[messages.SweepStrand]
	if st.Runs != 1 || !st.Next.Equal(t0.Add(28*time.Minute)) {
		t.Fatalf("strand record %+v", st)
	}
	d = k.Decide(s, &messages.SweepReport{Sweep: messages.SweepRuntime, Round: true}, t0.Add(22*time.Minute))
	if timers(d)[timerRuntime] != 5*time.Minute || len(timers(d)) != 1 {
		t.Fatalf("runtime re-arm after the report %v", timers(d))
	}
	// A host's own strand report (not a round the sweeper started) arms
	// nothing: it must not push the next round away.
	if d := k.Decide(s, &messages.SweepReport{Sweep: messages.SweepStrand}, t0.Add(23*time.Minute)); len(timers(d)) != 0 {
		t.Fatalf("a host's report re-armed %v", timers(d))
	}
	if d := k.Decide(s, &actors.Tick{Name: "other"}, t0); len(d.Events)+len(d.Effects) != 0 {
		t.Fatalf("foreign tick acted: %+v", d)
	}
	if !k.Active(s) {
		t.Fatal("the sweeper must always be rehydrated")
	}
}

func TestReportsAreJournaledAndShown(t *testing.T) {
	k := Kind{}
	s := k.Initial(ID)
	r := &messages.SweepReport{Sweep: messages.SweepStrand, Started: t0, Finished: t0.Add(1500 * time.Millisecond)}
	r.Add(&r.Moved, messages.SweepItem{ID: "ses_a", From: "/gone", To: "/main"})
	d := k.Decide(s, r, t0)
	if len(d.Events) != 1 || d.Unhandled {
		t.Fatalf("report not journaled: %+v", d)
	}
	s = apply(k, s, d)
	// Changing the sender's report afterwards must not change the state.
	r.Moved[0].ID = "changed"
	v := k.View(s).(View)
	if len(v.Sweeps) != 1 || v.Sweeps[0].TookMS != 1500 || v.Sweeps[0].Last.Moved[0].ID != "ses_a" {
		t.Fatalf("view %+v", v)
	}
	if d := k.Decide(s, &messages.SweepReport{}, t0); len(d.Events) != 0 {
		t.Fatalf("a report that names no sweep was journaled: %+v", d)
	}
}

func TestOlderJournalsRoundReadsAsTheRuntimeSweep(t *testing.T) {
	k := Kind{}
	s := k.Apply(k.Initial(ID), &messages.SweepRan{At: t0})
	if sw := s.Sweeps[messages.SweepRuntime]; sw == nil || sw.Runs != 1 || s.Runs != 1 {
		t.Fatalf("state %+v", s)
	}
}

func TestReportListsStayBoundedAndCountsStayExact(t *testing.T) {
	var r messages.SweepReport
	for range messages.MaxReportItems + 10 {
		r.Add(&r.Dropped, messages.SweepItem{ID: "x"})
	}
	if len(r.Dropped) != messages.MaxReportItems || r.Counts.Dropped != messages.MaxReportItems+10 || !r.Acted() {
		t.Fatalf("list %d count %d", len(r.Dropped), r.Counts.Dropped)
	}
}

// A host that just connected gets a strand round of its own from the
// sweeper, in the same lane as the timer's rounds; its report is journaled
// but arms nothing, and the timer's next round stays where it was.
func TestAConnectedHostsStrandRoundRunsAsTheSweepersEffect(t *testing.T) {
	k := Kind{Interval: 5 * time.Minute, StrandInterval: 10 * time.Minute}
	s := apply(k, &State{}, k.Decide(&State{}, &actors.Recovered{}, t0))
	d := k.Decide(s, &messages.SweepStrandHost{Host: "laptop"}, t0)
	if len(d.Events) != 0 || len(d.Effects) != 1 {
		t.Fatalf("decision %+v: want only the round's effect", d)
	}
	if e, ok := d.Effects[0].(*messages.SweepStrandedSessions); !ok || e.Host != "laptop" {
		t.Fatalf("effect %#v, want a strand round of laptop", d.Effects[0])
	}
	next := s.Sweeps[messages.SweepStrand].Next
	rd := k.Decide(s, &messages.SweepReport{Sweep: messages.SweepStrand, Started: t0, Finished: t0.Add(time.Second)}, t0.Add(time.Second))
	if len(timers(rd)) != 0 {
		t.Fatalf("a host's round armed %v", timers(rd))
	}
	s = apply(k, s, rd)
	if got := s.Sweeps[messages.SweepStrand]; got.Last == nil || !got.Next.Equal(next) {
		t.Fatalf("after the host's round: last %+v, next %v (want the report journaled and next %v)", got.Last, got.Next, next)
	}
	off := Kind{NoStrand: true}
	if d := off.Decide(s, &messages.SweepStrandHost{Host: "laptop"}, t0); len(d.Effects) != 0 {
		t.Fatalf("a disarmed strand sweep ran a host's round: %+v", d)
	}
}
