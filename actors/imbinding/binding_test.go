package imbinding

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/kindtest"
	"github.com/thatch-run/thatch/messages"
)

// harness drives the pure core the way the entity runtime does: decide,
// journal (here: encode and decode every event, as a restart would read
// it), apply.
type harness struct {
	t       *testing.T
	k       *Kind
	s       *State
	now     time.Time
	nextUpd int64
	// prompts are the button rows sent, by the nonce their data carries.
	prompts map[string][][]messages.IMButton
	// journal is every event journaled, encoded.
	journal [][]byte
}

// testKey is the thread of the harness: a Telegram forum topic.
const testKey = "tg:-100:5"

func newHarness(t *testing.T) *harness {
	k := New(Config{Agents: []string{"claude", "codex"}, Resumable: map[string]bool{"claude": true}, RenameTimeout: time.Minute,
		Modes: map[string]string{"claude": ModeCycle, "codex": "/approvals"}})
	return &harness{t: t, k: k, s: k.Initial(testKey), now: time.Unix(1_700_000_000, 0), nextUpd: 1, prompts: map[string][][]messages.IMButton{}}
}

func (h *harness) send(msg any) []any {
	h.t.Helper()
	s, d := kindtest.Step[State](h.t, h.k, h.s, msg, h.now)
	h.s = s
	for _, e := range d.Effects {
		if !listed(h.k, e) {
			h.t.Fatalf("the binding released %T, which its Effects do not list: the runtime would start without its handler", e)
		}
		if sc, ok := e.(*messages.IMSendChat); ok && len(sc.Buttons) > 0 {
			nonce, _, _ := strings.Cut(sc.Buttons[0][0].Data, ":")
			h.prompts[nonce] = sc.Buttons
		}
	}
	for _, ev := range d.Events {
		raw, _ := messages.Encode(ev) // Step checked that it encodes
		h.journal = append(h.journal, raw)
	}
	return d.Effects
}

// message is a chat message from user 42 in the thread.
func (h *harness) message(text string) []any {
	h.nextUpd++
	return h.send(&messages.IMUpdate{UpdateID: h.nextUpd, User: "42", Text: text})
}

// press presses the button labelled label on the open prompt.
func (h *harness) press(label string) []any {
	h.t.Helper()
	data := h.buttonData(label)
	h.nextUpd++
	return h.send(&messages.IMPress{UpdateID: h.nextUpd, User: "42", CallbackID: "cb", Data: data})
}

func (h *harness) buttonData(label string) string {
	h.t.Helper()
	if h.s.Prompt != nil {
		for _, row := range h.prompts[strconv.FormatUint(h.s.Prompt.Nonce, 10)] {
			for _, b := range row {
				if strings.Contains(b.Text, label) {
					return b.Data
				}
			}
		}
	}
	h.t.Fatalf("no button %q on the open prompt (prompt %+v)", label, h.s.Prompt)
	return ""
}

// deliverChat answers every IMSendChat in effects as sent, giving
// messages ids from 100 on.
func (h *harness) deliverChat(effects []any) []any {
	var rest []any
	for _, e := range effects {
		if sc, ok := e.(*messages.IMSendChat); ok {
			rest = append(rest, h.send(&messages.IMChatSent{Seq: sc.Seq, MessageID: strconv.FormatUint(100+sc.Seq, 10)})...)
			continue
		}
		rest = append(rest, e)
	}
	return rest
}

func only[T any](t *testing.T, effects []any) *T {
	t.Helper()
	return kindtest.Only[T](t, effects)
}

func none[T any](t *testing.T, effects []any) {
	t.Helper()
	for _, e := range effects {
		if _, ok := e.(*T); ok {
			t.Fatalf("want no %T in %s", new(T), describe(effects))
		}
	}
}

func describe(effects []any) string {
	var b strings.Builder
	for _, e := range effects {
		b.WriteString(reflect.TypeOf(e).String())
		b.WriteString(" ")
	}
	return "[" + b.String() + "]"
}

// toWindow runs the setup flow from first message to the window it asks
// for: first, claude, dir (a root), Use this directory.
func (h *harness) toWindow(first, dir string) *messages.IMCreateWindow {
	h.t.Helper()
	h.deliverChat(h.message(first))
	h.deliverChat(h.press("claude"))
	h.deliverChat(h.send(&messages.IMDirectoryListed{Path: dir, AtRoot: true}))
	return only[messages.IMCreateWindow](h.t, h.deliverChat(h.press("Use this directory")))
}

// toFind goes on from toWindow to the session search: window @1 made, no
// earlier sessions, claude launched.
func (h *harness) toFind(first, dir string) *messages.IMCreateWindow {
	h.t.Helper()
	cw := h.toWindow(first, dir)
	h.send(&messages.IMWindowCreated{Tag: cw.Tag, WindowID: "@1"})
	h.send(&messages.IMAgentSessionsListed{})
	h.send(&messages.IMAgentLaunched{WindowID: "@1"})
	return cw
}

// bind runs the whole setup flow: claude, in /home/u/proj, a new session.
func (h *harness) bind() {
	h.t.Helper()
	h.toFind("hello", "/home/u/proj")
	effects := h.deliverChat(h.send(&messages.IMAgentSessionFound{WindowID: "@1", SessionID: "s-1", Transcript: "/t/s-1.jsonl"}))
	only[messages.IMCheckWindow](h.t, effects)
	effects = h.send(&messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: h.s.Name(), Agent: "claude"})
	for _, e := range effects {
		if st, ok := e.(*messages.IMSendToWindow); ok {
			h.send(&messages.IMSentToWindow{UpdateID: st.UpdateID})
		}
	}
	if h.s.Phase != PhaseBound || len(h.s.Queue) != 0 {
		h.t.Fatalf("bind: phase %s queue %v", h.s.Phase, h.s.Queue)
	}
}

