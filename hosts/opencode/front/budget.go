package front

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/ocbudget"
	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// The extraction budget is one entity per memory store
// (actors/ocbudget): a payload's cost counts against the project store of
// its session (the store its facts go to first; a session with no known
// directory counts against the global store), and a child is created only
// after that store's entity said extraction is not paused.

// Versions before the budget entities kept the costs in these rows; they
// are only forgotten now (forgetOldCosts), once older than ocbudget.Keep.
const (
	tableExtractionCost  = "opencode.extraction_cost"
	tableExtractionPause = "opencode.extraction_pause"
)

// budgetTimeout bounds one question to a budget entity.
const budgetTimeout = 10 * time.Second

func budgetID(store string) actors.Identity {
	return actors.Identity{Kind: ocbudget.KindName, ID: store}
}

// storeOf is the store the extraction cost of family counts against.
func (o *FrontEnd) storeOf(family string) string {
	return o.memSvc.projectStore(o.directoryOf(family))
}

// recordCost adds a fetched payload's size to its store's budget.
func (o *FrontEnd) recordCost(ctx context.Context, from actors.Identity, e *ocfamily.RecordExtractionCost) any {
	store := o.storeOf(from.ID)
	if err := o.tree.DeliverContext(ctx, budgetID(store), &ocbudget.AddCost{Bytes: e.Bytes, At: e.At}, budgetTimeout); err != nil {
		o.effectLog(from, e).Warn("cannot record extraction cost", "store", store, "error", err)
	}
	return nil
}

// budgetPause asks family's store whether extraction is paused now; toast
// is true for the check that paused it (its toast is shown once a day).
func (o *FrontEnd) budgetPause(ctx context.Context, family string) (store string, a *ocbudget.Answer, err error) {
	store = o.storeOf(family)
	budget := int64(o.cfg.Memory.DailyBudgetTokens)
	if budget <= 0 {
		return store, &ocbudget.Answer{}, nil
	}
	res, err := o.tree.RequestContext(ctx, budgetID(store), &ocbudget.Check{Budget: budget}, budgetTimeout)
	if err != nil {
		return store, nil, err
	}
	a, ok := res.(*ocbudget.Answer)
	if !ok {
		return store, nil, fmt.Errorf("the budget of %s answered %T", store, res)
	}
	return store, a, nil
}

// pausedText is the status line, and the toast, of a paused store.
func (o *FrontEnd) pausedText(store string) string {
	return fmt.Sprintf("extraction paused for store %s: budget %d tokens/day reached", store, o.cfg.Memory.DailyBudgetTokens)
}

// ResumeBody is the body of POST /v1/opencode/extraction/resume. Store
// empty resumes every store paused today.
type ResumeBody struct {
	Store string `json:"store,omitempty"`
}

// ResumeAnswer answers it with the stores whose pause was lifted for the
// rest of the day.
type ResumeAnswer struct {
	Resumed []string `json:"resumed"`
}

// serveResume serves POST /v1/opencode/extraction/resume: it lifts the
// budget pause of one store (or of every store paused today) until the
// end of the UTC day. The families' pending work goes out on their next
// idle.
func (o *FrontEnd) serveResume(w http.ResponseWriter, r *http.Request) {
	var b ResumeBody
	if r.ContentLength != 0 {
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&b); err != nil {
			writeError(w, http.StatusBadRequest, "bad JSON body: "+err.Error(), false)
			return
		}
	}
	stores := []string{b.Store}
	if b.Store == "" {
		stores = nil
		for _, v := range o.budgets() {
			stores = append(stores, v.Store)
		}
	}
	ans := ResumeAnswer{Resumed: []string{}}
	for _, s := range stores {
		res, err := o.tree.RequestContext(r.Context(), budgetID(s), &ocbudget.Resume{OnlyPaused: b.Store == ""}, budgetTimeout)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error(), false)
			return
		}
		if ok, _ := res.(bool); ok {
			ans.Resumed = append(ans.Resumed, s)
		}
	}
	slices.Sort(ans.Resumed)
	o.log.Info("extraction resumed", "stores", ans.Resumed)
	control.WriteJSON(w, http.StatusOK, ans)
}

// StoreCost is one store's extraction cost in the status.
type StoreCost struct {
	Store string `json:"store"`
	// Tokens24h and Tokens7d are the estimated tokens (bytes/4) of the
	// payloads fetched in the last 24 hours and 7 days (whole UTC hours).
	Tokens24h int64 `json:"tokens24h"`
	Tokens7d  int64 `json:"tokens7d"`
	// Budget is memory.daily_budget_tokens (0: none).
	Budget int64 `json:"budget,omitempty"`
	// Paused is the pause's status line while extraction is paused.
	Paused string `json:"paused,omitempty"`
}

// budgets reads every store's budget entity (without waking it).
func (o *FrontEnd) budgets() []ocbudget.State {
	views, _ := frontend.Entities(o.tree, o.jr, ocbudget.KindName, "store", 0, budgetTimeout)
	var out []ocbudget.State
	for _, raw := range views {
		if s, ok := raw.(ocbudget.State); ok {
			out = append(out, s)
		}
	}
	return out
}

// costs reads every store's cost of the last 7 days, sorted by store.
func (o *FrontEnd) costs() ([]StoreCost, error) {
	now := o.now()
	var out []StoreCost
	for _, s := range o.budgets() {
		c := StoreCost{Store: s.Store, Budget: int64(o.cfg.Memory.DailyBudgetTokens),
			Tokens24h: s.Since(now.Add(-24 * time.Hour)), Tokens7d: s.Since(now.Add(-7 * 24 * time.Hour))}
		if s.PausedOn(now) {
			c.Paused = o.pausedText(s.Store)
		}
		if c.Tokens7d > 0 || c.Paused != "" {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b StoreCost) int { return strings.Compare(a.Store, b.Store) })
	return out, nil
}

// forgetOldCosts drops the cost and pause rows of versions before the
// budget entities once they are older than ocbudget.Keep.
func (o *FrontEnd) forgetOldCosts() {
	cutoff := o.now().Add(-ocbudget.Keep)
	for _, t := range []string{tableExtractionCost, tableExtractionPause} {
		if _, err := o.rows.DeleteWrittenBefore(t, cutoff); err != nil {
			o.log.Warn("cannot forget old extraction costs", "table", t, "error", err)
		}
	}
}
