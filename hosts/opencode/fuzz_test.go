package opencode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/thatch-run/thatch/messages"
)

// The messages Decode produces are not journaled as they are: the session
// entity journals events built from their fields. The fuzz targets still
// check that the messages themselves survive the journal codec, under
// names registered only in this test binary, so that anything the decoder
// lets through can be journaled and replayed unchanged.
func init() {
	register := func(v any, name string, reg func(string, uint16)) {
		if _, ok := messages.TypeName(v); !ok {
			reg("opencode_test."+name, 1)
		}
	}
	register(&messages.SessionCreated{}, "session_created", messages.Register[messages.SessionCreated])
	register(&messages.SessionIdle{}, "session_idle", messages.Register[messages.SessionIdle])
	register(&messages.SessionErrored{}, "session_errored", messages.Register[messages.SessionErrored])
	register(&messages.SessionDeleted{}, "session_deleted", messages.Register[messages.SessionDeleted])
	register(&messages.SessionCompacted{}, "session_compacted", messages.Register[messages.SessionCompacted])
}

// journaled is what the session entity journals from a decoded message,
// plus the message itself.
func journaled(msg any) []any {
	switch m := msg.(type) {
	case *messages.SessionCreated:
		return []any{m, &messages.FamilyHostSeen{Host: m.Host},
			&messages.FamilyParentCreated{Directory: m.Directory},
			&messages.FamilyChildRecorded{ChildID: m.SessionID, Title: m.Title}}
	case *messages.SessionIdle, *messages.SessionDeleted, *messages.SessionCompacted:
		return []any{m}
	case *messages.SessionErrored:
		return []any{m, &messages.FamilyChildCleared{ChildID: m.SessionID, Cause: "error"}}
	}
	return nil
}

// checkDecoded checks one result of Decoder.Decode: an error wraps
// ErrMalformedEvent and comes alone; a message is one of the documented
// types, names a session, and round-trips through the journal codec.
func checkDecoded(t *testing.T, frame []byte, msg any, err error) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, ErrMalformedEvent) || msg != nil {
			t.Fatalf("Decode(%q) = %v, %v; want nil and ErrMalformedEvent", frame, msg, err)
		}
		return
	}
	switch m := msg.(type) {
	case nil:
		return
	case *Connected, *Heartbeat:
		if reflect.ValueOf(m).Elem().Field(0).String() != testHost {
			t.Fatalf("Decode(%q) = %+v without the host", frame, m)
		}
		return // about the connection: never journaled
	case *messages.SessionCreated, *messages.SessionIdle, *messages.SessionErrored,
		*messages.SessionDeleted, *messages.SessionCompacted:
		v := reflect.ValueOf(m).Elem()
		if v.FieldByName("Host").String() != testHost || v.FieldByName("SessionID").String() == "" {
			t.Fatalf("Decode(%q) = %+v: want host %q and a session id", frame, m, testHost)
		}
	default:
		t.Fatalf("Decode(%q) = %T, not a documented result", frame, msg)
	}
	for _, v := range journaled(msg) {
		b1, err := messages.Encode(v)
		if err != nil {
			t.Fatalf("Decode(%q) gave %+v, and %T cannot be journaled: %v", frame, msg, v, err)
		}
		back, err := messages.Decode(b1)
		if err != nil {
			t.Fatalf("journaled %T from %q does not decode: %v", v, frame, err)
		}
		if !reflect.DeepEqual(back, v) {
			t.Fatalf("journaled %T from %q comes back changed:\n  live %+v\nreplay %+v", v, frame, v, back)
		}
		if b2, err := messages.Encode(back); err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("replayed %T from %q encodes differently (%v):\n first %q\nsecond %q", v, frame, err, b1, b2)
		}
	}
}

// TestDecodedErrorIsValidUTF8 is a defect found while writing the fuzz
// targets: for an error that is not the {name, data:{message}} union,
// errorText keeps the raw JSON bytes, which may hold invalid UTF-8 (JSON
// decoding replaces it in strings, but not in raw values). The journal
// codec writes such a string with U+FFFD in place of the bad bytes, so the
// message would not replay as it was received. errorText should pass the
// raw text through strings.ToValidUTF8 (events.go).
func TestDecodedErrorIsValidUTF8(t *testing.T) {
	frame := []byte("{\"type\":\"session.error\",\"properties\":{\"sessionID\":\"ses_1\",\"error\":[\"\xff\"]}}")
	msg, err := NewDecoder(testHost).Decode(frame)
	if err != nil {
		return // refusing the frame is a fix too
	}
	if m, ok := msg.(*messages.SessionErrored); !ok || !utf8.ValidString(m.Error) {
		t.Fatalf("Decode(%q) = %#v", frame, msg)
	}
	checkDecoded(t, frame, msg, err)
}

// FuzzDecoder: Decode of any frame never panics, and whatever it lets
// through can be journaled and replayed unchanged.
func FuzzDecoder(f *testing.F) {
	for _, frame := range captureFrames(f) {
		f.Add(frame)
	}
	for _, frame := range syntheticFrames {
		f.Add([]byte(frame))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		msg, err := NewDecoder(testHost).Decode(frame)
		checkDecoded(t, frame, msg, err)
	})
}