func TestSetupFlowBindsAndDeliversTheFirstMessage(t *testing.T) {
	h := newHarness(t)
	eff := h.message("fix the build")
	sc := only[messages.IMSendChat](t, eff)
	if len(sc.Buttons) == 0 || sc.Buttons[0][0].Text != "claude" {
		t.Fatalf("agent prompt: %+v", sc)
	}
	if h.s.Phase != PhaseSetup || len(h.s.Queue) != 1 {
		t.Fatalf("phase %s queue %v", h.s.Phase, h.s.Queue)
	}
	h.deliverChat(eff)

	eff = h.press("claude")
	only[messages.IMClearButtons](t, eff)
	if ld := only[messages.IMListDirectory](t, eff); ld.Path != "" {
		t.Fatalf("first listing of %q, want the first root", ld.Path)
	}
	eff = h.send(&messages.IMDirectoryListed{Path: "/home/u", Dirs: []string{"a", "proj"}, Jumps: []string{"/srv/x"}, AtRoot: true})
	sc = only[messages.IMSendChat](t, eff)
	labels := ""
	for _, row := range sc.Buttons {
		for _, b := range row {
			labels += b.Text + "|"
		}
	}
	if want := "★ /srv/x|📁 a|📁 proj|Use this directory|"; labels != want {
		t.Fatalf("browser buttons %q, want %q (no '..' at a root)", labels, want)
	}
	h.deliverChat(eff)
	if ld := only[messages.IMListDirectory](t, h.deliverChat(h.press("proj"))); ld.Path != "/home/u/proj" {
		t.Fatalf("cd to %q", ld.Path)
	}
	h.deliverChat(h.send(&messages.IMDirectoryListed{Path: "/home/u/proj", Dirs: []string{"src"}}))
	cw := only[messages.IMCreateWindow](t, h.deliverChat(h.press("Use this directory")))
	if cw.Dir != "/home/u/proj" || cw.Name != "topic-5" || cw.Tag == "" {
		t.Fatalf("create window %+v", cw)
	}
	ls := only[messages.IMListAgentSessions](t, h.send(&messages.IMWindowCreated{Tag: cw.Tag, WindowID: "@3"}))
	if ls.Agent != "claude" || ls.Dir != "/home/u/proj" {
		t.Fatalf("list sessions %+v", ls)
	}
	eff = h.send(&messages.IMAgentSessionsListed{Sessions: []messages.IMAgentSession{{ID: "old-1", When: "2026-11-30 10:00", FirstPrompt: "add tests"}}})
	h.deliverChat(eff)
	la := only[messages.IMLaunchAgent](t, h.deliverChat(h.press("add tests")))
	if la.SessionID != "old-1" || la.WindowID != "@3" {
		t.Fatalf("launch %+v", la)
	}
	fa := only[messages.IMFindAgentSession](t, h.send(&messages.IMAgentLaunched{WindowID: "@3"}))
	if fa.Known != "old-1" || fa.Fresh {
		t.Fatalf("find %+v", fa)
	}
	eff = h.send(&messages.IMAgentSessionFound{WindowID: "@3", SessionID: "old-1", Transcript: "/t/old-1.jsonl", Offset: 500})
	if sc := only[messages.IMSendChat](t, eff); sc.Text != "Session ready!" {
		t.Fatalf("ready message %q", sc.Text)
	}
	if ft := only[messages.IMFollowTranscript](t, eff); ft.Offset != 500 || ft.Path != "/t/old-1.jsonl" {
		t.Fatalf("follow %+v", ft)
	}
	none[messages.IMSendToWindow](t, eff)
	if cw := only[messages.IMCheckWindow](t, eff); cw.WindowID != "@3" {
		t.Fatalf("check %+v", cw)
	}
	eff = h.send(&messages.IMWindowChecked{WindowID: "@3", Alive: true, Name: "topic-5", Agent: "claude"})
	if st := only[messages.IMSendToWindow](t, eff); st.Text != "fix the build" || st.WindowID != "@3" {
		t.Fatalf("the message that started the setup: %+v", st)
	}
	want := ChatBinding{DisplayName: "topic-5"}
	if h.s.Chat != want || h.s.Window != (WindowBinding{WindowID: "@3"}) || h.s.Actor != "42" ||
		h.s.Info != (SessionInfo{SessionID: "old-1", Cwd: "/home/u/proj", WindowName: "topic-5", AgentType: "claude", Since: h.s.Info.Since}) || h.s.Info.Since == 0 {
		t.Fatalf("records: %+v %+v %+v", h.s.Chat, h.s.Window, h.s.Info)
	}
}

// tmux losing the window while the flow launches the agent (its server
// crashed) makes it again once, saying so, and launches there with the
// session chosen before; a second loss ends the flow as any failure
// does, back at the directory.
func TestASetupWhoseWindowTmuxLostMakesItAgainOnce(t *testing.T) {
	h := newHarness(t)
	cw := h.toWindow("hello", "/home/u/proj")
	h.send(&messages.IMWindowCreated{Tag: cw.Tag, WindowID: "@1"})
	h.send(&messages.IMAgentSessionsListed{})
	eff := h.send(&messages.IMAgentLaunched{WindowID: "@1", Err: "tmux: respawn @1: control-mode client stopped", Gone: true})
	again := only[messages.IMCreateWindow](t, eff)
	if again.Tag != cw.Tag || again.Dir != cw.Dir || again.Name != cw.Name {
		t.Fatalf("made again %+v, want %+v", again, cw)
	}
	if got := chatTexts(eff); len(got) != 1 || !strings.Contains(got[0], "went away") {
		t.Fatalf("said %q", got)
	}
	if st := h.s.Setup; st.Step != StepWindow || !st.Retried || st.Window != "" {
		t.Fatalf("setup %+v", st)
	}
	h.deliverChat(eff)

	// The session was chosen before the loss: the new window launches.
	none[messages.IMListAgentSessions](t, h.send(&messages.IMWindowCreated{Tag: cw.Tag, WindowID: "@2"}))
	if st := h.s.Setup; st.Step != StepLaunch || st.Window != "@2" {
		t.Fatalf("after the new window: %+v", st)
	}
	eff = h.send(&messages.IMAgentLaunched{WindowID: "@2", Err: "tmux: window @2: no server running", Gone: true})
	none[messages.IMCreateWindow](t, eff)
	if got := chatTexts(eff); len(got) != 1 || !strings.HasPrefix(got[0], "Could not start claude") {
		t.Fatalf("the second loss said %q", got)
	}
	only[messages.IMListDirectory](t, eff)
	if st := h.s.Setup; st.Step != StepDir || st.Retried {
		t.Fatalf("after the second loss: %+v", st)
	}
}

func TestRoutes(t *testing.T) {
	cases := []struct {
		name    string
		check   messages.IMWindowChecked
		topic   string // a name the thread learnt since it was bound
		prompt  string // "" = forwarded
		buttons string
	}{
		{"all is well", messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "topic-5", Agent: "claude"}, "", "", ""},
		{"thread renamed", messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "topic-5", Agent: "claude"}, "api", PromptRename, "Rename|New Session|"},
		{"window renamed", messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "zsh", Agent: "claude"}, "", PromptRename, "Rename|New Session|"},
		{"another agent", messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "topic-5", Agent: "codex"}, "", PromptMismatch, "Update Binding|New Session|"},
		{"agent exited", messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "topic-5"}, "", PromptDead, "Recover|New Session|"},
		{"window dead", messages.IMWindowChecked{WindowID: "@1"}, "", PromptDead, "Recover|New Session|"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.bind()
			if tc.topic != "" {
				h.nextUpd++
				h.send(&messages.IMUpdate{UpdateID: h.nextUpd, User: "42", TopicName: tc.topic, NameSource: messages.NameEdited})
			}
			if cw := only[messages.IMCheckWindow](t, h.message("next")); cw.WindowID != "@1" {
				t.Fatalf("check %+v", cw)
			}
			eff := h.send(&tc.check)
			if tc.prompt == "" {
				if st := only[messages.IMSendToWindow](t, eff); st.Text != "next" {
					t.Fatalf("forwarded %q", st.Text)
				}
				none[messages.IMSendChat](t, eff)
				return
			}
			none[messages.IMSendToWindow](t, eff)
			sc := only[messages.IMSendChat](t, eff)
			got := ""
			for _, b := range sc.Buttons[0] {
				got += b.Text + "|"
			}
			if got != tc.buttons || h.s.Prompt.Kind != tc.prompt || h.s.Phase != PhasePrompting {
				t.Fatalf("prompt %s %q (phase %s), want %s %q", h.s.Prompt.Kind, got, h.s.Phase, tc.prompt, tc.buttons)
			}
			// A message sent while the prompt is open waits, unchecked.
			if eff := h.message("queued"); len(eff) != 0 {
				t.Fatalf("a message during a prompt caused %s", describe(eff))
			}
			if len(h.s.Queue) != 2 {
				t.Fatalf("queue %v", h.s.Queue)
			}
		})
	}
}

