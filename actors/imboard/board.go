// Package imboard is the decision core of a chat's board: one message,
// pinned in the chat (the General topic of a forum group), that lists
// every thread of the chat with its agent and its state (working since
// 10:42, waiting for you, idle since 10:50, ended: why). The bindings
// report their rows as they change; once the board is asked for (/board,
// or im.board), the message is sent and then edited as rows change, at
// most once per Config's interval, always the newest. The message id is
// journaled, so a restart edits the same pinned message.
package imboard

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// KindName is the boards' kind; an entity's id is its chat ("tg:-100123").
const KindName = "im.board"

// Timer is the edit interval's timer.
const Timer = "board"

// retry is how long a failed send or edit waits.
const retry = 30 * time.Second

// State is one chat's board.
type State struct {
	// Thread is where the board lives ("" until it is asked for).
	Thread    string                         `json:"thread,omitempty"`
	MessageID string                         `json:"messageID,omitempty"`
	Rows      map[string]messages.IMBoardRow `json:"rows,omitempty"`
	Rev       uint64                         `json:"rev,omitempty"`
	Shown     uint64                         `json:"shown,omitempty"`
	Flight    uint64                         `json:"flight,omitempty"`
	Waiting   bool                           `json:"waiting,omitempty"`
}

// Commands.
type (
	// Show asks for the board in Thread (sent there unless it is shown
	// already). Reply: nil.
	Show struct{ Thread string }
	// Adopt hands the board the thread and the message that a cluster
	// keeps for it (written there by this node or the chat's writer
	// before it), so that the board goes on in that message. Reply: nil.
	Adopt struct{ Thread, MessageID string }
)

// Events.
type (
	// RowSet records a thread's row.
	RowSet struct {
		Row messages.IMBoardRow `json:"row"`
	}
	// Asked records the board asked for in Thread.
	Asked struct {
		Thread string `json:"thread"`
	}
	// Released records revision Rev in flight.
	Released struct {
		Rev uint64 `json:"rev"`
	}
	// Done records the answer to the send or edit in flight: Rev shown
	// in MessageID, or (Failed) not.
	Done struct {
		Rev       uint64 `json:"rev"`
		MessageID string `json:"messageID,omitempty"`
		Failed    bool   `json:"failed,omitempty"`
	}
	// Wait records the interval's timer armed (On) or fired.
	Wait struct {
		On bool `json:"on,omitempty"`
	}
	// Adopted records the board's thread and message as the cluster
	// keeps them.
	Adopted struct {
		Thread    string `json:"thread"`
		MessageID string `json:"messageID,omitempty"`
	}
)

func init() {
	messages.Register[State]("im.board.state", 1)
	messages.Register[RowSet]("im.board.row_set", 1)
	messages.Register[Asked]("im.board.asked", 1)
	messages.Register[Released]("im.board.released", 1)
	messages.Register[Done]("im.board.done", 1)
	messages.Register[Wait]("im.board.wait", 1)
	messages.Register[Adopted]("im.board.adopted", 1)
}

// Kind is the board kind; Every is the least time between two edits.
type Kind struct {
	Every time.Duration
	// Cluster: the board's writer is whichever node holds the cluster's
	// boards lease, and it drives the board with Adopt; a restart alone
	// shows nothing (this node may not be the writer any more).
	Cluster bool
	// Zone is where the times shown are (the daemon's local zone).
	Zone *time.Location
}

var _ actors.Kind[State] = Kind{}

// Name returns KindName.
func (Kind) Name() string { return KindName }

// Initial is a board not asked for, with no rows.
func (Kind) Initial(string) *State { return &State{} }

// Active: a send or edit is due or in flight.
func (Kind) Active(s *State) bool { return s.Flight != 0 || s.Waiting }

// Effects are the effects a board releases (actors.EffectLister).
func (Kind) Effects() []any {
	return []any{(*messages.IMBoardSend)(nil), (*messages.IMBoardEdit)(nil)}
}

