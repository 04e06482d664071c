package opencode

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/thatch-run/thatch/messages"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output files under testdata")

const testHost = "oc1"

// captures are real /event recordings of opencode 1.18.33.
var captures = []string{
	"events-turn-with-tool-call",
	"events-parent-child-noreply-delete",
}

// decodeCapture reads testdata/<name>.sse frame by frame and returns the
// decoded messages and a readable transcript of them.
func decodeCapture(t *testing.T, name string) ([]any, string) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".sse"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := NewSSEReader(f, 0)
	dec := NewDecoder(testHost)
	var msgs []any
	var b strings.Builder
	fmt.Fprintf(&b, "# Messages decoded from testdata/%s.sse (host %q).\n", name, testHost)
	fmt.Fprintf(&b, "# Regenerate: go test ./hosts/opencode -run TestDecodeCaptures -rewrite\n")
	ignored := map[string]int{}
	n := 0
	for {
		frame, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("frame %d: %v", n+1, err)
		}
		n++
		var env envelope
		if err := json.Unmarshal(frame, &env); err != nil {
			t.Fatalf("frame %d is not JSON: %v", n, err)
		}
		msg, err := dec.Decode(frame)
		if err != nil {
			t.Fatalf("frame %d (%s): %v", n, env.Type, err)
		}
		if msg == nil {
			ignored[env.Type]++
			continue
		}
		msgs = append(msgs, msg)
		body, err := json.Marshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "frame %d %s -> %T %s\n", n, env.Type, msg, body)
	}
	types := make([]string, 0, len(ignored))
	for typ := range ignored {
		types = append(types, typ)
	}
	sort.Strings(types)
	for _, typ := range types {
		fmt.Fprintf(&b, "ignored %s x%d\n", typ, ignored[typ])
	}
	fmt.Fprintf(&b, "frames %d, messages %d\n", n, len(msgs))
	return msgs, b.String()
}

// TestDecodeCaptures decodes every frame of both captures and compares the
// messages with testdata/<name>.expected.
func TestDecodeCaptures(t *testing.T) {
	for _, name := range captures {
		t.Run(name, func(t *testing.T) {
			_, got := decodeCapture(t, name)
			path := filepath.Join("testdata", name+".expected")
			if *rewrite {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -rewrite to create it)", err)
			}
			if got != string(want) {
				t.Fatalf("decoded messages differ from %s (run with -rewrite if the change is intended):\n%s", path, firstDiff(string(want), got))
			}
		})
	}
}

// firstDiff shows the first line where want and got part.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d\nwant: %s\n got: %s", i+1, w, g)
		}
	}
	return "(no difference)"
}

// TestCaptureParentChildOrder states the facts of the parent/child capture
// that the session entities depend on, apart from the expected file.
func TestCaptureParentChildOrder(t *testing.T) {
	msgs, _ := decodeCapture(t, "events-parent-child-noreply-delete")
	const parent, child = "ses_dd4cbcb89ffe8wCqMHvjmcEs5Y", "ses_dd4cbcae4ffeNSBZkoFo4ol5Xh"
	want := []any{
		&Connected{Host: testHost},
		&messages.SessionCreated{Host: testHost, SessionID: parent, Title: "probe parent", Directory: "/home/user/proj"},
		&messages.SessionCreated{Host: testHost, SessionID: child, ParentID: parent, Title: "probe child", Directory: "/home/user/proj"},
		// Deleting the parent deletes the child first.
		&messages.SessionDeleted{Host: testHost, SessionID: child},
		&messages.SessionDeleted{Host: testHost, SessionID: parent},
	}
	if !reflect.DeepEqual(msgs, want) {
		t.Fatalf("messages:\n%s\nwant:\n%s", dump(msgs), dump(want))
	}
}

func TestCaptureTurnWithToolCall(t *testing.T) {
	msgs, _ := decodeCapture(t, "events-turn-with-tool-call")
	const ses = "ses_dd4c9e763ffeEzZDRF1O02lYS3"
	count := map[string]int{}
	for _, m := range msgs {
		count[fmt.Sprintf("%T", m)]++
		if sc, ok := m.(*messages.SessionCreated); ok && (sc.SessionID != ses || sc.ParentID != "" || sc.Title != "turn probe") {
			t.Errorf("unexpected %+v", sc)
		}
		if si, ok := m.(*messages.SessionIdle); ok && si.SessionID != ses {
			t.Errorf("idle for %q", si.SessionID)
		}
	}
	// Four turns, each ending with session.status idle then session.idle.
	want := map[string]int{"*opencode.Connected": 1, "*messages.SessionCreated": 1, "*messages.SessionIdle": 8}
	if !reflect.DeepEqual(count, want) {
		t.Fatalf("message counts = %v, want %v", count, want)
	}
	if _, ok := msgs[len(msgs)-1].(*messages.SessionIdle); !ok {
		t.Errorf("last message is %T, want the final turn's idle", msgs[len(msgs)-1])
	}
}

