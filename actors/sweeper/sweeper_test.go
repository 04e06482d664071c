package sweeper

import (
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

func TestRoundsAndTimer(t *testing.T) {
	k := Kind{Interval: 5 * time.Minute, RuntimeStateTTL: time.Hour}
	s := k.Initial(ID)
	now := time.Unix(1_800_000_000, 0)

	d := k.Decide(s, &actors.Recovered{}, now)
	if len(d.Events) != 0 || len(d.Effects) != 1 || d.Effects[0].(*actors.StartTimer).After != 0 {
		t.Fatalf("first recovery should sweep at once: %+v", d)
	}
	d = k.Decide(s, &actors.Tick{Name: "other"}, now)
	if len(d.Events)+len(d.Effects) != 0 {
		t.Fatalf("foreign tick acted: %+v", d)
	}
	d = k.Decide(s, &actors.Tick{Name: timer}, now)
	if len(d.Events) != 1 || len(d.Effects) != 4 {
		t.Fatalf("round: %+v", d)
	}
	if c := d.Effects[0].(*messages.SweepRuntimeState).Cutoff; !c.Equal(now.Add(-time.Hour)) {
		t.Fatalf("cutoff %v", c)
	}
	if st := d.Effects[3].(*actors.StartTimer); st.After != 5*time.Minute {
		t.Fatalf("re-arm %v", st.After)
	}
	for _, ev := range d.Events {
		s = k.Apply(s, ev)
	}
	if s.Runs != 1 || !s.LastRun.Equal(now) {
		t.Fatalf("state %+v", s)
	}
	d = k.Decide(s, &actors.Recovered{Restarted: true}, now)
	if d.Effects[0].(*actors.StartTimer).After != 5*time.Minute {
		t.Fatalf("later recovery should wait one interval: %+v", d)
	}
	if !k.Active(s) {
		t.Fatal("the sweeper must always be rehydrated")
	}
}
