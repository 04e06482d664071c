package imbinding

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// liveHarness is a bound binding that shows turns live, edited at most
// every 3s.
func liveHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.k = New(Config{Agents: []string{"claude", "codex"}, Resumable: map[string]bool{"claude": true}, RenameTimeout: time.Minute,
		Live: true, LiveEvery: 3 * time.Second, AlertAfter: time.Minute})
	h.s = h.k.Initial(testKey)
	h.bind()
	return h
}

// read delivers transcript items as the follower does, after offset at.
func (h *harness) read(at int64, items ...messages.IMTurnItem) []any {
	h.t.Helper()
	ends := make([]int64, len(items))
	for i := range ends {
		ends[i] = at + int64(i) + 1
	}
	return h.deliverLive(h.send(&messages.IMTranscriptRead{Path: h.s.Transcript, From: at, To: at + int64(len(items)), Items: items, ItemEnds: ends}))
}

// deliverLive answers the chat messages of effects as taken, and leaves
// the live effects to the test.
func (h *harness) deliverLive(effects []any) []any {
	var rest []any
	for _, e := range effects {
		if _, ok := e.(*messages.IMSendChat); ok {
			rest = append(rest, e)
			rest = append(rest, h.deliverLive(h.deliverChat([]any{e}))...)
			continue
		}
		rest = append(rest, e)
	}
	return rest
}

func tool(id, text string) messages.IMTurnItem {
	return messages.IMTurnItem{Kind: messages.TurnTool, ID: id, Text: text}
}

func result(id, outcome string) messages.IMTurnItem {
	return messages.IMTurnItem{Kind: messages.TurnResult, ID: id, Outcome: outcome}
}

func text(s string) messages.IMTurnItem { return messages.IMTurnItem{Kind: messages.TurnText, Text: s} }

// A turn shows live: the first tool call sends the live message (at
// once), what follows while it is in flight and within the interval waits
// and goes out as one edit of the newest state; the end sends the answer
// once, as a message that notifies, with how long it took, and edits the
// live message to its summary.
func TestATurnIsOneLiveMessageEditedAtMostOncePerInterval(t *testing.T) {
	h := liveHarness(t)
	h.typeOne("fix the test")
	send := only[messages.IMLiveSend](t, h.read(0, messages.IMTurnItem{Kind: messages.TurnUser}, tool("t1", "▸ Bash: go test")))
	if !strings.HasPrefix(send.Text, "▸ Bash: go test\n") {
		t.Fatalf("live message %q", send.Text)
	}
	none[messages.IMLiveEdit](t, h.read(2, result("t1", "✗ exit 1"), tool("t2", "▸ Edit: x.go")))
	eff := h.send(&messages.IMLiveSent{Rev: send.Rev, Turn: send.Turn, MessageID: "m9"})
	if st := only[actors.StartTimer](t, eff); st.Name != timerLive || st.After != 3*time.Second {
		t.Fatalf("timer %+v", st)
	}
	none[messages.IMLiveEdit](t, h.read(4, text("Found it: a sleep.")))
	h.now = h.now.Add(3 * time.Second)
	edit := only[messages.IMLiveEdit](t, h.send(&actors.Tick{Name: timerLive}))
	for _, want := range []string{"▸ Bash: go test ✗ exit 1", "▸ Edit: x.go", "Found it: a sleep.", "⏳ working, 3s"} {
		if edit.MessageID != "m9" || !strings.Contains(edit.Text, want) {
			t.Fatalf("edit %+v, want %q in message m9", edit, want)
		}
	}
	none[actors.StartTimer](t, h.send(&messages.IMLiveSent{Rev: edit.Rev, Turn: edit.Turn, MessageID: "m9"})) // nothing newer
	h.now = h.now.Add(2 * time.Minute)
	eff = h.read(5, result("t2", "✓"), text("Fixed: it polls now."), messages.IMTurnItem{Kind: messages.TurnEnd})
	var answer *messages.IMSendChat
	for _, e := range eff {
		if sc, ok := e.(*messages.IMSendChat); ok {
			answer = sc
		}
	}
	if answer == nil || answer.Silent || !strings.HasPrefix(answer.Text, "Fixed: it polls now.") || !strings.Contains(answer.Text, "⏱ 2m 3s") {
		t.Fatalf("the answer: %+v in %s", answer, describe(eff))
	}
	summary := only[messages.IMLiveEdit](t, eff)
	if summary.MessageID != "m9" || summary.Text != "✓ 2 tool calls (1 failed), 2m 3s" {
		t.Fatalf("summary %+v", summary)
	}
	if h.s.Turn != nil {
		t.Fatalf("the turn is still under way: %+v", h.s.Turn)
	}
}

