package front

import (
	"testing"

	"github.com/thatch-run/thatch/messages"
)

// The board's writer shows a row whose machine is down as down (once),
// and as its machine last reported it once the machine is back; a row
// the machine reports again is shown as reported.
func TestABoardRowOfAMachineThatIsDownSaysSo(t *testing.T) {
	rows := &boardRows{last: map[string]messages.IMBoardRow{}, down: map[string]bool{}}
	up := map[string]bool{"n1": true, "n2": true}
	isUp := func(n string) bool { return up[n] }
	a := messages.IMBoardRow{Thread: "tg:1:2", Name: "alpha", Agent: "claude", Machine: "n1", State: messages.BoardIdle, Since: 5}
	b := messages.IMBoardRow{Thread: "tg:1:3", Name: "beta", Agent: "claude", Machine: "n2", State: messages.BoardWorking, Since: 7}
	rows.put(a)
	rows.put(b)
	if got := rows.check(isUp); len(got) != 0 {
		t.Fatalf("with every machine up: %+v", got)
	}
	up["n2"] = false
	got := rows.check(isUp)
	if len(got) != 1 || got[0].Thread != b.Thread || got[0].State != messages.BoardDown || got[0].Machine != "n2" {
		t.Fatalf("n2 down: %+v", got)
	}
	if again := rows.check(isUp); len(again) != 0 {
		t.Fatalf("told down twice: %+v", again)
	}
	up["n2"] = true
	if got := rows.check(isUp); len(got) != 1 || got[0] != b {
		t.Fatalf("n2 back: %+v", got)
	}
	up["n1"] = false
	rows.check(isUp)
	if shown := rows.put(a); *shown != a {
		t.Fatalf("a row reported again: %+v", shown)
	}
	if got := rows.check(func(string) bool { return false }); len(got) != 2 {
		t.Fatalf("every machine down: %+v", got)
	}
	gone := messages.IMBoardRow{Thread: a.Thread}
	rows.put(gone)
	if _, ok := rows.last[a.Thread]; ok {
		t.Fatal("an ended thread's row is kept")
	}
}
