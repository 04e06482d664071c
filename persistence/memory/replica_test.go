package memory

import (
	"context"
	"testing"
	"time"
)

// Two stores that apply every change both made, in one order, end the
// same: the last write of a label wins, deletes reach both, and a change
// applied twice changes nothing.
func TestChangesAppliedInOneOrderLeaveEveryStoreTheSame(t *testing.T) {
	a, b := newEnv(t, Options{}), newEnv(t, Options{})
	var log []Change
	for _, e := range []*env{a, b} {
		e.ms.OnChange(func(c Change) { log = append(log, c) })
	}
	a.remember(RememberInput{Label: "Deploy", Content: "make ship", Store: "acme/web"})
	b.clk.Advance(time.Second)
	b.remember(RememberInput{Label: "Deploy", Content: "make release", Store: "acme/web"})
	a.remember(RememberInput{Label: "Lint", Content: "make lint", Store: "global"})
	if _, err := a.ms.Forget("global", "Lint"); err != nil {
		t.Fatal(err)
	}
	b.remember(RememberInput{Label: "Test", Content: "make test", Store: "global", Confidence: 9})
	if len(log) != 5 {
		t.Fatalf("told %d changes; want 5", len(log))
	}
	told := len(log)
	for _, e := range []*env{a, b} {
		for _, c := range append(log[:told:told], log[:told]...) { // each twice
			if err := e.ms.Apply(context.Background(), c); err != nil {
				t.Fatalf("apply %+v: %v", c, err)
			}
		}
	}
	if len(log) != told {
		t.Fatal("an applied change was told again")
	}
	for _, e := range []*env{a, b} {
		d, err := e.ms.Find("acme/web", "Deploy")
		if err != nil || d.Content != "make release" {
			t.Errorf("deploy = %+v, %v; want the last write", d, err)
		}
		if _, err := e.ms.Find("global", "Lint"); err == nil {
			t.Error("the forgotten memory is back")
		}
		if tm, err := e.ms.Find("global", "Test"); err != nil || tm.Confidence != 9 || !tm.Updated.Equal(log[4].Entry.Updated) {
			t.Errorf("test = %+v, %v; want it as written", tm, err)
		}
	}
}
