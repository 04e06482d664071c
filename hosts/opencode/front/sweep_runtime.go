package front

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
)

// tableFamilyTouched stamps when a family's state was last written by its
// session (a tool call, its creation), with the directory it ran in: the
// runtime-state sweep's clock. The journal itself keeps no times.
const tableFamilyTouched = "opencode.family_touched"

// touchValue is a tableFamilyTouched row's value.
type touchValue struct {
	Dir string `json:"dir,omitempty"`
	// Existed is true when Dir existed at the stamp: only a directory
	// that existed can be gone ("no longer exists"), so a family whose
	// directory was never on this machine is not dropped for it.
	Existed bool `json:"existed,omitempty"`
}

// touches rate-limits the stamps: a live session writes its state on every
// tool call, and one row write (fsync'd) an interval per family is enough
// for a TTL of days.
type touches struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// touchEvery is how often one family's stamp is rewritten at most.
func (o *FrontEnd) touchEvery() time.Duration {
	return min(time.Hour, o.cfg.Sweep.RuntimeStateTTL/4)
}

// touchFamily stamps family fam as written now, at most once per
// touchEvery. A failure is logged: the next tool call tries again.
func (o *FrontEnd) touchFamily(fam string) {
	now := o.now()
	o.touched.mu.Lock()
	if o.touched.last == nil {
		o.touched.last = map[string]time.Time{}
	}
	if at, ok := o.touched.last[fam]; ok && now.Sub(at) >= 0 && now.Sub(at) < o.touchEvery() {
		o.touched.mu.Unlock()
		return
	}
	o.touched.last[fam] = now
	o.touched.mu.Unlock()
	o.stamp(fam)
}

// forgetTouch drops a family's stamp (memory and row).
func (o *FrontEnd) forgetTouch(fam string) error {
	o.touched.mu.Lock()
	delete(o.touched.last, fam)
	o.touched.mu.Unlock()
	return o.rows.Delete(tableFamilyTouched, fam)
}

func (o *FrontEnd) stamp(fam string) {
	v := touchValue{Dir: o.dir.directory(fam)}
	if v.Dir != "" {
		_, err := os.Stat(v.Dir)
		v.Existed = err == nil
	}
	b, _ := json.Marshal(v)
	if err := o.rows.Put(tableFamilyTouched, fam, b); err != nil {
		o.log.Warn("cannot stamp a family's runtime state", "family", fam, "error", err)
	}
}

// runtimeFamily is one family as the runtime-state sweep sees it.
type runtimeFamily struct {
	ID string
	// Touched is the family's last stamp; zero when it has none (state of
	// an older thatch, or written before its first stamp).
	Touched time.Time
	// DirGone is true when the directory the family ran in existed and
	// no longer does.
	DirGone bool
	// Live is true while its entity is awake (being written).
	Live bool
	// Active is true while it has unfinished work (an extraction, a
	// claim, a wrap-up check): the pipeline finishes that through the
	// host first (the stale reaper gives a hung one up), then it can go.
	Active bool
	// Inherited names the connected opencode process that was resumed
	// with this session (-c, -s) and inherited its state.
	Inherited string
	// Tombstone is true for a deleted session's family; the tombstone
	// leg forgets it after its own TTL.
	Tombstone bool
}

// runtimePlan is what the runtime-state sweep does.
type runtimePlan struct {
	// Drop are families whose journal, registry records and stamp go.
	Drop []messages.SweepItem
	// Kept are families kept on purpose, with the reason.
	Kept []messages.SweepItem
	// Stamp are families with no stamp yet: their TTL starts now.
	Stamp []string
}

// Reasons of the runtime-state sweep.
const (
	reasonInherited = "inherited by a resumed opencode"
	reasonActive    = "unfinished work: the pipeline finishes it first"
	reasonDirGone   = "its directory no longer exists"
	reasonExpired   = "not written since the TTL's cutoff"
)

