// Package implace is the decision core of a cluster's thread placement:
// which machine a new thread's agent runs on. It is a pure function of
// the thread's entry in the cluster's map (read by the node that
// receives) and of one update: the front end carries out the plan it
// returns, in order, writing the entry with compare-and-set. A write that
// finds the entry changed fails the update, which the platform offers
// again: the next decision is made on the new entry (a conflict comes
// back as input, never as a blind overwrite).
package implace

import "strings"

// The machine question.
const (
	// Question is its text.
	Question = "Which machine should this thread's agent run on?"
	// Prefix starts the data of its buttons: "m:<node>".
	Prefix = "m:"
	// MaxHeld bounds the updates a thread holds while the question is
	// open; one more is refused, and the user told.
	MaxHeld = 50
)

// Entry is what the cluster's map says of the thread.
type Entry struct {
	Node  string // the machine it runs on; "" while none was chosen
	Held  int    // the updates held while the question is open
	Asked bool   // the question was asked
}

// Update is the update to place, as the edge saw it.
type Update struct {
	// Allowed: its user is on the allow-list (or the bot is open).
	Allowed bool
	// Press is the data of the button pressed; Pressed says it is a
	// press.
	Pressed bool
	Press   string
}

// Cluster is what the deciding node knows of the machines.
type Cluster struct {
	Self    string   // this node
	Members []string // the machines up, in order
	Up      func(node string) bool
}

// Plan is what to do with the update, in this order: publish the held
// updates to Node, write the entry (Node set, or the update held), publish
// the update to PublishTo, answer the press, then say what is to be said.
type Plan struct {
	// Node sets the thread's machine (the entry written with no held
	// updates); PublishHeld publishes the held ones to it first.
	Node        string
	PublishHeld bool
	// Hold adds the update to the held ones.
	Hold bool
	// PublishTo is the machine the update itself goes to ("" none).
	PublishTo string
	// Answer answers the press with AnswerText ("" ends its spinner).
	Answer     bool
	AnswerText string
	// Ask sends the question, with a button per machine of Offer.
	Ask   bool
	Offer []string
	// CloseAsk clears the question's buttons, and Notice tells the thread.
	CloseAsk bool
	Notice   string
}

// Decide plans one update of a thread whose entry is e.
func Decide(e Entry, u Update, c Cluster) Plan {
	switch {
	case e.Node != "":
		return Plan{PublishTo: e.Node}
	case !u.Allowed:
		// A stranger makes nothing, not even a question.
		return Plan{Answer: u.Pressed}
	case len(c.Members) <= 1 && e.Held == 0 && !e.Asked:
		owner := c.Self
		if len(c.Members) == 1 {
			owner = c.Members[0]
		}
		return Plan{Node: owner, PublishTo: owner}
	case u.Pressed && strings.HasPrefix(u.Press, Prefix):
		chosen := strings.TrimPrefix(u.Press, Prefix)
		if c.Up == nil || !c.Up(chosen) {
			return Plan{Answer: true, AnswerText: chosen + " is not up now; pick another machine"}
		}
		p := Plan{Node: chosen, PublishHeld: true, Answer: true}
		if e.Asked {
			p.CloseAsk, p.Notice = true, "This thread's agent runs on "+chosen+"."
		}
		return p
	case u.Pressed:
		return Plan{Answer: true, AnswerText: "Pick a machine first"}
	case e.Held >= MaxHeld:
		return Plan{Notice: "Pick a machine for this thread first (the buttons above); this message was not kept."}
	default:
		return Plan{Hold: true, Ask: !e.Asked, Offer: c.Members}
	}
}
