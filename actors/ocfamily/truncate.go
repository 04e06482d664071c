package ocfamily

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/thatch-run/thatch/messages"
)

// ellipsis marks text that was cut.
const ellipsis = "…"

// cut returns s cut to at most limit characters (runes); a cut string ends
// with an ellipsis, which counts toward the limit. A limit of zero or less
// means no limit.
func cut(s string, limit int) string {
	if limit <= 0 || len(s) <= limit || utf8.RuneCountInString(s) <= limit {
		return s
	}
	n := 0
	for i := range s {
		if n == limit-1 {
			return s[:i] + ellipsis
		}
		n++
	}
	return s
}

// forJournal returns in with its output and its top-level string arguments
// cut to limit characters. Arguments that are not valid JSON are kept as a
// cut JSON string, so that the event still encodes.
func forJournal(in messages.Interaction, limit int) messages.Interaction {
	out := in
	out.Output = cut(in.Output, limit)
	if len(in.Args) == 0 {
		return out
	}
	if !json.Valid(in.Args) {
		out.Args = quote(cut(string(in.Args), limit))
		return out
	}
	if len(in.Args) <= limit {
		return out // no string inside can be longer than the whole
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(in.Args, &obj); err != nil {
		return out // not an object: there are no top-level string args
	}
	changed := false
	for k, v := range obj {
		var str string
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &str) != nil {
			continue
		}
		if c := cut(str, limit); c != str {
			obj[k] = quote(c)
			changed = true
		}
	}
	if !changed {
		return out
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return out
	}
	out.Args = b
	return out
}

// forPayload returns in as an extractor receives it: output cut to
// outputLimit characters, and arguments summarised to argsLimit characters.
// A summary that had to be cut is a JSON string holding the start of the
// compact arguments.
func forPayload(in messages.Interaction, outputLimit, argsLimit int) messages.Interaction {
	out := in
	out.Output = cut(in.Output, outputLimit)
	if len(in.Args) == 0 {
		return out
	}
	compact := string(in.Args)
	var buf []byte
	if b, err := json.Marshal(json.RawMessage(in.Args)); err == nil {
		buf = b // Marshal of a RawMessage compacts it
		compact = string(buf)
	}
	if c := cut(compact, argsLimit); c != compact || buf == nil {
		out.Args = quote(c)
	} else {
		out.Args = buf
	}
	return out
}

func quote(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}