// planRuntimeSweep applies the TTL rules. It is pure. State older than the
// cutoff and state whose directory is gone is dropped; state a resumed
// opencode inherited is kept, as is state that has unfinished work (both
// reported) or is being written (live, not reported); a tombstone is left
// to its own leg. Families come out sorted by id.
func planRuntimeSweep(fams []runtimeFamily, cutoff time.Time) runtimePlan {
	var p runtimePlan
	sort.Slice(fams, func(i, j int) bool { return fams[i].ID < fams[j].ID })
	for _, f := range fams {
		switch {
		case f.Tombstone:
		case f.Inherited != "":
			p.Kept = append(p.Kept, messages.SweepItem{ID: f.ID, Host: f.Inherited, Reason: reasonInherited})
		case f.Active:
			// Reported awake or not: a family held back by unfinished
			// work (an entity with a timer stays awake) is what a user
			// reading the report wants to see.
			p.Kept = append(p.Kept, messages.SweepItem{ID: f.ID, Reason: reasonActive})
		case f.Live:
		case f.DirGone:
			p.Drop = append(p.Drop, messages.SweepItem{ID: f.ID, Reason: reasonDirGone})
		case f.Touched.IsZero():
			p.Stamp = append(p.Stamp, f.ID)
		case f.Touched.Before(cutoff):
			p.Drop = append(p.Drop, messages.SweepItem{ID: f.ID, Reason: reasonExpired + " (" + f.Touched.UTC().Format(time.RFC3339) + ")"})
		}
	}
	return p
}

// sweepRuntime runs one round of the runtime-state sweep: it ages out the
// runtime-state rows, drops the families the plan says, and forgets the
// tombstones older than deletedCutoff. Every leg degrades quietly.
func (o *FrontEnd) sweepRuntime(ctx context.Context, cutoff, deletedCutoff time.Time) *messages.SweepReport {
	rep := &messages.SweepReport{Sweep: messages.SweepRuntime, Started: o.now()}
	defer func() { rep.Finished = o.now() }()
	fail := func(what string, err error) {
		rep.Counts.Errors++
		rep.Notes = append(rep.Notes, what+": "+err.Error())
		o.log.Error("runtime-state sweep: "+what, "error", err)
	}
	if n, err := o.rows.DeleteWrittenBefore(tableWatcherDeaths, cutoff); err != nil {
		fail("cannot age out "+tableWatcherDeaths, err)
	} else if n > 0 {
		rep.Counts.Dropped += n
		o.log.Info("aged out runtime-state rows", "table", tableWatcherDeaths, "rows", n)
	}
	fams, orphans, err := o.runtimeFamilies()
	if err != nil {
		fail("cannot read the families", err)
	} else {
		o.applyRuntime(ctx, planRuntimeSweep(fams, cutoff), orphans, rep)
	}
	forgot, err := o.forgetDeletedFamilies(ctx, deletedCutoff)
	if err != nil {
		fail("cannot forget deleted sessions", err)
	}
	for _, id := range forgot {
		rep.Add(&rep.Dropped, messages.SweepItem{ID: id, Reason: "deleted session, older than the tombstone TTL"})
	}
	if len(forgot) > 0 {
		o.log.Info("forgot the journals of deleted sessions", "sessions", len(forgot))
	}
	return rep
}

