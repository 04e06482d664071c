package chat

import "testing"

func TestParseCommand(t *testing.T) {
	for _, tc := range []struct {
		text, bot string
		want      Command
		mine, ok  bool
	}{
		{"/esc", "thatchbot", Command{Name: "esc"}, true, true},
		{"/history 3", "", Command{Name: "history", Args: "3"}, true, true},
		{"/History@ThatchBot  7 ", "thatchbot", Command{Name: "history", Args: "7"}, true, true},
		{"/kill@otherbot", "thatchbot", Command{Name: "kill"}, false, true},
		{"/kill@anybot", "", Command{Name: "kill"}, true, true},
		{"/compact\nkeep the tests", "", Command{Name: "compact", Args: "keep the tests"}, true, true},
		{"/tmp/x is a path", "", Command{}, false, false},
		{"/ space", "", Command{}, false, false},
		{"no command", "", Command{}, false, false},
		{"", "", Command{}, false, false},
	} {
		c, mine, ok := ParseCommand(tc.text, tc.bot)
		if c != tc.want || mine != tc.mine || ok != tc.ok {
			t.Errorf("ParseCommand(%q, %q) = %+v, %v, %v; want %+v, %v, %v", tc.text, tc.bot, c, mine, ok, tc.want, tc.mine, tc.ok)
		}
	}
	if !IsCommand("screenshot") || !IsCommand("start") || IsCommand("compact") {
		t.Error("IsCommand does not know thatch's own commands from the agent's")
	}
}
