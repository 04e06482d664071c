package imbinding

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/thatch-run/thatch/actors/liveturn"
	"github.com/thatch-run/thatch/messages"
)

// The turn shown live (im.live = "turn"). A message typed and taken
// starts a turn (State.Turn); what the transcript says of it (texts, tool
// calls, their outcomes) is folded in, and one message in the thread
// shows it, sent silently at the first tool call and edited silently as
// the turn goes on: one send or edit in flight at a time, and after each
// at most one more per Config.LiveEvery, always the newest. When the
// agent ends its turn (its transcript says so, or the work ends) the
// newest text goes out as the final answer, through the outbox (the one
// message of the turn that notifies), and the live message shrinks to a
// summary. Everything is journaled: after a crash the turn goes on in the
// live message it had, and the final answer is sent once.

// timerLive is the edit interval's timer (and a failed edit's retry);
// timerSummary a failed summary edit's retry.
const (
	timerLive    = "live"
	timerSummary = "summary"
)

// liveRetry is how long a failed live send or edit waits.
const liveRetry = 10 * time.Second

// startTurn starts a turn shown live, unless one is under way (a prompt
// answered in the middle of a turn goes on with it).
func (p *plan) startTurn() {
	if p.k.cfg.Live && (p.S.Turn == nil || p.S.Turn.Ending) {
		p.nextTurn()
	}
}

// nextTurn finishes the turn under way, if any, and starts a new one. A
// turn is known by its start (sendKey), so the new one starts after the
// one before it, even within one millisecond.
func (p *plan) nextTurn() {
	at := p.now.UnixMilli()
	if t := p.S.Turn; t != nil {
		at = max(at, t.Since+1)
		p.finishTurn(false)
	}
	p.Event(&messages.IMTurnStarted{At: at})
}

// turnItems takes what the transcript said, fresh (not read before): into
// the turn under way, or as plain messages when none is shown live. A
// message of the user the agent took starts a new turn, and ends the one
// before it, if that one holds anything: so each message's answer goes
// out, however many were typed while the agent worked.
func (p *plan) turnItems(fresh []messages.IMTurnItem) {
	for len(fresh) > 0 {
		seg := fresh
		if i := slices.IndexFunc(fresh[1:], func(it messages.IMTurnItem) bool { return it.Kind == messages.TurnUser }); i >= 0 {
			seg, fresh = fresh[:i+1], fresh[i+1:]
		} else {
			fresh = nil
		}
		p.turnSegment(seg)
	}
}

// turnSegment takes items of which only the first may be a user's
// message.
func (p *plan) turnSegment(items []messages.IMTurnItem) {
	if items[0].Kind == messages.TurnUser {
		if !p.k.cfg.Live {
			return
		}
		if t := p.S.Turn; t == nil || t.Ending || t.Text != "" || len(t.Lines) > 0 {
			p.endTurn()
			p.nextTurn()
		}
		items = items[1:]
	}
	if len(items) == 0 {
		return
	}
	t := p.S.Turn
	if t == nil || t.Off || t.Ending {
		p.sayItems(items)
		return
	}
	p.Event(&messages.IMTurnRead{Items: items})
	if liveturn.Ends(items) {
		p.endTurn()
		return
	}
	p.showLive()
}

// sayItems says texts as messages, and tool calls as lines when
// im.show_tools asks for them (silently): im.live = "off".
func (p *plan) sayItems(items []messages.IMTurnItem) {
	var out []messages.IMOutEntry
	for _, it := range items {
		switch {
		case it.Kind == messages.TurnText && strings.TrimSpace(it.Text) != "":
			out = append(out, messages.IMOutEntry{Text: it.Text, Markdown: true})
		case it.Kind == messages.TurnTool && p.k.cfg.ShowTools:
			out = append(out, messages.IMOutEntry{Text: it.Text, Silent: true})
		}
	}
	if len(out) > 0 {
		p.say(out...)
	}
}

// showLive sends or edits the live message when it shows less than the
// turn holds, nothing is in flight and the interval has passed.
func (p *plan) showLive() {
	t := p.S.Turn
	if t == nil || !t.Live() || t.Flight != 0 || t.Waiting || t.Rev == t.Shown || t.Ending {
		return
	}
	if t.Full() {
		// The full message keeps its lines (an edit owed like a summary:
		// tried again until the chat takes it); the turn goes on in a new
		// one.
		p.owe(t.MessageID, t.Rolled())
		p.Event(&messages.IMLiveRolled{From: t.From + liveturn.MaxLines})
		t = p.S.Turn
	}
	p.Event(&messages.IMLiveReleased{Rev: t.Rev})
	text := t.Render(p.now)
	if t.MessageID == "" {
		p.Effect(&messages.IMLiveSend{Text: text, Rev: t.Rev, Turn: t.Since})
		return
	}
	p.Effect(&messages.IMLiveEdit{MessageID: t.MessageID, Text: text, Rev: t.Rev, Turn: t.Since})
}

// liveSent takes the chat's answer to a live send or edit.
func (p *plan) liveSent(m *messages.IMLiveSent) {
	if m.Rev == 0 {
		p.summarySent(m)
		return
	}
	if key := sendKey(m.Turn, m.Rev); p.S.Summaries[key] != "" {
		p.orphanSent(m, key)
		return
	}
	t := p.S.Turn
	if t == nil || m.Rev != t.Flight || m.Turn != t.Since {
		return // from before a restart, or another turn's
	}
	switch {
	case m.Err != "" && m.Permanent:
		p.Event(&messages.IMLiveFailed{Off: true})
		if !t.Ending && t.Text != "" {
			p.say(messages.IMOutEntry{Text: t.Text, Markdown: true}) // the newest text, since it is not shown live
		}
	case m.Err != "":
		p.Event(&messages.IMLiveFailed{})
		p.Event(&messages.IMLiveWaiting{On: true})
		p.timer(timerLive, liveRetry)
	default:
		p.Event(&messages.IMLiveShown{Rev: m.Rev, MessageID: m.MessageID})
		if n := p.S.Turn; !n.Ending && n.Rev > n.Shown {
			p.Event(&messages.IMLiveWaiting{On: true})
			p.timer(timerLive, p.k.cfg.LiveEvery)
		}
	}
	if p.S.Turn.Ending {
		p.finishTurn(false)
	}
}

