package imbinding

import (
	"strings"
	"testing"

	"github.com/thatch-run/thatch/actors/liveturn"
	"github.com/thatch-run/thatch/messages"
)

func (h *harness) command(name, args string) []any {
	h.nextUpd++
	return h.send(&messages.IMCommand{UpdateID: h.nextUpd, User: "42", Name: name, Args: args})
}

// said is the text of every chat message in effects.
func said(effects []any) []string {
	var out []string
	for _, e := range effects {
		if sc, ok := e.(*messages.IMSendChat); ok {
			out = append(out, sc.Text)
		}
	}
	return out
}

func TestKeyCommandsReachTheBoundWindowAndSayWhatWasSent(t *testing.T) {
	h := newHarness(t)
	if got := said(h.command("esc", "")); len(got) != 1 || !strings.Contains(got[0], "no agent window") {
		t.Fatalf("/esc in an unbound thread said %q", got)
	}
	h = newHarness(t)
	h.bind()
	for name, key := range map[string]string{"esc": "Escape", "interrupt": "Ctrl-C", "enter": "Enter"} {
		sk := only[messages.IMSendKeys](t, h.command(name, ""))
		if sk.WindowID != "@1" || sk.Tag != h.s.Tag || sk.Key != name || sk.Agent != "claude" {
			t.Fatalf("/%s: %+v", name, sk)
		}
		eff := h.send(&messages.IMKeysSent{Key: name})
		if got := said(eff); len(got) != 1 || got[0] != key+" sent." {
			t.Fatalf("after /%s: %q", name, got)
		}
		h.deliverChat(eff)
	}
	if got := said(h.send(&messages.IMKeysSent{Key: "esc", Err: "window gone"})); len(got) != 1 || !strings.Contains(got[0], "Could not send Escape: window gone") {
		t.Fatalf("a failed key: %q", got)
	}
}

func TestTheScreenshotsButtonsWorkOnlyForTheirUser(t *testing.T) {
	h := newHarness(t)
	h.bind()
	shot := only[messages.IMScreenshot](t, h.command("screenshot", ""))
	if shot.WindowID != "@1" || len(shot.Buttons) != 1 || len(shot.Buttons[0]) != 4 {
		t.Fatalf("screenshot %+v", shot)
	}
	esc := shot.Buttons[0][1]
	if esc.Text != "Esc" || len(esc.Data) > 64 {
		t.Fatalf("button %+v", esc)
	}
	h.nextUpd++
	eff := h.send(&messages.IMPress{UpdateID: h.nextUpd, User: "42", CallbackID: "cb", Data: esc.Data})
	if sk := only[messages.IMSendKeys](t, eff); sk.Key != "esc" {
		t.Fatalf("the Esc button sent %+v", sk)
	}
	h.nextUpd++
	eff = h.send(&messages.IMPress{UpdateID: h.nextUpd, User: "77", CallbackID: "cb2", Data: esc.Data})
	none[messages.IMSendKeys](t, eff)
	if a := only[messages.IMAnswerPress](t, eff); a.Text != "This button is not active." {
		t.Fatalf("another user's press answered %+v", a)
	}
	// A picture that could not be made falls back to the pane as text.
	if got := said(h.send(&messages.IMScreenshotSent{Err: "no font", Text: "❯ hello"})); len(got) != 1 || !strings.Contains(got[0], "❯ hello") {
		t.Fatalf("fallback said %q", got)
	}
}

func TestHistoryAsksForTheNumberGivenWithinItsBounds(t *testing.T) {
	h := newHarness(t)
	h.bind()
	if rh := only[messages.IMReadHistory](t, h.command("history", "")); rh.N != DefaultHistory || rh.Path != "/t/s-1.jsonl" {
		t.Fatalf("/history: %+v", rh)
	}
	if rh := only[messages.IMReadHistory](t, h.command("history", "500")); rh.N != MaxHistory {
		t.Fatalf("/history 500: %+v", rh)
	}
	if got := said(h.command("history", "many")); len(got) != 1 || !strings.Contains(got[0], "takes a number") {
		t.Fatalf("/history many: %q", got)
	}
}

func TestKillAsksFirstAndThenKillsTheWindowWhateverOnCloseSays(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.deliverChat(h.command("kill", ""))
	if h.s.Prompt == nil || h.s.Prompt.Kind != PromptKill || h.s.Phase != PhaseBound {
		t.Fatalf("after /kill: prompt %+v phase %s", h.s.Prompt, h.s.Phase)
	}
	h.deliverChat(h.press("Cancel"))
	if h.s.Phase != PhaseBound || h.s.Prompt != nil {
		t.Fatalf("after Cancel: phase %s prompt %+v", h.s.Phase, h.s.Prompt)
	}
	h.deliverChat(h.command("kill", ""))
	eff := h.press("Kill")
	if cw := only[messages.IMCloseWindow](t, eff); cw.WindowID != "@1" {
		t.Fatalf("kill closes %+v", cw)
	}
	if h.s.Phase != PhaseEnded || h.s.Ended.Reason != "killed from the chat" || !h.s.Ended.WindowClosed {
		t.Fatalf("after Kill: %s %+v", h.s.Phase, h.s.Ended)
	}
	// What it said after it ended goes out, and the binding can rest.
	h.deliverChat(eff)
	if len(h.s.Outbox) != 0 || h.k.Active(h.s) {
		t.Fatalf("outbox %v, active %v", h.s.Outbox, h.k.Active(h.s))
	}
}

