package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"pgregory.net/rapid"

	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/persistence/memory/embed"
)

// Texts for the model test: variants of one base are near-duplicates of
// each other (cosine >= 0.9), texts of different bases are far apart
// (<= 0.8), so the expected pairs do not depend on rounding.
var (
	propBases = []string{
		"the journal appends every event with a synced pebble batch before effects run and replies are sent to callers",
		"telegram forum topics map to one tmux window each and the binding row records the window id and agent name",
		"extraction children read buffered tool interactions and write durable memories when the parent goes idle",
	}
	propSuffixes = []string{"", " always", " in production"}
)

func propText(base, variant int) string { return propBases[base] + propSuffixes[variant] }

func TestPropTextsAreUnambiguous(t *testing.T) {
	l := embed.Local{}
	for b1 := range propBases {
		for v1 := range propSuffixes {
			for b2 := range propBases {
				for v2 := range propSuffixes {
					c := embed.Cosine(l.Vector(embedText("x", propText(b1, v1))), l.Vector(embedText("x", propText(b2, v2))))
					if (b1 == b2 && c < 0.9) || (b1 != b2 && c > 0.8) {
						t.Fatalf("cosine of (%d,%d) and (%d,%d) = %.3f is ambiguous", b1, v1, b2, v2, c)
					}
				}
			}
		}
	}
}

type propEntry struct {
	base     int
	archived bool
}

// TestDedupBookkeeping drives random remembers, overwrites, forgets,
// verdicts and restarts, and checks the dedup signal and pair list against
// a model computed from scratch after every step.
func TestDedupBookkeeping(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		fs := vfs.NewMem()
		open := func() (*persistence.Store, *Store) {
			st, err := persistence.Open("db", persistence.Options{FS: fs, NoSync: true})
			if err != nil {
				rt.Fatal(err)
			}
			ms, err := Open(st, Options{})
			if err != nil {
				rt.Fatal(err)
			}
			return st, ms
		}
		st, ms := open()
		defer func() { ms.Close(); st.Close() }()
		ctx := context.Background()
		model := map[string]propEntry{}
		verdicts := map[pairKey]bool{}
		clearVerdicts := func(slug string) {
			for p := range verdicts {
				if p.a == slug || p.b == slug {
					delete(verdicts, p)
				}
			}
		}
		slugs := []string{"e-0", "e-1", "e-2", "e-3"}

		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for range steps {
			switch rapid.IntRange(0, 9).Draw(rt, "op") {
			case 0, 1, 2, 3, 4:
				i := rapid.IntRange(0, len(slugs)-1).Draw(rt, "i")
				base := rapid.IntRange(0, len(propBases)-1).Draw(rt, "base")
				variant := rapid.IntRange(0, len(propSuffixes)-1).Draw(rt, "variant")
				arch := rapid.IntRange(0, 4).Draw(rt, "archived") == 0
				over := rapid.IntRange(0, 2).Draw(rt, "overwrite") > 0
				slug := slugs[i]
				_, exists := model[slug]
				_, err := ms.Remember(ctx, RememberInput{Label: strings.ReplaceAll(slug, "-", " "), Content: propText(base, variant), Archived: arch, Overwrite: over})
				switch {
				case exists && !over:
					if !errors.Is(err, ErrExists) {
						rt.Fatalf("remember existing %s: %v", slug, err)
					}
				case err != nil:
					rt.Fatalf("remember %s: %v", slug, err)
				default:
					if exists {
						clearVerdicts(slug)
					}
					model[slug] = propEntry{base: base, archived: arch}
				}
			case 5, 6:
				slug := slugs[rapid.IntRange(0, len(slugs)-1).Draw(rt, "i")]
				_, err := ms.Forget(GlobalStore, slug)
				if _, ok := model[slug]; ok != (err == nil) {
					rt.Fatalf("forget %s: %v (in model: %v)", slug, err, ok)
				}
				delete(model, slug)
				clearVerdicts(slug)
			case 7, 8:
				a := slugs[rapid.IntRange(0, len(slugs)-1).Draw(rt, "a")]
				b := slugs[rapid.IntRange(0, len(slugs)-1).Draw(rt, "b")]
				err := ms.ResolvePair(GlobalStore, a, b, VerdictDistinct)
				_, okA := model[a]
				_, okB := model[b]
				want := okA && okB && a != b
				if want != (err == nil) {
					rt.Fatalf("resolve %s %s: %v", a, b, err)
				}
				if want {
					verdicts[makePair(a, b)] = true
				}
			case 9:
				ms.Close()
				st.Close()
				st, ms = open()
			}

			var wantPairs []string
			for x, ex := range model {
				for y, ey := range model {
					if x < y && !ex.archived && !ey.archived && ex.base == ey.base && !verdicts[makePair(x, y)] {
						wantPairs = append(wantPairs, x+"+"+y)
					}
				}
			}
			sig, err := ms.Hygiene([]string{GlobalStore}, nil)
			if err != nil {
				rt.Fatal(err)
			}
			pairs, _ := ms.Pairs(GlobalStore)
			var got []string
			for _, p := range pairs {
				got = append(got, p.A+"+"+p.B)
			}
			if sig[GlobalStore].DedupPairs != len(wantPairs) || len(got) != len(wantPairs) {
				rt.Fatalf("signal %d, pairs %v; want %v (model %v, verdicts %v)", sig[GlobalStore].DedupPairs, got, wantPairs, model, verdicts)
			}
			for _, w := range wantPairs {
				if !strings.Contains(fmt.Sprint(got), w) {
					rt.Fatalf("pairs %v miss %s", got, w)
				}
			}
		}
	})
}
