package front

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"syscall"

	"github.com/thatch-run/thatch/actors/sweeper"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/opencode"
	"github.com/thatch-run/thatch/messages"
)

// StrandHost is what the strand sweep needs of a host that speaks the v1
// API. The front end adapts every *opencode.Client it connects to; an
// embedder's host (Options.Hosts) takes part when its client implements
// it.
type StrandHost interface {
	// ListSessionsIn lists every session of the project that directory
	// belongs to (whatever directory each session records); "" means the
	// server's own directory. directory must exist.
	ListSessionsIn(ctx context.Context, directory string) ([]opencode.Session, error)
	// Projects lists the projects with their canonical checkouts.
	Projects(ctx context.Context) ([]opencode.Project, error)
	// MoveSession moves a session to directory, within its project; a
	// refusal wraps opencode.ErrMoveRefused.
	MoveSession(ctx context.Context, sessionID, directory string) error
	// DeleteSession deletes a session (a gone one counts as deleted).
	DeleteSession(ctx context.Context, sessionID string) error
}

// v1Strand adapts the v1 client.
type v1Strand struct{ c *opencode.Client }

func (s v1Strand) ListSessionsIn(ctx context.Context, dir string) ([]opencode.Session, error) {
	c := s.c
	if dir != "" {
		c = c.WithDirectory(dir)
	}
	return c.ListProjectSessions(ctx)
}

func (s v1Strand) Projects(ctx context.Context) ([]opencode.Project, error) {
	return s.c.Projects(ctx)
}

func (s v1Strand) MoveSession(ctx context.Context, id, dir string) error {
	return s.c.MoveSessionChecked(ctx, id, dir)
}

func (s v1Strand) DeleteSession(ctx context.Context, id string) error {
	return s.c.DeleteSession(ctx, id)
}

// maxStrandDirs bounds how many directories one host is listed in.
const maxStrandDirs = 64

// strandTarget is one host the sweep enumerates.
type strandTarget struct {
	name  string
	api   string
	dirs  []string // where to list (v1)
	sh    StrandHost
	toast HostClient
}

// healStranded runs one round of the strand sweep over every connected
// host (or only the host named only) and reports it. Each host call has
// its own request timeout; every leg degrades quietly: a failure is
// logged and counted, never fatal. It runs only as the sweeper's effect
// (sweepStranded), in one lane, so rounds never overlap.
func (o *FrontEnd) healStranded(ctx context.Context, only string) *messages.SweepReport {
	rep := &messages.SweepReport{Sweep: messages.SweepStrand, Started: o.now()}
	defer func() { rep.Finished = o.now() }()
	if !o.cfg.Sweep.Strand {
		rep.Notes = append(rep.Notes, "disarmed (sweep.strand = false)")
		return rep
	}
	o.reapGone()
	targets := o.strandTargets(only)
	in := strandInput{Dead: map[string]bool{}, Checkouts: map[string]string{}, Caps: map[string]strandHostCaps{}}
	seen := map[string]bool{}
	for _, t := range targets {
		rows, caps := o.enumerate(ctx, t, in.Checkouts, rep)
		in.Caps[t.name] = caps
		for _, r := range rows {
			if !seen[r.ID] {
				seen[r.ID] = true
				in.Rows = append(in.Rows, r)
			}
		}
	}
	for _, r := range in.Rows {
		markDead(in.Dead, r.Directory)
	}
	for _, c := range in.Checkouts {
		markDead(in.Dead, c)
	}
	byName := map[string]strandTarget{}
	for _, t := range targets {
		byName[t.name] = t
	}
	healed := map[string]int{}
	for _, a := range planStrandActions(in) {
		if o.applyStrand(ctx, byName[a.Row.Host], a, rep) {
			healed[a.Row.Host]++
		}
	}
	o.strandToasts(ctx, byName, healed, rep)
	return rep
}

// markDead stats dir once; only "does not exist" counts as dead.
func markDead(dead map[string]bool, dir string) {
	if dir == "" {
		return
	}
	if _, done := dead[dir]; done {
		return
	}
	_, err := os.Stat(dir)
	dead[dir] = errors.Is(err, os.ErrNotExist)
}

