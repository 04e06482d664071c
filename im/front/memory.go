package front

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/imbinding"
	"github.com/thatch-run/thatch/internal/redact"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence/memory"
)

// recallHits is how many memories /recall shows.
const recallHits = 5

// maxButtonData is the longest button data every platform takes
// (Telegram's callback data: 64 bytes).
const maxButtonData = 64

// stores are the stores of an agent working in dir: its project's (from
// its git remote) and the global one, as for an opencode session there.
func stores(dir string) (project string, all []string) {
	project = memory.GlobalStore
	if dir != "" {
		project = memory.ProjectStore(dir)
	}
	return project, memory.SessionStores(project)
}

// recallMemory answers /recall from the store, waking no agent: the top
// memories with their store and label, and a button to show each whole.
func (f *FrontEnd) recallMemory(ctx context.Context, _ actors.Identity, e *messages.IMRecallMemory) any {
	if f.mem == nil {
		return &messages.IMMemoryAnswer{Text: "thatch has no memory store here."}
	}
	_, all := stores(e.Dir)
	hits, err := f.mem.Recall(ctx, memory.RecallInput{Query: e.Query, Stores: all, Limit: recallHits})
	if err != nil {
		return &messages.IMMemoryAnswer{Text: "Could not search the memory: " + err.Error()}
	}
	if len(hits) == 0 {
		return &messages.IMMemoryAnswer{Text: "No memory matches “" + e.Query + "” in " + strings.Join(all, " or ") + "."}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Memories for “%s”:", e.Query)
	var row []messages.IMButton
	for i, h := range hits {
		fmt.Fprintf(&b, "\n%d. %s (%s)", i+1, h.Entry.Label, h.Entry.Store)
		if h.Entry.Content != h.Entry.Label {
			b.WriteString(": " + preview(h.Entry.Content, 160))
		}
		data := imbinding.MemoryButton(memoryRef(all, h.Entry.Store, h.Entry.Slug, e.User), e.User)
		row = append(row, messages.IMButton{Text: fmt.Sprint(i + 1), Data: data})
	}
	out := &messages.IMMemoryAnswer{Text: b.String()}
	if len(row) > 0 {
		out.Buttons = [][]messages.IMButton{row}
	}
	return out
}

// memoryRef names a memory of the stores all in a button, short enough
// for any platform's button data: the store's place in all and the slug
// ("1.deploy-path"), or, for a slug too long to fit beside the rest of the
// data (a slug may take 64 bytes, all of Telegram's), "#" and a hash of
// store and slug.
func memoryRef(all []string, store, slug, user string) string {
	ref := fmt.Sprintf("%d.%s", slices.Index(all, store), slug)
	if len(imbinding.MemoryButton(ref, user)) <= maxButtonData {
		return ref
	}
	return "#" + memoryHash(store, slug)
}

func memoryHash(store, slug string) string {
	h := fnv.New64a()
	h.Write([]byte(store + "\x00" + slug))
	return fmt.Sprintf("%012x", h.Sum64()>>16)
}

// showMemory shows a recalled memory whole: the one of the directory's
// stores its button names (by slug; by hash, the stores are searched).
func (f *FrontEnd) showMemory(_ context.Context, _ actors.Identity, e *messages.IMShowMemory) any {
	if f.mem == nil {
		return &messages.IMMemoryAnswer{Text: "thatch has no memory store here."}
	}
	_, all := stores(e.Dir)
	whole := func(m memory.Entry) any {
		return &messages.IMMemoryAnswer{Text: fmt.Sprintf("%s (%s, confidence %d/10, updated %s)\n\n%s",
			m.Label, m.Store, m.Confidence, m.Updated.Format("2006-01-02"), m.Content)}
	}
	if i, slug, ok := strings.Cut(e.Ref, "."); ok {
		if n, err := strconv.Atoi(i); err == nil && n >= 0 && n < len(all) {
			if m, err := f.mem.Get(all[n], slug); err == nil {
				return whole(m)
			}
		}
		return &messages.IMMemoryAnswer{Text: "That memory is gone (forgotten since it was recalled)."}
	}
	for _, st := range all {
		entries, err := f.mem.List(st, "")
		if err != nil {
			return &messages.IMMemoryAnswer{Text: "Could not read the memory: " + err.Error()}
		}
		for _, m := range entries {
			if "#"+memoryHash(m.Store, m.Slug) == e.Ref {
				return whole(m)
			}
		}
	}
	return &messages.IMMemoryAnswer{Text: "That memory is gone (forgotten since it was recalled)."}
}

// rememberMemory keeps a fact given with /remember in the project's
// store, through the store's guard: a secret is refused with its kind.
func (f *FrontEnd) rememberMemory(ctx context.Context, _ actors.Identity, e *messages.IMRememberMemory) any {
	if f.mem == nil {
		return &messages.IMMemoryAnswer{Text: "thatch has no memory store here."}
	}
	project, _ := stores(e.Dir)
	res, err := f.mem.Remember(ctx, memory.RememberInput{Label: labelOf(e.Text), Content: e.Text, Store: project})
	switch {
	case errors.Is(err, redact.ErrSecret):
		return &messages.IMMemoryAnswer{Text: "Not kept: " + err.Error()}
	case errors.Is(err, memory.ErrExists):
		return &messages.IMMemoryAnswer{Text: "A memory with that label exists already (" + labelOf(e.Text) + "); say it in other words, or ask the agent to update it."}
	case err != nil:
		return &messages.IMMemoryAnswer{Text: "Not kept: " + err.Error()}
	}
	text := fmt.Sprintf("Kept in %s as “%s”.", res.Entry.Store, res.Entry.Label)
	if len(res.Similar) > 0 {
		var names []string
		for _, s := range res.Similar {
			names = append(names, s.Label)
		}
		text += " It is close to " + strings.Join(names, ", ") + "."
	}
	return &messages.IMMemoryAnswer{Text: text}
}

// labelOf is a memory's label made from its text: the first line, cut at
// a word to about 60 characters.
func labelOf(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	return preview(strings.TrimSpace(line), 60)
}

// preview is s on one line, cut at a word to about n characters, with an
// ellipsis when cut.
func preview(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n]
	cut := string(r)
	if i := strings.LastIndexByte(cut, ' '); i > n/2 {
		cut = cut[:i]
	}
	return cut + "…"
}
