package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

type testEventV2 struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

type testUnregistered struct{ X int }

func init() {
	Register[testEventV2]("test.event", 2)
	RegisterUpgrade("test.event", 1, func(old json.RawMessage) (json.RawMessage, error) {
		var v1 struct {
			Title string `json:"title"`
		}
		if err := json.Unmarshal(old, &v1); err != nil {
			return nil, err
		}
		return json.Marshal(testEventV2{Name: v1.Title, Count: 1})
	})
}

func TestRoundTrip(t *testing.T) {
	b, err := Encode(&testEventV2{Name: "a", Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeAs[testEventV2](b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "a" || got.Count != 3 {
		t.Fatalf("got %+v", got)
	}
	// Values encode the same as pointers.
	b2, err := Encode(testEventV2{Name: "a", Count: 3})
	if err != nil || string(b2) != string(b) {
		t.Fatalf("value encoding differs: %q vs %q (%v)", b2, b, err)
	}
}

func envelope(name string, version uint64, body string) []byte {
	b := []byte{formatV1}
	b = append(b, byte(len(name)))
	b = append(b, name...)
	b = append(b, byte(version))
	return append(b, body...)
}

// A formatV2 envelope carries a checksum of what Encode wrote: any changed
// byte after the format byte is ErrCorrupt, not a wrong value, although its
// body skips the JSON check.
func TestAChangedByteOfAChecksummedEnvelopeIsCorrupt(t *testing.T) {
	b, err := Encode(&testEventV2{Name: "a", Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != formatV2 {
		t.Fatalf("Encode wrote format %#x, want %#x", b[0], formatV2)
	}
	for i := 1; i < len(b); i++ {
		c := bytes.Clone(b)
		c[i] ^= 0x20
		if v, err := Decode(c); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d changed: Decode = %v, %v; want ErrCorrupt", i, v, err)
		}
	}
	if _, err := Decode(b[:len(b)-1]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated: %v, want ErrCorrupt", err)
	}
}

// Journals written before formatV2 hold formatV1 envelopes: they still
// decode, and their bodies are still checked to be JSON.
func TestFormatV1EnvelopesStillDecodeAndAreChecked(t *testing.T) {
	got, err := DecodeAs[testEventV2](envelope("test.event", 2, `{"name":"a","count":3}`))
	if err != nil || got.Name != "a" || got.Count != 3 {
		t.Fatalf("got %+v, %v", got, err)
	}
	if _, err := Decode(envelope("test.event", 2, `{"name":"a","count":`)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a truncated formatV1 body: %v, want ErrCorrupt", err)
	}
}

func TestUpgradeFromOlderVersion(t *testing.T) {
	got, err := DecodeAs[testEventV2](envelope("test.event", 1, `{"title":"old"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "old" || got.Count != 1 {
		t.Fatalf("upgrade gave %+v", got)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrCorrupt},
		{"bad format", []byte{0x7f, 1, 'a'}, ErrCorrupt},
		{"truncated name", []byte{formatV1, 9, 'a'}, ErrCorrupt},
		{"unknown type", envelope("nope", 1, `{}`), ErrUnknownType},
		{"newer version", envelope("test.event", 3, `{}`), ErrUnknownVersion},
		{"version without upgrade", envelope("test.event", 0, `{}`), ErrUnknownVersion},
	}
	for _, c := range cases {
		v, err := Decode(c.in)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
		if v != nil {
			t.Errorf("%s: got value %v alongside error", c.name, v)
		}
	}
	if _, err := Encode(&testUnregistered{}); !errors.Is(err, ErrUnknownType) {
		t.Errorf("encode unregistered: %v", err)
	}
}

// The codec's JSON must stay readable by encoding/json (and the other way
// round), so a journal never depends on one library's quirks.
func TestBodiesAreStandardJSON(t *testing.T) {
	in := &FamilyInteractionBuffered{SessionID: "ses_a", Seq: 7, Dropped: []uint64{1, 2},
		Interaction: Interaction{ID: "c", SessionID: "ses_a", Tool: "bash", Args: json.RawMessage(`{"command":"ls"}`), Output: "a\u0000b\"c<>&"}}
	b, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	_, _, body, _, err := split(b)
	if err != nil {
		t.Fatal(err)
	}
	var std FamilyInteractionBuffered
	if err := json.Unmarshal(body, &std); err != nil {
		t.Fatalf("encoding/json cannot read the body: %v", err)
	}
	if std.Interaction.Output != in.Interaction.Output || string(std.Interaction.Args) != `{"command":"ls"}` || std.Seq != 7 {
		t.Fatalf("encoding/json read %+v", std)
	}
	stdBody, _ := json.Marshal(in)
	got, err := DecodeAs[FamilyInteractionBuffered](append(b[:len(b)-len(body)], stdBody...))
	if err != nil || got.Interaction.Output != in.Interaction.Output || len(got.Dropped) != 2 {
		t.Fatalf("codec cannot read encoding/json's body: %+v %v", got, err)
	}
}