// strandTargets are the connected hosts the sweep can enumerate.
func (o *FrontEnd) strandTargets(only string) []strandTarget {
	o.mu.Lock()
	var out []strandTarget
	for _, h := range o.hosts {
		if only != "" && h.name != only {
			continue
		}
		t := strandTarget{name: h.name, api: h.info.API, toast: h.info.Client}
		switch {
		case h.info.API == config.APIV2:
		case h.client != nil:
			t.sh = v1Strand{h.client}
		default:
			sh, ok := h.info.Client.(StrandHost)
			if !ok {
				continue
			}
			t.sh = sh
		}
		if h.directory != "" {
			t.dirs = append(t.dirs, h.directory)
		}
		out = append(out, t)
	}
	o.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	for i := range out {
		out[i].dirs = o.knownDirs(out[i].name, out[i].dirs)
	}
	return out
}

// knownDirs adds the live directories of the host's families to dirs.
func (o *FrontEnd) knownDirs(host string, dirs []string) []string {
	seen := map[string]bool{}
	for _, d := range dirs {
		seen[d] = true
	}
	for _, fam := range o.dir.familiesOn(host) {
		d := o.dir.directory(fam)
		if d == "" || seen[d] || len(dirs) >= maxStrandDirs {
			continue
		}
		seen[d] = true
		if _, err := os.Stat(d); err == nil {
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	return dirs
}

// enumerate lists one host's sessions and records its projects'
// checkouts. On v1 it lists each known directory (the server's own when
// none is known); on v2 it reads opencode's database read-only, since the
// v2 API has no session list across directories, and has no move or
// delete endpoint.
func (o *FrontEnd) enumerate(ctx context.Context, t strandTarget, checkouts map[string]string, rep *messages.SweepReport) ([]strandRow, strandHostCaps) {
	if t.sh == nil {
		return o.enumerateDB(ctx, t, checkouts, rep), strandHostCaps{}
	}
	var rows []strandRow
	dirs := t.dirs
	if len(dirs) == 0 {
		dirs = []string{""}
	}
	for _, d := range dirs {
		lctx, cancel := o.call(ctx)
		ss, err := t.sh.ListSessionsIn(lctx, d)
		cancel()
		if err != nil {
			o.strandFailed(rep, "cannot list sessions", t.name, err, "directory", d)
			continue
		}
		for _, s := range ss {
			rows = append(rows, strandRow{ID: s.ID, Host: t.name, ProjectID: s.ProjectID, ParentID: s.ParentID, Directory: s.Directory, Title: s.Title})
		}
	}
	pctx, cancel := o.call(ctx)
	ps, err := t.sh.Projects(pctx)
	cancel()
	if err != nil {
		o.strandFailed(rep, "cannot list projects", t.name, err)
	}
	for _, p := range ps {
		if _, ok := checkouts[p.ID]; !ok && p.ID != "" {
			checkouts[p.ID] = p.Worktree
		}
	}
	return rows, strandHostCaps{Move: true, Delete: true}
}

// enumerateDB reads the rows of a v2 host from opencode's database.
func (o *FrontEnd) enumerateDB(ctx context.Context, t strandTarget, checkouts map[string]string, rep *messages.SweepReport) []strandRow {
	path := o.cfg.Sweep.OpenCodeDB
	if path == "" {
		path = opencode.DefaultSessionDB(os.Getenv)
	}
	lctx, cancel := o.call(ctx)
	db, err := opencode.ReadSessionDB(lctx, path)
	cancel()
	if err != nil {
		o.strandFailed(rep, "cannot read opencode's database", t.name, err)
		return nil
	}
	for _, p := range db.Projects {
		if _, ok := checkouts[p.ID]; !ok {
			checkouts[p.ID] = p.Worktree
		}
	}
	rows := make([]strandRow, 0, len(db.Sessions))
	for _, s := range db.Sessions {
		rows = append(rows, strandRow{ID: s.ID, Host: t.name, ProjectID: s.ProjectID, ParentID: s.ParentID, Directory: s.Directory, Title: s.Title})
	}
	return rows
}

// applyStrand carries out one action; it reports whether it healed.
func (o *FrontEnd) applyStrand(ctx context.Context, t strandTarget, a strandAction, rep *messages.SweepReport) bool {
	it := messages.SweepItem{ID: a.Row.ID, Host: a.Row.Host, From: a.Row.Directory, To: a.To, Reason: a.Reason}
	log := o.log.With("sweep", messages.SweepStrand, "host", a.Row.Host, "session", a.Row.ID, "directory", a.Row.Directory)
	if a.Verb == strandSkip {
		rep.Add(&rep.Skipped, it)
		if a.Reason == reasonTaskChild {
			log.Debug("stranded session skipped", "reason", a.Reason)
		} else {
			log.Info("stranded session skipped", "reason", a.Reason)
		}
		return false
	}
	cctx, cancel := o.call(ctx)
	defer cancel()
	var err error
	if a.Verb == strandMove {
		err = t.sh.MoveSession(cctx, a.Row.ID, a.To)
	} else {
		err = t.sh.DeleteSession(cctx, a.Row.ID)
	}
	switch {
	case errors.Is(err, opencode.ErrMoveRefused):
		// A move works within one project only: the answer says no.
		it.Reason = "the host refused the move: " + err.Error()
		rep.Add(&rep.Skipped, it)
		log.Info("stranded session skipped", "reason", it.Reason)
		return false
	case err != nil:
		o.strandFailed(rep, "cannot "+string(a.Verb)+" stranded session", a.Row.Host, err, "session", a.Row.ID)
		return false
	case a.Verb == strandMove:
		rep.Add(&rep.Moved, it)
		log.Info("moved stranded session to its project's checkout", "to", a.To)
		if o.dir.family(a.Row.ID) == a.Row.ID && o.dir.directory(a.Row.ID) != "" {
			// The family runs there now: its memory store, and the
			// runtime-state sweep's "directory gone", follow the move.
			if err := o.dir.setDirectory(ctx, a.Row.ID, a.To); err != nil {
				log.Warn("cannot record a moved session's directory", "error", err)
			}
		}
	default:
		rep.Add(&rep.Deleted, it)
		log.Info("deleted stranded machinery")
	}
	return true
}

// strandFailed logs and counts a failed leg.
func (o *FrontEnd) strandFailed(rep *messages.SweepReport, what, host string, err error, kv ...any) {
	rep.Counts.Errors++
	if len(rep.Notes) < messages.MaxReportItems {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s on %s: %v", what, host, err))
	}
	o.log.Warn("strand sweep: "+what, append([]any{"host", host, "error", err}, kv...)...)
}

// strandToasts shows one summary toast on each host where something was
// healed, and none elsewhere.
func (o *FrontEnd) strandToasts(ctx context.Context, hosts map[string]strandTarget, healed map[string]int, rep *messages.SweepReport) {
	for _, name := range sortedKeys(healed) {
		t := hosts[name]
		if t.toast == nil {
			continue
		}
		msg := fmt.Sprintf("Healed %d stranded session(s) left in deleted worktrees: %d moved to the main checkout, %d leftover extraction session(s) deleted.",
			healed[name], countOn(rep.Moved, name), countOn(rep.Deleted, name))
		tctx, cancel := o.call(ctx)
		if err := t.toast.ShowToast(tctx, "thatch", msg, "info"); err != nil {
			o.log.Debug("strand sweep: toast not shown", "host", name, "error", err)
		}
		cancel()
	}
}

func countOn(items []messages.SweepItem, host string) int {
	n := 0
	for _, it := range items {
		if it.Host == host {
			n++
		}
	}
	return n
}

// strandOnConnect asks the sweeper for a strand round of a host that just
// connected (its connect reconcile done), so that a start heals at once;
// the round runs in the sweeper's strand lane like every other. It also
// records which families the host inherited.
func (o *FrontEnd) strandOnConnect(ctx context.Context, name string) {
	o.noteInherited(ctx, name)
	if !o.cfg.Sweep.Strand || o.tree == nil {
		return
	}
	o.tree.Send(sweeper.Identity, &messages.SweepStrandHost{Host: name})
}

// reapGone disconnects plugin-registered hosts whose process is gone.
func (o *FrontEnd) reapGone() {
	o.mu.Lock()
	var gone []string
	for n, h := range o.hosts {
		if h.pid > 0 && syscall.Kill(h.pid, 0) == syscall.ESRCH {
			gone = append(gone, n)
		}
	}
	o.mu.Unlock()
	for _, n := range gone {
		o.disconnect(n, "its process exited")
	}
}