func dump(msgs []any) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "  %T %+v\n", m, m)
	}
	return b.String()
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name  string
		frame string
		want  any
	}{
		{"connected", `{"type":"server.connected","properties":{}}`, &Connected{Host: testHost}},
		{"heartbeat", `{"type":"server.heartbeat","properties":{}}`, &Heartbeat{Host: testHost}},
		{"heartbeat without properties", `{"type":"server.heartbeat"}`, &Heartbeat{Host: testHost}},
		{"created top-level",
			`{"id":"evt_1","type":"session.created","properties":{"sessionID":"ses_a","info":{"id":"ses_a","title":"t","directory":"/d"}}}`,
			&messages.SessionCreated{Host: testHost, SessionID: "ses_a", Title: "t", Directory: "/d"}},
		{"created child",
			`{"type":"session.created","properties":{"sessionID":"ses_b","info":{"id":"ses_b","parentID":"ses_a","title":"x"}}}`,
			&messages.SessionCreated{Host: testHost, SessionID: "ses_b", ParentID: "ses_a", Title: "x"}},
		{"created, older server: info only",
			`{"type":"session.created","properties":{"info":{"id":"ses_c","title":"old"}}}`,
			&messages.SessionCreated{Host: testHost, SessionID: "ses_c", Title: "old"}},
		{"deleted", `{"type":"session.deleted","properties":{"sessionID":"ses_a","info":{"id":"ses_a"}}}`,
			&messages.SessionDeleted{Host: testHost, SessionID: "ses_a"}},
		{"idle", `{"type":"session.idle","properties":{"sessionID":"ses_a"}}`,
			&messages.SessionIdle{Host: testHost, SessionID: "ses_a"}},
		{"status idle", `{"type":"session.status","properties":{"sessionID":"ses_a","status":{"type":"idle"}}}`,
			&messages.SessionIdle{Host: testHost, SessionID: "ses_a"}},
		{"status busy", `{"type":"session.status","properties":{"sessionID":"ses_a","status":{"type":"busy"}}}`, nil},
		{"status retry", `{"type":"session.status","properties":{"sessionID":"ses_a","status":{"type":"retry","attempt":1,"message":"rate","next":5}}}`, nil},
		{"compacted", `{"type":"session.compacted","properties":{"sessionID":"ses_a"}}`,
			&messages.SessionCompacted{Host: testHost, SessionID: "ses_a"}},
		{"error APIError",
			`{"type":"session.error","properties":{"sessionID":"ses_a","error":{"name":"APIError","data":{"message":"Upstream error","statusCode":400,"isRetryable":false}}}}`,
			&messages.SessionErrored{Host: testHost, SessionID: "ses_a", Error: "APIError: Upstream error"}},
		{"error name only", `{"type":"session.error","properties":{"sessionID":"ses_a","error":{"name":"MessageAbortedError","data":{}}}}`,
			&messages.SessionErrored{Host: testHost, SessionID: "ses_a", Error: "MessageAbortedError"}},
		{"error unknown shape kept as JSON", `{"type":"session.error","properties":{"sessionID":"ses_a","error":["x"]}}`,
			&messages.SessionErrored{Host: testHost, SessionID: "ses_a", Error: `["x"]`}},
		{"error without error", `{"type":"session.error","properties":{"sessionID":"ses_a"}}`,
			&messages.SessionErrored{Host: testHost, SessionID: "ses_a"}},
		{"error without session is skipped", `{"type":"session.error","properties":{"error":{"name":"UnknownError","data":{"message":"x"}}}}`, nil},
		{"session.updated ignored", `{"type":"session.updated","properties":{"sessionID":"ses_a","info":{}}}`, nil},
		{"part update ignored", `{"type":"message.part.updated","properties":{"part":{"type":"tool"}}}`, nil},
		{"unknown type ignored", `{"type":"something.new","properties":{"x":[1,2]}}`, nil},
		{"ignored type with odd properties", `{"type":"plugin.added","properties":"str"}`, nil},
	}
	dec := NewDecoder(testHost)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := dec.Decode([]byte(tt.frame))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %T %+v, want %T %+v", got, got, tt.want, tt.want)
			}
		})
	}
}

