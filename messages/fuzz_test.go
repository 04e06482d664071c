package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

var writeSeeds = flag.Bool("write-seeds", false, "rewrite the seeds of FuzzDecode and FuzzEncode under testdata/fuzz")

// seedEvents has a value of every journaled event type, with its fields
// set, plus a few shapes that have tripped JSON codecs: escapes, NUL,
// non-ASCII text, raw JSON arguments and times with an offset.
func seedEvents() []any {
	at := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	off := time.Date(2025, 3, 1, 14, 30, 0, 0, time.FixedZone("", 2*3600+1800))
	return []any{
		&FamilyHostSeen{Host: "http://127.0.0.1:4096"},
		&FamilyParentCreated{Directory: "/home/u/src/api"},
		&FamilyChildRecorded{ChildID: "ses_child", Title: "thatch-extraction", Extraction: true},
		&FamilyInteractionBuffered{SessionID: "ses_a", Seq: 7, Dropped: []uint64{1, 2},
			Interaction: Interaction{ID: "call_1", SessionID: "ses_a", Tool: "bash",
				Args: json.RawMessage(`{"command":"ls -la","timeout":5}`), Title: "ls", Output: "a\u0000b\"c<>&\u2028 é 数据"}},
		&FamilyInteractionBuffered{SessionID: "ses_b", Seq: 1 << 60, Interaction: Interaction{ID: "x", Tool: "read"}},
		&FamilyPayloadClaimed{FetcherID: "ses_child", Seqs: []uint64{3, 4, 5}, At: at},
		&FamilyPayloadClaimed{FetcherID: "ses_child", At: off},
		&FamilyClaimCompleted{FetcherID: "ses_child", Seqs: []uint64{3}, Cause: CompletedByAck},
		&FamilyEntriesRequeued{Seqs: []uint64{9, 10}, Cause: "child error"},
		&FamilyMemoryCounted{ChildID: "ses_child", Op: MemoryOp("created"), At: at},
		&FamilyMemoryCounted{ChildID: "ses_child", Op: MemoryOp("updated")},
		&FamilyExtractionStarted{At: at},
		&FamilyExtractionChildAttached{ChildID: "ses_child", At: at},
		&FamilyExtractionStopped{Cause: "child error"},
		&FamilyChildCleared{ChildID: "ses_child", Cause: "deleted"},
		&FamilyCompactionStarted{},
		&FamilyCompactionFinished{},
		&FamilyWrapUpArmed{Kind: "exit", Token: "THATCH-EXIT-1234"},
		&FamilyWrapUpCheckStarted{At: at},
		&FamilyWrapUpCheckFinished{Cause: "no token"},
		&FamilyWrapUpDisarmed{Cause: "user prompt"},
		&FamilyExitGreenlit{At: at},
		&FamilyExitFinished{Cause: "closed"},
		&FamilyDeletionNoted{},
		&FamilyFinishScheduled{ChildID: "ses_child"},
		&FamilyFinishCancelled{ChildID: "ses_child"},
		&FamilyParentDeleted{Completed: []uint64{1}, Dropped: []uint64{2, 3}},
		&SweepRan{At: at},
	}
}

