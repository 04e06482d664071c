// Package ocregistry is the pure decision core of the opencode registry:
// the one entity that owns which family (top-level session) every child
// session belongs to, and which host and directory every family is
// recorded on. The opencode front end routes by an immutable copy of its
// state and changes it only through its commands, so that a fact has one
// owner and routing does no I/O.
//
// # Imports
//
// ocregistry may import actors and messages only.
//
// # Model
//
// State is never changed in place: Apply returns a new State that shares
// every table it did not change, and of the one it changed every shard
// but one (see table), so a State handed out (the reply to every
// command) stays valid while the registry moves on. Version grows with
// every event; of two States, the one with the higher Version is newer.
//
// # A family seen on a host
//
// What a host's event stream teaches about a family (the directory of its
// parent, the host it lives on) reaches the registry as one FamilySeen
// command. A host that changes, when the command asks for it, releases the
// effect ReconcileFamily: the front end reconciles the family with its new
// host on the effect dispatcher, never on the stream that carried the
// event. FamilySeen and ReconcileFamily are never journaled (the events
// are messages.RegistryDirectorySet and messages.RegistryHostSet), so they
// live here, with the kind that answers and releases them.
//
//	d := Kind{}.Decide(s, &FamilySeen{Family: "ses_p", Host: "h2", IfCurrent: "h1", Reconcile: true, Hold: 7}, now)
//	// d.Events: RegistryHostSet{ses_p, h2}; d.Effects: ReconcileFamily{ses_p, h2, 7};
//	// d.Reply: &Seen{State: (after), Moved: true}
package ocregistry