func TestDecodeMalformed(t *testing.T) {
	tests := []struct {
		name, frame, mention string
	}{
		{"empty", ``, "unexpected end"},
		{"not JSON", `data: hello`, "invalid character"},
		{"truncated", `{"type":"session.idle","properties":{"sessionID":"ses_a"}`, "unexpected end"},
		{"array", `[1,2]`, "cannot unmarshal"},
		{"no type", `{"properties":{}}`, "no type"},
		{"type not a string", `{"type":7}`, "cannot unmarshal"},
		{"idle without sessionID", `{"type":"session.idle","properties":{}}`, "without sessionID"},
		{"idle without properties", `{"type":"session.idle"}`, "without properties"},
		{"idle with null properties", `{"type":"session.idle","properties":null}`, "without properties"},
		{"sessionID not a string", `{"type":"session.idle","properties":{"sessionID":5}}`, "session.idle properties"},
		{"created without any id", `{"type":"session.created","properties":{"info":{"title":"x"}}}`, "without sessionID or info.id"},
		{"deleted without any id", `{"type":"session.deleted","properties":{}}`, "without sessionID or info.id"},
		{"status without status", `{"type":"session.status","properties":{"sessionID":"ses_a"}}`, "status.type"},
		{"compacted properties not object", `{"type":"session.compacted","properties":[1]}`, "session.compacted properties"},
		{"trailing garbage", `{"type":"server.connected","properties":{}} x`, "invalid character"},
	}
	dec := NewDecoder(testHost)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := dec.Decode([]byte(tt.frame))
			if !errors.Is(err, ErrMalformedEvent) {
				t.Fatalf("got %v, %v; want ErrMalformedEvent", got, err)
			}
			if got != nil {
				t.Errorf("got message %+v with the error", got)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error %q does not mention %q", err, tt.mention)
			}
		})
	}
}

func TestErrorTextIsBounded(t *testing.T) {
	long := strings.Repeat("é", 3000)
	frame := `{"type":"session.error","properties":{"sessionID":"ses_a","error":{"name":"UnknownError","data":{"message":"` + long + `"}}}}`
	got, err := NewDecoder(testHost).Decode([]byte(frame))
	if err != nil {
		t.Fatal(err)
	}
	text := got.(*messages.SessionErrored).Error
	if len(text) > maxErrorText+len("…") || !strings.HasPrefix(text, "UnknownError: éé") || !strings.HasSuffix(text, "…") {
		t.Fatalf("error text of %d bytes: %q...", len(text), text[:40])
	}
	if !json.Valid([]byte(`"` + text + `"`)) {
		t.Fatalf("truncation split a rune")
	}
}

// TestDecodeNeverPanics feeds arbitrary bytes and arbitrary JSON shapes
// under followed event types: the result is a message, nil, or an error
// that wraps ErrMalformedEvent, never a panic or a message with an empty
// session id.
func TestDecodeNeverPanics(t *testing.T) {
	types := []string{"server.connected", "server.heartbeat", "session.created", "session.deleted", "session.idle",
		"session.status", "session.error", "session.compacted", "session.updated", ""}
	jsonValue := rapid.OneOf(
		rapid.Just(`null`), rapid.Just(`{}`), rapid.Just(`[]`), rapid.Just(`"ses_x"`), rapid.Just(`7`),
		rapid.Just(`{"type":"idle"}`), rapid.Just(`{"id":"ses_y","parentID":3}`), rapid.Just(`{"name":"E","data":{"message":1}}`),
	)
	rapid.Check(t, func(t *rapid.T) {
		var frame []byte
		if rapid.Bool().Draw(t, "raw") {
			frame = rapid.SliceOf(rapid.Byte()).Draw(t, "bytes")
		} else {
			props := map[string]json.RawMessage{}
			for _, k := range rapid.SliceOfDistinct(rapid.SampledFrom([]string{"sessionID", "info", "status", "error"}), rapid.ID).Draw(t, "keys") {
				props[k] = json.RawMessage(jsonValue.Draw(t, k))
			}
			frame, _ = json.Marshal(map[string]any{"type": rapid.SampledFrom(types).Draw(t, "type"), "properties": props})
		}
		msg, err := NewDecoder(testHost).Decode(frame)
		if err != nil {
			if !errors.Is(err, ErrMalformedEvent) || msg != nil {
				t.Fatalf("Decode(%q) = %v, %v", frame, msg, err)
			}
			return
		}
		switch m := msg.(type) {
		case nil, *Connected, *Heartbeat:
		case *messages.SessionCreated:
			if m.SessionID == "" {
				t.Fatalf("empty id from %q", frame)
			}
		case *messages.SessionDeleted:
			if m.SessionID == "" {
				t.Fatalf("empty id from %q", frame)
			}
		case *messages.SessionIdle:
			if m.SessionID == "" {
				t.Fatalf("empty id from %q", frame)
			}
		case *messages.SessionErrored:
			if m.SessionID == "" {
				t.Fatalf("empty id from %q", frame)
			}
		case *messages.SessionCompacted:
			if m.SessionID == "" {
				t.Fatalf("empty id from %q", frame)
			}
		default:
			t.Fatalf("unexpected %T", msg)
		}
	})
}