func TestRenameTimeoutAcceptsTheRenameAndDeliversInOrder(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.nextUpd++
	h.send(&messages.IMUpdate{UpdateID: h.nextUpd, User: "42", TopicName: "api", NameSource: messages.NameEdited})
	h.message("one")
	eff := h.deliverChat(h.send(&messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "topic-5", Agent: "claude"}))
	if tm := only[actors.StartTimer](t, eff); tm.After != time.Minute {
		t.Fatalf("timer %+v", tm)
	}
	h.message("two")
	eff = h.send(&actors.Tick{Name: timerRename})
	if rw := only[messages.IMRenameWindow](t, eff); rw.Name != "api" || rw.WindowID != "@1" {
		t.Fatalf("rename %+v", rw)
	}
	only[messages.IMCheckWindow](t, eff)
	if h.s.Chat.DisplayName != "api" || h.s.Info.WindowName != "api" {
		t.Fatalf("binding not renamed: %+v", h.s.Chat)
	}
	h.send(&messages.IMWindowRenamed{Name: "api"})
	if got := h.typeAll(); strings.Join(got, ",") != "one,two" {
		t.Fatalf("delivered %v, want one,two in order", got)
	}
}

// typeAll answers window checks (all well) and typing until the queue is
// empty, and returns what was typed, in order: one message per check.
func (h *harness) typeAll() []string {
	h.t.Helper()
	var typed []string
	eff := h.send(&messages.IMWindowChecked{WindowID: h.s.Window.WindowID, Alive: true, Name: h.s.windowName(), Agent: h.s.Info.AgentType})
	for range MaxQueued {
		var st *messages.IMSendToWindow
		for _, e := range eff {
			if x, ok := e.(*messages.IMSendToWindow); ok {
				if st != nil {
					h.t.Fatalf("two messages typed after one check: %s", describe(eff))
				}
				st = x
			}
		}
		if st == nil {
			return typed
		}
		typed = append(typed, st.Text)
		eff = h.send(&messages.IMSentToWindow{UpdateID: st.UpdateID})
		if len(h.s.Queue) == 0 {
			return typed
		}
		only[messages.IMCheckWindow](h.t, eff)
		eff = h.send(&messages.IMWindowChecked{WindowID: h.s.Window.WindowID, Alive: true, Name: h.s.windowName(), Agent: h.s.Info.AgentType})
	}
	return typed
}

func TestRecoverRemakesTheWindowAndResumesTheSession(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.message("are you there")
	h.deliverChat(h.send(&messages.IMWindowChecked{WindowID: "@1"}))
	cw := only[messages.IMCreateWindow](t, h.deliverChat(h.press("Recover")))
	if cw.Dir != "/home/u/proj" || cw.Name != "topic-5" || h.s.Phase != PhaseRecovering {
		t.Fatalf("create %+v phase %s", cw, h.s.Phase)
	}
	la := only[messages.IMLaunchAgent](t, h.send(&messages.IMWindowCreated{Tag: cw.Tag, WindowID: "@9"}))
	if la.SessionID != "s-1" || la.Agent != "claude" {
		t.Fatalf("launch %+v: want claude resuming s-1", la)
	}
	h.send(&messages.IMAgentLaunched{WindowID: "@9"})
	h.send(&messages.IMAgentSessionFound{WindowID: "@9", SessionID: "s-1", Transcript: "/t/s-1.jsonl", Offset: 10})
	eff := h.send(&messages.IMWindowChecked{WindowID: "@9", Alive: true, Name: "topic-5", Agent: "claude"})
	if st := only[messages.IMSendToWindow](t, eff); st.WindowID != "@9" || st.Text != "are you there" {
		t.Fatalf("send %+v", st)
	}
	if h.s.Window.WindowID != "@9" || h.s.Phase != PhaseBound {
		t.Fatalf("binding not re-keyed: %+v %s", h.s.Window, h.s.Phase)
	}
}

func TestUpdateBindingTakesTheDetectedAgent(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.message("hi")
	h.deliverChat(h.send(&messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "topic-5", Agent: "codex"}))
	eff := h.press("Update Binding")
	if h.s.Info.AgentType != "codex" {
		t.Fatalf("agent %s", h.s.Info.AgentType)
	}
	only[messages.IMFindAgentSession](t, eff)
	only[messages.IMCheckWindow](t, eff)
	// The session of the new agent is found before the check answers.
	if eff := h.send(&messages.IMAgentSessionFound{WindowID: "@1", SessionID: "cx-1", Transcript: "/t/cx.jsonl", Offset: 9}); len(eff) == 0 {
		t.Fatal("the new agent's transcript is not followed")
	}
	eff = h.send(&messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "topic-5", Agent: "codex"})
	if st := only[messages.IMSendToWindow](t, eff); st.Text != "hi" {
		t.Fatalf("typed %q", st.Text)
	}
}

func TestNewSessionKeepsTheQueueAndStartsSetup(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.message("hi")
	h.deliverChat(h.send(&messages.IMWindowChecked{WindowID: "@1"}))
	eff := h.press("New Session")
	only[messages.IMStopFollowing](t, eff)
	if h.s.Phase != PhaseSetup || h.s.Prompt.Kind != PromptAgent || len(h.s.Queue) != 1 {
		t.Fatalf("phase %s prompt %+v queue %v", h.s.Phase, h.s.Prompt, h.s.Queue)
	}
}

func TestForeignAndStalePressesOnlyAnswer(t *testing.T) {
	cases := []struct {
		name string
		edit func(p *messages.IMPress)
	}{
		{"another user", func(p *messages.IMPress) { p.User = "7" }},
		{"a stale nonce", func(p *messages.IMPress) { p.Data = "0:" + strings.SplitN(p.Data, ":", 2)[1] }},
		{"garbage", func(p *messages.IMPress) { p.Data = "x" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.deliverChat(h.message("hi"))
			p := &messages.IMPress{UpdateID: 99, User: "42", CallbackID: "cb", Data: h.buttonData("claude")}
			tc.edit(p)
			eff := h.send(p)
			if len(eff) != 1 {
				t.Fatalf("effects %s, want only the answer", describe(eff))
			}
			only[messages.IMAnswerPress](t, eff)
			if h.s.Setup.Step != StepAgent {
				t.Fatalf("step %s", h.s.Setup.Step)
			}
		})
	}
}

// A crash after a prompt was sent but before its sending was journaled
// sends it again: the chat then shows two copies, and the user may press
// either: both carry the prompt's nonce, and both answer. The answered
// prompt's buttons are cleared from the copy whose id came back.
func TestEitherCopyOfAPromptSentAgainAfterACrashAnswers(t *testing.T) {
	h := newHarness(t)
	// Sent as message 100, then the crash: that answer never came.
	only[messages.IMSendChat](t, h.message("hi"))
	again := only[messages.IMSendChat](t, h.send(&actors.Recovered{Restarted: true}))
	h.send(&messages.IMChatSent{Seq: again.Seq, MessageID: "om_101"})
	h.nextUpd++
	eff := h.send(&messages.IMPress{UpdateID: h.nextUpd, User: "42", CallbackID: "cb", Data: h.buttonData("claude")})
	if h.s.Setup.Step != StepDir {
		t.Fatalf("step %s after the press, want the directory browser; effects %s", h.s.Setup.Step, describe(eff))
	}
	if cb := only[messages.IMClearButtons](t, eff); cb.MessageID != "om_101" {
		t.Fatalf("cleared %+v, want the buttons of om_101", cb)
	}
}

