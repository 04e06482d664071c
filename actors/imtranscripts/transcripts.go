// Package imtranscripts is the decision core of the node's transcript
// registry: which thread's binding holds which agent transcript. A
// binding holds a transcript from when its session search took it (a
// claim) and while it follows it; no other binding takes it meanwhile,
// and the session picker does not offer it to another thread.
//
// Claims are decided one at a time by the registry's one entity, so two
// new bindings in one directory that search at once cannot both take the
// one new transcript there. A claim that no follow confirms lapses after
// ClaimLapse (a setup that was cancelled between the search and the
// bind); a followed one lasts until its binding stops following it.
package imtranscripts

import (
	"maps"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// KindName is the registry's kind; it has one entity, ID.
const KindName = "im.transcripts"

// ID is the registry entity's id.
const ID = "node"

// ClaimLapse is how long a claim that no follow confirmed holds.
const ClaimLapse = time.Minute

// Holder is who holds one transcript.
type Holder struct {
	Binding string `json:"binding"`
	// Followed: the binding follows the transcript (else it only claimed
	// it, At).
	Followed bool      `json:"followed,omitempty"`
	At       time.Time `json:"at"`
}

// live reports whether h still holds its transcript at now.
func (h Holder) live(now time.Time) bool {
	return h.Binding != "" && (h.Followed || now.Sub(h.At) < ClaimLapse)
}

// State is every transcript held, by path.
type State struct {
	Paths map[string]Holder `json:"paths,omitempty"`
}

// Commands.
type (
	// Claim takes Path for Binding unless another binding holds it.
	// Reply: *Answer.
	Claim struct{ Path, Binding string }
	// Follow records that Binding follows Path (its binding decided so,
	// and journaled it): it holds Path from now on, whoever held it.
	// Reply: *Answer, OK false and By the binding that held it before
	// when that was another one.
	Follow struct{ Path, Binding string }
	// Release gives Path up when Binding holds it. Reply: nil.
	Release struct{ Path, Binding string }
	// Holders asks who holds each of Paths. Reply: map[string]Holder,
	// the paths held (and not lapsed) only.
	Holders struct{ Paths []string }
)

// Answer is Claim's and Follow's reply.
type Answer struct {
	OK bool
	// By is the binding holding the path when OK is false; Followed
	// whether it follows the path (else it only claimed it).
	By       string
	Followed bool
}

// Events.
type (
	// Claimed records Binding's claim of Path at At; claims that lapsed
	// by then are forgotten with it.
	Claimed struct {
		Path    string    `json:"path"`
		Binding string    `json:"binding"`
		At      time.Time `json:"at"`
	}
	// Followed records that Binding follows Path since At.
	Followed struct {
		Path    string    `json:"path"`
		Binding string    `json:"binding"`
		At      time.Time `json:"at"`
	}
	// Released records that Path is held by no one.
	Released struct {
		Path string `json:"path"`
	}
)

func init() {
	messages.Register[State]("im.transcripts.state", 1)
	messages.Register[Claimed]("im.transcripts.claimed", 1)
	messages.Register[Followed]("im.transcripts.followed", 1)
	messages.Register[Released]("im.transcripts.released", 1)
}

// Kind is the registry kind.
type Kind struct{}

var _ actors.Kind[State] = Kind{}

// Name returns KindName.
func (Kind) Name() string { return KindName }

// Initial holds nothing.
func (Kind) Initial(string) *State { return &State{} }

// Active is false: the registry has nothing to do until asked.
func (Kind) Active(*State) bool { return false }

// Effects: the registry releases none (actors.EffectLister).
func (Kind) Effects() []any { return nil }

// Decide handles one message.
func (k Kind) Decide(s *State, msg any, now time.Time) actors.Decision {
	p := actors.NewPlan(s, k.Apply, nil)
	switch m := msg.(type) {
	case *Claim:
		h := s.Paths[m.Path]
		switch {
		case h.live(now) && h.Binding != m.Binding:
			p.Reply(&Answer{By: h.Binding, Followed: h.Followed})
		case h.Binding == m.Binding && h.Followed:
			p.Reply(&Answer{OK: true})
		default:
			p.Event(&Claimed{Path: m.Path, Binding: m.Binding, At: now})
			p.Reply(&Answer{OK: true})
		}
	case *Follow:
		h := s.Paths[m.Path]
		a := &Answer{OK: true}
		if h.live(now) && h.Binding != m.Binding {
			a = &Answer{By: h.Binding, Followed: h.Followed}
		}
		if !(h.Binding == m.Binding && h.Followed) {
			p.Event(&Followed{Path: m.Path, Binding: m.Binding, At: now})
		}
		p.Reply(a)
	case *Release:
		if h, ok := s.Paths[m.Path]; ok && h.Binding == m.Binding {
			p.Event(&Released{Path: m.Path})
		}
	case *Holders:
		out := map[string]Holder{}
		for _, path := range m.Paths {
			if h := s.Paths[path]; h.live(now) {
				out[path] = h
			}
		}
		p.Reply(out)
	case *actors.Recovered:
	default:
		return actors.Decision{Unhandled: true}
	}
	return p.Decision()
}

// Apply returns the state after ev; s is left as it was.
func (Kind) Apply(s *State, ev any) *State {
	n := &State{Paths: maps.Clone(s.Paths)}
	if n.Paths == nil {
		n.Paths = map[string]Holder{}
	}
	switch e := ev.(type) {
	case *Claimed:
		for path, h := range n.Paths {
			if !h.live(e.At) {
				delete(n.Paths, path)
			}
		}
		n.Paths[e.Path] = Holder{Binding: e.Binding, At: e.At}
	case *Followed:
		n.Paths[e.Path] = Holder{Binding: e.Binding, Followed: true, At: e.At}
	case *Released:
		delete(n.Paths, e.Path)
	default:
		return s
	}
	return n
}

// View is what `thatch status` shows: how many transcripts are followed
// and how many only claimed.
func (Kind) View(s *State) any {
	v := struct {
		Followed int `json:"followed"`
		Claimed  int `json:"claimed"`
	}{}
	for _, h := range s.Paths {
		if h.Followed {
			v.Followed++
		} else {
			v.Claimed++
		}
	}
	return v
}
