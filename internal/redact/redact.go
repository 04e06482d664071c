package redact

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
)

// ErrUnknownKind is returned by New when Options.Disable names a kind no
// rule has.
var ErrUnknownKind = errors.New("redact: unknown kind")

// ErrBadRule is returned by New for an extra rule without a kind or with a
// pattern that does not compile.
var ErrBadRule = errors.New("redact: bad rule")

// ErrSecret is matched (errors.Is) by the error Refuse returns for a text
// that holds a secret. What holds one is refused rather than kept
// redacted where it would outlive every session (a memory): its author
// can say it again without the secret.
var ErrSecret = errors.New("redact: it holds a secret")

// Rule is one extra pattern: every match of Pattern (or of its group named
// "secret", when it has one) is replaced by "[redacted:<Kind>]".
type Rule struct {
	// Kind names what the rule finds, in the marker and in Counts. It is
	// made of letters, digits, '_' and '-'.
	Kind string
	// Pattern is an RE2 regexp (Go syntax).
	Pattern string
}

// Options say which rules a Redactor runs. The zero value runs every
// built-in rule.
type Options struct {
	// Disable lists built-in kinds to switch off (see Kinds). Default: none.
	Disable []string
	// Extra rules run after the built-in ones. Default: none.
	Extra []Rule
}

// rule is one compiled rule.
type rule struct {
	kind string
	re   *regexp.Regexp
	// keywords: the rule runs only when one of them occurs in the text
	// (lowered, when fold is set). None: it always runs.
	keywords []string
	fold     bool
	// edge, line and whole: see builtin.
	edge, line, whole bool
	// group is the index of the "secret" group, or 0 for the whole match.
	group int
	// keep, when set, rejects a candidate value that is no secret.
	keep func(value string) bool
}

// Redactor finds and replaces secrets. It is safe for concurrent use; its
// rules never change after New.
type Redactor struct {
	rules  []rule
	fold   bool // some rule's keywords are matched case-insensitively
	counts map[string]*atomic.Uint64
}

// Marker is what a secret of kind is replaced by.
func Marker(kind string) string { return "[redacted:" + kind + "]" }

// Kinds returns the built-in kinds, in the order they run.
func Kinds() []string {
	out := make([]string, 0, len(builtins))
	for _, b := range builtins {
		if !slices.Contains(out, b.kind) {
			out = append(out, b.kind)
		}
	}
	return out
}

var kindRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckRule reports why r cannot be an extra rule (nil when it can).
func CheckRule(r Rule) error {
	if !kindRE.MatchString(r.Kind) {
		return fmt.Errorf("%w: kind %q must be 1 to 64 letters, digits, '_' or '-'", ErrBadRule, r.Kind)
	}
	re, err := regexp.Compile(r.Pattern)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadRule, r.Kind, err)
	}
	if re.MatchString("") {
		return fmt.Errorf("%w: %s: the pattern matches the empty string", ErrBadRule, r.Kind)
	}
	return nil
}

// New compiles the rules opts asks for.
func New(opts Options) (*Redactor, error) {
	known := Kinds()
	off := map[string]bool{}
	for _, k := range opts.Disable {
		if !slices.Contains(known, k) {
			return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownKind, k, strings.Join(known, ", "))
		}
		off[k] = true
	}
	r := &Redactor{counts: map[string]*atomic.Uint64{}}
	for _, b := range builtins {
		if off[b.kind] {
			continue
		}
		ru := b.compile()
		r.rules = append(r.rules, ru)
		r.fold = r.fold || ru.fold
	}
	for _, e := range opts.Extra {
		if err := CheckRule(e); err != nil {
			return nil, err
		}
		re := regexp.MustCompile(e.Pattern)
		r.rules = append(r.rules, rule{kind: e.Kind, re: re, group: max(re.SubexpIndex("secret"), 0), whole: true})
	}
	for _, ru := range r.rules {
		if r.counts[ru.kind] == nil {
			r.counts[ru.kind] = new(atomic.Uint64)
		}
	}
	return r, nil
}

// span is one secret found: text[start:end] is replaced by kind's marker.
type span struct {
	start, end int
	kind       string
}

// Redact returns s with every secret replaced by its marker, and how many
// it replaced. Counts grow by the same number.
func (r *Redactor) Redact(s string) (string, int) {
	out, kinds := r.Mask(s)
	for _, k := range kinds {
		r.counts[k].Add(1)
	}
	return out, len(kinds)
}

// Span is where one secret is in a text: text[Start:End], of Kind.
type Span struct {
	Start, End int
	Kind       string
}

// Spans returns where the secrets of s are, in order and without
// overlaps, for a caller that replaces them in another text than s (a
// terminal's, with its escape sequences taken out to find them). Counts
// do not change.
func (r *Redactor) Spans(s string) []Span {
	var out []Span
	for _, sp := range r.find(s) {
		out = append(out, Span{Start: sp.start, End: sp.end, Kind: sp.kind})
	}
	return out
}

