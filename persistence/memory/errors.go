package memory

import (
	"errors"
	"fmt"
)

var (
	// ErrExists is matched (errors.Is) by the error Remember returns when an
	// entry with the same slug is already in the store and Overwrite is not
	// set. The caller decides whether to overwrite or pick another label.
	ErrExists = errors.New("memory: entry already exists; pass overwrite to replace it")
	// ErrNotFound is returned when a store holds no entry with the slug or
	// label asked for.
	ErrNotFound = errors.New("memory: not found")
	// ErrInvalid is returned for input that can never be stored: an empty
	// label or content, a confidence outside 1..10, a bad verdict, a store
	// name with control characters. The wrapped text says which.
	ErrInvalid = errors.New("memory: invalid input")
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("memory: closed")
)

// existsError names the entry that blocked a Remember.
type existsError struct{ store, slug string }

func (e *existsError) Error() string {
	return fmt.Sprintf("memory: %q already exists in store %q; pass overwrite to replace it", e.slug, e.store)
}

func (e *existsError) Unwrap() error { return ErrExists }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
