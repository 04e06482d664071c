package front

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/thatch-run/thatch/messages"
)

// FuzzToolBody: a tool call body the edge accepts, once turned into the
// event its family journals, encodes and decodes back to an equal event,
// and its args are already in the form the journal writes. Seeds are in
// testdata/fuzz/FuzzToolBody; plain go test runs them.
func FuzzToolBody(f *testing.F) {
	f.Add([]byte(`{"host":"fake","sessionID":"ses_p","callID":"c1","tool":"bash","args":{"command":"make test"},"title":"t","output":"o"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		msg, err := toolMessage(body)
		if err != nil {
			return
		}
		ev := &messages.FamilyInteractionBuffered{SessionID: msg.Interaction.SessionID, Seq: 1, Interaction: msg.Interaction}
		b, err := messages.Encode(ev)
		if err != nil {
			t.Fatalf("accepted %q, but its event does not encode: %v", body, err)
		}
		back, err := messages.Decode(b)
		if err != nil {
			t.Fatalf("accepted %q, but its event does not decode: %v", body, err)
		}
		if !reflect.DeepEqual(back, ev) {
			t.Fatalf("accepted %q; its event decodes to\n%+v\nnot\n%+v", body, back, ev)
		}
		if again, err := normalizeArgs(msg.Interaction.Args); err != nil || !bytes.Equal(again, msg.Interaction.Args) {
			t.Fatalf("normalized args %s normalize again to %s, %v", msg.Interaction.Args, again, err)
		}
	})
}

func TestNormalizeArgs(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	marker, _ := json.Marshal(cutMarker)
	for _, tc := range []struct {
		name, in, want, err string
	}{
		{name: "compacted", in: ` { "a" : [1, 2.50, -0, 1E+2] , "b":{ } } `, want: `{"a":[1,2.50,-0,1E+2],"b":{}}`},
		{name: "keys kept in order, duplicates too", in: `{"b":1,"a":2,"b":3}`, want: `{"b":1,"a":2,"b":3}`},
		{name: "strings escaped as the encoder escapes them", in: `["<a&b>", "\u00e9", "\u2028", "\ud800"]`, want: `["\u003ca\u0026b\u003e","é","\u2028","` + "\ufffd" + `"]`},
		{name: "scalars", in: `[true,false,null,"s"]`, want: `[true,false,null,"s"]`},
		{name: "null", in: `null`, want: `null`},
		{name: "big integer", in: `[123456789012345678901234567890]`, want: `[123456789012345678901234567890]`},
		{name: "at the depth cap", in: deep(maxArgsDepth), want: deep(maxArgsDepth)},
		{name: "one level deeper is cut", in: deep(maxArgsDepth + 1),
			want: strings.Repeat("[", maxArgsDepth) + string(marker) + strings.Repeat("]", maxArgsDepth)},
		{name: "cut inside an object, siblings kept", in: `{"a":` + deep(maxArgsDepth+10) + `,"b":1}`,
			want: `{"a":` + strings.Repeat("[", maxArgsDepth-1) + string(marker) + strings.Repeat("]", maxArgsDepth-1) + `,"b":1}`},
		{name: "number out of range", in: `[1,1e999]`, err: "number 1e999 is out of range"},
		{name: "negative out of range", in: `{"n":-1e400}`, err: "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := normalizeArgs(json.RawMessage(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("normalizeArgs(%s) = %s, %v; want error %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("normalizeArgs(%s) =\n%s, %v; want\n%s", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestCheckID(t *testing.T) {
	for _, tc := range []struct {
		v        string
		required bool
		ok       bool
	}{
		{"ses_01JQ8ZK", true, true},
		{"", false, true},
		{"", true, false},
		{"ses_\x00", true, false},
		{"ses\n", true, false},
		{"ses\x7f", true, false},
		{"ses\u0085", true, false}, // C1 control
		{"ses\xff", true, false},
		{"ses\ufffd", true, false},
		{"opencode@127.0.0.1:4096", true, true},
		{"thatch/exit", true, true},
		{"sés_ünïcode", true, true},
		{strings.Repeat("s", maxIDBytes), true, true},
		{strings.Repeat("s", maxIDBytes+1), true, false},
	} {
		if err := checkID("sessionID", tc.v, tc.required); (err == nil) != tc.ok {
			t.Errorf("checkID(%q, required=%v) = %v; want ok=%v", tc.v, tc.required, err, tc.ok)
		}
	}
}

func TestDecodeStrictRefusesTrailingData(t *testing.T) {
	var v map[string]any
	for _, in := range []string{`{"a":1} xyz`, `{"a":1}{"b":2}`, `{"a":1}]`, `{"a":1} 2`} {
		if err := decodeStrict([]byte(in), &v); err == nil {
			t.Errorf("decodeStrict(%s) accepted it", in)
		}
	}
	for _, in := range []string{`{"a":1}`, " {\"a\":1} \n\t"} {
		if err := decodeStrict([]byte(in), &v); err != nil {
			t.Errorf("decodeStrict(%q) = %v", in, err)
		}
	}
}
