package imbinding

import (
	"strings"
	"testing"

	"github.com/thatch-run/thatch/messages"
)

var bashPrompt = &messages.IMAgentPrompt{Fingerprint: "fp-npm-test", Text: "Bash command\nnpm test\nDo you want to proceed?",
	Options: []messages.IMAgentOption{
		{Label: "1. Yes", Keys: []string{"1", "Enter"}},
		{Label: "2. Yes, and don't ask again for npm test commands in /home/u/proj", Keys: []string{"2", "Enter"}},
		{Label: "3. No, and tell Claude what to do differently (esc)", Keys: []string{"3", "Enter"}},
	}}

// pressAsked presses option i of the agent prompt shown (as user).
func (h *harness) pressAsked(data, user string) []any {
	h.nextUpd++
	return h.send(&messages.IMPress{UpdateID: h.nextUpd, User: user, CallbackID: "cb", Data: data, MessageID: "m-old"})
}

func TestAnAgentPromptIsShownOnceWithItsOptionsAndAPressChoosesOne(t *testing.T) {
	h := newHarness(t)
	h.bind()
	eff := h.send(bashPrompt)
	sc := only[messages.IMSendChat](t, eff)
	if !strings.Contains(sc.Text, "npm test") || !strings.Contains(sc.Text, "2. Yes, and don't ask again for npm test commands in /home/u/proj") {
		t.Fatalf("the message does not show the prompt whole: %q", sc.Text)
	}
	if len(sc.Buttons) != 3 || sc.Buttons[0][0].Text != "1. Yes" || len([]rune(sc.Buttons[1][0].Text)) > maxOptionLabel+1 {
		t.Fatalf("buttons %+v", sc.Buttons)
	}
	h.deliverChat(eff)
	if eff := h.send(bashPrompt); len(eff) != 0 {
		t.Fatalf("the same prompt seen again: %s", describe(eff))
	}
	ans := only[messages.IMAnswerAgentPrompt](t, h.pressAsked(sc.Buttons[0][0].Data, "42"))
	if ans.Fingerprint != "fp-npm-test" || strings.Join(ans.Keys, " ") != "1 Enter" || ans.WindowID != "@1" {
		t.Fatalf("answer %+v", ans)
	}
	// A second press while the first is on its way sends nothing.
	none[messages.IMAnswerAgentPrompt](t, h.pressAsked(sc.Buttons[2][0].Data, "42"))
	eff = h.send(&messages.IMAgentPromptAnswered{Nonce: ans.Nonce, Outcome: messages.AgentPromptAnswered})
	if h.s.Asked != nil {
		t.Fatalf("the prompt stays open after its answer: %+v", h.s.Asked)
	}
	if cb := only[messages.IMClearButtons](t, eff); cb.MessageID == "" {
		t.Fatalf("buttons not cleared: %+v", cb)
	}
	// A press of the answered prompt's buttons reaches nothing.
	eff = h.pressAsked(sc.Buttons[1][0].Data, "42")
	none[messages.IMAnswerAgentPrompt](t, eff)
	if a := only[messages.IMAnswerPress](t, eff); a.Text != "That prompt is no longer open." {
		t.Fatalf("answered %+v", a)
	}
}

func TestAnAgentPromptAnswersOnlyItsUserAndOnlyItsOwnButtons(t *testing.T) {
	h := newHarness(t)
	h.bind()
	sc := only[messages.IMSendChat](t, h.send(bashPrompt))
	h.deliverChat([]any{sc})
	eff := h.pressAsked(sc.Buttons[0][0].Data, "77")
	none[messages.IMAnswerAgentPrompt](t, eff)
	// The same dialog back later is another prompt: the first one's
	// buttons answer nothing.
	h.send(&messages.IMAgentPromptGone{Fingerprint: "fp-npm-test"})
	if h.s.Asked != nil {
		t.Fatal("a prompt gone from the screen stays open")
	}
	sc2 := only[messages.IMSendChat](t, h.send(bashPrompt))
	if sc2.Buttons[0][0].Data == sc.Buttons[0][0].Data {
		t.Fatal("the prompt back again has the first one's buttons")
	}
	none[messages.IMAnswerAgentPrompt](t, h.pressAsked(sc.Buttons[0][0].Data, "42"))
}

func TestKeysThatDidNotTakeKeepTheButtonsAndSaySo(t *testing.T) {
	h := newHarness(t)
	h.bind()
	eff := h.send(bashPrompt)
	sc := only[messages.IMSendChat](t, eff)
	h.deliverChat(eff)
	ans := only[messages.IMAnswerAgentPrompt](t, h.pressAsked(sc.Buttons[0][0].Data, "42"))
	eff = h.send(&messages.IMAgentPromptAnswered{Nonce: ans.Nonce, Outcome: messages.AgentPromptStuck})
	if got := said(eff); len(got) != 1 || !strings.Contains(got[0], "still open") {
		t.Fatalf("said %q", got)
	}
	none[messages.IMClearButtons](t, eff)
	if h.s.Asked == nil || h.s.Asked.Pending {
		t.Fatalf("asked %+v, want open and pressable again", h.s.Asked)
	}
	h.deliverChat(eff)
	ans = only[messages.IMAnswerAgentPrompt](t, h.pressAsked(sc.Buttons[0][0].Data, "42"))
	eff = h.send(&messages.IMAgentPromptAnswered{Nonce: ans.Nonce, Outcome: messages.AgentPromptGone})
	if got := said(eff); len(got) != 1 || got[0] != "That prompt is no longer open." || h.s.Asked != nil {
		t.Fatalf("gone: said %q, asked %+v", got, h.s.Asked)
	}
}