// FuzzDecode: Decode of any bytes returns a value or an error and never
// panics; a value it returns can be journaled again, and an encoding read
// back encodes to the same bytes, so replaying a journal and writing its
// snapshot never drifts.
func FuzzDecode(f *testing.F) {
	for _, v := range seedEvents() {
		b, err := Encode(v)
		if err != nil {
			f.Fatalf("encode seed %T: %v", v, err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
		if err != nil {
			if v != nil {
				t.Fatalf("Decode returned %T alongside error %v", v, err)
			}
			return
		}
		b1, err := Encode(v)
		if errors.Is(err, ErrRawJSON) || errors.Is(err, ErrInvalidUTF8) {
			// Decode does not check raw JSON or text again (replay would
			// pay for it); Encode refuses them, so no journal written by
			// the codec holds such a record.
			return
		}
		if err != nil {
			t.Fatalf("Decode gave a %T that Encode refuses: %v", v, err)
		}
		v2, err := Decode(b1)
		if err != nil {
			t.Fatalf("Decode of Encode(%T) failed: %v\nbytes %q", v, err, b1)
		}
		b2, err := Encode(v2)
		if err != nil {
			t.Fatalf("re-encode of %T: %v", v2, err)
		}
		if !bytes.Equal(b1, b2) {
			t.Fatalf("%T re-encodes differently:\n first %q\nsecond %q", v, b1, b2)
		}
	})
}

// encodeSeeds are the committed corpus of FuzzEncode.
var encodeSeeds = []struct {
	id     string
	seq    uint64
	tool   string
	args   []byte
	output string
	nanos  int64
}{
	{"ses_a", 7, "bash", []byte(`{"command":"ls -la","timeout":5}`), "a\u0000b<>&", 1740830400123456789},
	{"", 0, "", []byte(`[1, 2.50, -0, 1e3, "x", null, true, {"a": {}}]`), "", 0},
	{"数据", 1 << 63, "read", []byte(` "s" `), "\u2028\u2029 é", -1},
	{"ses_b", 1, "edit", []byte(`{"a":1,"a":2}`), "\\ufffd", 253402300799999999},
	{"ses_c", 2, "write", []byte(`not json`), "\ufffd", 1},
}

// FuzzEncode builds journaled events from arbitrary field values: whatever
// Encode accepts must decode, and the decoded value must encode to the same
// bytes. Args is raw JSON from the plugin, which Encode embeds as it is.
func FuzzEncode(f *testing.F) {
	for _, a := range encodeSeeds {
		f.Add(a.id, a.seq, a.tool, a.args, a.output, a.nanos)
	}
	f.Fuzz(func(t *testing.T, id string, seq uint64, tool string, args []byte, output string, nanos int64) {
		evs := []any{
			&FamilyInteractionBuffered{SessionID: id, Seq: seq, Dropped: []uint64{seq},
				Interaction: Interaction{ID: id, SessionID: id, Tool: tool, Args: json.RawMessage(args), Title: tool, Output: output}},
			&FamilyPayloadClaimed{FetcherID: id, Seqs: []uint64{seq}, At: time.Unix(0, nanos).UTC()},
			&FamilyChildRecorded{ChildID: id, Title: output, Extraction: seq%2 == 0},
			&FamilyWrapUpArmed{Kind: tool, Token: output},
		}
		for _, v := range evs {
			if invalidUTF8(reflect.ValueOf(v)) {
				// Refused (TestEncodeRefusesInvalidUTF8); not fed to the
				// JSON encoder here, where such inputs stalled a fuzz
				// worker on a loaded machine.
				continue
			}
			b1, err := Encode(v)
			if err != nil {
				continue // refused: nothing is journaled
			}
			v2, err := Decode(b1)
			if err != nil {
				t.Fatalf("Decode of an accepted %T failed: %v\nbytes %q", v, err, b1)
			}
			b2, err := Encode(v2)
			if err != nil || !bytes.Equal(b1, b2) {
				t.Fatalf("%T re-encodes differently (%v):\n first %q\nsecond %q", v, err, b1, b2)
			}
		}
	})
}

// TestDecodeOfBadJSONNeverPanics is a defect FuzzDecode found: goccy/go-json
// v0.10.5 sometimes indexes past the end of a truncated body
// (decoder.skipWhiteSpace, "index out of range"), so a corrupt journal
// record panics the entity that replays it instead of failing with
// ErrCorrupt. A json.Valid check (or a recover) in Decode, before goccy
// sees the body, fixes it; the fix belongs in codec.go.
func TestDecodeOfBadJSONNeverPanics(t *testing.T) {
	in := []byte("\x01\x1csession.interaction_buffered\x01{\"interACtion\":{\"outpu\\")
	for range 2000 {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Decode(%q) panicked: %v", in, r)
				}
			}()
			if _, err := Decode(in); err == nil {
				t.Fatalf("Decode(%q) accepted a truncated body", in)
			}
		}()
	}
}

