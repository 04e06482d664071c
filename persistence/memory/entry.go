package memory

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits on what one entry may hold. Memories are short notes; anything
// larger is almost certainly a pasted log that does not belong here.
const (
	MaxLabelRunes  = 200
	MaxContentSize = 64 << 10
	MaxSlugBytes   = 64
	// MaxNameBytes bounds store and branch names. Names are part of every
	// key and of every listing; a GitHub "owner/repo" is at most 140 bytes.
	MaxNameBytes = 256
	// DefaultConfidence is used when RememberInput.Confidence is zero.
	DefaultConfidence = 5
	// GlobalStore holds memories that belong to no project. Every recall
	// searches it along with the project store.
	GlobalStore = "global"
)

// Entry is one memory.
type Entry struct {
	// Slug is derived from Label (see Slugify) and is unique within Store.
	Slug  string `json:"slug"`
	Store string `json:"store"`
	Label string `json:"label"`
	// Content is the memory itself.
	Content string `json:"content"`
	// Branch is the git branch the memory applies to; "" means the whole
	// project.
	Branch string `json:"branch,omitempty"`
	// Confidence is 1 (a guess) .. 10 (verified).
	Confidence int `json:"confidence"`
	// Archived entries are kept but never recalled, and count in no hygiene
	// signal except orphaned branch memories.
	Archived bool      `json:"archived,omitempty"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
	// RecallCount is how many recalls returned this entry.
	RecallCount int64 `json:"recall_count"`
	// LastRecalled is zero when the entry was never recalled.
	LastRecalled time.Time `json:"last_recalled,omitzero"`
}

// activity is the last time the entry was written or recalled; staleness is
// measured from it.
func (e *Entry) activity() time.Time {
	if e.LastRecalled.After(e.Updated) {
		return e.LastRecalled
	}
	return e.Updated
}

// Slugify derives the slug of a label: lowercase letters and digits are
// kept, every other run of characters becomes one '-', and leading and
// trailing dashes are trimmed. A result longer than MaxSlugBytes is cut at
// a character boundary and ends in '-' and a hash of the whole uncut slug,
// so that labels that share a long prefix still get different slugs;
// shorter slugs carry no hash. A label with no letter or digit at all gets
// "memory-" and a hash of the label, so it still has a stable,
// unique-enough slug.
func Slugify(label string) string {
	full := slugBody(label, -1)
	if full == "" {
		h := fnv.New32a()
		h.Write([]byte(label))
		return fmt.Sprintf("memory-%08x", h.Sum32())
	}
	if len(full) <= MaxSlugBytes {
		return full
	}
	h := fnv.New64a()
	h.Write([]byte(full))
	tail := fmt.Sprintf("-%010x", h.Sum64()>>24) // 40 bits
	return slugBody(label, MaxSlugBytes-len(tail)) + tail
}

// legacySlug is the slug this package gave a label before long slugs got
// a hash: cut at MaxSlugBytes. Entries stored then keep it; it differs
// from Slugify only for labels whose slug is longer than MaxSlugBytes.
func legacySlug(label string) string {
	if s := slugBody(label, MaxSlugBytes); s != "" {
		return s
	}
	return Slugify(label)
}

// slugBody is the slug of label without the hash, cut to max bytes at a
// character boundary when max >= 0.
func slugBody(label string, max int) string {
	var b strings.Builder
	dash := false
	for _, r := range label {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			r = unicode.ToLower(r)
			if max >= 0 && b.Len()+utf8.RuneLen(r)+btoi(dash) > max {
				break
			}
			if dash {
				b.WriteByte('-')
				dash = false
			}
			b.WriteRune(r)
			continue
		}
		dash = b.Len() > 0
	}
	return b.String()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkName rejects store names, branches and slugs that would break key
// encoding or display: empty, longer than MaxNameBytes, NUL or other
// control characters, invalid UTF-8.
func checkName(what, s string) error {
	if s == "" {
		return invalid("%s is empty", what)
	}
	if len(s) > MaxNameBytes {
		return invalid("%s %.40q... is %d bytes long, more than %d", what, s, len(s), MaxNameBytes)
	}
	if !utf8.ValidString(s) {
		return invalid("%s %q is not valid UTF-8", what, s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return invalid("%s %q contains a control character", what, s)
		}
	}
	return nil
}

// normalizeBranch trims spaces and a leading "refs/heads/".
func normalizeBranch(b string) string {
	return strings.TrimPrefix(strings.TrimSpace(b), "refs/heads/")
}
