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
