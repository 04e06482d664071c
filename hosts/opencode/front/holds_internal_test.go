package front

import (
	"errors"
	"testing"
)

// A hold keeps its family's events in order, has one releaser, lets
// events join while it is released, and is gone once empty; other
// families never wait for it.
func TestHolds(t *testing.T) {
	hs := newHolds()
	if _, ok := hs.join("p", "before"); ok {
		t.Fatal("an event joined a hold nobody opened")
	}
	id, first := hs.open("p", "e1")
	if id == 0 {
		t.Fatal("the first hold on p was not opened")
	}
	if id2, _ := hs.open("p", "e2"); id2 != 0 {
		t.Fatal("a second hold opened on p while one is open")
	}
	third, ok := hs.join("p", "e3")
	if !ok {
		t.Fatal("an event of p did not join its hold")
	}
	if _, ok := hs.join("q", "other"); ok {
		t.Fatal("an event of another family joined p's hold")
	}
	if hs.take("p", id+1) {
		t.Fatal("a releaser took a hold that is not open")
	}
	if !hs.take("p", id) || hs.take("p", id) {
		t.Fatal("a hold must have exactly one releaser")
	}
	var got []any
	for {
		ev, ok := hs.next("p", id)
		if !ok {
			break
		}
		if len(got) == 1 {
			if _, ok := hs.join("p", "e4"); !ok {
				t.Fatal("an event could not join a hold being released")
			}
		}
		got = append(got, ev.msg)
		ev.done <- nil
	}
	want := []any{"e1", "e2", "e3", "e4"}
	if len(got) != len(want) {
		t.Fatalf("released %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("released %v, want %v", got, want)
		}
	}
	if err := <-first; err != nil {
		t.Errorf("the first event's outcome: %v", err)
	}
	if err := <-third; err != nil {
		t.Errorf("a joined event's outcome: %v", err)
	}
	if _, ok := hs.join("p", "after"); ok {
		t.Fatal("an event joined a hold that was lifted")
	}

	stop := errors.New("stopped")
	id, done := hs.open("p", "late")
	hs.abandon(stop)
	if err := <-done; !errors.Is(err, stop) {
		t.Errorf("an abandoned event's outcome: %v, want %v", err, stop)
	}
	if hs.take("p", id) {
		t.Error("a releaser took an abandoned hold")
	}
}
