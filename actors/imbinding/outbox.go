package imbinding

import (
	"fmt"
	"strings"
	"time"

	"github.com/thatch-run/thatch/actors/chatout"
	"github.com/thatch-run/thatch/messages"
)

// The binding's plan is its outbox's (chatout.Plan).

// OutboxEvent journals an outbox event.
func (p *plan) OutboxEvent(ev messages.OutboxEvent) { p.Event(ev) }

// OutboxEffect releases an outbox effect.
func (p *plan) OutboxEffect(e messages.OutboxEffect) { p.Effect(e) }

// Timer starts the outbox's timer.
func (p *plan) Timer(d time.Duration) { p.timer(chatout.Timer, d) }

// say queues chat messages and releases them.
func (p *plan) say(entries ...messages.IMOutEntry) { chatout.Say(p, entries...) }

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

// Box is the binding's outbox, for chatout: the binding's decision is
// the outbox's Plan.
func (p *plan) Box() *chatout.Box { return &p.S.Box }

// sendHead releases the outbox's head (if any), in flight or not.
func (p *plan) sendHead() { chatout.SendHead(p) }

// chatSent takes the chat's answer for the entry in flight; a chat that
// is gone ends the binding.
func (p *plan) chatSent(m *messages.IMChatSent) {
	if chatout.Sent(p, m) {
		p.end("the chat is gone: "+m.Err, false)
	}
}

// chatPartSent records the parts of a long entry sent so far.
func (p *plan) chatPartSent(m *messages.IMChatPartSent) { chatout.PartSent(p, m) }

// transcript relays the agent's replies read from its transcript.
// It answers with the offset it journaled, where the follower reads on.
func (p *plan) transcript(m *messages.IMTranscriptRead) {
	s := p.S
	following := m.Path == s.Transcript && s.Phase != PhaseEnded
	defer func() { p.Reply(&messages.IMTranscriptAt{Following: following, Offset: p.S.Offset}) }()
	if m.Path != s.Transcript || (m.To <= s.Offset && !m.Reset) {
		return // another file, or read before (a restart reads again)
	}
	p.Event(&messages.IMRepliesRead{To: m.To})
	if len(m.Items) > 0 {
		var fresh []messages.IMTurnItem
		share := -1
		for i, it := range m.Items {
			switch {
			case !m.Reset && len(m.ItemEnds) == len(m.Items) && m.ItemEnds[i] <= s.Offset:
				// read before: the batch was read again after a delivery that landed
			case it.Kind == messages.TurnContext:
				share = it.Share
			default:
				fresh = append(fresh, it)
			}
		}
		if share >= 0 && fmt.Sprintf("%d%%", share) != s.Context {
			p.Event(&messages.IMContextUsed{Share: share})
		}
		if len(fresh) > 0 {
			p.turnItems(fresh)
		}
		return
	}
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