// Telegram sends /start when a user first opens a chat with the bot: it
// starts the setup of a thread with no binding, answers a bound thread
// with what it is bound to, and is typed to no agent either way.
func TestStartCommandIsNeverTypedToTheAgent(t *testing.T) {
	h := newHarness(t)
	h.nextUpd++
	eff := h.send(&messages.IMUpdate{UpdateID: h.nextUpd, User: "42", Start: true})
	if h.s.Phase != PhaseSetup || h.s.Prompt == nil || h.s.Prompt.Kind != PromptAgent {
		t.Fatalf("after /start: phase %s prompt %+v; effects %s", h.s.Phase, h.s.Prompt, describe(eff))
	}
	if len(h.s.Queue) != 0 {
		t.Fatalf("/start was queued for the agent: %v", h.s.Queue)
	}

	b := newHarness(t)
	b.bind()
	b.nextUpd++
	eff = b.send(&messages.IMUpdate{UpdateID: b.nextUpd, User: "42", Start: true})
	sc := only[messages.IMSendChat](t, eff)
	if !strings.Contains(sc.Text, "bound to claude") || len(b.s.Queue) != 0 {
		t.Fatalf("a bound thread's /start: said %q, queue %v", sc.Text, b.s.Queue)
	}
}

// A photo (or document, voice message...) cannot be typed: the binding
// says so in the thread, through its outbox (in order with its replies,
// once however often the update comes), and queues the caption.
func TestMediaIsNamedAsNotPassedOnAndItsCaptionQueued(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.nextUpd++
	u := &messages.IMUpdate{UpdateID: h.nextUpd, User: "42",
		Media: "photo", Text: "(sent with a photo that could not be passed on) the failing screen"}
	eff := h.send(u)
	var said []string
	for _, e := range eff {
		if sc, ok := e.(*messages.IMSendChat); ok {
			said = append(said, sc.Text)
		}
	}
	if len(said) != 1 || !strings.Contains(said[0], "the photo was not given to the agent") {
		t.Fatalf("said %q, want the notice; effects %s", said, describe(eff))
	}
	if len(h.s.Queue) != 1 || !strings.Contains(h.s.Queue[0].Text, "the failing screen") {
		t.Fatalf("queue %v, want the caption", h.s.Queue)
	}
	if again := h.send(u); len(again) != 0 {
		t.Fatalf("the same update again: effects %s, want none", describe(again))
	}
}

func TestAnUpdateIsHandledOnce(t *testing.T) {
	h := newHarness(t)
	u := &messages.IMUpdate{UpdateID: 10, User: "42", Text: "hi"}
	h.send(u)
	if eff := h.send(u); len(eff) != 0 || len(h.s.Queue) != 1 {
		t.Fatalf("a redelivered update: effects %s queue %v", describe(eff), h.s.Queue)
	}
}

// After a week without any update, Telegram numbers the next ones at
// random: an id below the last one is then new, not a repeat.
func TestAnUpdateIDBelowTheLastIsNewAfterTelegramsReset(t *testing.T) {
	h := newHarness(t)
	h.send(&messages.IMUpdate{UpdateID: 900, User: "42", Text: "before"})
	h.send(&messages.IMUpdate{UpdateID: 12, User: "42", Text: "a repeat?"})
	if len(h.s.Queue) != 1 {
		t.Fatalf("a lower id a moment later is a repeat: queue %v", h.s.Queue)
	}
	h.now = h.now.Add(messages.IMUpdateIDReset + time.Hour)
	h.send(&messages.IMUpdate{UpdateID: 12, User: "42", Text: "after the reset"})
	if len(h.s.Queue) != 2 || h.s.Queue[1].Text != "after the reset" || h.s.LastUpdate != 12 {
		t.Fatalf("after the reset: queue %v last %d", h.s.Queue, h.s.LastUpdate)
	}
	h.send(&messages.IMUpdate{UpdateID: 12, User: "42", Text: "after the reset"})
	if len(h.s.Queue) != 2 {
		t.Fatalf("the new numbering's repeats are still repeats: queue %v", h.s.Queue)
	}
}