// liveTick sends the newest state once the interval has passed.
func (p *plan) liveTick() {
	if t := p.S.Turn; t != nil && t.Waiting {
		p.Event(&messages.IMLiveWaiting{})
		p.showLive()
	}
}

// endTurn sends the final answer and ends the turn once nothing of it is
// in flight.
func (p *plan) endTurn() {
	t := p.S.Turn
	if t == nil || t.Ending {
		return
	}
	p.Event(&messages.IMTurnEnding{})
	said := t.MessageID == "" && t.Flight == 0 && t.Live()
	if said {
		// Over before it was shown live: its summary, silently, still
		// says what it did (before the answer, as a live message would).
		p.say(messages.IMOutEntry{Text: t.Summary(p.now), Silent: true})
	}
	if t.Text != "" && !t.Off {
		text := t.Text
		if took := p.now.Sub(time.UnixMilli(t.Since)); p.k.cfg.AlertAfter > 0 && took > p.k.cfg.AlertAfter {
			text += "\n\n⏱ " + liveturn.Took(t.Since, p.now)
		}
		p.say(messages.IMOutEntry{Text: text, Markdown: true})
	}
	if t.Flight == 0 {
		p.finishTurn(said)
	}
}

// finishTurn shrinks the live message to its summary and forgets the
// turn. said: endTurn already said the summary. With no live message in
// the chat, the summary is said as a message of its own; with its first
// send in flight (a new turn began meanwhile), it is owed to the message
// that send makes.
func (p *plan) finishTurn(said bool) {
	t := p.S.Turn
	if t == nil {
		return
	}
	switch {
	case t.Off || !t.Live():
	case t.MessageID != "":
		p.owe(t.MessageID, t.Summary(p.now))
	case t.Flight != 0:
		p.Event(&messages.IMSummaryOwed{MessageID: sendKey(t.Since, t.Flight), Text: t.Summary(p.now)})
	case !said:
		p.say(messages.IMOutEntry{Text: t.Summary(p.now), Silent: true})
	}
	p.Event(&messages.IMTurnEnded{})
}

// owe edits the live message id into text, journaled as owed until the
// chat takes the edit or refuses it for good.
func (p *plan) owe(id, text string) {
	p.Event(&messages.IMSummaryOwed{MessageID: id, Text: text})
	p.Effect(&messages.IMLiveEdit{MessageID: id, Text: text})
}

// sendKey names, among the owed summaries, the live message that the
// send of revision rev of the turn begun at since makes: owed its summary
// before the chat gave it an id.
func sendKey(since int64, rev uint64) string {
	return "send:" + strconv.FormatInt(since, 10) + ":" + strconv.FormatUint(rev, 10)
}

// orphanSent takes the answer to the send of a turn that ended while it
// was in flight: the message it made is owed its summary; if it made
// none, the summary is said as a message.
func (p *plan) orphanSent(m *messages.IMLiveSent, key string) {
	text := p.S.Summaries[key]
	p.Event(&messages.IMSummaryDone{MessageID: key})
	if m.Err == "" && m.MessageID != "" {
		p.owe(m.MessageID, text)
		return
	}
	p.say(messages.IMOutEntry{Text: text, Silent: true})
}

// summarySent takes the chat's answer to a summary's edit: done, or
// refused for good; else it is tried again after liveRetry (all owed
// ones, on the summary timer).
func (p *plan) summarySent(m *messages.IMLiveSent) {
	if _, owed := p.S.Summaries[m.MessageID]; !owed {
		return
	}
	if m.Err == "" || m.Permanent {
		p.Event(&messages.IMSummaryDone{MessageID: m.MessageID})
		return
	}
	p.timer(timerSummary, liveRetry)
}

// editSummaries edits every owed summary again (after a failed edit, or
// a restart). A send's answer that a restart lost cannot be had again:
// its summary is said as a message.
func (p *plan) editSummaries(restart bool) {
	for _, id := range slices.Sorted(maps.Keys(p.S.Summaries)) {
		text := p.S.Summaries[id]
		switch {
		case !strings.HasPrefix(id, "send:"):
			p.Effect(&messages.IMLiveEdit{MessageID: id, Text: text})
		case restart:
			p.Event(&messages.IMSummaryDone{MessageID: id})
			p.say(messages.IMOutEntry{Text: text, Silent: true})
		}
	}
}

// turnChanged ends the turn when the decision ended the agent's work (the
// window still with no prompt, gone, or workMax): the agent said nothing
// more, so its newest text is its answer.
func (p *plan) turnChanged(before *State) {
	if before.Work != 0 && p.S.Work == 0 {
		p.endTurn()
	}
}

// recoveredTurn goes on with the turn after a restart: what was in flight
// is sent again (the edit's timer did not survive either).
func (p *plan) recoveredTurn() {
	p.editSummaries(true)
	t := p.S.Turn
	if t == nil {
		return
	}
	if t.Flight != 0 {
		p.Event(&messages.IMLiveFailed{})
	}
	if t.Waiting {
		p.Event(&messages.IMLiveWaiting{})
	}
	if t.Ending {
		p.finishTurn(false)
		return
	}
	p.showLive()
}
