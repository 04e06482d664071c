package front

import (
	"sort"
	"time"

	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/supervisor"
)

// inspectTimeout bounds how long status waits for one family's view.
const inspectTimeout = 5 * time.Second

// Report lists the status views of the families: every persisted one and
// every live one, sorted by id, at most limit (0: all). A passivated family
// is woken to answer, which is fine for a command a person runs; a family
// that cannot answer shows its error instead of its view.
func (o *FrontEnd) Report(limit int) ([]any, int) {
	seen := map[string]bool{}
	var ids []string
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if live, err := o.tree.LiveIDs(ocfamily.KindName, inspectTimeout); err == nil {
		for _, id := range live {
			add(id)
		}
	}
	_ = o.jr.EntityIDs(ocfamily.KindName, func(id persistence.Identity) error {
		add(id.ID)
		return nil
	})
	sort.Strings(ids)
	total := len(ids)
	if limit > 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	return o.sessionViews(ids), total
}

// sessionViews asks every family for its view; the requests go out
// together, so one family that cannot answer costs one timeout, not one
// per family.
func (o *FrontEnd) sessionViews(ids []string) []any {
	type answer struct {
		res any
		err error
	}
	answers := make([]chan answer, len(ids))
	for i, id := range ids {
		ch := make(chan answer, 1)
		answers[i] = ch
		go func() {
			res, err := o.tree.Request(familyID(id), &supervisor.Inspect{}, inspectTimeout)
			ch <- answer{res, err}
		}()
	}
	out := make([]any, 0, len(ids))
	for i, id := range ids {
		a := <-answers[i]
		if a.err != nil {
			out = append(out, map[string]string{"family": id, "error": a.err.Error()})
			continue
		}
		if in, ok := a.res.(*supervisor.Inspection); ok {
			out = append(out, in.View)
		}
	}
	return out
}