// Mask is Redact for a caller that keeps counts of its own (the chat's,
// apart from the memory's): it returns s with every secret replaced by
// its marker, and the kind of each secret replaced, in order; Counts do
// not change.
func (r *Redactor) Mask(s string) (string, []string) {
	spans := r.find(s)
	if len(spans) == 0 {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	at := 0
	kinds := make([]string, 0, len(spans))
	for _, sp := range spans {
		b.WriteString(s[at:sp.start])
		b.WriteString(Marker(sp.kind))
		at = sp.end
		kinds = append(kinds, sp.kind)
	}
	b.WriteString(s[at:])
	return b.String(), kinds
}

// Find returns the kinds of the secrets s holds, in order, one per secret
// (nil when it holds none). It counts nothing: a memory refused for a
// secret stores nothing to redact.
func (r *Redactor) Find(s string) []string {
	var out []string
	for _, sp := range r.find(s) {
		out = append(out, sp.kind)
	}
	return out
}

// Refuse returns an error matching ErrSecret that names the kinds of the
// secrets texts hold (never the secrets), or nil when they hold none. A
// nil Redactor (redaction switched off) refuses nothing. Like Find, it
// counts nothing.
func (r *Redactor) Refuse(texts ...string) error {
	if r == nil {
		return nil
	}
	var kinds []string
	for _, t := range texts {
		for _, k := range r.Find(t) {
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	if len(kinds) == 0 {
		return nil
	}
	return fmt.Errorf("%w (%s); say it again without the secret itself, e.g. where it is kept or how to obtain it",
		ErrSecret, strings.Join(kinds, ", "))
}

// Counts returns how many secrets of each kind were redacted since New
// (kinds with none are left out).
func (r *Redactor) Counts() map[string]uint64 {
	out := map[string]uint64{}
	for k, c := range r.counts {
		if n := c.Load(); n > 0 {
			out[k] = n
		}
	}
	return out
}

// find returns the secrets of s, sorted and without overlaps (of two
// overlapping ones the earlier wins, stretched to cover both).
func (r *Redactor) find(s string) []span {
	if len(s) < 8 {
		return nil
	}
	lower := ""
	if r.fold {
		lower = strings.ToLower(s)
	}
	var spans []span
	for i := range r.rules {
		ru := &r.rules[i]
		switch {
		case ru.whole || len(ru.keywords) == 0:
			spans = ru.all(s, spans)
		default:
			spans = ru.at(s, lower, spans)
		}
	}
	if len(spans) < 2 {
		return spans
	}
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp.start < last.end {
			last.end = max(last.end, sp.end)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// all appends the secrets ru finds anywhere in s to spans (a rule that
// runs over the whole text).
func (ru *rule) all(s string, spans []span) []span {
	if len(ru.keywords) > 0 && !ru.occurs(s) {
		return spans
	}
	for _, m := range ru.re.FindAllStringSubmatchIndex(s, -1) {
		spans = ru.found(s, 0, m, spans)
	}
	return spans
}

// occurs reports whether one of ru's keywords occurs in s.
func (ru *rule) occurs(s string) bool {
	for _, k := range ru.keywords {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

// found appends the secret of m, a match in s[from:], to spans unless the
// rule's keep rejects it.
func (ru *rule) found(s string, from int, m []int, spans []span) []span {
	start, end := m[2*ru.group], m[2*ru.group+1]
	if start < 0 || start == end {
		return spans
	}
	start, end = start+from, end+from
	if ru.keep != nil && !ru.keep(s[start:end]) {
		return spans
	}
	return append(spans, span{start, end, ru.kind})
}

// at appends the secrets ru finds in s to spans, running its anchored
// regexp where each keyword occurs (in lower, s lowered, for a
// case-insensitive rule), or, for a line rule, on each line a keyword
// occurs in. The regexp stops as soon as it cannot match, so a text costs
// little more than the search for the keywords.
func (ru *rule) at(s, lower string, spans []span) []span {
	in := s
	if ru.fold {
		in = lower
	}
	for _, k := range ru.keywords {
		done := 0 // where the last match or line ended
		for at := 0; ; {
			i := strings.Index(in[at:], k)
			if i < 0 {
				break
			}
			i += at
			at = i + len(k)
			if i < done {
				continue
			}
			from, to := i, len(s)
			if ru.line {
				from = strings.LastIndexByte(s[:i], '\n') + 1
				if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
					to = i + j
				}
				done = to
			} else if ru.edge && i > 0 && tokenByte(s[i-1]) {
				continue
			}
			m := ru.re.FindStringSubmatchIndex(s[from:to])
			if m == nil {
				continue
			}
			done = max(done, from+m[1])
			spans = ru.found(s, from, m, spans)
		}
	}
	return spans
}

// tokenByte reports whether c can be part of a token (a key, an
// identifier).
func tokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// DropPrivate returns s without its <private>...</private> spans (tags
// included, case-insensitive). An unclosed <private> drops everything after
// it: what the author meant to hide may run to the end, and the plugin
// cuts long outputs.
func DropPrivate(s string) string {
	const open, closing = "<private>", "</private>"
	i := indexFold(s, open)
	if i < 0 {
		return s
	}
	var b strings.Builder
	for i >= 0 {
		b.WriteString(s[:i])
		rest := s[i+len(open):]
		j := indexFold(rest, closing)
		if j < 0 {
			return b.String()
		}
		s = rest[j+len(closing):]
		i = indexFold(s, open)
	}
	b.WriteString(s)
	return b.String()
}

// indexFold is strings.Index for an ASCII lower-case tag, ignoring case.
func indexFold(s, tag string) int {
	for from := 0; ; {
		i := strings.IndexByte(s[from:], '<')
		if i < 0 {
			return -1
		}
		i += from
		if len(s)-i >= len(tag) && strings.EqualFold(s[i:i+len(tag)], tag) {
			return i
		}
		from = i + 1
	}
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	var freq [256]int
	for i := 0; i < len(s); i++ {
		freq[s[i]]++
	}
	h, n := 0.0, float64(len(s))
	for _, f := range freq {
		if f > 0 {
			p := float64(f) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}
