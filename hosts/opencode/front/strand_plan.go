package front

import (
	"sort"

	"github.com/thatch-run/thatch/actors/ocfamily"
)

// strandRow is one session row as a host enumerated it for the strand
// sweep.
type strandRow struct {
	ID        string
	Host      string
	ProjectID string
	ParentID  string
	Directory string
	Title     string
}

// strandHostCaps says what a host lets the sweep do.
type strandHostCaps struct {
	// Move is false when the host has no move endpoint (the v2 API).
	Move bool
	// Delete is false when the host has no delete endpoint.
	Delete bool
}

// strandInput is everything planStrandActions decides from.
type strandInput struct {
	// Rows are the enumerated sessions, each id once.
	Rows []strandRow
	// Dead holds the directories known to be gone (a stat said so); a
	// directory not in it is live, so a failed stat never strands anyone.
	Dead map[string]bool
	// Checkouts maps a project id to its canonical checkout (the
	// project's worktree); absent or "" when it cannot be resolved.
	Checkouts map[string]string
	// Caps are each host's endpoints, by host name.
	Caps map[string]strandHostCaps
}

// strandVerb is what the sweep does to one row.
type strandVerb string

const (
	strandMove   strandVerb = "move"
	strandDelete strandVerb = "delete"
	strandSkip   strandVerb = "skip"
)

// strandAction is one decision of the plan.
type strandAction struct {
	Verb strandVerb
	Row  strandRow
	// To is the move's destination.
	To string
	// Reason says why the row is skipped, or why it is acted on.
	Reason string
}

// Reasons a strand action names, in status and logs.
const (
	reasonMachinery    = "machinery (" + ocfamily.ExtractionTitle + ") in a deleted directory"
	reasonStranded     = "top-level session in a deleted directory"
	reasonTaskChild    = "task child: deleting or moving it would break its parent's rendering of the sub-agent"
	reasonNoCheckout   = "no canonical checkout of its project is known"
	reasonCheckoutGone = "its project's canonical checkout is gone too"
	reasonNoMove       = "the host has no move endpoint"
	reasonNoDelete     = "the host has no delete endpoint"
)

// planStrandActions decides the strand sweep from the enumerated rows. It
// is pure: it reads only its input. A session in a live directory is never
// touched, whatever its row looks like; machinery in a dead directory is
// deleted; a real top-level session in a dead directory is moved to its
// project's canonical checkout (history kept; a user's session is never
// deleted); a task child is always skipped; without a checkout or a move
// endpoint the session is skipped with the reason. Actions are sorted by
// session id.
func planStrandActions(in strandInput) []strandAction {
	var out []strandAction
	for _, r := range in.Rows {
		if r.Directory == "" || !in.Dead[r.Directory] {
			continue
		}
		caps := in.Caps[r.Host]
		switch {
		case r.Title == ocfamily.ExtractionTitle:
			if !caps.Delete {
				out = append(out, strandAction{Verb: strandSkip, Row: r, Reason: reasonNoDelete})
				continue
			}
			out = append(out, strandAction{Verb: strandDelete, Row: r, Reason: reasonMachinery})
		case r.ParentID != "":
			out = append(out, strandAction{Verb: strandSkip, Row: r, Reason: reasonTaskChild})
		default:
			out = append(out, planMove(in, r, caps))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Row.ID < out[j].Row.ID })
	return out
}

// planMove decides a real top-level session in a dead directory.
func planMove(in strandInput, r strandRow, caps strandHostCaps) strandAction {
	to := in.Checkouts[r.ProjectID]
	switch {
	case to == "" || to == "/":
		// opencode's global project has worktree "/": no checkout to go to.
		return strandAction{Verb: strandSkip, Row: r, Reason: reasonNoCheckout}
	case in.Dead[to] || to == r.Directory:
		return strandAction{Verb: strandSkip, Row: r, Reason: reasonCheckoutGone}
	case !caps.Move:
		return strandAction{Verb: strandSkip, Row: r, Reason: reasonNoMove}
	}
	return strandAction{Verb: strandMove, Row: r, To: to, Reason: reasonStranded}
}

// The plan under exported names, so that the benchmarks (bench/) can
// measure planning alone.
type (
	// StrandRow is one enumerated session row.
	StrandRow = strandRow
	// StrandInput is what PlanStrandActions decides from.
	StrandInput = strandInput
	// StrandHostCaps says which endpoints a host has.
	StrandHostCaps = strandHostCaps
	// StrandAction is one decision of the plan.
	StrandAction = strandAction
)

// PlanStrandActions is planStrandActions: pure, no I/O.
func PlanStrandActions(in StrandInput) []StrandAction { return planStrandActions(in) }
