package memory

import (
	"fmt"
	"slices"
	"strings"
)

// Signals are the hygiene counts of one store, for the session-start
// reminder and the heartbeat.
type Signals struct {
	// DedupPairs counts pairs of live entries at or above the dedup
	// threshold that nobody has judged yet (see ResolvePair).
	DedupPairs int
	// Stale counts live entries neither updated nor recalled for longer
	// than StaleAfter.
	Stale int
	// Orphaned counts entries, archived ones included, on a branch that no
	// longer exists in the repository.
	Orphaned int
}

// Zero reports whether no signal is raised.
func (g Signals) Zero() bool { return g == Signals{} }

// BranchLister returns the branches that exist for a store, or ok=false
// when that is unknown (no repository for the store, git failed); the
// orphan check is then skipped for the store. It is called without the
// store's lock held, so it may run git.
type BranchLister func(store string) (branches []string, ok bool)

// Hygiene computes the signals of stores (default: every store). Nothing is
// scanned on disk: pairs are found when entries are written, and the index
// keeps per-branch counts and activity times in memory, so a heartbeat over
// 100,000 entries costs a few milliseconds plus whatever branches spends.
// branches may be nil to skip the orphan check. A branch list that is empty
// also skips it: git listing no branches at all means an unborn or broken
// repository, not that every branch was deleted.
func (s *Store) Hygiene(stores []string, branches BranchLister) (map[string]Signals, error) {
	if len(stores) == 0 {
		stores = s.Stores()
	}
	for _, st := range stores {
		if err := checkName("store", st); err != nil {
			return nil, err
		}
	}
	live := map[string]map[string]bool{}
	if branches != nil {
		for _, st := range stores {
			bs, ok := branches(st)
			if !ok || len(bs) == 0 {
				continue
			}
			set := make(map[string]bool, len(bs))
			for _, b := range bs {
				set[normalizeBranch(b)] = true
			}
			live[st] = set
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	staleBefore := s.now().Add(-s.staleFor).UnixNano()
	out := make(map[string]Signals, len(stores))
	for _, st := range stores {
		sh := s.shards[st]
		if sh == nil {
			out[st] = Signals{}
			continue
		}
		sig := Signals{DedupPairs: sh.unjudged}
		for _, m := range sh.metas {
			if !m.archived && m.activity < staleBefore {
				sig.Stale++
			}
		}
		if set, ok := live[st]; ok {
			for b, n := range sh.branchRefs {
				if !set[b] {
					sig.Orphaned += n
				}
			}
		}
		out[st] = sig
	}
	return out, nil
}

// HeartbeatLine renders the raised signals of a store, for example
//
//	Store "acme/api": 3 dedup pairs; 12 stale; 2 orphaned branch memories
//
// and returns "" when no signal is raised.
func HeartbeatLine(store string, g Signals) string {
	var parts []string
	if g.DedupPairs > 0 {
		parts = append(parts, plural(g.DedupPairs, "dedup pair", "dedup pairs"))
	}
	if g.Stale > 0 {
		parts = append(parts, fmt.Sprintf("%d stale", g.Stale))
	}
	if g.Orphaned > 0 {
		parts = append(parts, plural(g.Orphaned, "orphaned branch memory", "orphaned branch memories"))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("Store %q: %s", store, strings.Join(parts, "; "))
}

// HeartbeatLines renders every store with a raised signal, sorted by store.
func HeartbeatLines(sig map[string]Signals) []string {
	names := make([]string, 0, len(sig))
	for n := range sig {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []string
	for _, n := range names {
		if l := HeartbeatLine(n, sig[n]); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// HygieneStore is one store's part of the hygiene report.
type HygieneStore struct {
	Store   string  `json:"store"`
	Signals Signals `json:"signals"`
	Line    string  `json:"line,omitempty"`
	Pairs   []Pair  `json:"pairs,omitempty"`
}

// HygieneReport computes every store's signals and unjudged pairs (without
// the orphan check, which needs a repository per store).
func HygieneReport(mem *Store) []HygieneStore {
	sig, err := mem.Hygiene(nil, nil)
	if err != nil {
		return nil
	}
	out := []HygieneStore{}
	for _, st := range mem.Stores() {
		pairs, _ := mem.Pairs(st)
		out = append(out, HygieneStore{Store: st, Signals: sig[st], Line: HeartbeatLine(st, sig[st]), Pairs: pairs})
	}
	return out
}
