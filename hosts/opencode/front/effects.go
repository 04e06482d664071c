package front

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/opencode"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/supervisor"
)

// HostClient is what the executor needs from an opencode server.
// *opencode.Client implements it; tests use a recording fake.
type HostClient interface {
	CreateSession(ctx context.Context, parentID, title string) (opencode.Session, error)
	FindChild(ctx context.Context, parentID, title string) (opencode.Session, bool, error)
	PromptNoReply(ctx context.Context, sessionID, text string) error
	PromptAsync(ctx context.Context, sessionID, text string) error
	DeleteSession(ctx context.Context, sessionID string) error
	Messages(ctx context.Context, sessionID string) ([]opencode.Message, error)
	ShowToast(ctx context.Context, title, message, variant string) error
	ExecuteTUICommand(ctx context.Context, command string) error
	PublishTUICommand(ctx context.Context, command string) error
}

// HostInfo describes one connected host to the executor.
type HostInfo struct {
	Client HostClient
	// API is "v1" or "v2"; on v2 noReply delivery is lost, so the start
	// reminder is skipped.
	API string
	// PID is the opencode process whose own server this host is (a
	// plugin registers it with its pid); 0 for a configured `opencode
	// serve`. Only such a process is resumed with a session (-c, -s), so
	// only its listing at connect marks state as inherited.
	PID int
}

// handlers are the front end's effect handlers. Each effect of a family
// runs after the effects that family released before it (the supervisor's
// per-entity FIFO) on the host the registry records for the family
// (familyHost); a host call is bounded by the request timeout, and a
// result message goes back to the family.
func (o *FrontEnd) handlers() []supervisor.Handler {
	return []supervisor.Handler{
		supervisor.Handle(o.createChild),
		supervisor.Handle(o.prompt),
		supervisor.Handle(o.startReminder),
		supervisor.Handle(o.deleteSession),
		supervisor.Handle(o.toast),
		supervisor.Handle(o.fetchMessages),
		supervisor.Handle(o.compact),
		supervisor.Handle(o.exit),
		supervisor.Handle(o.recordFamilyDeleted),
		supervisor.Handle(o.recordCost),
		// The registry's: reconciles of families that moved to a new host
		// run one at a time, apart from any other effect.
		supervisor.Handle(o.reconcileFamily, supervisor.Lane("reconcile")),
		// One lane per sweep: a strand round over many directories on a
		// hung host never holds up the runtime-state or stale-claim sweeps.
		supervisor.Handle(o.sweepRuntimeState, supervisor.Lane("sweep.runtime")),
		supervisor.Handle(o.sweepStaleClaims, supervisor.Lane("sweep.stale")),
		supervisor.Handle(o.sweepStranded, supervisor.Lane("sweep.strand")),
	}
}

// call bounds one host call by the request timeout.
func (o *FrontEnd) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, o.cfg.OpenCode.RequestTimeout)
}

func (o *FrontEnd) host(name string) (HostInfo, error) {
	if h, ok := o.hostInfo(name); ok {
		return h, nil
	}
	return HostInfo{}, fmt.Errorf("%w: %q", errNotConnected, name)
}

// familyHost is the host an effect of the family from goes to: the one the
// registry records for the family, which owns that fact (the family names
// no host). named, the host the effect names, serves only when the
// registry records none: the start reminder names the host of the
// session.created it answers, in case that host could not be recorded.
func (o *FrontEnd) familyHost(from actors.Identity, named string) (HostInfo, error) {
	name := o.dir.hostOf(from.ID)
	if name == "" {
		name = named
	}
	return o.host(name)
}

var errNotConnected = errors.New("front: host is not connected")

func (o *FrontEnd) effectLog(from actors.Identity, eff any) hclog.Logger {
	return o.log.With("entity", from.String(), "effect", fmt.Sprintf("%T", eff))
}

func (o *FrontEnd) createChild(ctx context.Context, from actors.Identity, e *messages.CreateChildSession) any {
	ctx, cancel := o.call(ctx)
	defer cancel()
	res := &messages.ChildSessionCreated{ParentID: e.ParentID}
	if store, b, berr := o.budgetPause(ctx, from.ID); berr != nil {
		// The budget cannot be read: extraction goes on rather than stall.
		o.effectLog(from, e).Warn("cannot check the extraction budget", "error", berr)
	} else if b.Paused {
		res.Err, res.Reason = o.pausedText(store), messages.FailPaused
		o.effectLog(from, e).Info("extraction paused: budget reached", "store", store, "used", b.Used)
		if b.Toast {
			o.pauseToast(ctx, from, store)
		}
		return res
	}
	h, err := o.familyHost(from, e.Host)
	if err == nil {
		// A repeat after a crash must not make a second child.
		var s opencode.Session
		var found bool
		s, found, err = h.Client.FindChild(ctx, e.ParentID, e.Title)
		if err == nil && !found {
			s, err = h.Client.CreateSession(ctx, e.ParentID, e.Title)
		}
		res.ChildID = s.ID
	}
	if err == nil {
		// Only a lost session.created makes this link matter; the child
		// exists either way, so a failure here is only logged.
		if _, lerr := o.dir.link(ctx, res.ChildID, e.ParentID); lerr != nil {
			o.effectLog(from, e).Warn("cannot record the extraction child's parent", "child", res.ChildID, "error", lerr)
		}
	}
	res.Err, res.Reason = errText(err), reasonOf(err)
	if err != nil {
		o.effectLog(from, e).Error("cannot create extraction child", "parent", e.ParentID, "error", err)
	}
	return res
}

