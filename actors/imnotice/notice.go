// Package imnotice is the decision core of a thread's notices: what the
// IM front end tells a thread without its binding (the binding refuses
// messages while it is quarantined; in a cluster, the node that receives
// tells a thread about its machine, which may be another node's). A
// notice is journaled when it is told, and sent through the same outbox
// as a binding's messages (actors/chatout): in order, again after a
// failure or a restart, and seen by the tree's Quiesce.
package imnotice

import (
	"slices"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/chatout"
	"github.com/thatch-run/thatch/messages"
)

// KindName is the kind of the notice entities. An entity's id is its
// thread's key, as for a binding (imbinding.KindName), so that its chat
// effects go to the same thread.
const KindName = "im.notice"

// State is a thread's notices not sent yet.
type State struct {
	Key string `json:"key"`
	chatout.Box
	// Refused is why the chat last refused a notice for good, for status.
	Refused string `json:"refused,omitempty"`
	// Question holds the chat messages of the machine question sent and
	// not closed yet; CloseQuestion says it was closed before it was sent.
	Question      []string `json:"question,omitempty"`
	CloseQuestion bool     `json:"closeQuestion,omitempty"`
}

// QuestionClosed records the machine question closed: its buttons were
// cleared, or (Pending) are to be once it is sent.
type QuestionClosed struct {
	Pending bool `json:"pending,omitempty"`
}

// questionMark marks the outbox entry of the machine question
// (IMOutEntry.Prompt), so that its message's id is kept.
const questionMark = 1

func init() {
	messages.Register[State]("im.notice.state", 1)
	messages.Register[QuestionClosed]("im.notice.question_closed", 1)
}

// Kind is the notice kind.
type Kind struct{}

var _ actors.Kind[State] = Kind{}

// Name returns KindName.
func (Kind) Name() string { return KindName }

// Effects are the effects the notices release (actors.EffectLister).
func (Kind) Effects() []any {
	return []any{(*messages.IMSendChat)(nil), (*messages.IMClearButtons)(nil)}
}

// Initial is a thread with nothing to tell.
func (Kind) Initial(id string) *State { return &State{Key: id} }

// Active reports notices not sent yet: they are sent at start.
func (Kind) Active(s *State) bool { return len(s.Outbox) > 0 }

// plan is one decision; it is the outbox's Plan.
type plan struct{ actors.Plan[State] }

// Box is the notices' outbox.
func (p *plan) Box() *chatout.Box { return &p.S.Box }

// OutboxEvent journals an outbox event.
func (p *plan) OutboxEvent(ev messages.OutboxEvent) { p.Event(ev) }

// OutboxEffect releases an outbox effect.
func (p *plan) OutboxEffect(e messages.OutboxEffect) { p.Effect(e) }

// Timer starts the outbox's timer.
func (p *plan) Timer(d time.Duration) { p.Effect(&actors.StartTimer{Name: chatout.Timer, After: d}) }

// Decide handles one message.
func (Kind) Decide(s *State, msg any, _ time.Time) actors.Decision {
	p := &plan{actors.NewPlan(s, Kind{}.Apply, nil)}
	switch m := msg.(type) {
	case *messages.IMNotice:
		if m.Text == "" {
			return actors.Decision{}
		}
		e := messages.IMOutEntry{Text: m.Text, Buttons: m.Buttons, Silent: m.Silent}
		if m.Question {
			e.Prompt = questionMark
		}
		chatout.Say(p, e)
	case *messages.IMCloseQuestion:
		p.closeQuestion()
	case *messages.IMChatSent:
		chatout.Sent(p, m) // a chat that is gone drops the notice: there is nobody to tell
		if p.S.CloseQuestion && len(p.S.Question) > 0 {
			p.closeQuestion() // closed while it was on its way
		}
	case *messages.IMChatPartSent:
		chatout.PartSent(p, m)
	case *actors.Tick:
		if m.Name == chatout.Timer {
			chatout.SendHead(p)
		}
	case *actors.Recovered:
		chatout.SendHead(p) // nothing is in flight after a restart
	default:
		return actors.Decision{Unhandled: true}
	}
	return p.Decision()
}

// closeQuestion clears the machine question's buttons, or, while it is
// not sent yet, has them cleared once it is.
func (p *plan) closeQuestion() {
	s := p.S
	switch {
	case len(s.Question) > 0:
		for _, id := range s.Question {
			p.Effect(&messages.IMClearButtons{MessageID: id})
		}
		p.Event(&QuestionClosed{})
	case !s.CloseQuestion && slices.ContainsFunc(s.Outbox, func(o chatout.Out) bool { return o.Prompt == questionMark }):
		p.Event(&QuestionClosed{Pending: true})
	}
}

// Apply returns the state after ev; s is left as it was.
func (Kind) Apply(s *State, ev any) *State {
	n := *s
	if e, ok := ev.(*QuestionClosed); ok {
		n.Question, n.CloseQuestion = nil, e.Pending
		return &n
	}
	box, ok := s.Box.Apply(ev)
	if !ok {
		return s
	}
	n.Box = box
	if e, sent := ev.(*messages.IMOutboxSent); sent {
		if e.Refused != "" {
			n.Refused = e.Refused
		}
		if o, was := s.Box.Entry(e.Seq); was && o.Prompt == questionMark && e.MessageID != "" {
			n.Question = append(slices.Clip(s.Question), e.MessageID)
		}
	}
	return &n
}
