package front_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"
)

// TestScenarios runs the opencode session lifecycle scenarios of issue 3
// against the embedded runtime and a recording fake host. Every goroutine
// the runtimes start must be gone once the suite ends.
func TestScenarios(t *testing.T) {
	before := goleak.IgnoreCurrent()
	RegisterFailHandler(Fail)
	// Two shared cores under -race: allow slow effects, but keep polling fast.
	SetDefaultEventuallyTimeout(15 * time.Second)
	SetDefaultEventuallyPollingInterval(10 * time.Millisecond)
	RunSpecs(t, "thatch opencode session scenarios")
	goleak.VerifyNone(t, before,
		// Ginkgo's own interrupt watcher, started by RunSpecs.
		goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"),
		// protoactor's dead-letter throttle window: a timer goroutine that
		// ends by itself one interval after a stopped system's last dead
		// letter (a result that arrived after Stop).
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"))
}