// A restart in the middle of a turn goes on in the live message it had
// (the edit in flight is made again), and the answer goes out once.
func TestATurnGoesOnInItsLiveMessageAfterARestart(t *testing.T) {
	h := liveHarness(t)
	h.typeOne("go")
	send := only[messages.IMLiveSend](t, h.read(0, tool("t1", "▸ Bash: make")))
	h.send(&messages.IMLiveSent{Rev: send.Rev, Turn: send.Turn, MessageID: "m5"})
	edit := only[messages.IMLiveEdit](t, h.read(1, result("t1", "✓")))
	// The daemon dies with the edit in flight; the journal holds the turn.
	again := only[messages.IMLiveEdit](t, h.send(&actors.Recovered{}))
	if again.MessageID != "m5" || again.Text != edit.Text {
		t.Fatalf("after the restart: %+v, want %+v again", again, edit)
	}
	eff := h.read(2, text("built"), messages.IMTurnItem{Kind: messages.TurnEnd})
	if got := chatTexts(eff); len(got) != 1 || got[0] != "built" {
		t.Fatalf("the answer: %q", got)
	}
	none[messages.IMLiveEdit](t, eff) // the edit in flight comes first
	summary := only[messages.IMLiveEdit](t, h.send(&messages.IMLiveSent{Rev: again.Rev, Turn: again.Turn, MessageID: "m5"}))
	if !strings.HasPrefix(summary.Text, "✓ 1 tool call,") || h.s.Turn != nil {
		t.Fatalf("summary %+v, turn %+v", summary, h.s.Turn)
	}
	if got := chatTexts(h.send(&actors.Recovered{})); len(got) != 0 {
		t.Fatalf("a restart after the turn said %q again", got)
	}
}

// The summary a turn's live message shrinks to is owed until the chat
// takes it: an edit the chat could not take now (rate limited) is made
// again after a while, and after a restart; one it took, or refused for
// good, is not.
func TestATurnsSummaryIsEditedUntilTheChatTakesIt(t *testing.T) {
	h := liveHarness(t)
	h.typeOne("go")
	send := only[messages.IMLiveSend](t, h.read(0, tool("t1", "▸ Bash: make")))
	h.send(&messages.IMLiveSent{Rev: send.Rev, Turn: send.Turn, MessageID: "m5"})
	eff := h.read(1, result("t1", "✓"), text("built"), messages.IMTurnItem{Kind: messages.TurnEnd})
	summary := only[messages.IMLiveEdit](t, eff)
	h.deliverChat(eff)
	if summary.Rev != 0 || !strings.HasPrefix(summary.Text, "✓ 1 tool call,") || h.s.Summaries["m5"] != summary.Text {
		t.Fatalf("summary %+v, owed %v", summary, h.s.Summaries)
	}
	eff = h.send(&messages.IMLiveSent{MessageID: "m5", Err: "telegram: rate limited"})
	if st := only[actors.StartTimer](t, eff); st.Name != timerSummary {
		t.Fatalf("after a failed summary edit: %+v", st)
	}
	again := only[messages.IMLiveEdit](t, h.send(&actors.Tick{Name: timerSummary}))
	if again.MessageID != "m5" || again.Text != summary.Text {
		t.Fatalf("made again: %+v", again)
	}
	if again := only[messages.IMLiveEdit](t, h.send(&actors.Recovered{})); again.Text != summary.Text {
		t.Fatalf("after a restart: %+v", again)
	}
	h.send(&messages.IMLiveSent{MessageID: "m5"})
	if len(h.s.Summaries) != 0 {
		t.Fatalf("owed after the chat took it: %v", h.s.Summaries)
	}
	none[messages.IMLiveEdit](t, h.send(&actors.Recovered{}))
}

// A chat that cannot edit (the send is refused for good) gets the turn as
// messages: the newest text at once, then each text as it comes.
func TestATurnTheChatCannotShowLiveIsToldAsMessages(t *testing.T) {
	h := liveHarness(t)
	h.typeOne("go")
	send := only[messages.IMLiveSend](t, h.read(0, text("Looking."), tool("t1", "▸ Read: a.go")))
	if got := chatTexts(h.send(&messages.IMLiveSent{Rev: send.Rev, Turn: send.Turn, Err: "the chat cannot edit messages", Permanent: true})); len(got) != 1 || got[0] != "Looking." {
		t.Fatalf("said %q", got)
	}
	h.deliverChat(nil)
	eff := h.read(2, text("Done."), messages.IMTurnItem{Kind: messages.TurnEnd})
	none[messages.IMLiveEdit](t, eff)
	none[messages.IMLiveSend](t, eff)
}

