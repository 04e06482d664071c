package imbinding

import (
	"strings"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// say queues chat messages and releases them.
func (p *plan) say(entries ...messages.IMOutEntry) {
	p.event(&messages.IMOutboxAdded{Seq: p.s.NextSeq, Entries: entries})
	p.releaseOutbox()
}

// Clip shortens s to at most n runes and marks the cut with "…": the way
// a chat message quotes what a user typed or a screen showed. The front
// end quotes with it too (im/front may import this package; the decision
// cores may import no front end), so that every quote is cut alike.
func Clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// releaseOutbox hands the outbox's head to the front end unless an entry
// is in flight: one at a time, so that the chat gets them in order and a
// retry never overtakes or repeats the ones after it.
func (p *plan) releaseOutbox() {
	if p.s.OutFlight == 0 {
		p.sendHead()
	}
}

// sendHead releases the outbox's head (if any), in flight or not.
func (p *plan) sendHead() {
	if len(p.s.Outbox) == 0 {
		return
	}
	head := p.s.Outbox[0]
	p.event(&messages.IMOutboxReleased{Seq: head.Seq})
	p.effect(p.s.send(head))
}

func (s *State) send(o Out) *messages.IMSendChat {
	return &messages.IMSendChat{Seq: o.Seq, Text: o.Text, Markdown: o.Markdown, Buttons: o.Buttons, FromPart: o.Parts}
}

func (p *plan) chatSent(m *messages.IMChatSent) {
	if p.s.OutFlight != m.Seq+1 {
		return // not the entry in flight: an answer from before a restart
	}
	switch {
	case m.Gone:
		p.event(&messages.IMOutboxSent{Seq: m.Seq, Refused: m.Err})
		p.end("the chat is gone: "+m.Err, false)
		return
	case m.Err != "" && !m.Permanent:
		p.effect(&actors.StartTimer{Name: timerOutbox, After: outboxRetry})
		return
	case m.Err != "":
		p.event(&messages.IMOutboxSent{Seq: m.Seq, Refused: m.Err})
	default:
		p.event(&messages.IMOutboxSent{Seq: m.Seq, MessageID: m.MessageID})
	}
	p.releaseOutbox()
}

// chatPartSent records the parts of a long entry sent so far: after a
// failure of a later part, or a restart, the entry goes on from the next
// part instead of showing the sent ones twice.
func (p *plan) chatPartSent(m *messages.IMChatPartSent) {
	s := p.s
	if s.OutFlight != m.Seq+1 || len(s.Outbox) == 0 || s.Outbox[0].Seq != m.Seq || m.Parts <= s.Outbox[0].Parts {
		return
	}
	p.event(&messages.IMOutboxPartSent{Seq: m.Seq, Parts: m.Parts})
}

// transcript relays the agent's replies read from its transcript.
func (p *plan) transcript(m *messages.IMTranscriptRead) {
	s := p.s
	if m.Path != s.Transcript || (m.To <= s.Offset && !m.Reset) {
		return // another file, or read before (a restart reads again)
	}
	p.event(&messages.IMRepliesRead{To: m.To})
	var out []messages.IMOutEntry
	for i, r := range m.Replies {
		if !m.Reset && len(m.Ends) == len(m.Replies) && m.Ends[i] <= s.Offset {
			continue // relayed before: the batch was read again after a delivery that landed
		}
		if strings.TrimSpace(r) != "" {
			out = append(out, messages.IMOutEntry{Text: r, Markdown: true})
		}
	}
	if len(out) > 0 {
		p.say(out...)
	}
}
