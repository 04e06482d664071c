package front

import (
	"context"
	"fmt"
	"testing"

	"github.com/thatch-run/thatch/hosts/opencode"
	"github.com/thatch-run/thatch/messages"
)

func TestFailedHostCallsCarryATypedReason(t *testing.T) {
	cases := []struct {
		err  error
		want messages.FailReason
	}{
		{nil, ""},
		{fmt.Errorf("delete ses_1: %w", opencode.ErrNotFound), messages.FailNotFound},
		{fmt.Errorf("prompt: %w", context.DeadlineExceeded), messages.FailTimeout},
		{fmt.Errorf("%w: %q", errNotConnected, "h"), messages.FailUnreachable},
		{fmt.Errorf("create child: %w", opencode.ErrNotInV2), messages.FailUnsupported},
		{fmt.Errorf("create child: %w", opencode.ErrServer), messages.FailOther},
	}
	for _, c := range cases {
		if got := reasonOf(c.err); got != c.want {
			t.Errorf("reasonOf(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