// TestEncodeRefusesRawJSONThatIsNotJSON is the defect the fuzzers found:
// raw JSON is embedded as it is, so args that are not JSON were journaled
// in a record the codec could not read back.
func TestEncodeRefusesRawJSONThatIsNotJSON(t *testing.T) {
	for _, raw := range []string{"00", "{0}", "[1,", `{"a":}`} {
		v := &FamilyInteractionBuffered{Interaction: Interaction{Args: json.RawMessage(raw)}}
		if b, err := Encode(v); !errors.Is(err, ErrRawJSON) {
			t.Errorf("Encode with args %q: %q, %v; want ErrRawJSON", raw, b, err)
		}
	}
	for _, raw := range []string{"", "null", "{}", `{"command":"make test"}`, "[1,2]"} {
		v := &FamilyInteractionBuffered{Interaction: Interaction{Args: json.RawMessage(raw)}}
		b, err := Encode(v)
		if err != nil {
			t.Errorf("Encode with args %q: %v", raw, err)
			continue
		}
		if _, err := Decode(b); err != nil {
			t.Errorf("Decode of args %q: %v", raw, err)
		}
	}
}

// TestEncodeRefusesInvalidUTF8 is the defect FuzzDecode found: a string
// that is not valid UTF-8 was encoded with "\ufffd" in place of the bad
// bytes, so the value replayed from the journal was not the value acted
// on. Encode refuses it now; a valid U+FFFD, or the text "\ufffd", is
// kept as it is.
func TestEncodeRefusesInvalidUTF8(t *testing.T) {
	for _, in := range []any{
		&FamilyInteractionBuffered{Interaction: Interaction{Output: "\xa9"}},
		&FamilyInteractionBuffered{Interaction: Interaction{Args: json.RawMessage("\"\xa9\"")}},
		&FamilyChildRecorded{ChildID: "a\xffb"},
	} {
		if _, err := Encode(in); !errors.Is(err, ErrInvalidUTF8) && !errors.Is(err, ErrRawJSON) {
			t.Errorf("Encode(%+v) = %v, want a refusal", in, err)
		}
	}
	for _, ok := range []string{"\ufffd", `\ufffd`, `\\ufffd`, "é \u2028"} {
		in := &FamilyInteractionBuffered{Interaction: Interaction{Output: ok, Args: json.RawMessage(`"\ufffd"`)}}
		b1, err := Encode(in)
		if err != nil {
			t.Fatalf("Encode(%q) = %v", ok, err)
		}
		out, err := DecodeAs[FamilyInteractionBuffered](b1)
		if err != nil {
			t.Fatal(err)
		}
		if out.Interaction.Output != ok {
			t.Errorf("output %q was journaled as %q", ok, out.Interaction.Output)
		}
		if b2, _ := Encode(out); !bytes.Equal(b1, b2) {
			t.Errorf("re-encoding differs:\n first %q\nsecond %q", b1, b2)
		}
	}
}

// TestWriteFuzzSeeds rewrites the committed seeds of FuzzDecode and
// FuzzEncode with -write-seeds; without it, it checks that every seed
// still encodes as its committed file says, so the corpus follows the
// schemas.
func TestWriteFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	for i, v := range seedEvents() {
		b, err := Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := TypeName(v)
		path := filepath.Join(dir, fmt.Sprintf("seed-%02d-%s", i, name))
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if *writeSeeds {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		checkSeed(t, path, want)
	}
	dir = filepath.Join("testdata", "fuzz", "FuzzEncode")
	for i, a := range encodeSeeds {
		path := filepath.Join(dir, fmt.Sprintf("seed-%02d", i))
		want := fmt.Sprintf("go test fuzz v1\nstring(%q)\nuint64(%d)\nstring(%q)\n[]byte(%q)\nstring(%q)\nint64(%d)\n",
			a.id, a.seq, a.tool, a.args, a.output, a.nanos)
		if *writeSeeds {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		checkSeed(t, path, want)
	}
}

func checkSeed(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Errorf("seed %s is missing or out of date (run go test -run TestWriteFuzzSeeds -write-seeds): %v", path, err)
	}
}
