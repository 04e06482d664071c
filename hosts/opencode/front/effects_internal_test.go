package front

import (
	"context"
	"fmt"
	"testing"

	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/hosts/opencode"
	"github.com/thatch-run/thatch/internal/redact"
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

// TestFinalTextIsRedacted checks that the final assistant text a wrap-up
// check hands the family has its secrets redacted, and still ends with the
// wrap-up token alone on its last line.
func TestFinalTextIsRedacted(t *testing.T) {
	red, err := redact.New(redact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "ghp_Zq8pL2mN4vX7bC1dF6gH9jK3lQ5rS0tU2wY4"
	for _, token := range []string{ocfamily.TokenCompact, ocfamily.TokenExit} {
		final := "Pushed with " + secret + ".\nNothing blocks.\n" + token
		msgs := []opencode.Message{{Info: opencode.MessageInfo{Role: "assistant"},
			Parts: []opencode.Part{{Type: "text", Text: final}}}}
		o := &FrontEnd{red: red}
		got := o.finalText(msgs)
		if want := "Pushed with " + redact.Marker("github_token") + ".\nNothing blocks.\n" + token; got != want {
			t.Errorf("finalText = %q, want %q", got, want)
		}
		if off := (&FrontEnd{}).finalText(msgs); off != final {
			t.Errorf("with redaction off, finalText = %q, want it as it came", off)
		}
	}
}
