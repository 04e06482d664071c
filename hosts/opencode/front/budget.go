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
	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/persistence"
)

// The extraction cost rows. A payload's cost counts against the project
// store of its session (the store its facts go to first; a session with
// no known directory counts against the global store).
const (
	// tableExtractionCost holds the bytes and estimated tokens of the
	// payloads fetched, per store and UTC hour: key "store|2006-01-02T15",
	// value a costRow.
	tableExtractionCost = "opencode.extraction_cost"
	// tableExtractionPause holds, per store and UTC day, that extraction
	// paused (and its toast was shown) or was resumed: key
	// "store|2006-01-02", value a pauseRow.
	tableExtractionPause = "opencode.extraction_pause"
)

// costKeep is how long cost rows are kept: the status shows 7 days.
const costKeep = 8 * 24 * time.Hour

// costRow is the cost of one store in one hour.
type costRow struct {
	Bytes  int64 `json:"bytes"`
	Tokens int64 `json:"tokens"`
}

// pauseRow is one store's pause of one day. Paused is set (and the toast
// shown) when the budget first stopped an extraction; Resumed lifts the
// pause for the rest of the day.
type pauseRow struct {
	Paused  bool  `json:"paused,omitempty"`
	Resumed bool  `json:"resumed,omitempty"`
	Used    int64 `json:"used,omitempty"`
}

func hourKey(store string, t time.Time) string {
	return store + "|" + t.UTC().Format("2006-01-02T15")
}

func dayKey(store string, t time.Time) string {
	return store + "|" + t.UTC().Format("2006-01-02")
}

// splitKey splits a cost or pause key into its store and time part.
func splitKey(key string) (store, at string, ok bool) {
	i := strings.LastIndexByte(key, '|')
	if i < 0 {
		return "", "", false
	}
	return key[:i], key[i+1:], true
}

// storeOf is the store the extraction cost of family counts against.
func (o *FrontEnd) storeOf(family string) string {
	return o.memSvc.projectStore(o.directoryOf(family))
}

// recordCost adds a fetched payload's size to its store's hour.
func (o *FrontEnd) recordCost(_ context.Context, from actors.Identity, e *ocfamily.RecordExtractionCost) any {
	at := e.At
	if at.IsZero() {
		at = o.now()
	}
	key := hourKey(o.storeOf(from.ID), at)
	o.costMu.Lock()
	defer o.costMu.Unlock()
	var c costRow
	if err := o.readRow(tableExtractionCost, key, &c); err != nil {
		o.effectLog(from, e).Warn("cannot read extraction cost", "key", key, "error", err)
	}
	c.Bytes += e.Bytes
	c.Tokens += ocfamily.EstimateTokens(e.Bytes)
	if err := o.writeRow(tableExtractionCost, key, c); err != nil {
		o.effectLog(from, e).Warn("cannot record extraction cost", "key", key, "error", err)
	}
	return nil
}

// readRow decodes the row at table/key into v; a missing row leaves v.
func (o *FrontEnd) readRow(table, key string, v any) error {
	row, ok, err := o.rows.Get(table, key)
	if err != nil || !ok {
		return err
	}
	return json.Unmarshal(row.Value, v)
}

func (o *FrontEnd) writeRow(table, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return o.rows.Put(table, key, b)
}

// tokensSince sums the estimated tokens of store's hours from since on.
func (o *FrontEnd) tokensSince(store string, since time.Time) (int64, error) {
	var n int64
	from := since.UTC().Truncate(time.Hour).Format("2006-01-02T15")
	err := o.rows.Scan(tableExtractionCost, func(row persistence.Row) error {
		s, at, ok := splitKey(row.Key)
		if !ok || s != store || at < from {
			return nil
		}
		var c costRow
		if json.Unmarshal(row.Value, &c) == nil {
			n += c.Tokens
		}
		return nil
	})
	return n, err
}