func TestTopicNames(t *testing.T) {
	cases := []struct {
		name  string
		steps []messages.IMUpdate
		want  string
	}{
		{"none known", nil, "topic-5"},
		{"seed fills an unknown name", []messages.IMUpdate{{TopicName: "orig", NameSource: messages.NameSeed}}, "orig"},
		{"seed does not undo an edit", []messages.IMUpdate{
			{TopicName: "orig", NameSource: messages.NameCreated},
			{TopicName: "new", NameSource: messages.NameEdited},
			{TopicName: "orig", NameSource: messages.NameSeed}}, "new"},
		{"newest edit wins", []messages.IMUpdate{
			{TopicName: "a", NameSource: messages.NameEdited},
			{TopicName: "b", NameSource: messages.NameEdited}}, "b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			for i, u := range tc.steps {
				u.UpdateID = int64(i + 1)
				h.send(&u)
			}
			if got := h.s.Name(); got != tc.want {
				t.Fatalf("name %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTranscriptRepliesGoOutOnceAndInOrder(t *testing.T) {
	h := newHarness(t)
	h.bind()
	eff := h.send(&messages.IMTranscriptRead{Path: "/t/s-1.jsonl", From: 0, To: 80, Replies: []string{"one", "two"}, Ends: []int64{40, 80}})
	sc := only[messages.IMSendChat](t, eff)
	if sc.Text != "one" || !sc.Markdown || h.s.Offset != 80 || len(h.s.Outbox) != 2 {
		t.Fatalf("first send %+v offset %d outbox %d: one in flight, rendered as Markdown", sc, h.s.Offset, len(h.s.Outbox))
	}
	// Read again after a restart: nothing new.
	if eff := h.send(&messages.IMTranscriptRead{Path: "/t/s-1.jsonl", From: 0, To: 80, Replies: []string{"one", "two"}}); len(eff) != 0 {
		t.Fatalf("a reread sent %s", describe(eff))
	}
	// A batch read again with a new reply after it: only the new one.
	h.send(&messages.IMTranscriptRead{Path: "/t/s-1.jsonl", From: 40, To: 120, Replies: []string{"two", "three"}, Ends: []int64{80, 120}})
	if len(h.s.Outbox) != 3 || h.s.Outbox[2].Text != "three" {
		t.Fatalf("outbox %+v", h.s.Outbox)
	}
	// A crash before they were sent: Recovered sends the head again.
	eff = h.send(&actors.Recovered{})
	if sc := only[messages.IMSendChat](t, eff); sc.Text != "one" {
		t.Fatalf("after recovery %q", sc.Text)
	}
	if ft := only[messages.IMFollowTranscript](t, eff); ft.Offset != 120 {
		t.Fatalf("follow from %d", ft.Offset)
	}
	var texts []string
	for len(eff) > 0 {
		var next []any
		for _, e := range eff {
			if sc, ok := e.(*messages.IMSendChat); ok {
				texts = append(texts, sc.Text)
				next = append(next, h.send(&messages.IMChatSent{Seq: sc.Seq, MessageID: "1"})...)
			}
		}
		eff = next
	}
	if strings.Join(texts, ",") != "one,two,three" || len(h.s.Outbox) != 0 {
		t.Fatalf("sent %v, outbox %v", texts, h.s.Outbox)
	}
}

func TestAFailedSendIsRetriedAloneAndARefusedOneDropped(t *testing.T) {
	h := newHarness(t)
	h.bind()
	first := only[messages.IMSendChat](t, h.send(&messages.IMTranscriptRead{Path: "/t/s-1.jsonl", To: 10, Replies: []string{"r1", "r2"}}))
	eff := h.send(&messages.IMChatSent{Seq: first.Seq, Err: "network down"})
	none[messages.IMSendChat](t, eff)
	only[actors.StartTimer](t, eff)
	again := only[messages.IMSendChat](t, h.send(&actors.Tick{Name: timerOutbox}))
	if again.Text != "r1" {
		t.Fatalf("retried %q: r2 must not overtake r1", again.Text)
	}
	next := only[messages.IMSendChat](t, h.send(&messages.IMChatSent{Seq: again.Seq, Err: "Bad Request: message thread not found", Permanent: true}))
	if next.Text != "r2" || len(h.s.Outbox) != 1 {
		t.Fatalf("after a refusal: next %q, outbox %v", next.Text, h.s.Outbox)
	}
}

// A long reply goes out as several Telegram messages. When a later part
// fails, or the daemon restarts, the entry is sent again from the part
// after the last one reported sent, so the parts recorded as sent are not
// shown again (a crash between a part and its record repeats that part).
func TestALongReplyCutShortGoesOnFromThePartAfterTheLastSent(t *testing.T) {
	h := newHarness(t)
	h.bind()
	first := only[messages.IMSendChat](t, h.send(&messages.IMTranscriptRead{Path: "/t/s-1.jsonl", To: 10, Replies: []string{"a long reply", "next"}}))
	if first.FromPart != 0 {
		t.Fatalf("a first send starts at part %d", first.FromPart)
	}
	h.send(&messages.IMChatPartSent{Seq: first.Seq, Parts: 1})
	h.send(&messages.IMChatPartSent{Seq: first.Seq, Parts: 2})
	if eff := h.send(&messages.IMChatPartSent{Seq: first.Seq, Parts: 1}); len(eff) != 0 || h.s.Outbox[0].Parts != 2 {
		t.Fatalf("a late report of part 1: %s, parts %d; want nothing, 2", describe(eff), h.s.Outbox[0].Parts)
	}
	if eff := h.send(&messages.IMChatPartSent{Seq: first.Seq + 1, Parts: 3}); len(eff) != 0 || h.s.Outbox[1].Parts != 0 {
		t.Fatalf("a report for an entry not in flight: %s, its parts %d", describe(eff), h.s.Outbox[1].Parts)
	}

	h.send(&messages.IMChatSent{Seq: first.Seq, Err: "network down"})
	again := only[messages.IMSendChat](t, h.send(&actors.Tick{Name: timerOutbox}))
	if again.Seq != first.Seq || again.Text != first.Text || again.FromPart != 2 {
		t.Fatalf("tried again: %+v; want the same entry from part 2", again)
	}
	after := only[messages.IMSendChat](t, h.send(&actors.Recovered{}))
	if after.Seq != first.Seq || after.FromPart != 2 {
		t.Fatalf("after a restart: %+v; want the same entry from part 2", after)
	}
	next := only[messages.IMSendChat](t, h.send(&messages.IMChatSent{Seq: after.Seq, MessageID: "7"}))
	if next.Text != "next" || next.FromPart != 0 || len(h.s.Outbox) != 1 {
		t.Fatalf("after the long one: %+v, outbox %v", next, h.s.Outbox)
	}
}

func TestRecoveredMidSetupRepeatsTheStepWithTheSameTag(t *testing.T) {
	h := newHarness(t)
	cw := h.toWindow("hi", "/home/u")
	again := only[messages.IMCreateWindow](t, h.send(&actors.Recovered{Restarted: true}))
	if *again != *cw {
		t.Fatalf("after a crash %+v, want the same %+v (the handler reuses the tagged window)", again, cw)
	}
	h.send(&messages.IMWindowCreated{Tag: cw.Tag, WindowID: "@4"})
	h.send(&messages.IMAgentSessionsListed{})
	la := only[messages.IMLaunchAgent](t, h.send(&actors.Recovered{}))
	if la.WindowID != "@4" {
		t.Fatalf("launch %+v", la)
	}
}

func TestQueueIsBounded(t *testing.T) {
	h := newHarness(t)
	for range MaxQueued {
		h.message("m")
	}
	h.message("one too many")
	if last := h.s.Outbox[len(h.s.Outbox)-1]; !strings.Contains(last.Text, "not queued") {
		t.Fatalf("reply %q", last.Text)
	}
	if len(h.s.Queue) != MaxQueued {
		t.Fatalf("queue %d", len(h.s.Queue))
	}
}

func TestActive(t *testing.T) {
	h := newHarness(t)
	if h.k.Active(h.s) {
		t.Fatal("a new thread is not active")
	}
	h.message("hi")
	if !h.k.Active(h.s) {
		t.Fatal("a thread in setup is active")
	}
	h = newHarness(t)
	h.bind()
	if !h.k.Active(h.s) {
		t.Fatal("a bound thread with a transcript is active (its follower is set up at start)")
	}
}

func TestApplyLeavesItsInputAlone(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.message("a")
	before, _ := messages.Encode(h.s)
	h.k.Apply(h.s, &messages.IMChecked{Forward: true})
	h.k.Apply(h.s, &messages.IMDelivered{UpdateID: h.s.Queue[0].UpdateID})
	h.k.Apply(h.s, &messages.IMOutboxAdded{Seq: 9, Entries: []messages.IMOutEntry{{Text: "x"}}})
	after, _ := messages.Encode(h.s)
	if string(before) != string(after) {
		t.Fatal("Apply changed its input state")
	}
}

func TestTheFlowAnswersToWhoeverSpokeNotWhoCreatedTheTopic(t *testing.T) {
	h := newHarness(t)
	// The topic's creator (user 1) only names the topic.
	h.send(&messages.IMUpdate{UpdateID: 1, User: "1", TopicName: "api", NameSource: messages.NameCreated})
	h.bind()
	if h.s.Actor != "42" || h.s.Chat.DisplayName != "api" {
		t.Fatalf("binding %+v", h.s.Chat)
	}
}

func TestACheckCarriesTheWindowTag(t *testing.T) {
	h := newHarness(t)
	h.bind()
	cw := only[messages.IMCheckWindow](t, h.message("x"))
	if cw.Tag == "" || cw.Tag != h.s.Tag {
		t.Fatalf("check %+v, binding tag %q: after a tmux restart an id alone may name another window", cw, h.s.Tag)
	}
}

func TestAnAgentThatDidNotStartGetsNoTyping(t *testing.T) {
	h := newHarness(t)
	h.toFind("rm -rf build", "/home/u")
	h.deliverChat(h.send(&messages.IMAgentSessionFound{WindowID: "@1"}))                   // nothing found: the launch failed
	eff := h.send(&messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "topic-5"}) // a shell, no agent
	none[messages.IMSendToWindow](t, eff)
	if h.s.Prompt == nil || h.s.Prompt.Kind != PromptDead || len(h.s.Queue) != 1 {
		t.Fatalf("prompt %+v queue %v: the message must wait, not reach the shell", h.s.Prompt, h.s.Queue)
	}
}

func TestTypingStopsAtAShellBetweenTwoQueuedMessages(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.message("/exit")
	h.message("git push -f")
	eff := h.send(&messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "topic-5", Agent: "claude"})
	st := only[messages.IMSendToWindow](t, eff)
	only[messages.IMCheckWindow](t, h.send(&messages.IMSentToWindow{UpdateID: st.UpdateID}))
	// The first message ended the agent: a shell is left in the window.
	eff = h.send(&messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "topic-5"})
	none[messages.IMSendToWindow](t, eff)
	if h.s.Prompt == nil || h.s.Prompt.Kind != PromptDead || h.s.Prompt.Window != "@1" {
		t.Fatalf("prompt %+v: the second message waits and Recover reuses the window", h.s.Prompt)
	}
	h.deliverChat(eff)
	la := only[messages.IMLaunchAgent](t, h.press("Recover"))
	if la.WindowID != "@1" || la.SessionID != "s-1" {
		t.Fatalf("launch %+v: the agent is started again in its window, resuming its session", la)
	}
}

