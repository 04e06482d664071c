package front_test

import (
	"slices"
	"testing"

	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/internal/redact"
)

// TestRedactKindsMatchConfig keeps config's list of the kinds
// memory.redact.disable may name (config may not import the redactor)
// equal to the redactor's own.
func TestRedactKindsMatchConfig(t *testing.T) {
	if got, want := config.RedactKinds, redact.Kinds(); !slices.Equal(got, want) {
		t.Errorf("config.RedactKinds = %v\nredact.Kinds()     = %v", got, want)
	}
}
