package front

import (
	"time"

	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/supervisor"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// inspectTimeout bounds how long status waits for one family's view.
const inspectTimeout = 5 * time.Second

// Report lists the status views of the families: every persisted one and
// every live one, sorted by id, at most limit (0: all). A passivated family
// is woken to answer, which is fine for a command a person runs; a family
// that cannot answer shows its error instead of its view.
func (o *FrontEnd) Report(limit int) ([]any, int) {
	ids := frontend.KnownIDs(o.tree, o.jr, ocfamily.KindName, inspectTimeout)
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