func (o *FrontEnd) prompt(ctx context.Context, from actors.Identity, e *messages.PromptSession) any {
	ctx, cancel := o.call(ctx)
	defer cancel()
	h, err := o.familyHost(from, e.Host)
	if err == nil {
		if e.NoReply {
			err = h.Client.PromptNoReply(ctx, e.SessionID, e.Text)
		} else {
			err = h.Client.PromptAsync(ctx, e.SessionID, e.Text)
		}
	}
	if err != nil {
		o.effectLog(from, e).Error("cannot prompt session", "session", e.SessionID, "error", err)
	}
	return &messages.SessionPrompted{SessionID: e.SessionID, Err: errText(err), Reason: reasonOf(err)}
}

func (o *FrontEnd) startReminder(ctx context.Context, from actors.Identity, e *messages.SendStartReminder) any {
	ctx, cancel := o.call(ctx)
	defer cancel()
	h, err := o.familyHost(from, e.Host)
	if err == nil {
		if h.API == config.APIV2 {
			o.effectLog(from, e).Debug("start reminder skipped: the v2 API drops noReply prompts", "session", e.SessionID)
			return nil
		}
		err = h.Client.PromptNoReply(ctx, e.SessionID, o.reminderText(ctx, e.Directory))
	}
	if err != nil {
		o.effectLog(from, e).Warn("cannot send the session-start reminder", "session", e.SessionID, "error", err)
	}
	return nil
}

func (o *FrontEnd) deleteSession(ctx context.Context, from actors.Identity, e *messages.DeleteSession) any {
	ctx, cancel := o.call(ctx)
	defer cancel()
	h, err := o.familyHost(from, e.Host)
	if err == nil {
		err = h.Client.DeleteSession(ctx, e.SessionID)
	}
	if err != nil {
		o.effectLog(from, e).Warn("cannot delete session", "session", e.SessionID, "error", err)
	}
	return nil
}

// pauseToast tells the user, once per store and day, that extraction for
// store paused.
func (o *FrontEnd) pauseToast(ctx context.Context, from actors.Identity, store string) {
	o.toast(ctx, from, &messages.ShowToast{
		Title:   "thatch",
		Message: o.pausedText(store) + "; nothing buffered is lost. It resumes tomorrow (UTC), or run `thatch extraction resume`.",
		Variant: "warning",
	})
}

func (o *FrontEnd) toast(ctx context.Context, from actors.Identity, e *messages.ShowToast) any {
	ctx, cancel := o.call(ctx)
	defer cancel()
	h, err := o.familyHost(from, e.Host)
	if err == nil {
		err = h.Client.ShowToast(ctx, e.Title, e.Message, e.Variant)
	}
	if err != nil {
		o.effectLog(from, e).Debug("toast not shown", "error", err)
	}
	return nil
}

func (o *FrontEnd) fetchMessages(ctx context.Context, from actors.Identity, e *messages.FetchMessages) any {
	ctx, cancel := o.call(ctx)
	defer cancel()
	res := &messages.MessagesFetched{SessionID: e.SessionID, Check: e.Check}
	h, err := o.familyHost(from, e.Host)
	if err == nil {
		var msgs []opencode.Message
		msgs, err = h.Client.Messages(ctx, e.SessionID)
		res.FinalAssistantText = o.finalText(msgs)
	}
	res.Err, res.Reason = errText(err), reasonOf(err)
	return res
}

// finalText is the text of msgs' last assistant message with its secrets
// redacted: the family reads it for the wrap-up token, and what it reads
// enters thatch as any message does, so it passes the redactor at the
// edge, as tool calls do. The tokens are plain words the redactor leaves
// alone, so a greenlight still ends the text.
func (o *FrontEnd) finalText(msgs []opencode.Message) string {
	return o.cleanText(opencode.FinalAssistantText(msgs))
}