func TestUnbindEndsTheBindingAndKeepsTheWindow(t *testing.T) {
	h := newHarness(t)
	h.bind()
	eff := h.command("unbind", "")
	none[messages.IMCloseWindow](t, eff)
	if got := said(eff); len(got) != 1 || !strings.Contains(got[0], "keeps running") {
		t.Fatalf("/unbind said %q", got)
	}
	if h.s.Phase != PhaseEnded || h.s.Ended.WindowClosed {
		t.Fatalf("after /unbind: %s %+v", h.s.Phase, h.s.Ended)
	}
	if ls := only[messages.IMListBindings](t, h.command("sessions", "")); ls.User != "42" {
		t.Fatalf("/sessions in an ended thread: %+v", ls)
	}
}

// /mode NAME switches claude's mode; /mode offers its modes as buttons,
// which run /mode NAME for the one who asked; an unknown name lists them;
// an agent whose mode is a slash command gets it typed (codex's
// /approvals opens its dialog); an agent with no modes says so.
func TestModeSwitchesTheAgentsPermissionMode(t *testing.T) {
	h := newHarness(t)
	h.bind()
	if sm := only[messages.IMSetMode](t, h.command("mode", "plan")); sm.Mode != "plan" || sm.Agent != "claude" || sm.WindowID != h.s.Window.WindowID {
		t.Fatalf("set %+v", sm)
	}
	eff := h.send(&messages.IMModeSet{Mode: "plan"})
	if got := chatTexts(eff); len(got) != 1 || got[0] != "claude is in plan mode now." {
		t.Fatalf("said %q", got)
	}
	h.deliverChat(eff)
	eff = h.command("mode", "")
	sc := only[messages.IMSendChat](t, eff)
	if len(sc.Buttons) != 1 || len(sc.Buttons[0]) != 4 || sc.Buttons[0][2].Text != "plan" {
		t.Fatalf("buttons %+v", sc.Buttons)
	}
	h.deliverChat(eff)
	h.nextUpd++
	eff = h.send(&messages.IMPress{UpdateID: h.nextUpd, User: "42", CallbackID: "cb", Data: sc.Buttons[0][1].Data})
	if sm := only[messages.IMSetMode](t, eff); sm.Mode != "accept-edits" {
		t.Fatalf("the button set %+v", sm)
	}
	yolo := h.command("mode", "yolo")
	if got := chatTexts(yolo); len(got) != 1 || !strings.HasPrefix(got[0], "claude's modes are manual, accept-edits, plan, auto") {
		t.Fatalf("an unknown mode: %q in %s", got, describe(yolo))
	}
	h.deliverChat(yolo)

	h.k.cfg.Modes["claude"] = "/permissions"
	if sm := only[messages.IMSetMode](t, h.command("mode", "")); sm.Command != "/permissions" || sm.Mode != "" {
		t.Fatalf("an agent whose mode is a slash command: %+v", sm)
	}
	delete(h.k.cfg.Modes, "claude")
	off := h.command("mode", "plan")
	none[messages.IMSetMode](t, off)
	if got := chatTexts(off); len(got) != 1 || got[0] != "claude has no permission modes thatch can switch (im.agents.claude.mode)." {
		t.Fatalf("an agent with no modes: %q", got)
	}
}

// claude's /usage answer offers a button for claude's own dialog (the
// plan's limits), for the one who asked; pressing it pictures the dialog,
// opened by its slash command, while claude is idle, and not while it
// works; another agent's answer has no such button.
func TestUsageOffersClaudesOwnDialogWhileIdle(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.send(&messages.IMAgentIdle{Since: h.s.Work, Why: messages.AgentIdleQuiet}) // hello answered
	if h.s.Work != 0 {
		t.Fatalf("claude still works on hello: %d", h.s.Work)
	}
	ru := only[messages.IMReadUsage](t, h.command("usage", ""))
	if ru.User != "42" || ru.Agent != "claude" {
		t.Fatalf("read %+v", ru)
	}
	eff := h.send(&messages.IMUsageRead{Text: "claude's session (m), from its transcript: ...", User: ru.User})
	sc := only[messages.IMSendChat](t, eff)
	if len(sc.Buttons) != 1 || len(sc.Buttons[0]) != 1 || sc.Buttons[0][0].Text != "Claude's plan limits" {
		t.Fatalf("the answer's buttons %+v", sc.Buttons)
	}
	h.deliverChat(eff)
	press := func() []any {
		h.nextUpd++
		return h.send(&messages.IMPress{UpdateID: h.nextUpd, User: "42", CallbackID: "cb", Data: sc.Buttons[0][0].Data})
	}
	shot := only[messages.IMScreenshot](t, press())
	if shot.Open != "/usage" || shot.WindowID != h.s.Window.WindowID || shot.Tag != h.s.Tag {
		t.Fatalf("the press pictures %+v", shot)
	}

	eff = h.typeOne("run the tests")
	h.deliverChat(eff)
	busy := press()
	none[messages.IMScreenshot](t, busy)
	if got := chatTexts(busy); len(got) != 1 || !strings.Contains(got[0], "busy") {
		t.Fatalf("pressed while claude works: %q", got)
	}
	h.deliverChat(busy)

	// A turn shown live ends when the transcript says so, before the
	// screen watcher sees claude idle.
	h.k.cfg.Live = true
	h.s.Turn = &liveturn.Turn{Ending: true}
	if h.s.Work == 0 {
		t.Fatal("claude's work ended before the test could check a live turn")
	}
	only[messages.IMScreenshot](t, press())
	h.s.Turn = &liveturn.Turn{}
	busy = press()
	none[messages.IMScreenshot](t, busy)
	h.deliverChat(busy)

	h.s.Info.AgentType = "codex"
	sc = only[messages.IMSendChat](t, h.send(&messages.IMUsageRead{Text: "codex's session", User: "42"}))
	if sc.Buttons != nil {
		t.Fatalf("codex's answer has buttons %+v", sc.Buttons)
	}
}
