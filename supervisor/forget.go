package supervisor

import (
	"fmt"
	"time"

	"github.com/thatch-run/thatch/actors"
)

// ForgetPassive deletes the journal of an entity that is not live (never
// woken, or passivated) and reports whether it did; a live entity is left
// alone. The check and the delete run on the kind's supervisor, where
// entities are spawned, so an entity cannot wake in between and rebuild
// from a journal half gone.
func (t *Tree) ForgetPassive(id actors.Identity, timeout time.Duration) (bool, error) {
	pid, ok := t.kinds[id.Kind]
	if !ok {
		return false, fmt.Errorf("%w: %q", ErrUnknownKind, id.Kind)
	}
	res, err := t.sys.Root.RequestFuture(pid, &forgetPassive{id: id.ID}, timeout).Result()
	if err != nil {
		return false, err
	}
	a := res.(*forgetAnswer)
	return a.forgotten, a.err
}

// runForgets deletes journals for ForgetPassive, one at a time, off the
// kind supervisors' mailboxes: a forget is a synced batch, and every
// message to every entity of a kind passes its supervisor.
func (t *Tree) runForgets() {
	defer t.wg.Done()
	for {
		select {
		case <-t.forgetWake:
		case <-t.done:
			return
		}
		for {
			t.mu.Lock()
			if len(t.forgetQ) == 0 || t.stopped {
				t.mu.Unlock()
				break
			}
			job := t.forgetQ[0]
			t.forgetQ = t.forgetQ[1:]
			t.mu.Unlock()
			job()
		}
	}
}

// enqueueForget hands a forget to the worker; it reports false after Stop.
func (t *Tree) enqueueForget(job func()) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	t.forgetQ = append(t.forgetQ, job)
	select {
	case t.forgetWake <- struct{}{}:
	default:
	}
	return true
}
