package front

import (
	"time"

	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// inspectTimeout bounds how long status waits for one family's view.
const inspectTimeout = 5 * time.Second

// Report lists the status views of the families: every persisted one and
// every live one, sorted by id, at most limit (0: all); a family that
// cannot answer shows its error instead of its view.
func (o *FrontEnd) Report(limit int) ([]any, int) {
	views, total := frontend.Report(o.tree, o.jr, ocfamily.KindName, "family", limit, inspectTimeout)
	for i, v := range views {
		views[i] = o.withHost(v)
	}
	return views, total
}

// withHost fills in the host of a family's status view: the registry owns
// it, and the family's own view leaves it empty.
func (o *FrontEnd) withHost(view any) any {
	if v, ok := view.(ocfamily.StatusView); ok {
		v.Host = o.dir.hostOf(v.SessionID)
		return v
	}
	return view
}