// startOfDay is the start of t's UTC day.
func startOfDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// budgetPause reports whether extraction for family's store is paused
// now: a budget is set, today's tokens reached it, and no resume lifted
// it today. The first pause of a store's day is recorded and returns
// toast true: its toast is shown once.
func (o *FrontEnd) budgetPause(family string) (store string, used int64, paused, toast bool, err error) {
	budget := int64(o.cfg.Memory.DailyBudgetTokens)
	if budget <= 0 {
		return "", 0, false, false, nil
	}
	now := o.now()
	store = o.storeOf(family)
	o.costMu.Lock()
	defer o.costMu.Unlock()
	var p pauseRow
	if err := o.readRow(tableExtractionPause, dayKey(store, now), &p); err != nil {
		return store, 0, false, false, err
	}
	if p.Resumed {
		return store, 0, false, false, nil
	}
	used, err = o.tokensSince(store, startOfDay(now))
	if err != nil || used < budget {
		return store, used, false, false, err
	}
	if !p.Paused {
		p.Paused, p.Used, toast = true, used, true
		if err := o.writeRow(tableExtractionPause, dayKey(store, now), p); err != nil {
			return store, used, true, false, err
		}
	}
	return store, used, true, toast, nil
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
	now := o.now()
	day := now.UTC().Format("2006-01-02")
	o.costMu.Lock()
	defer o.costMu.Unlock()
	var stores []string
	if b.Store != "" {
		stores = []string{b.Store}
	} else {
		err := o.rows.Scan(tableExtractionPause, func(row persistence.Row) error {
			s, at, ok := splitKey(row.Key)
			var p pauseRow
			if ok && at == day && json.Unmarshal(row.Value, &p) == nil && p.Paused && !p.Resumed {
				stores = append(stores, s)
			}
			return nil
		})
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error(), false)
			return
		}
	}
	ans := ResumeAnswer{Resumed: []string{}}
	for _, s := range stores {
		var p pauseRow
		if err := o.readRow(tableExtractionPause, dayKey(s, now), &p); err != nil {
			writeError(w, http.StatusInternalServerError, err.Error(), false)
			return
		}
		p.Resumed = true
		if err := o.writeRow(tableExtractionPause, dayKey(s, now), p); err != nil {
			writeError(w, http.StatusInternalServerError, err.Error(), false)
			return
		}
		ans.Resumed = append(ans.Resumed, s)
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

// costs reads every store's cost of the last 7 days, sorted by store.
func (o *FrontEnd) costs() ([]StoreCost, error) {
	now := o.now()
	day := now.Add(-24 * time.Hour).UTC().Truncate(time.Hour).Format("2006-01-02T15")
	week := now.Add(-7 * 24 * time.Hour).UTC().Truncate(time.Hour).Format("2006-01-02T15")
	by := map[string]*StoreCost{}
	get := func(s string) *StoreCost {
		if by[s] == nil {
			by[s] = &StoreCost{Store: s, Budget: int64(o.cfg.Memory.DailyBudgetTokens)}
		}
		return by[s]
	}
	err := o.rows.Scan(tableExtractionCost, func(row persistence.Row) error {
		s, at, ok := splitKey(row.Key)
		var c costRow
		if !ok || at < week || json.Unmarshal(row.Value, &c) != nil {
			return nil
		}
		sc := get(s)
		sc.Tokens7d += c.Tokens
		if at >= day {
			sc.Tokens24h += c.Tokens
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	today := now.UTC().Format("2006-01-02")
	err = o.rows.Scan(tableExtractionPause, func(row persistence.Row) error {
		s, at, ok := splitKey(row.Key)
		var p pauseRow
		if ok && at == today && json.Unmarshal(row.Value, &p) == nil && p.Paused && !p.Resumed {
			get(s).Paused = o.pausedText(s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]StoreCost, 0, len(by))
	for _, c := range by {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b StoreCost) int { return strings.Compare(a.Store, b.Store) })
	return out, nil
}

// forgetOldCosts drops cost and pause rows older than costKeep.
func (o *FrontEnd) forgetOldCosts() {
	cutoff := o.now().Add(-costKeep)
	for _, t := range []string{tableExtractionCost, tableExtractionPause} {
		if _, err := o.rows.DeleteWrittenBefore(t, cutoff); err != nil {
			o.log.Warn("cannot forget old extraction costs", "table", t, "error", err)
		}
	}
}
