package main

import (
	"slices"
	"testing"

	"github.com/thatch-run/thatch/im/agents"
)

// The transcript benchmark waits for the bot to send exactly the text it
// wrote; a line the claude reader does not take as one reply with that
// text would make it wait for nothing.
func TestClaudeLineIsReadAsOneReplyWithItsText(t *testing.T) {
	reg, err := agents.NewRegistry(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	claude, ok := reg.Get("claude")
	if !ok {
		t.Fatal("no claude agent")
	}
	for _, text := range []string{replyText("r", 3, 17), `quote " and \ backslash`, "two\nlines"} {
		line := claudeLine(text)
		if line[len(line)-1] != '\n' || slices.Contains(line[:len(line)-1], '\n') {
			t.Errorf("claudeLine(%q) = %q: want one line ended by a newline", text, line)
		}
		if got := claude.Replies(line[:len(line)-1]); !slices.Equal(got, []string{text}) {
			t.Errorf("claude reads %q as %q, want [%q]", line, got, text)
		}
	}
}
