package front

import (
	"context"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/internal/retry"
	"github.com/thatch-run/thatch/messages"
)

// The answer to an agent's prompt pressed in the chat.
const (
	// keyPause is the pause between the keys that choose an option:
	// claude 2.1.328 takes a digit and an Enter that arrive together as
	// no choice at all.
	keyPause = 500 * time.Millisecond
	// answerCheck is how long the prompt may take to go away once its
	// keys were sent, looked at every answerPoll.
	answerCheck = 3 * time.Second
	answerPoll  = 200 * time.Millisecond
)

// answerAgentPrompt sends the keys of the option pressed, only while the
// window still shows that prompt, and then checks that it went away.
func (f *FrontEnd) answerAgentPrompt(ctx context.Context, from actors.Identity, e *messages.IMAnswerAgentPrompt) any {
	res := func(outcome string, err error) any {
		if f.runCtx.Err() != nil {
			return nil
		}
		return &messages.IMAgentPromptAnswered{Nonce: e.Nonce, Outcome: outcome, Err: errText(err)}
	}
	a, ok := f.agents.Get(e.Agent)
	if !ok {
		return &messages.IMAgentPromptAnswered{Nonce: e.Nonce, Err: "unknown agent " + e.Agent}
	}
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	if err := f.ownWindow(ctx, e.WindowID, e.Tag); err != nil {
		return res("", err)
	}
	shows := func() (bool, error) {
		screen, err := f.wins.Capture(ctx, e.WindowID, 0)
		if err != nil {
			return false, err
		}
		pr, found := a.FindPrompt(screen)
		return found && pr.Fingerprint == e.Fingerprint, nil
	}
	open, err := shows()
	if err != nil || !open {
		return res(messages.AgentPromptGone, err)
	}
	for i, k := range e.Keys {
		if i > 0 && !retry.Sleep(ctx, keyPause) {
			return res("", ctx.Err())
		}
		if err := f.wins.SendKeys(ctx, e.WindowID, k); err != nil {
			return res("", err)
		}
	}
	f.log.Debug("answered the agent's prompt", "thread", from.ID, "option", e.Option, "keys", e.Keys)
	for deadline := time.Now().Add(answerCheck); ; {
		if !retry.Sleep(ctx, answerPoll) {
			return res("", ctx.Err())
		}
		open, err := shows()
		if err != nil {
			return res("", err)
		}
		if !open {
			return res(messages.AgentPromptAnswered, nil)
		}
		if time.Now().After(deadline) {
			return res(messages.AgentPromptStuck, nil)
		}
	}
}