// runtimeFamilies gathers every family's facts, and the stamps of
// families that no longer exist.
func (o *FrontEnd) runtimeFamilies() ([]runtimeFamily, []string, error) {
	byID := map[string]*runtimeFamily{}
	var fams []*runtimeFamily
	if err := o.jr.EntityIDs(ocfamily.KindName, func(id persistence.Identity) error {
		f := &runtimeFamily{ID: id.ID}
		byID[id.ID] = f
		fams = append(fams, f)
		return nil
	}); err != nil {
		return nil, nil, err
	}
	var orphans []string
	dead := map[string]bool{}
	if err := o.rows.Scan(tableFamilyTouched, func(r persistence.Row) error {
		f := byID[r.Key]
		if f == nil {
			orphans = append(orphans, r.Key)
			return nil
		}
		f.Touched = r.WrittenAt
		var v touchValue
		if json.Unmarshal(r.Value, &v) == nil && v.Existed && v.Dir == o.dir.directory(f.ID) {
			markDead(dead, v.Dir)
			f.DirGone = dead[v.Dir]
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	if err := o.jr.Active(ocfamily.KindName, func(id persistence.Identity) error {
		if f := byID[id.ID]; f != nil {
			f.Active = true
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	if err := o.rows.Scan(tableDeletedFamilies, func(r persistence.Row) error {
		if f := byID[r.Key]; f != nil {
			f.Tombstone = true
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	if live, err := o.tree.LiveIDs(ocfamily.KindName, inspectTimeout); err == nil {
		for _, id := range live {
			if f := byID[id]; f != nil {
				f.Live = true
			}
		}
	}
	for fam, host := range o.inheritedNow() {
		if f := byID[fam]; f != nil {
			f.Inherited = host
		}
	}
	out := make([]runtimeFamily, len(fams))
	for i, f := range fams {
		out[i] = *f
	}
	return out, orphans, nil
}

// applyRuntime carries out a runtime plan.
func (o *FrontEnd) applyRuntime(ctx context.Context, p runtimePlan, orphans []string, rep *messages.SweepReport) {
	for _, it := range p.Drop {
		forgotten, err := o.tree.ForgetPassive(familyID(it.ID), 5*time.Second)
		switch {
		case err != nil:
			rep.Counts.Errors++
			o.log.Error("runtime-state sweep: cannot forget a family", "family", it.ID, "error", err)
			continue
		case !forgotten:
			// It woke meanwhile: it is being written, so it stays.
			continue
		}
		if err := errors.Join(o.dir.forget(ctx, it.ID), o.forgetTouch(it.ID)); err != nil {
			rep.Counts.Errors++
			o.log.Error("runtime-state sweep: cannot forget a family's records", "family", it.ID, "error", err)
		}
		rep.Add(&rep.Dropped, it)
		o.log.Info("dropped runtime state", "family", it.ID, "reason", it.Reason)
	}
	for _, it := range p.Kept {
		rep.Add(&rep.Skipped, it)
	}
	for _, id := range p.Stamp {
		o.stamp(id)
	}
	for _, id := range orphans {
		if err := o.forgetTouch(id); err != nil {
			rep.Counts.Errors++
			o.log.Error("runtime-state sweep: cannot drop a stamp", "family", id, "error", err)
		}
	}
}

// inherited records, by host, the families whose sessions a connected
// opencode process listed when it connected: a process resumed with -c or
// -s inherits the state the rehydrate pass kept for them.
type inherited struct {
	mu     sync.Mutex
	byHost map[string][]string
}

// noteInherited records what a host that just connected inherited. Only
// opencode processes (plugin-registered, with a pid) resume sessions; a
// configured `opencode serve` does not inherit, so the TTL applies to its
// sessions.
func (o *FrontEnd) noteInherited(ctx context.Context, host string) {
	o.mu.Lock()
	h, ok := o.hosts[host]
	pid := 0
	if ok {
		pid = h.pid
	}
	o.mu.Unlock()
	if pid <= 0 {
		return
	}
	l, err := o.listerOf(host)
	if err != nil {
		return
	}
	lctx, cancel := o.call(ctx)
	sessions, err := l.ListSessions(lctx)
	cancel()
	if err != nil {
		o.log.Debug("cannot list what a resumed opencode inherited", "host", host, "error", err)
		return
	}
	var fams []string
	for _, s := range sessions {
		if s.ParentID != "" || o.dir.family(s.ID) != s.ID {
			continue
		}
		if high, err := o.jr.HighestSeq(familyID(s.ID)); err == nil && high > 0 {
			fams = append(fams, s.ID)
		}
	}
	o.inherit.mu.Lock()
	if o.inherit.byHost == nil {
		o.inherit.byHost = map[string][]string{}
	}
	o.inherit.byHost[host] = fams
	o.inherit.mu.Unlock()
}

// inheritedNow maps each inherited family to its host, for the hosts
// that are still connected.
func (o *FrontEnd) inheritedNow() map[string]string {
	o.inherit.mu.Lock()
	defer o.inherit.mu.Unlock()
	out := map[string]string{}
	for host, fams := range o.inherit.byHost {
		if _, ok := o.hostInfo(host); !ok {
			delete(o.inherit.byHost, host)
			continue
		}
		for _, f := range fams {
			out[f] = host
		}
	}
	return out
}