// FuzzSSEReader: the reader never panics or loops on any stream, the
// frames it returns do not depend on how the stream is cut into reads,
// respect the limit, and decode as FuzzDecoder requires; once it fails it
// keeps failing the same way.
func FuzzSSEReader(f *testing.F) {
	for _, name := range captures {
		b, err := os.ReadFile(filepath.Join("testdata", name+".sse"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint16(0), uint8(0))
		f.Add(b, uint16(600), uint8(7))
	}
	f.Fuzz(func(t *testing.T, stream []byte, maxLine uint16, chunk uint8) {
		read := func(chunks []int) ([]string, error) {
			r := NewSSEReader(&chunkReader{data: stream, chunks: chunks}, int(maxLine))
			var out []string
			for i := 0; ; i++ {
				if i > len(stream)+1 {
					t.Fatalf("more frames than bytes from %q", stream)
				}
				frame, err := r.Next()
				if err != nil {
					if again, err2 := r.Next(); again != nil || err2 != err {
						t.Fatalf("after %v, Next gave %q, %v", err, again, err2)
					}
					return out, err
				}
				if limit := int(maxLine); limit > 0 && len(frame) > limit {
					t.Fatalf("a frame of %d bytes passed the limit %d", len(frame), limit)
				}
				out = append(out, string(frame))
			}
		}
		whole, errWhole := read(nil)
		var chunks []int
		if chunk > 0 {
			for range len(stream)/int(chunk) + 1 {
				chunks = append(chunks, int(chunk))
			}
		} else {
			for range len(stream) {
				chunks = append(chunks, 1)
			}
		}
		cut, errCut := read(chunks)
		if !reflect.DeepEqual(whole, cut) || !sameError(errWhole, errCut) {
			t.Fatalf("stream %q read whole gave %q, %v; in reads of %d gave %q, %v", stream, whole, errWhole, chunk, cut, errCut)
		}
		if errWhole != io.EOF && !errors.Is(errWhole, ErrLineTooLong) && !errors.Is(errWhole, ErrFrameTooLarge) {
			t.Fatalf("stream %q ended with %v", stream, errWhole)
		}
		d := NewDecoder(testHost)
		for _, frame := range whole {
			msg, err := d.Decode([]byte(frame))
			checkDecoded(t, []byte(frame), msg, err)
		}
	})
}

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Error() == b.Error()
}

// syntheticFrames are followed events that the captures lack, in the
// shapes opencode 1.18's OpenAPI document gives them.
var syntheticFrames = []string{
	`{"type":"server.heartbeat","properties":{}}`,
	`{"type":"session.error","properties":{"sessionID":"ses_1","error":{"name":"ProviderAuthError","data":{"message":"bad key"}}}}`,
	`{"type":"session.error","properties":{"sessionID":"ses_1","error":["odd",{"shape":1}]}}`,
	`{"type":"session.error","properties":{"error":{"name":"UnknownError"}}}`,
	`{"type":"session.compacted","properties":{"sessionID":"ses_1"}}`,
	`{"type":"session.created","properties":{"info":{"id":"ses_old","parentID":"ses_p","title":"t é","directory":"/d"}}}`,
}

// captureFrames returns the data of every frame of the real captures.
func captureFrames(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, name := range captures {
		b, err := os.ReadFile(filepath.Join("testdata", name+".sse"))
		if err != nil {
			tb.Fatal(err)
		}
		r := NewSSEReader(bytes.NewReader(b), 0)
		for {
			frame, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, frame)
		}
	}
	return out
}

// TestFuzzSeeds checks that the committed corpora under testdata/fuzz hold
// the captures: FuzzDecoder one file per distinct frame type and shape,
// FuzzSSEReader the two whole captures. -rewrite rewrites them.
func TestFuzzSeeds(t *testing.T) {
	want := map[string]string{}
	seen := map[string]bool{}
	for _, frame := range captureFrames(t) {
		// One seed per event type and field set is enough: the rest of a
		// capture repeats the same shapes with other ids.
		typ := frameType(frame)
		if seen[typ] {
			continue
		}
		seen[typ] = true
		want[filepath.Join("FuzzDecoder", "capture-"+typ)] = fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", frame)
	}
	for i, frame := range syntheticFrames {
		want[filepath.Join("FuzzDecoder", fmt.Sprintf("synthetic-%02d", i))] = fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", frame)
	}
	for _, name := range captures {
		b, err := os.ReadFile(filepath.Join("testdata", name+".sse"))
		if err != nil {
			t.Fatal(err)
		}
		want[filepath.Join("FuzzSSEReader", name)] = fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nuint16(0)\nuint8(0)\n", b)
		want[filepath.Join("FuzzSSEReader", name+"-small")] = fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nuint16(600)\nuint8(7)\n", b)
	}
	for rel, content := range want {
		path := filepath.Join("testdata", "fuzz", rel)
		if *rewrite {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Errorf("seed %s is missing or out of date (go test -run TestFuzzSeeds -rewrite): %v", path, err)
		}
	}
}

// frameType names a frame by its "type" and, for session events, whether
// it has info and status, for picking seeds.
func frameType(frame []byte) string {
	s := string(frame)
	i := strings.Index(s, `"type":"`)
	if i < 0 {
		return "untyped"
	}
	typ := s[i+8:]
	typ = typ[:strings.IndexByte(typ, '"')]
	if j := strings.Index(s, `"status":{"type":"`); j >= 0 {
		st := s[j+18:]
		typ += "-" + st[:strings.IndexByte(st, '"')]
	}
	return typ
}