// Decide handles one message.
func (k Kind) Decide(s *State, msg any, now time.Time) actors.Decision {
	p := actors.NewPlan(s, k.Apply, nil)
	switch m := msg.(type) {
	case *messages.IMBoardRow:
		if old, ok := s.Rows[m.Thread]; (ok && old == *m) || (!ok && m.State == "") {
			break
		}
		p.Event(&RowSet{Row: *m})
		k.show(&p)
	case *Show:
		// Asked again for the same thread (every row asks with im.board),
		// the board is shown, or on its way: nothing to journal.
		if s.Thread != m.Thread {
			p.Event(&Asked{Thread: m.Thread})
		}
		k.show(&p)
	case *Adopt:
		// The cluster's word for the message wins; its word of a board
		// only asked for keeps a message sent meanwhile.
		if m.Thread != "" && (m.Thread != s.Thread || m.MessageID != "" && m.MessageID != s.MessageID) {
			p.Event(&Adopted{Thread: m.Thread, MessageID: m.MessageID})
		}
		k.show(&p)
	case *messages.IMBoardSent:
		if m.Rev != s.Flight || s.Flight == 0 {
			break
		}
		if m.Err != "" {
			p.Event(&Done{Rev: m.Rev, Failed: true})
			p.Event(&Wait{On: true})
			p.Effect(&actors.StartTimer{Name: Timer, After: retry})
			break
		}
		p.Event(&Done{Rev: m.Rev, MessageID: m.MessageID})
		if p.S.Rev > p.S.Shown {
			p.Event(&Wait{On: true})
			p.Effect(&actors.StartTimer{Name: Timer, After: k.Every})
		}
	case *actors.Tick:
		if s.Waiting {
			p.Event(&Wait{})
			k.show(&p)
		}
	case *actors.Recovered:
		if s.Flight != 0 {
			p.Event(&Done{Rev: s.Flight, Failed: true})
		}
		if s.Waiting {
			p.Event(&Wait{})
		}
		if !k.Cluster {
			k.show(&p)
		}
	default:
		return actors.Decision{Unhandled: true}
	}
	return p.Decision()
}

// show sends or edits the board when it shows less than it holds.
func (k Kind) show(p *actors.Plan[State]) {
	s := p.S
	if s.Thread == "" || s.Flight != 0 || s.Waiting || (s.Rev == s.Shown && s.MessageID != "") {
		return
	}
	p.Event(&Released{Rev: s.Rev})
	text := k.Render(s)
	if s.MessageID == "" {
		p.Effect(&messages.IMBoardSend{Thread: s.Thread, Text: text, Rev: s.Rev})
		return
	}
	p.Effect(&messages.IMBoardEdit{Thread: s.Thread, MessageID: s.MessageID, Text: text, Rev: s.Rev})
}

// Render draws the board: one line per thread, by name.
func (k Kind) Render(s *State) string {
	zone := k.Zone
	if zone == nil {
		zone = time.Local
	}
	rows := slices.SortedFunc(maps.Values(s.Rows), func(a, b messages.IMBoardRow) int {
		return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
	})
	var b strings.Builder
	b.WriteString("📋 Sessions of this chat\n")
	if len(rows) == 0 {
		b.WriteString("\nno thread is bound yet")
	}
	for _, r := range rows {
		state := r.State
		if r.Since != 0 && (r.State == messages.BoardWorking || r.State == messages.BoardIdle) {
			state += " since " + time.UnixMilli(r.Since).In(zone).Format("15:04")
		}
		fmt.Fprintf(&b, "\n• %s — %s", r.Name, r.Agent)
		if r.Machine != "" {
			b.WriteString(" on " + r.Machine)
		}
		b.WriteString(": " + state)
		if r.Context != "" {
			b.WriteString(" · context " + r.Context)
		}
	}
	return b.String()
}

// Apply returns the state after ev; s is left as it was.
func (Kind) Apply(s *State, ev any) *State {
	n := *s
	switch e := ev.(type) {
	case *RowSet:
		n.Rows = maps.Clone(s.Rows)
		if n.Rows == nil {
			n.Rows = map[string]messages.IMBoardRow{}
		}
		if e.Row.State == "" {
			delete(n.Rows, e.Row.Thread) // the thread has no binding any more
		} else {
			n.Rows[e.Row.Thread] = e.Row
		}
		n.Rev++
	case *Asked:
		n.Thread = e.Thread
		if s.Thread != e.Thread {
			n.MessageID = ""
		}
		n.Rev++
	case *Released:
		n.Flight = e.Rev
	case *Done:
		n.Flight = 0
		if !e.Failed {
			n.Shown = e.Rev
			if e.MessageID != "" {
				n.MessageID = e.MessageID
			}
		}
	case *Wait:
		n.Waiting = e.On
	case *Adopted:
		n.Thread, n.MessageID = e.Thread, e.MessageID
		n.Rev++
	default:
		return s
	}
	return &n
}
