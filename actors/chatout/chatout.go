// Package chatout is the outbox of chat messages a decision core keeps:
// what the core says to its thread is journaled first (IMOutboxAdded),
// released one entry at a time in order (IMSendChat, which the IM front
// end sends on the entity's chat lane), and dropped only once the chat
// took it or refused it for good; a failed send is tried again after
// Retry, a restart sends the head again, and a long entry goes on from
// the part where it stopped. The IM binding (actors/imbinding) and the
// thread notices (actors/imnotice) keep one each.
//
// A kind embeds Box in its state (its fields keep their JSON names),
// folds the outbox's events with Box.Apply, and decides through a Plan.
package chatout

import (
	"slices"
	"time"

	"github.com/thatch-run/thatch/messages"
)

// Retry is how long a chat message that could not be sent waits before
// it is tried again.
const Retry = 10 * time.Second

// Timer is the name of the retry's timer: a kind passes its Tick to
// SendHead.
const Timer = "outbox"

// Out is a chat message in the outbox.
type Out struct {
	Seq uint64 `json:"seq"`
	messages.IMOutEntry
	// Parts is how many parts of a long entry are sent already.
	Parts int `json:"parts,omitempty"`
}

// Box is the outbox part of a kind's state.
type Box struct {
	Outbox  []Out  `json:"outbox,omitempty"`
	NextSeq uint64 `json:"nextSeq,omitempty"`
	// OutFlight is the outbox entry being sent, plus one (0: none).
	OutFlight uint64 `json:"outFlight,omitempty"`
}

// Plan is the decision under way of a kind that holds a Box.
type Plan interface {
	// OutboxEvent journals ev and applies it at once.
	OutboxEvent(ev messages.OutboxEvent)
	// OutboxEffect releases e.
	OutboxEffect(e messages.OutboxEffect)
	// Timer starts the outbox's timer (Timer) after d.
	Timer(d time.Duration)
	// Box is the outbox as the decision's events so far left it.
	Box() *Box
}

// Say queues entries and releases the head unless an entry is in flight.
func Say(p Plan, entries ...messages.IMOutEntry) {
	p.OutboxEvent(&messages.IMOutboxAdded{Seq: p.Box().NextSeq, Entries: entries})
	Release(p)
}

// Release hands the head to the front end unless an entry is in flight:
// one at a time, so that the chat gets them in order and a retry never
// overtakes or repeats the ones after it.
func Release(p Plan) {
	if p.Box().OutFlight == 0 {
		SendHead(p)
	}
}

// SendHead releases the head (if any), in flight or not: after a restart,
// or when the retry's timer fires.
func SendHead(p Plan) {
	b := p.Box()
	if len(b.Outbox) == 0 {
		return
	}
	head := b.Outbox[0]
	p.OutboxEvent(&messages.IMOutboxReleased{Seq: head.Seq})
	p.OutboxEffect(&messages.IMSendChat{Seq: head.Seq, Text: head.Text, Markdown: head.Markdown, Buttons: head.Buttons, Silent: head.Silent, FromPart: head.Parts})
}

// Sent takes the chat's answer for the entry in flight: sent, refused for
// good (dropped, its reason recorded), or failed (tried again after
// Retry). It reports gone when the chat is gone: the entry is dropped
// and nothing more is released, for the kind to end.
func Sent(p Plan, m *messages.IMChatSent) (gone bool) {
	if p.Box().OutFlight != m.Seq+1 {
		return false // not the entry in flight: an answer from before a restart
	}
	switch {
	case m.Gone:
		p.OutboxEvent(&messages.IMOutboxSent{Seq: m.Seq, Refused: m.Err})
		return true
	case m.Err != "" && !m.Permanent:
		p.Timer(Retry)
		return false
	case m.Err != "":
		p.OutboxEvent(&messages.IMOutboxSent{Seq: m.Seq, Refused: m.Err})
	default:
		p.OutboxEvent(&messages.IMOutboxSent{Seq: m.Seq, MessageID: m.MessageID})
	}
	Release(p)
	return false
}

// PartSent records the parts of a long entry sent so far: after a failure
// of a later part, or a restart, the entry goes on from the next part
// instead of showing the sent ones twice.
func PartSent(p Plan, m *messages.IMChatPartSent) {
	b := p.Box()
	if b.OutFlight != m.Seq+1 || len(b.Outbox) == 0 || b.Outbox[0].Seq != m.Seq || m.Parts <= b.Outbox[0].Parts {
		return
	}
	p.OutboxEvent(&messages.IMOutboxPartSent{Seq: m.Seq, Parts: m.Parts})
}

// Apply returns the box after ev, and whether ev is an outbox event; b is
// left as it was.
func (b Box) Apply(ev any) (Box, bool) {
	switch e := ev.(type) {
	case *messages.IMOutboxAdded:
		b.Outbox = slices.Clip(b.Outbox)
		for i, entry := range e.Entries {
			b.Outbox = append(b.Outbox, Out{Seq: e.Seq + uint64(i), IMOutEntry: entry})
		}
		b.NextSeq = e.Seq + uint64(len(e.Entries))
	case *messages.IMOutboxReleased:
		b.OutFlight = e.Seq + 1
	case *messages.IMOutboxPartSent:
		if i := b.index(e.Seq); i >= 0 {
			b.Outbox = slices.Clone(b.Outbox)
			b.Outbox[i].Parts = e.Parts
		}
	case *messages.IMOutboxSent:
		if b.OutFlight == e.Seq+1 {
			b.OutFlight = 0
		}
		if i := b.index(e.Seq); i >= 0 {
			b.Outbox = slices.Delete(slices.Clone(b.Outbox), i, i+1)
		}
	default:
		return b, false
	}
	return b, true
}

// Entry returns the entry seq, if it is still in the outbox.
func (b Box) Entry(seq uint64) (Out, bool) {
	if i := b.index(seq); i >= 0 {
		return b.Outbox[i], true
	}
	return Out{}, false
}

func (b Box) index(seq uint64) int {
	return slices.IndexFunc(b.Outbox, func(o Out) bool { return o.Seq == seq })
}
