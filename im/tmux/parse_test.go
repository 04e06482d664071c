package tmux

import (
	"errors"
	"testing"
)

func TestParseWindowsReadsSizedFields(t *testing.T) {
	in := "@1 %1 42 0 3:a\nb4:/x\ny3:cat0:\n@20 %33 7 1 0:1:/0:4:t \n:"
	ws, err := parseWindows(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []Window{
		{ID: "@1", Pane: "%1", PanePID: 42, Name: "a\nb", Dir: "/x\ny", Command: "cat"},
		{ID: "@20", Pane: "%33", PanePID: 7, Dir: "/", Tag: "t \n:", Dead: true},
	}
	if len(ws) != len(want) || ws[0] != want[0] || ws[1] != want[1] {
		t.Fatalf("parseWindows = %+v, want %+v", ws, want)
	}
}

func TestParseWindowsRefusesWhatTheFormatCannotProduce(t *testing.T) {
	for _, in := range []string{
		"@1 %1 42 0 3:abc",                // fields missing
		"1 %1 42 0 0:0:0:0:",              // id without @
		"@1 %1 x 0 0:0:0:0:",              // pid not a number
		"@1 %1 42 0 9:ab0:0:0:",           // length past the end
		"@1 %1 42 0 -1:0:0:0:",            // negative length
		"@1 %1 42 0 0:0:0:0:junk",         // bytes after the record
		"@1 %1 42 0 0:0:0:0:\n@2 %2",      // a cut record
		" 0:0:0:0:",                       // display-message on no window
		"@1 %1 42 2 0:0:0:0:",             // pane_dead neither 0 nor 1
		"@1 %1 42 0 1:a0:0:0:\n\n",        // an empty record
		"@1 %1 42 0 0:0:0:0:\n@1; %2 0:0", // an invalid second id
		"@1 1 42 0 0:0:0:0:",              // pane id without %
		"@1 42 0 0:0:0:0:",                // pane id missing
	} {
		if ws, err := parseWindows(in); !errors.Is(err, errParse) {
			t.Errorf("parseWindows(%q) = %+v, %v; want errParse", in, ws, err)
		}
	}
}

func TestValidIDAcceptsOnlyAtDigits(t *testing.T) {
	for id, want := range map[string]bool{
		"@0": true, "@12": true, "@007": true,
		"": false, "@": false, "12": false, "@1a": false, "@ 1": false, "@1\n": false,
		"%1": false, "$1": false, "=s:1": false, "@１": false,
	} {
		if validID(id) != want {
			t.Errorf("validID(%q) = %v, want %v", id, !want, want)
		}
	}
}

func TestExecArgEscapesAFinalSemicolon(t *testing.T) {
	for in, want := range map[string]string{
		"a": "a", "a;b": "a;b", ";": `\;`, "a;": `a\;`, `a\;`: `a\\;`, "": "",
	} {
		if got := execArg(in); got != want {
			t.Errorf("execArg(%q) = %q, want %q", in, got, want)
		}
	}
}