// Messages typed while the agent works each get their answer: the
// agent's taking the next one ends the turn before it.
func TestEachMessageOfABusyAgentGetsItsAnswer(t *testing.T) {
	h := liveHarness(t)
	h.typeOne("one")
	h.typeOne("two")
	user := messages.IMTurnItem{Kind: messages.TurnUser}
	eff := h.read(0, user, text("answer one"), user, text("answer two"), messages.IMTurnItem{Kind: messages.TurnEnd})
	if got := chatTexts(eff); strings.Join(got, "|") != "answer one|answer two" {
		t.Fatalf("said %q", got)
	}
}

// A turn whose calls and end are read at once (it was over before it
// could be shown live) leaves its summary, silently, before its answer.
func TestATurnOverBeforeItShowedLeavesItsSummary(t *testing.T) {
	h := liveHarness(t)
	h.typeOne("go")
	var sends []*messages.IMSendChat
	for _, e := range h.read(0, tool("t1", "▸ Bash: ls"), result("t1", "✓"), text("two files"), messages.IMTurnItem{Kind: messages.TurnEnd}) {
		if sc, ok := e.(*messages.IMSendChat); ok {
			sends = append(sends, sc)
		}
	}
	if len(sends) != 2 || !sends[0].Silent || !strings.HasPrefix(sends[0].Text, "✓ 1 tool call,") || sends[1].Silent || sends[1].Text != "two files" {
		t.Fatalf("said %+v", sends)
	}
}

// A turn with more tool calls than a live message holds rolls over into a
// new live message: the full one keeps its lines (nothing is cut), the
// new one says what it continues.
func TestALongTurnRollsOverIntoANewLiveMessage(t *testing.T) {
	h := liveHarness(t)
	h.typeOne("go")
	send := only[messages.IMLiveSend](t, h.read(0, tool("t0", "▸ Bash: step 0")))
	h.send(&messages.IMLiveSent{Rev: send.Rev, Turn: send.Turn, MessageID: "m1"})
	var items []messages.IMTurnItem
	for i := 1; i <= 30; i++ {
		items = append(items, tool(fmt.Sprint("t", i), fmt.Sprint("▸ Bash: step ", i)))
	}
	eff := h.read(1, items...)
	rolled := only[messages.IMLiveEdit](t, eff)
	if rolled.MessageID != "m1" || !strings.HasPrefix(rolled.Text, "▸ Bash: step 0\n") || !strings.Contains(rolled.Text, "▸ Bash: step 29\n") ||
		strings.Contains(rolled.Text, "step 30") || !strings.HasSuffix(rolled.Text, "(continued below)") {
		t.Fatalf("the full message's last text: %q", rolled.Text)
	}
	next := only[messages.IMLiveSend](t, eff)
	if !strings.HasPrefix(next.Text, "(continued: 30 tool calls above)\n▸ Bash: step 30\n") {
		t.Fatalf("the new live message: %q", next.Text)
	}
	// The full message's last edit is owed until the chat takes it.
	if h.s.Summaries["m1"] != rolled.Text {
		t.Fatalf("owed: %v", h.s.Summaries)
	}
	h.send(&messages.IMLiveSent{MessageID: "m1", Err: "telegram: rate limited"})
	if again := only[messages.IMLiveEdit](t, h.send(&actors.Tick{Name: timerSummary})); again.Text != rolled.Text {
		t.Fatalf("made again: %+v", again)
	}
	// The turn ends while the new message's send is in flight, and the
	// chat refuses it for now: no live message holds the turn's end, so
	// its summary is said as a message, silently, once.
	eff = h.read(31, text("done"), messages.IMTurnItem{Kind: messages.TurnEnd})
	if got := chatTexts(eff); len(got) != 1 || got[0] != "done" {
		t.Fatalf("the answer: %q", got)
	}
	h.deliverChat(eff)
	eff = h.send(&messages.IMLiveSent{Rev: next.Rev, Turn: next.Turn, Err: "telegram: rate limited"})
	var summaries []*messages.IMSendChat
	for _, e := range eff {
		if sc, ok := e.(*messages.IMSendChat); ok && strings.HasPrefix(sc.Text, "✓ 31 tool calls,") && sc.Silent {
			summaries = append(summaries, sc)
		}
	}
	if len(summaries) != 1 || h.s.Turn != nil {
		t.Fatalf("the summary after the failed send: %s; turn %+v", describe(eff), h.s.Turn)
	}
}

