package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Change is one write of a store, as another store applies it (a
// cluster's replication): an entry written (remembered, updated or
// archived), or deleted.
type Change struct {
	Delete bool   `json:"delete,omitempty"`
	Store  string `json:"store"`
	Slug   string `json:"slug"`
	// Entry is the entry as written (nil for a delete).
	Entry *Entry `json:"entry,omitempty"`
	// Seed: an entry the store held before it took part in replication,
	// sent to the others once; a store that holds a write of the slug as
	// new or newer (by Updated) keeps it.
	Seed bool `json:"seed,omitempty"`
}

// OnChange sets fn to be told, after it is committed, of every write the
// store's own callers make (Remember, Forget); writes by Apply are not
// told. fn runs on the writer's goroutine and must not block; nil stops
// the telling.
func (s *Store) OnChange(fn func(Change)) {
	s.mu.Lock()
	s.onChange = fn
	s.mu.Unlock()
}

// LogChanges sets fn to keep every write the store's own callers make
// (those OnChange is told of) in the write's own batch: what fn adds to
// b is committed with the write, in one synced commit, so a change log
// (a cluster's outbox) holds a write exactly when the store does. An
// error from fn fails the write. fn runs with the store locked, in the
// order of the commits, and must not block; nil stops it.
func (s *Store) LogChanges(fn func(b *pebble.Batch, c Change) error) {
	s.mu.Lock()
	s.changeLog = fn
	s.mu.Unlock()
}

// logChange adds c to b through the change log, if any. Caller holds mu.
func (s *Store) logChange(b *pebble.Batch, c Change) error {
	if s.changeLog == nil {
		return nil
	}
	if err := s.changeLog(b, c); err != nil {
		return fmt.Errorf("memory: keep the change of %s/%s for the other stores: %w", c.Store, c.Slug, err)
	}
	return nil
}

// changed tells the OnChange function of c.
func (s *Store) changed(c Change) {
	s.mu.Lock()
	fn := s.onChange
	s.mu.Unlock()
	if fn != nil {
		fn(c)
	}
}

// Apply writes a change another store made: an entry with its label,
// content, branch, confidence, archived flag and times (its recall count
// stays this store's), or a delete (of an entry this store may not have).
// A change this store holds already is skipped. Applied in one order on
// every store, the same changes leave every store the same: the last
// write of a label wins. A change the guard refuses is an error matching
// redact.ErrSecret (it was let through where it was made).
func (s *Store) Apply(ctx context.Context, c Change) error {
	if c.Delete {
		_, err := s.forget(c.Store, c.Slug, false)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	}
	if c.Entry == nil {
		return invalid("a change that is no delete has no entry")
	}
	e := c.Entry
	have, err := s.Get(e.Store, e.Slug)
	if err == nil && have.Label == e.Label && have.Content == e.Content &&
		have.Branch == e.Branch && have.Confidence == e.Confidence && have.Archived == e.Archived && have.Updated.Equal(e.Updated) {
		return nil
	}
	if err == nil && c.Seed && !have.Updated.Before(e.Updated) {
		return nil // a seed does not undo a newer write
	}
	_, err = s.remember(ctx, RememberInput{Label: e.Label, Content: e.Content, Store: e.Store, Branch: e.Branch,
		Confidence: e.Confidence, Overwrite: true, Archived: e.Archived, Created: e.Created, Updated: e.Updated}, false)
	return err
}