func TestAFailedTypingIsRetriedAfterACheckNotDoubled(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.message("a")
	h.message("b")
	st := only[messages.IMSendToWindow](t, h.send(&messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "topic-5", Agent: "claude"}))
	only[messages.IMCheckWindow](t, h.send(&messages.IMSentToWindow{UpdateID: st.UpdateID, Err: "tmux: timeout"}))
	if got := h.typeAll(); strings.Join(got, ",") != "a,b" {
		t.Fatalf("typed %v, want a then b, once each", got)
	}
}

func TestUpdateBindingForgetsTheOldAgentsSession(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.message("hi")
	h.deliverChat(h.send(&messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "topic-5", Agent: "codex"}))
	eff := h.press("Update Binding")
	if sp := only[messages.IMStopFollowing](t, eff); sp.Path != "/t/s-1.jsonl" {
		t.Fatalf("stop %+v", sp)
	}
	if h.s.Info.SessionID != "" || h.s.Transcript != "" {
		t.Fatalf("the old session is kept: %+v %q", h.s.Info, h.s.Transcript)
	}
}

func TestARenamedWindowIsComparedByTheNameTmuxKeeps(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.nextUpd++
	h.send(&messages.IMUpdate{UpdateID: h.nextUpd, User: "42", TopicName: `fix C:\temp`, NameSource: messages.NameEdited})
	h.message("x")
	h.deliverChat(h.send(&messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "topic-5", Agent: "claude"}))
	h.press("Rename")
	h.send(&messages.IMWindowRenamed{Name: `fix C:\\temp`}) // tmux escapes the backslash
	st := only[messages.IMSendToWindow](t, h.send(&messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: `fix C:\\temp`, Agent: "claude"}))
	if st.Text != "x" {
		t.Fatalf("typed %q", st.Text)
	}
}

func TestARootThatCannotBeListedEndsTheSetup(t *testing.T) {
	h := newHarness(t)
	h.deliverChat(h.message("hi"))
	h.deliverChat(h.press("claude"))
	eff := h.send(&messages.IMDirectoryListed{Path: "/gone", AtRoot: true, Err: "no such directory"})
	none[messages.IMListDirectory](t, eff)
	if h.s.Phase != PhaseUnbound || len(h.s.Queue) != 1 {
		t.Fatalf("phase %s queue %v", h.s.Phase, h.s.Queue)
	}
}

func TestACheckTypesTheMessageWhenAllIsWell(t *testing.T) {
	h := newHarness(t)
	h.bind()
	cw := only[messages.IMCheckWindow](t, h.message("fast path"))
	if cw.Type == nil || cw.Type.Text != "fast path" || cw.Type.Name != "topic-5" || cw.Type.Agent != "claude" {
		t.Fatalf("check %+v: the message rides with its check", cw.Type)
	}
	h.message("second")
	eff := h.send(&messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "topic-5", Agent: "claude", Typed: cw.Type.UpdateID})
	none[messages.IMSendToWindow](t, eff)
	next := only[messages.IMCheckWindow](t, eff)
	if next.Type == nil || next.Type.Text != "second" || len(h.s.Queue) != 1 {
		t.Fatalf("next check %+v, queue %v", next.Type, h.s.Queue)
	}
	// The chat side renamed: the handler cannot see that, so nothing rides.
	h.nextUpd++
	h.send(&messages.IMUpdate{UpdateID: h.nextUpd, User: "42", TopicName: "renamed", NameSource: messages.NameEdited})
	h.send(&messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "topic-5", Agent: "claude", Typed: next.Type.UpdateID})
	if len(h.s.Queue) != 0 {
		t.Fatalf("queue %v", h.s.Queue)
	}
	if cw := only[messages.IMCheckWindow](t, h.message("third")); cw.Type != nil {
		t.Fatalf("a check typed %q while the thread's new name waits for a prompt", cw.Type.Text)
	}
}

func TestAPromptMovesToAnotherUserWhoSpeaks(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.message("hi")
	h.deliverChat(h.send(&messages.IMWindowChecked{WindowID: "@1"}))
	first := h.s.Prompt
	h.nextUpd++
	eff := h.send(&messages.IMUpdate{UpdateID: h.nextUpd, User: "7", Text: "me too"})
	only[messages.IMSendChat](t, eff)
	h.deliverChat(eff)
	if h.s.Prompt == nil || h.s.Prompt.User != "7" || h.s.Prompt.Kind != PromptDead || h.s.Prompt.Nonce == first.Nonce {
		t.Fatalf("prompt %+v, want the dead prompt asked again of user 7", h.s.Prompt)
	}
	if len(h.s.Queue) != 2 {
		t.Fatalf("queue %v", h.s.Queue)
	}
	data := h.buttonData("Recover")
	h.nextUpd++
	cw := only[messages.IMCreateWindow](t, h.send(&messages.IMPress{UpdateID: h.nextUpd, User: "7", CallbackID: "c", Data: data}))
	if cw.Dir != "/home/u/proj" {
		t.Fatalf("recover %+v", cw)
	}
}