import (
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// KindName is the registry's kind; there is one entity, ID.
const (
	KindName = "opencode.registry"
	ID       = "main"
)

// maxDepth bounds the walk from a session to its family: nested
// sub-agents are a few levels deep, and the bound guards a cycle.
const maxDepth = 64

// State is the registry's knowledge. Read it, never change it.
type State struct {
	// Version counts the events applied.
	Version uint64 `json:"version"`
	// Parents maps a child session to its family.
	Parents *table `json:"parents,omitempty"`
	// Hosts maps a family to the host it lives on.
	Hosts *table `json:"hosts,omitempty"`
	// Dirs maps a family to its parent session's directory.
	Dirs *table `json:"dirs,omitempty"`
}

func init() { messages.Register[State]("opencode.registry.state", 1) }

// Family returns the family (top-level session) that session belongs to.
func (s *State) Family(session string) string {
	for range maxDepth {
		p, ok := s.Parents.Get(session)
		if !ok {
			return session
		}
		session = p
	}
	return session
}

// Linked returns the family child is linked to ("" when none is).
func (s *State) Linked(child string) string { return s.Parents.Value(child) }

// Host returns the host recorded for a family ("" when none is).
func (s *State) Host(family string) string { return s.Hosts.Value(family) }

// Directory returns the directory recorded for a family.
func (s *State) Directory(family string) string { return s.Dirs.Value(family) }

// FamiliesOn lists the families recorded on host.
func (s *State) FamiliesOn(host string) []string {
	var out []string
	for f, h := range s.Hosts.All() {
		if h == host {
			out = append(out, f)
		}
	}
	return out
}

// Empty reports whether the registry records nothing.
func (s *State) Empty() bool {
	return s.Parents.Len() == 0 && s.Hosts.Len() == 0 && s.Dirs.Len() == 0
}

// FamilySeen is a command: a host's event stream carried an event of
// Family. The router sends it only when the event teaches something the
// registry's state (as the router last saw it) does not hold. It is
// answered with a *Seen once what it changed is durable.
type FamilySeen struct {
	Family string
	// Directory, when set, is the directory the family's parent runs in;
	// it replaces the recorded one.
	Directory string
	// Host, when set, is recorded as the family's host if the recorded one
	// is still IfCurrent ("" for none): a compare-and-set, for the router
	// decided on what it read (the recorded host and whether that one is
	// still connected) that Host should replace it, and a change made since
	// wins.
	Host, IfCurrent string
	// Reconcile asks for a ReconcileFamily effect when Host is recorded.
	// Default: false (a session.created needs none: thatch sees the
	// session from its start).
	Reconcile bool
	// Hold names the router's hold on the family's events that the effect
	// lets go once the reconcile is done; the registry only passes it on.
	// Default: 0, none.
	Hold uint64
}

// Seen answers FamilySeen.
type Seen struct {
	// State is the registry's state after the command.
	State *State
	// Moved is true when the command recorded its Host. With Reconcile,
	// a ReconcileFamily effect was released with this answer; without
	// one, no effect was.
	Moved bool
}

// ReconcileFamily is the effect of a host change that asked for a
// reconcile: the front end reconciles Family with Host, the host its
// events now come from (it may wait for calls its old host can no longer
// answer, have children thatch did not see, or be a child itself), and
// then lets go of Hold, the family's events it held meanwhile. It is
// released once the RegistryHostSet it follows is durable.
type ReconcileFamily struct {
	Family, Host string
	Hold         uint64
}

// Kind is the registry kind.
type Kind struct{}

var _ actors.Kind[State] = Kind{}

// Name returns KindName.
func (Kind) Name() string { return KindName }

// Effects are the effects the registry releases (actors.EffectLister).
func (Kind) Effects() []any { return []any{(*ReconcileFamily)(nil)} }

// Initial is an empty registry.
func (Kind) Initial(string) *State { return &State{} }

// Active is always true: the registry is rehydrated on every start, so that
// the router has its state before the first event.
func (Kind) Active(*State) bool { return true }

// Decide turns a command into events (at most one but for FamilySeen,
// which may record a directory and a host) and answers with the state
// after them. A command that changes nothing journals nothing.
func (k Kind) Decide(s *State, msg any, _ time.Time) actors.Decision {
	var ev any
	switch m := msg.(type) {
	case *FamilySeen:
		return k.seen(s, m)
	case *messages.RegistryRead, *actors.Recovered:
	case *messages.RegistryLink:
		if fam := s.Family(m.Parent); m.Child != "" && m.Child != fam && s.Parents.Value(m.Child) != fam {
			ev = &messages.RegistryChildLinked{Child: m.Child, Family: fam}
		}
	case *messages.RegistrySetDirectory:
		cur, ok := s.Dirs.Get(m.Family)
		if m.Family != "" && m.Directory != "" && cur != m.Directory && !(ok && m.OnlyIfUnset) {
			ev = &messages.RegistryDirectorySet{Family: m.Family, Directory: m.Directory}
		}
	case *messages.RegistrySetHost:
		if cur := s.Hosts.Value(m.Family); m.Family != "" && m.Host != "" && cur == m.IfCurrent && cur != m.Host {
			ev = &messages.RegistryHostSet{Family: m.Family, Host: m.Host}
		}
	case *messages.RegistryDropRecord:
		if _, h := s.Hosts.Get(m.ID); h {
			ev = &messages.RegistryRecordDropped{ID: m.ID}
		} else if _, d := s.Dirs.Get(m.ID); d {
			ev = &messages.RegistryRecordDropped{ID: m.ID}
		}
	case *messages.RegistryForget:
		if s.knows(m.Family) {
			ev = &messages.RegistryFamilyForgotten{Family: m.Family}
		}
	case *messages.RegistryImport:
		if s.Empty() && (len(m.Parents)+len(m.Hosts)+len(m.Dirs) > 0) {
			ev = &messages.RegistryImported{Parents: m.Parents, Hosts: m.Hosts, Dirs: m.Dirs}
		}
	default:
		return actors.Decision{Unhandled: true}
	}
	if ev == nil {
		return actors.Decision{Reply: s}
	}
	return actors.Decision{Events: []any{ev}, Reply: k.Apply(s, ev)}
}

// seen decides a FamilySeen: the directory and the host it records, and
// the reconcile a host change asks for.
func (k Kind) seen(s *State, m *FamilySeen) actors.Decision {
	var d actors.Decision
	if m.Family == "" {
		d.Reply = &Seen{State: s}
		return d
	}
	if m.Directory != "" && s.Dirs.Value(m.Family) != m.Directory {
		d.Events = append(d.Events, &messages.RegistryDirectorySet{Family: m.Family, Directory: m.Directory})
	}
	moved := false
	if cur := s.Hosts.Value(m.Family); m.Host != "" && cur == m.IfCurrent && cur != m.Host {
		moved = true
		d.Events = append(d.Events, &messages.RegistryHostSet{Family: m.Family, Host: m.Host})
		if m.Reconcile {
			d.Effects = append(d.Effects, &ReconcileFamily{Family: m.Family, Host: m.Host, Hold: m.Hold})
		}
	}
	for _, ev := range d.Events {
		s = k.Apply(s, ev)
	}
	d.Reply = &Seen{State: s, Moved: moved}
	return d
}

// knows reports whether anything is recorded of family.
func (s *State) knows(family string) bool {
	if _, ok := s.Hosts.Get(family); ok {
		return true
	}
	if _, ok := s.Dirs.Get(family); ok {
		return true
	}
	for _, p := range s.Parents.All() {
		if p == family {
			return true
		}
	}
	return false
}

// Apply returns the state after ev; s is left as it was.
func (Kind) Apply(s *State, ev any) *State {
	n := *s
	n.Version++
	switch e := ev.(type) {
	case *messages.RegistryChildLinked:
		n.Parents = s.Parents.With(e.Child, e.Family)
	case *messages.RegistryHostSet:
		n.Hosts = s.Hosts.With(e.Family, e.Host)
	case *messages.RegistryDirectorySet:
		n.Dirs = s.Dirs.With(e.Family, e.Directory)
	case *messages.RegistryRecordDropped:
		n.Hosts = s.Hosts.Without(e.ID)
		n.Dirs = s.Dirs.Without(e.ID)
	case *messages.RegistryFamilyForgotten:
		n.Hosts = s.Hosts.Without(e.Family)
		n.Dirs = s.Dirs.Without(e.Family)
		for child, fam := range s.Parents.All() {
			if fam == e.Family {
				n.Parents = n.Parents.Without(child)
			}
		}
	case *messages.RegistryImported:
		n.Parents, n.Hosts, n.Dirs = tableOf(e.Parents), tableOf(e.Hosts), tableOf(e.Dirs)
	default:
		return s
	}
	return &n
}

// View shows the registry's size in status.
func (Kind) View(s *State) any {
	return map[string]any{"version": s.Version, "children": s.Parents.Len(), "families": s.Hosts.Len()}
}
