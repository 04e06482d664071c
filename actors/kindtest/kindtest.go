// Package kindtest drives a decision core in tests the way the entity
// runtime does: decide, journal the events (encoded and decoded, as a
// restart reads them back), apply.
package kindtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// Step decides msg on s at now and returns the state after the decision's
// events, read back from their encoding, and the decision. A message the
// kind does not handle fails the test.
func Step[S any](tb testing.TB, k actors.Kind[S], s *S, msg any, now time.Time) (*S, actors.Decision) {
	tb.Helper()
	d := k.Decide(s, msg, now)
	if d.Unhandled {
		tb.Fatalf("%T unhandled", msg)
	}
	for _, ev := range d.Events {
		raw, err := messages.Encode(ev)
		if err != nil {
			tb.Fatalf("event %T does not encode: %v", ev, err)
		}
		back, err := messages.Decode(raw)
		if err != nil {
			tb.Fatalf("event %T does not decode: %v", ev, err)
		}
		s = k.Apply(s, back)
	}
	return s, d
}

// Only returns the one effect of type T among effects, and fails the test
// when there is none or more than one.
func Only[T any](tb testing.TB, effects []any) *T {
	tb.Helper()
	var found []*T
	var types []string
	for _, e := range effects {
		types = append(types, fmt.Sprintf("%T", e))
		if x, ok := e.(*T); ok {
			found = append(found, x)
		}
	}
	if len(found) != 1 {
		tb.Fatalf("want one %T in %v", new(T), types)
	}
	return found[0]
}
