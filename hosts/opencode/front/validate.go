package front

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/thatch-run/thatch/messages"
)

// The edge validates (DESIGN.md, principle 7): what a plugin call carries
// is checked and normalized here, before anything is journaled, so that
// every journaled event decodes again on replay. The journal's decoder
// refuses nesting deeper than 10,000 levels and its encoder refuses
// numbers out of float64's range; the caps below keep far away from both.
const (
	// maxBodyBytes caps a plugin call's body. The plugin cuts its tool
	// output and top-level string arguments to 2,000 characters, so a
	// real call is a few kilobytes.
	maxBodyBytes = 1 << 20
	// maxArgsDepth is how deep a tool call's args may nest; what is deeper
	// is replaced by cutMarker.
	maxArgsDepth = 64
	// maxIDBytes caps an id: opencode's are about 30 bytes.
	maxIDBytes = 256
)

// cutMarker replaces the part of a tool call's args nested deeper than
// maxArgsDepth, so that the call itself is still recorded.
var cutMarker = fmt.Sprintf("thatch: cut, deeper than %d levels", maxArgsDepth)

// checkID reports why v, the field called field, cannot name a session,
// a tool call, a tool or a host: ids end up in journal keys, logs and
// host URLs. A valid id is valid UTF-8 of at most maxIDBytes bytes, with
// no control character (NUL included) and no U+FFFD (what an invalid byte
// decodes to). It may be empty only when it is not required.
func checkID(field, v string, required bool) error {
	switch {
	case v == "":
		if required {
			return fmt.Errorf("%s is required", field)
		}
		return nil
	case len(v) > maxIDBytes:
		return fmt.Errorf("%s is %d bytes long; an id has at most %d", field, len(v), maxIDBytes)
	case !utf8.ValidString(v):
		return fmt.Errorf("%s is not valid UTF-8", field)
	}
	for _, r := range v {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return fmt.Errorf("%s %q holds the character %U, which no id may hold", field, v, r)
		}
	}
	return nil
}

// idField is one id of a body, for checkIDs.
type idField struct {
	name     string
	value    string
	required bool
}

// checkIDs checks every id of a body and reports the first problem.
func checkIDs(ids ...idField) error {
	for _, id := range ids {
		if err := checkID(id.name, id.value, id.required); err != nil {
			return err
		}
	}
	return nil
}

// readBody reads a call's body, at most maxBodyBytes of it; a larger one
// is answered with 400 and false.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		badRequest(w, fmt.Sprintf("the body is larger than %d MiB", maxBodyBytes>>20))
		return nil, false
	case err != nil:
		badRequest(w, "cannot read the body: "+err.Error())
		return nil, false
	}
	return data, true
}

// decodeStrict decodes data, which must be valid UTF-8 holding exactly
// one JSON value, into v.
func decodeStrict(data []byte, v any) error {
	if !utf8.Valid(data) {
		return errors.New("the body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON body")
	}
	return nil
}

// decodeBody reads and decodes a call's body into v; a bad body is
// answered with 400 and false.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	data, ok := readBody(w, r)
	if !ok {
		return false
	}
	if err := decodeStrict(data, v); err != nil {
		badRequest(w, "bad JSON body: "+err.Error())
		return false
	}
	return true
}

// toolMessage turns the body of a tool call into the message the
// session's family journals, checked and normalized: its ids are valid,
// its args are compact JSON nested at most maxArgsDepth deep, and every
// number in them is one the journal can write. It is pure.
func toolMessage(data []byte) (*messages.ToolExecuted, error) {
	return cleanToolMessage(data, nil, nil)
}