// A turn that ends because the agent took the next message while its
// live message's first send was in flight owes that message its summary:
// the send's answer brings the id, and the summary is edited in.
func TestATurnEndedWhileItsLiveMessageWasSentGetsItsSummary(t *testing.T) {
	h := liveHarness(t)
	h.typeOne("one")
	send := only[messages.IMLiveSend](t, h.read(0, messages.IMTurnItem{Kind: messages.TurnUser}, tool("t1", "▸ Bash: make")))
	if send.Turn == 0 {
		t.Fatalf("the send names no turn: %+v", send)
	}
	h.typeOne("two")
	h.now = h.now.Add(time.Second)
	h.deliverChat(h.read(1, result("t1", "✓"), text("built"), messages.IMTurnItem{Kind: messages.TurnUser}))
	if h.s.Turn == nil || h.s.Turn.Since == send.Turn {
		t.Fatalf("the second turn did not begin: %+v", h.s.Turn)
	}
	summary := only[messages.IMLiveEdit](t, h.send(&messages.IMLiveSent{Rev: send.Rev, Turn: send.Turn, MessageID: "m7"}))
	if summary.MessageID != "m7" || !strings.HasPrefix(summary.Text, "✓ 1 tool call,") || h.s.Summaries["m7"] != summary.Text {
		t.Fatalf("summary %+v, owed %v", summary, h.s.Summaries)
	}
	if h.s.Turn == nil || h.s.Turn.MessageID != "" {
		t.Fatalf("the second turn took the first one's message: %+v", h.s.Turn)
	}
}

// The context share the transcript tells is kept (the newest of a read),
// journaled once per change, and shown on the chat's board; items read
// before are not taken again, and a new transcript starts unknown.
func TestTheContextShareReachesTheBoard(t *testing.T) {
	h := newHarness(t)
	h.bind()
	ctx := func(share int) messages.IMTurnItem {
		return messages.IMTurnItem{Kind: messages.TurnContext, Share: share}
	}
	eff := h.send(&messages.IMTranscriptRead{Path: "/t/s-1.jsonl", To: 80, Items: []messages.IMTurnItem{ctx(12), ctx(34)}, ItemEnds: []int64{40, 80}})
	row := only[messages.IMBoardRow](t, eff)
	if h.s.Context != "34%" || row.Context != "34%" {
		t.Fatalf("context %q, board row %+v", h.s.Context, row)
	}
	eff = h.send(&messages.IMTranscriptRead{Path: "/t/s-1.jsonl", From: 40, To: 120, Items: []messages.IMTurnItem{ctx(12), ctx(34)}, ItemEnds: []int64{80, 120}})
	none[messages.IMBoardRow](t, eff)
	if h.s.Context != "34%" {
		t.Fatalf("after a read of the same share: %q", h.s.Context)
	}
	h.send(&messages.IMAgentSessionFound{WindowID: "@1", SessionID: "s-2", Transcript: "/t/s-2.jsonl"})
	if h.s.Transcript != "/t/s-2.jsonl" || h.s.Context != "" {
		t.Fatalf("after a switch: transcript %q context %q", h.s.Transcript, h.s.Context)
	}
}

// The answer to an earlier turn's edit is not the new turn's, even with
// the revision the new turn's send has: the new turn keeps no message of
// the old one's, and takes its own send's.
func TestAnEarlierTurnsEditAnswerIsNotTheNewTurns(t *testing.T) {
	h := liveHarness(t)
	h.typeOne("one")
	send := only[messages.IMLiveSend](t, h.read(0, messages.IMTurnItem{Kind: messages.TurnUser}, tool("t1", "▸ Bash: make")))
	h.send(&messages.IMLiveSent{Rev: send.Rev, Turn: send.Turn, MessageID: "m1"})
	old := only[messages.IMLiveEdit](t, h.read(2, result("t1", "✓")))
	h.typeOne("two")
	h.now = h.now.Add(time.Second)
	eff := h.deliverLive(h.read(3, messages.IMTurnItem{Kind: messages.TurnUser}, tool("t2", "▸ Bash: ls")))
	next := only[messages.IMLiveSend](t, eff)
	h.send(&messages.IMLiveSent{Rev: next.Rev, Turn: old.Turn, MessageID: "m1"})
	if h.s.Turn == nil || h.s.Turn.MessageID != "" || h.s.Turn.Flight != next.Rev {
		t.Fatalf("the new turn took the old turn's answer: %+v", h.s.Turn)
	}
	h.send(&messages.IMLiveSent{Rev: next.Rev, Turn: next.Turn, MessageID: "m2"})
	if h.s.Turn.MessageID != "m2" {
		t.Fatalf("the new turn's own answer: %+v", h.s.Turn)
	}
}
