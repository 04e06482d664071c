package opencode

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: the
// Stream starts one, and every client holds connections.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
