package front

import (
	"strings"
	"testing"

	"github.com/thatch-run/thatch/messages"
)

// TestStreamEventsWithInvalidIDsAreRefused holds a host's stream to the
// rule of the plugin's routes: an id that could not be journaled and
// replayed is refused at the edge.
func TestStreamEventsWithInvalidIDsAreRefused(t *testing.T) {
	long := strings.Repeat("s", maxIDBytes+1)
	cases := []struct {
		name string
		msg  any
		ok   bool
	}{
		{"a plain created", &messages.SessionCreated{SessionID: "ses_1", ParentID: "ses_0"}, true},
		{"a top-level created", &messages.SessionCreated{SessionID: "ses_1"}, true},
		{"NUL in a session id", &messages.SessionIdle{SessionID: "ses\x00x"}, false},
		{"no session id", &messages.SessionDeleted{}, false},
		{"an overlong parent id", &messages.SessionCreated{SessionID: "ses_1", ParentID: long}, false},
		{"invalid UTF-8", &messages.SessionErrored{SessionID: "ses_\xff"}, false},
		{"a control character in a tool's session", &messages.ToolExecuted{Interaction: messages.Interaction{SessionID: "a\nb", ID: "c"}}, false},
		{"a compaction", &messages.SessionCompacted{SessionID: "ses_1"}, true},
		{"a command", &messages.CommandExecuting{SessionID: "ses_\x07"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkEventIDs(tc.msg); (err == nil) != tc.ok {
				t.Fatalf("checkEventIDs = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