func TestALostSessionIsLookedForAgainAndSaid(t *testing.T) {
	h := newHarness(t)
	cw := h.toFind("hi", "/home/u")
	eff := h.send(&messages.IMAgentSessionFound{WindowID: "@1"})
	if tm := only[actors.StartTimer](t, eff); tm.Name != timerFind {
		t.Fatalf("timer %+v", tm)
	}
	told := func() int {
		n := 0
		for _, o := range h.s.Outbox {
			if strings.Contains(o.Text, "has not found claude's session") {
				n++
			}
		}
		return n
	}
	if told() != 0 {
		t.Fatal("told before the first message was typed (codex writes its transcript only then)")
	}
	// The first message is typed; the search after it fails too: now
	// the user is told, once.
	st := only[messages.IMSendToWindow](t, h.send(&messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "topic-5", Agent: "claude"}))
	only[messages.IMFindAgentSession](t, h.send(&messages.IMSentToWindow{UpdateID: st.UpdateID}))
	h.send(&messages.IMAgentSessionFound{WindowID: "@1"})
	h.send(&messages.IMAgentSessionFound{WindowID: "@1"})
	if told() != 1 {
		t.Fatalf("told %d times, want once: %+v", told(), h.s.Outbox)
	}
	fa := only[messages.IMFindAgentSession](t, h.send(&actors.Tick{Name: timerFind}))
	if !fa.Brief || fa.Tag != cw.Tag {
		t.Fatalf("search %+v", fa)
	}
	only[actors.StartTimer](t, h.send(&messages.IMAgentSessionFound{WindowID: "@1"}))
	eff = h.send(&messages.IMAgentSessionFound{WindowID: "@1", SessionID: "s-9", Transcript: "/t/s-9.jsonl"})
	if ft := only[messages.IMFollowTranscript](t, eff); ft.Path != "/t/s-9.jsonl" || ft.Offset != 0 {
		t.Fatalf("follow %+v", ft)
	}
}

// chatTexts are the texts of the chat messages among effects.
func chatTexts(effects []any) []string {
	var out []string
	for _, e := range effects {
		if sc, ok := e.(*messages.IMSendChat); ok {
			out = append(out, sc.Text)
		}
	}
	return out
}

func TestAMessageTheAgentDidNotTakeIsSaidAndNeverTypedAgain(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.message("are you back")
	h.message("next")
	eff := h.send(&messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "topic-5", Agent: "claude"})
	st := only[messages.IMSendToWindow](t, eff)
	eff = h.send(&messages.IMSentToWindow{UpdateID: st.UpdateID, Err: "Enter did not land after 3 presses", NotTaken: true})
	said := strings.Join(chatTexts(eff), "\n")
	if !strings.Contains(said, `"are you back"`) || !strings.Contains(said, "still in its input line") {
		t.Fatalf("the user is not told the message is stuck: %q", said)
	}
	if len(h.s.Queue) != 1 || h.s.Queue[0].Text != "next" {
		t.Fatalf("queue %+v: the stuck message leaves the queue, the next one stays", h.s.Queue)
	}
	if got := h.typeAll(); strings.Join(got, ",") != "next" {
		t.Fatalf("typed %v, want only the next message", got)
	}
}

func TestAnAgentNotTakingInputHoldsTheMessageAndSaysSoOnce(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.message("continue")
	var notices int
	for range 3 {
		eff := h.send(&messages.IMWindowChecked{WindowID: "@1", Alive: true, Name: "topic-5", Agent: "claude",
			Typed: h.s.Queue[0].UpdateID, TypeErr: "the agent did not show its input line", TypeNotReady: true})
		for _, text := range chatTexts(eff) {
			if strings.Contains(text, "is not taking input now") {
				notices++
			}
		}
		none[messages.IMCheckWindow](t, eff) // not at once: the agent waits on its user
		if st := only[actors.StartTimer](t, eff); st.Name != timerTyping {
			t.Fatalf("timer %+v", st)
		}
		only[messages.IMCheckWindow](t, h.send(&actors.Tick{Name: timerTyping})) // checked, and tried, again
	}
	if notices != 1 {
		t.Fatalf("told %d times, want once", notices)
	}
	if got := h.typeAll(); strings.Join(got, ",") != "continue" {
		t.Fatalf("typed %v: the held message is typed once the agent takes input", got)
	}
}

func TestASessionSwitchInTheWindowIsFollowed(t *testing.T) {
	h := newHarness(t)
	h.bind()
	tag := h.s.Tag
	h.deliverChat(h.send(&messages.IMTranscriptRead{Path: "/t/s-1.jsonl", From: 0, To: 300, Replies: []string{"old"}, Ends: []int64{300}}))

	for _, stale := range []*messages.IMSessionChanged{
		{Tag: "thatch:other:1", SessionID: "s-2", Transcript: "/t/s-2.jsonl"},
		{Tag: tag, SessionID: "s-1", Transcript: "/t/s-1.jsonl"},
		{Tag: tag, SessionID: "s-2"},
	} {
		if eff := h.send(stale); len(eff) != 0 || h.s.Info.SessionID != "s-1" {
			t.Fatalf("%+v: %s, session %s", stale, describe(eff), h.s.Info.SessionID)
		}
	}
	eff := h.send(&messages.IMSessionChanged{Tag: tag, SessionID: "s-2", Transcript: "/t/s-2.jsonl", Source: "clear"})
	if sf := only[messages.IMStopFollowing](t, eff); sf.Path != "/t/s-1.jsonl" {
		t.Fatalf("stop %+v", sf)
	}
	ft := only[messages.IMFollowTranscript](t, eff)
	if ft.Path != "/t/s-2.jsonl" || ft.Offset != 0 || ft.SessionID != "s-2" || ft.Tag != tag {
		t.Fatalf("follow %+v: the new session's transcript from its start", ft)
	}
	if h.s.Info.SessionID != "s-2" || h.s.Transcript != "/t/s-2.jsonl" || h.s.Offset != 0 {
		t.Fatalf("binding %+v %+v %s@%d", h.s.Info, h.s.Chat, h.s.Transcript, h.s.Offset)
	}
	eff = h.send(&messages.IMTranscriptRead{Path: "/t/s-1.jsonl", From: 300, To: 400, Replies: []string{"late from the old"}, Ends: []int64{400}})
	if len(chatTexts(eff)) != 0 {
		t.Fatalf("the old transcript is no longer relayed: %v", chatTexts(eff))
	}
	eff = h.send(&messages.IMTranscriptRead{Path: "/t/s-2.jsonl", From: 0, To: 120, Replies: []string{"new"}, Ends: []int64{120}})
	if got := chatTexts(eff); len(got) != 1 || got[0] != "new" {
		t.Fatalf("the new session's reply: %v", got)
	}
}

// The follower tells a binding of its window's hook entry whenever the
// hook map is written: each entry is decided once, so a binding that
// moved on by itself (a session picked in the chat) is not sent back to
// the entry's session, and a new entry (a /resume) is taken.
func TestAHookEntryIsDecidedOnce(t *testing.T) {
	h := newHarness(t)
	h.bind()
	tag := h.s.Tag
	clear := &messages.IMSessionChanged{Tag: tag, SessionID: "s-2", Transcript: "/t/s-2.jsonl", Source: "clear", Updated: 1000}
	only[messages.IMFollowTranscript](t, h.send(clear))
	// The binding moves on by itself, as a session picked in the chat does.
	h.deliverChat(h.send(&messages.IMAgentSessionFound{WindowID: h.s.Window.WindowID, SessionID: "s-3", Transcript: "/t/s-3.jsonl"}))
	if h.s.Info.SessionID != "s-3" {
		t.Fatalf("the binding did not move to s-3 (session %s)", h.s.Info.SessionID)
	}
	if eff := h.send(clear); len(eff) != 0 || h.s.Info.SessionID != "s-3" {
		t.Fatalf("the same hook entry told again: %s, session %s", describe(eff), h.s.Info.SessionID)
	}
	resume := &messages.IMSessionChanged{Tag: tag, SessionID: "s-2", Transcript: "/t/s-2.jsonl", Source: "resume", Offset: 50, Updated: 2000}
	if ft := only[messages.IMFollowTranscript](t, h.send(resume)); ft.Path != "/t/s-2.jsonl" || ft.Offset != 50 {
		t.Fatalf("the resume: follow %+v", ft)
	}
}