func (o *FrontEnd) compact(ctx context.Context, from actors.Identity, e *messages.CompactSession) any {
	ctx, cancel := o.call(ctx)
	defer cancel()
	h, err := o.familyHost(from, e.Host)
	if err == nil {
		if c, ok := h.Client.(interface {
			Compact(ctx context.Context, sessionID string) error
		}); ok {
			// The v2 surface compacts a named session itself.
			err = c.Compact(ctx, e.SessionID)
		} else {
			err = h.Client.ExecuteTUICommand(ctx, "session_compact")
		}
	}
	if err != nil {
		o.effectLog(from, e).Error("cannot start compaction", "session", e.SessionID, "error", err)
	}
	return &messages.SessionCompactIssued{SessionID: e.SessionID, Err: errText(err), Reason: reasonOf(err)}
}

func (o *FrontEnd) exit(ctx context.Context, from actors.Identity, e *messages.ExitSession) any {
	ctx, cancel := o.call(ctx)
	defer cancel()
	h, err := o.familyHost(from, e.Host)
	if err == nil {
		err = h.Client.PublishTUICommand(ctx, "app.exit")
	}
	if err != nil {
		o.effectLog(from, e).Error("cannot close the session's host", "session", e.SessionID, "error", err)
	}
	return &messages.SessionExitIssued{SessionID: e.SessionID, Err: errText(err), Reason: reasonOf(err)}
}

func (o *FrontEnd) recordFamilyDeleted(_ context.Context, from actors.Identity, e *messages.RecordFamilyDeleted) any {
	// The first note's time counts: asking again must not postpone the
	// sweep.
	_, ok, err := o.rows.Get(tableDeletedFamilies, e.SessionID)
	if err == nil && !ok {
		err = o.rows.Put(tableDeletedFamilies, e.SessionID, nil)
	}
	if err != nil {
		// No answer: the tombstone stays active and asks again when it is
		// next rehydrated.
		o.effectLog(from, e).Error("cannot note deleted family", "error", err)
		return nil
	}
	return &messages.DeletionNoted{SessionID: e.SessionID}
}

func (o *FrontEnd) sweepRuntimeState(ctx context.Context, _ actors.Identity, e *messages.SweepRuntimeState) any {
	deleted := e.DeletedCutoff
	if deleted.IsZero() {
		deleted = e.Cutoff
	}
	rep := o.sweepRuntime(ctx, e.Cutoff, deleted)
	rep.Round = true
	o.forgetOldCosts()
	return rep
}

func (o *FrontEnd) sweepStaleClaims(context.Context, actors.Identity, *messages.SweepStaleClaims) any {
	var ids []string
	if err := o.jr.Active(ocfamily.KindName, func(id persistence.Identity) error {
		ids = append(ids, id.ID)
		return nil
	}); err != nil {
		o.log.Error("stale sweep: cannot list active families", "error", err)
	}
	for _, id := range ids {
		o.tree.Send(familyID(id), &messages.StaleSweep{})
	}
	return nil
}

// sweepStranded runs one strand round over every connected host (or the
// one host that just connected); its report goes back to the sweeper.
// Every round runs here, in the sweeper's strand lane: one at a time.
func (o *FrontEnd) sweepStranded(ctx context.Context, _ actors.Identity, e *messages.SweepStrandedSessions) any {
	rep := o.healStranded(ctx, e.Host)
	rep.Round = e.Host == ""
	return rep
}

// forgetDeletedFamilies forgets the journal of every family whose parent
// was deleted before cutoff, and returns their ids: a tombstone only has
// to outlive the late events of its session. A family that is live (woken
// since) waits for the next sweep; the tree checks and forgets in one
// step, so no entity wakes in between. Its directory rows (child links a
// late create answer may have added) and its stamp go with it.
func (o *FrontEnd) forgetDeletedFamilies(ctx context.Context, cutoff time.Time) ([]string, error) {
	var due []string
	err := o.rows.Scan(tableDeletedFamilies, func(row persistence.Row) error {
		if row.WrittenAt.Before(cutoff) {
			due = append(due, row.Key)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var done []string
	for _, id := range due {
		forgotten, err := o.tree.ForgetPassive(familyID(id), 5*time.Second)
		if err != nil {
			return done, err
		}
		if !forgotten {
			continue
		}
		done = append(done, id)
		if err := o.dir.forget(ctx, id); err != nil {
			return done, err
		}
		if err := o.forgetTouch(id); err != nil {
			return done, err
		}
		if err := o.rows.Delete(tableDeletedFamilies, id); err != nil {
			return done, err
		}
	}
	return done, nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// reasonOf classifies a failed host call for the family's decision.
func reasonOf(err error) messages.FailReason {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, opencode.ErrNotFound):
		return messages.FailNotFound
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return messages.FailTimeout
	case errors.Is(err, errNotConnected):
		return messages.FailUnreachable
	case errors.Is(err, opencode.ErrNotInV2):
		return messages.FailUnsupported
	}
	return messages.FailOther
}
