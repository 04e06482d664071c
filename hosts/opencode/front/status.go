package front

import (
	"time"

	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/actors/sweeper"
	"github.com/thatch-run/thatch/supervisor"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// inspectTimeout bounds how long status waits for one family's view.
const inspectTimeout = 5 * time.Second

// Report is the front end's status: the status views of the families
// (every persisted one and every live one, sorted by id, at most limit, 0:
// all; a family that cannot answer shows its error instead of its view)
// and, under "sweepers", what each sweep of its sweeper did and when it
// runs next, and under "redactions", how many secrets of each kind were
// cut from plugin calls since start (when the redactor is on).
func (o *FrontEnd) Report(limit int) frontend.Report {
	var rep frontend.Report
	if o.tree == nil {
		return rep
	}
	rep.Entities, rep.Total = frontend.Entities(o.tree, o.jr, ocfamily.KindName, "family", limit, inspectTimeout)
	for i, v := range rep.Entities {
		rep.Entities[i] = o.withHost(v)
	}
	if sweeps := o.sweeps(); sweeps != nil {
		rep.Details = map[string]any{"sweepers": sweeps}
	}
	if counts := o.redactions(); counts != nil {
		if rep.Details == nil {
			rep.Details = map[string]any{}
		}
		rep.Details["redactions"] = counts
	}
	if costs, err := o.costs(); err != nil {
		o.log.Debug("status: cannot read extraction costs", "error", err)
	} else if len(costs) > 0 || o.cfg.Memory.DailyBudgetTokens > 0 {
		if rep.Details == nil {
			rep.Details = map[string]any{}
		}
		rep.Details["extraction"] = costs
	}
	return rep
}

// sweeps reads the sweeper's view (nil when it cannot answer in time).
func (o *FrontEnd) sweeps() []sweeper.SweepView {
	res, err := o.tree.Request(sweeper.Identity, &supervisor.Inspect{}, inspectTimeout)
	if err != nil {
		o.log.Debug("status: the sweeper did not answer", "error", err)
		return nil
	}
	if in, ok := res.(*supervisor.Inspection); ok {
		if v, ok := in.View.(sweeper.View); ok {
			return v.Sweeps
		}
	}
	return nil
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