// cleanToolMessage is toolMessage with the strings the call carries passed
// through a cleaner on their way in, so that what it removes is never
// journaled: each string value of its args and its title through clean,
// its output through cleanOutput (nil: kept as it came). It is pure when
// they are.
func cleanToolMessage(data []byte, clean, cleanOutput func(string) string) (*messages.ToolExecuted, error) {
	var b toolBody
	if err := decodeStrict(data, &b); err != nil {
		return nil, fmt.Errorf("bad JSON body: %w", err)
	}
	if err := checkIDs(idField{"sessionID", b.SessionID, true}, idField{"tool", b.Tool, true},
		idField{"callID", b.CallID, false}, idField{"host", b.Host, false}); err != nil {
		return nil, err
	}
	args, err := cleanArgs(b.Args, clean)
	if err != nil {
		return nil, fmt.Errorf("args: %w", err)
	}
	if clean != nil {
		b.Title = clean(b.Title)
	}
	if cleanOutput != nil {
		b.Output = cleanOutput(b.Output)
	}
	return &messages.ToolExecuted{Host: b.Host, Interaction: messages.Interaction{
		ID: b.CallID, SessionID: b.SessionID, Tool: b.Tool, Args: args, Title: b.Title, Output: b.Output}}, nil
}

// normalizeArgs rewrites raw, a valid JSON value, in the form the
// journal's encoder writes it, so that it decodes to the same bytes:
// compact, every string and key escaped as encoding/json escapes them,
// numbers as they were written. A container nested deeper than
// maxArgsDepth is replaced by cutMarker, as a string. A number out of
// float64's range is an error: the encoder could not write it.
func normalizeArgs(raw json.RawMessage) (json.RawMessage, error) {
	return cleanArgs(raw, nil)
}

// cleanArgs is normalizeArgs with every string value (not the keys of
// objects) passed through clean, when it is not nil.
func cleanArgs(raw json.RawMessage, clean func(string) string) (json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(len(raw))
	// Per open container: whether it is an object, and how many tokens
	// (keys and values) it holds so far.
	type open struct {
		object bool
		n      int
	}
	var stack []open
	str := func(s string) {
		b, _ := json.Marshal(s) // a string always marshals
		out.Write(b)
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if d, ok := tok.(json.Delim); ok && (d == ']' || d == '}') {
			stack = stack[:len(stack)-1]
			out.WriteByte(byte(d))
			continue
		}
		// A value, or an object's key: separate it from what precedes.
		key := false
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			key = top.object && top.n%2 == 0
			switch {
			case top.object && top.n%2 == 1:
				out.WriteByte(':')
			case top.n > 0:
				out.WriteByte(',')
			}
			top.n++
		}
		switch v := tok.(type) {
		case json.Delim: // '[' or '{'
			if len(stack) == maxArgsDepth {
				if err := skipOpen(dec); err != nil {
					return nil, err
				}
				str(cutMarker)
				continue
			}
			stack = append(stack, open{object: v == '{'})
			out.WriteByte(byte(v))
		case string:
			if clean != nil && !key {
				v = clean(v)
			}
			str(v)
		case json.Number:
			if _, err := strconv.ParseFloat(v.String(), 64); err != nil {
				return nil, fmt.Errorf("number %s is out of range", v)
			}
			out.WriteString(v.String())
		case bool:
			out.WriteString(strconv.FormatBool(v))
		case nil:
			out.WriteString("null")
		}
	}
	return out.Bytes(), nil
}

// skipOpen consumes the rest of a container whose opening delimiter dec
// just returned.
func skipOpen(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '[' || d == '{' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// commandMessage checks a command body's ids and makes its message; the
// command's arguments pass through clean (when it is not nil), as a tool
// call's args do.
func commandMessage(b commandBody, clean func(string) string) (*messages.CommandExecuting, error) {
	if err := checkIDs(idField{"sessionID", b.SessionID, true}, idField{"command", b.Command, true},
		idField{"host", b.Host, false}); err != nil {
		return nil, err
	}
	if clean != nil {
		b.Arguments = clean(b.Arguments)
	}
	return &messages.CommandExecuting{Host: b.Host, SessionID: b.SessionID,
		Command: strings.TrimPrefix(b.Command, "/"), Arguments: b.Arguments}, nil
}