// A binding answers each read with the offset it journaled for the
// transcript, which is where the follower reads on; a transcript it does
// not follow is answered as such, and not read for it any more.
func TestATranscriptReadIsAnsweredWithTheJournaledOffset(t *testing.T) {
	h := newHarness(t)
	h.bind()
	at := func(m *messages.IMTranscriptRead) *messages.IMTranscriptAt {
		t.Helper()
		s, d := kindtest.Step[State](t, h.k, h.s, m, h.now)
		h.s = s
		h.deliverChat(d.Effects)
		a, ok := d.Reply.(*messages.IMTranscriptAt)
		if !ok {
			t.Fatalf("reply %T", d.Reply)
		}
		return a
	}
	if a := at(&messages.IMTranscriptRead{Path: "/t/s-1.jsonl", From: 0, To: 300, Replies: []string{"one"}, Ends: []int64{300}}); !a.Following || a.Offset != 300 {
		t.Fatalf("after a read: %+v", a)
	}
	// Read again from before (a follower restarted): the journaled offset.
	if a := at(&messages.IMTranscriptRead{Path: "/t/s-1.jsonl", From: 0, To: 120, Replies: []string{"one"}, Ends: []int64{120}}); !a.Following || a.Offset != 300 {
		t.Fatalf("after a repeated read: %+v", a)
	}
	if a := at(&messages.IMTranscriptRead{Path: "/t/other.jsonl", From: 0, To: 10}); a.Following {
		t.Fatalf("a transcript the binding does not follow: %+v", a)
	}
	if s, d := kindtest.Step[State](t, h.k, h.s, &messages.IMFollows{Path: "/t/s-1.jsonl"}, h.now); d.Reply != true || s.Transcript != "/t/s-1.jsonl" {
		t.Fatalf("IMFollows of its own transcript answered %v", d.Reply)
	}
}

func TestTheLaunchTimeReachesEverySessionSearch(t *testing.T) {
	h := newHarness(t)
	cw := h.toWindow("hi", "/home/u/proj")
	h.send(&messages.IMWindowCreated{Tag: cw.Tag, WindowID: "@1"})
	h.send(&messages.IMAgentSessionsListed{})
	if h.s.Setup.Since != h.now.UnixMilli() {
		t.Fatalf("launched at %d, want %d", h.s.Setup.Since, h.now.UnixMilli())
	}
	fa := only[messages.IMFindAgentSession](t, h.send(&messages.IMAgentLaunched{WindowID: "@1"}))
	if fa.Since != h.now.UnixMilli() {
		t.Fatalf("find %+v: no launch time", fa)
	}
	h.deliverChat(h.send(&messages.IMAgentSessionFound{WindowID: "@1"}))
	if h.s.Info.Since != h.now.UnixMilli() {
		t.Fatalf("bound with launch time %d", h.s.Info.Since)
	}
	h.now = h.now.Add(time.Hour)
	if fb := h.s.findBound(); fb.Since != h.s.Info.Since {
		t.Fatalf("a later search %+v forgets the launch time", fb)
	}
}

func TestATranscriptReadAgainFromItsStartIsRelayed(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.deliverChat(h.send(&messages.IMTranscriptRead{Path: "/t/s-1.jsonl", From: 0, To: 900, Replies: []string{"old"}, Ends: []int64{900}}))
	// Truncated: the follower reads from 0 and says so.
	eff := h.send(&messages.IMTranscriptRead{Path: "/t/s-1.jsonl", From: 0, To: 100, Replies: []string{"after the truncation"}, Ends: []int64{100}, Reset: true})
	if got := chatTexts(eff); len(got) != 1 || got[0] != "after the truncation" || h.s.Offset != 100 {
		t.Fatalf("relayed %v, offset %d", got, h.s.Offset)
	}
	// Without Reset, a read below the offset is one from before.
	h.deliverChat(eff)
	if got := chatTexts(h.send(&messages.IMTranscriptRead{Path: "/t/s-1.jsonl", From: 0, To: 100, Replies: []string{"again"}, Ends: []int64{100}})); len(got) != 0 {
		t.Fatalf("relayed a read from before: %v", got)
	}
}

func TestAMessageRefusedForGoodIsShownInTheView(t *testing.T) {
	h := newHarness(t)
	h.bind()
	eff := h.send(&messages.IMTranscriptRead{Path: "/t/s-1.jsonl", From: 0, To: 10, Replies: []string{"a reply"}, Ends: []int64{10}})
	sc := only[messages.IMSendChat](t, eff)
	h.send(&messages.IMChatSent{Seq: sc.Seq, Err: "Bad Request: message thread not found", Permanent: true})
	if v := h.k.View(h.s).(View); v.Refused != "Bad Request: message thread not found" || v.Unsent != 0 {
		t.Fatalf("view %+v: the refusal is not shown", v)
	}
}

// listed reports whether e is a timer or of a type k's Effects list.
func listed(k *Kind, e any) bool {
	switch e.(type) {
	case *actors.StartTimer, *actors.CancelTimer, *actors.Send:
		return true
	}
	for _, l := range k.Effects() {
		if reflect.TypeOf(l) == reflect.TypeOf(e) {
			return true
		}
	}
	return false
}

// Every type marked as a binding's effect is in the kind's Effects list
// (which supervisor.Start checks for handlers), and the other way round
// (the list's element type): so no effect a binding may release goes
// unhandled.
func TestEveryBindingEffectIsListed(t *testing.T) {
	marked := markedTypes(t, "isIMBindingEffect")
	var list []string
	for _, e := range New(Config{}).Effects() {
		list = append(list, reflect.TypeOf(e).Elem().Name())
	}
	slices.Sort(marked)
	slices.Sort(list)
	if len(marked) == 0 || !slices.Equal(marked, list) {
		t.Fatalf("marked as effects %v\nlisted %v", marked, list)
	}
}

// Every type marked as a binding's event is registered (so it can be
// journaled) and known to Apply (which returns a new state for it).
func TestEveryBindingEventIsRegisteredAndApplied(t *testing.T) {
	event := reflect.TypeFor[Event]()
	k := New(Config{})
	marked := 0
	for _, typ := range messages.Registered() {
		if !reflect.PointerTo(typ).Implements(event) {
			continue
		}
		marked++
		s := &State{}
		if k.Apply(s, reflect.New(typ).Interface()) == s {
			t.Errorf("Apply does not know the event %v", typ)
		}
	}
	declared := len(markedTypes(t, "isIMBindingEvent"))
	if marked == 0 || marked != declared {
		t.Fatalf("%d events marked in markers.go, %d of them registered", declared, marked)
	}
}

// markedTypes are the types messages/markers.go gives the marker method.
func markedTypes(t *testing.T, method string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", "messages", "markers.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil && fn.Name.Name == method {
			out = append(out, fn.Recv.List[0].Type.(*ast.StarExpr).X.(*ast.Ident).Name)
		}
	}
	return out
}
