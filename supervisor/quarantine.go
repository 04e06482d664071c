package supervisor

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/persistence"
)

// tableQuarantine holds the entities that could not rebuild their state
// from their journal, keyed kind/id, with the error as the value.
const tableQuarantine = "supervisor.quarantine"

// ErrQuarantined is the text a quarantined entity's callers find at the
// start of their rejection's reason.
var ErrQuarantined = errors.New("supervisor: quarantined")

// RecoverError is how an entity fails when its snapshot or journal cannot
// be read back into its state. It is a panic value: the supervisor
// restarts the entity with backoff (a disk may come back), and once the
// restarts are spent it quarantines the entity instead of letting every
// message crash it again.
type RecoverError struct {
	ID  actors.Identity
	Err error
}

func (e *RecoverError) Error() string { return fmt.Sprintf("recover %s: %v", e.ID, e.Err) }

func (e *RecoverError) Unwrap() error { return e.Err }

// Quarantine is one quarantined entity, as status shows it.
type Quarantine struct {
	Entity string    `json:"entity"`
	Error  string    `json:"error"`
	Since  time.Time `json:"since"`
}

// quarantineSet is the quarantined entities of one tree. Kind supervisors
// read it on their own goroutine; it changes under the tree's lock.
type quarantineSet map[string]Quarantine

// loadQuarantine reads the quarantined entities from rows.
func loadQuarantine(rows *persistence.Rows) (quarantineSet, error) {
	q := quarantineSet{}
	if rows == nil {
		return q, nil
	}
	err := rows.Scan(tableQuarantine, func(r persistence.Row) error {
		q[r.Key] = Quarantine{Entity: r.Key, Error: string(r.Value), Since: r.WrittenAt}
		return nil
	})
	return q, err
}

// quarantine records id as unrecoverable; its journal is kept for a look
// and a repair, and it is not spawned again until it is released.
func (t *Tree) quarantine(id string, cause error) {
	q := Quarantine{Entity: id, Error: cause.Error(), Since: time.Now()}
	t.mu.Lock()
	t.quarantined[id] = q
	t.mu.Unlock()
	if t.rows != nil {
		if err := t.rows.Put(tableQuarantine, id, []byte(q.Error)); err != nil {
			t.log.Error("cannot record a quarantine; it holds until the restart", "entity", id, "error", err)
		}
	}
	t.log.Error("entity cannot rebuild its state; quarantined (see thatch status, thatch repair)", "entity", id, "error", cause)
}

// quarantinedAs reports whether id is quarantined, and why.
func (t *Tree) quarantinedAs(id actors.Identity) (Quarantine, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	q, ok := t.quarantined[id.String()]
	return q, ok
}

// Quarantined lists the quarantined entities, by identity.
func (t *Tree) Quarantined() []Quarantine {
	t.mu.Lock()
	out := make([]Quarantine, 0, len(t.quarantined))
	for _, q := range t.quarantined {
		out = append(out, q)
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Entity < out[j].Entity })
	return out
}

// ErrNotQuarantined is returned by Release and Drop for an entity that is
// not quarantined.
var ErrNotQuarantined = errors.New("supervisor: not quarantined")

// Release lets a quarantined entity be spawned again by its next message
// (after its journal was repaired, or a bug fixed).
func (t *Tree) Release(id actors.Identity) error {
	if _, ok := t.quarantinedAs(id); !ok {
		return fmt.Errorf("%w: %s", ErrNotQuarantined, id)
	}
	if t.rows != nil {
		if err := t.rows.Delete(tableQuarantine, id.String()); err != nil {
			return err
		}
	}
	t.mu.Lock()
	delete(t.quarantined, id.String())
	t.mu.Unlock()
	return nil
}

// Drop deletes a quarantined entity's journal and releases it: its next
// message starts it afresh, with what that journal held lost.
func (t *Tree) Drop(id actors.Identity) error {
	if _, ok := t.quarantinedAs(id); !ok {
		return fmt.Errorf("%w: %s", ErrNotQuarantined, id)
	}
	if err := t.journal.Forget(id); err != nil {
		return err
	}
	return t.Release(id)
}

// ParseIdentity reads the kind/id form Identity.String writes.
func ParseIdentity(s string) (actors.Identity, error) {
	kind, id, ok := strings.Cut(s, "/")
	if !ok || kind == "" || id == "" {
		return actors.Identity{}, fmt.Errorf("supervisor: %q is not kind/id", s)
	}
	return actors.Identity{Kind: kind, ID: id}, nil
}

// rejectQuarantined answers a message for a quarantined entity at once.
func rejectQuarantined(ctx actor.Context, env *envelope, sender *actor.PID, q Quarantine) {
	rej := &Rejected{Reason: fmt.Sprintf("%v since %s: %s (thatch repair can drop it)", ErrQuarantined, q.Since.Format(time.RFC3339), q.Error)}
	switch {
	case env.reply != nil:
		env.reply(rej)
	case sender != nil:
		ctx.Send(sender, rej)
	}
}
