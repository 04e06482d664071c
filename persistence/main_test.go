package persistence

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// crashChildEnv, when set to a folder, turns the test binary into the child
// of TestProcessCrashLosesNoAcknowledgedEvent: it appends to the store in
// that folder until it is killed, and runs no tests.
const crashChildEnv = "THATCH_PERSISTENCE_CRASH_CHILD"

// holdChildEnv, when set to a folder, turns the test binary into the child
// of TestSecondProcessNamesTheFirst: it opens the store in that folder,
// says so on stdout and holds it until stdin closes.
const holdChildEnv = "THATCH_PERSISTENCE_HOLD_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		os.Exit(runCrashChild(dir))
	}
	if dir := os.Getenv(holdChildEnv); dir != "" {
		os.Exit(runHoldChild(dir))
	}
	goleak.VerifyTestMain(m)
}
