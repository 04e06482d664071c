package front

import (
	"maps"
	"sync"

	"github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/internal/redact"
	"github.com/thatch-run/thatch/messages"
)

// masker is the last step before anything leaves for a chat: a chat is
// not end-to-end encrypted, so a key a tool printed must not reach the
// platform's servers. Every text thatch sends (replies, tool lines,
// prompts and their buttons, /history, notices, a picture's caption) and
// the pane text a /screenshot is drawn from pass it, with the memory's
// rules ([memory.redact]); what it masked is counted per kind for
// `thatch status`. A nil redactor (memory.redact.enabled = false) masks
// nothing.
type masker struct {
	red    *redact.Redactor
	mu     sync.Mutex
	counts map[string]uint64
}

func newMasker(red *redact.Redactor) *masker {
	return &masker{red: red, counts: map[string]uint64{}}
}

// text returns s with every secret in it replaced by its marker.
func (m *masker) text(s string) string {
	if m == nil || m.red == nil || s == "" {
		return s
	}
	out, kinds := m.red.Mask(s)
	if len(kinds) > 0 {
		m.mu.Lock()
		for _, k := range kinds {
			m.counts[k]++
		}
		m.mu.Unlock()
	}
	return out
}

// buttons returns a message's button rows as the chat's, their labels
// masked (their data is thatch's own, and never shown).
func (m *masker) buttons(rows [][]messages.IMButton) [][]chat.Button {
	var out [][]chat.Button
	for _, row := range rows {
		r := make([]chat.Button, 0, len(row))
		for _, b := range row {
			r = append(r, chat.Button{Text: m.text(b.Text), Data: b.Data})
		}
		out = append(out, r)
	}
	return out
}

// masked is how many secrets of each kind were masked so far.
func (m *masker) masked() map[string]uint64 {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.counts) == 0 {
		return nil
	}
	return maps.Clone(m.counts)
}

// pane returns a terminal's text (with its escape sequences) with every
// secret replaced by its marker. The secrets are looked for in the text
// as it shows, escape sequences taken out (a colour change right before
// a key would hide its edge), and replaced in the text as it is; the
// escape sequences inside a secret are kept after its marker, so that
// the colours after it stay as they were.
func (m *masker) pane(raw string) string {
	if m == nil || m.red == nil || raw == "" {
		return raw
	}
	var plain []byte
	var at []int // at[i] is where plain[i] is in raw
	for i := 0; i < len(raw); {
		if n := escapeLen(raw[i:]); n > 0 {
			i += n
			continue
		}
		plain = append(plain, raw[i])
		at = append(at, i)
		i++
	}
	spans := m.red.Spans(string(plain))
	if len(spans) == 0 {
		return raw
	}
	var b []byte
	from := 0
	m.mu.Lock()
	for _, sp := range spans {
		start, end := at[sp.Start], at[sp.End-1]+1
		b = append(b, raw[from:start]...)
		b = append(b, redact.Marker(sp.Kind)...)
		for i := start; i < end; {
			if n := escapeLen(raw[i:]); n > 0 {
				b = append(b, raw[i:i+n]...)
				i += n
				continue
			}
			i++
		}
		from = end
		m.counts[sp.Kind]++
	}
	m.mu.Unlock()
	return string(append(b, raw[from:]...))
}

// escapeLen is the length of the terminal escape sequence s starts with
// (0 when it starts with none): CSI (ESC [ ... final byte), OSC (ESC ]
// ... BEL or ESC \), or ESC and one byte.
func escapeLen(s string) int {
	if len(s) < 2 || s[0] != 0x1b {
		return 0
	}
	switch s[1] {
	case '[':
		for i := 2; i < len(s); i++ {
			if s[i] >= 0x40 && s[i] <= 0x7e {
				return i + 1
			}
		}
		return len(s)
	case ']':
		for i := 2; i < len(s); i++ {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
		return len(s)
	}
	return 2
}
