package liveturn

import (
	"testing"
	"time"

	"github.com/thatch-run/thatch/messages"
)

func TestTookSaysTheTimeAsAPersonWould(t *testing.T) {
	at := time.Unix(1000, 0)
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{0, "0s"}, {45 * time.Second, "45s"}, {190 * time.Second, "3m 10s"}, {62 * time.Minute, "1h 2m"}, {-time.Second, "0s"}} {
		if got := Took(at.UnixMilli(), at.Add(c.d)); got != c.want {
			t.Errorf("Took(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

// A result marks its own call's line, once; one for a call the turn does
// not hold changes nothing (it was read in a turn before), and neither
// does the same text again.
func TestFoldMarksEachCallWithItsOwnOutcome(t *testing.T) {
	turn := Turn{}.Fold([]messages.IMTurnItem{
		{Kind: messages.TurnTool, ID: "a", Text: "▸ Bash: make"},
		{Kind: messages.TurnTool, ID: "b", Text: "▸ Bash: make test"},
		{Kind: messages.TurnResult, ID: "b", Outcome: "✗ exit 2"},
		{Kind: messages.TurnText, Text: "fixing"},
	})
	rev := turn.Rev
	turn = turn.Fold([]messages.IMTurnItem{{Kind: messages.TurnResult, ID: "zz", Outcome: "✓"}, {Kind: messages.TurnText, Text: "fixing"}})
	if turn.Rev != rev || turn.Lines[0].Outcome != "" || turn.Lines[1].Outcome != "✗ exit 2" || turn.Text != "fixing" {
		t.Fatalf("turn %+v (rev %d, was %d)", turn, turn.Rev, rev)
	}
	if got := turn.Summary(time.UnixMilli(turn.Since).Add(time.Minute)); got != "✓ 2 tool calls (1 failed), 1m 0s" {
		t.Fatalf("summary %q", got)
	}
}
