package front

import (
	"context"
	"testing"
	"time"
)

// Live edits are spaced per chat, whatever topic they are of: after one
// edit of a forum group, another topic of the same group waits its turn
// (here its wait is cut short, so it gets none); another chat does not.
func TestLiveEditsAreSpacedPerChat(t *testing.T) {
	var g editGates
	if !g.wait(context.Background(), "tg:-100:5", time.Hour) {
		t.Fatal("the first edit of a chat waited")
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if g.wait(done, "tg:-100:7", time.Hour) {
		t.Fatal("another topic of the same group was edited without waiting its turn")
	}
	if !g.wait(done, "tg:-200:5", time.Hour) || !g.wait(done, "fs:oc_1", time.Hour) {
		t.Fatal("another chat waited for this one's edits")
	}
}

// claude's footer as claude 2.1.328 draws it in each mode.
func TestClaudesModeIsReadFromItsFooter(t *testing.T) {
	for footer, want := range map[string]string{
		"❯\u00a0\n────\n  ⏵⏵ auto mode on (shift+tab to cycle) · ← for agents": "auto",
		"❯\u00a0\n────\n  ⏸ manual mode on · ? for shortcuts":                  "manual",
		"  ⏵⏵ accept edits on (shift+tab to cycle)":                            "accept-edits",
		"  ⏸ plan mode on (shift+tab to cycle) · ← for agents":                 "plan",
		"❯\u00a0\n  ? for shortcuts":                                           "",
	} {
		if got := claudeModeOf(footer); got != want {
			t.Errorf("claudeModeOf(%q) = %q, want %q", footer, got, want)
		}
	}
}
