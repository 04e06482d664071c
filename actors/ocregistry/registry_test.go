package ocregistry

import (
	"reflect"
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// run decides msgs in order from an empty registry, applying each
// decision's events, and returns the states answered.
func run(t *testing.T, msgs ...any) []*State {
	t.Helper()
	k := Kind{}
	s := k.Initial(ID)
	var out []*State
	for _, m := range msgs {
		before := *s
		d := k.Decide(s, m, time.Time{})
		if !reflect.DeepEqual(*s, before) {
			t.Fatalf("Decide(%T) changed its state", m)
		}
		for _, ev := range d.Events {
			b, err := messages.Encode(ev)
			if err != nil {
				t.Fatalf("encode %T: %v", ev, err)
			}
			back, err := messages.Decode(b)
			if err != nil {
				t.Fatalf("decode %T: %v", ev, err)
			}
			s = k.Apply(s, back)
		}
		got, ok := d.Reply.(*State)
		if seen, isSeen := d.Reply.(*Seen); isSeen {
			got, ok = seen.State, true
		}
		if !ok {
			t.Fatalf("Decide(%T) answered %T", m, d.Reply)
		}
		if !reflect.DeepEqual(got, s) {
			t.Fatalf("Decide(%T) answered %+v, but the journal rebuilds %+v", m, got, s)
		}
		out = append(out, got)
	}
	return out
}

func TestRegistryDecisions(t *testing.T) {
	cases := []struct {
		name  string
		msgs  []any
		check func(t *testing.T, states []*State)
	}{{
		name: "a grandchild joins its grandparent's family",
		msgs: []any{&messages.RegistryLink{Child: "c", Parent: "p"}, &messages.RegistryLink{Child: "g", Parent: "c"}},
		check: func(t *testing.T, s []*State) {
			if got := s[1].Family("g"); got != "p" {
				t.Errorf("family of g: %q, want p", got)
			}
			if s[1].Linked("g") != "p" {
				t.Errorf("g is linked to %q, want its family p", s[1].Linked("g"))
			}
		},
	}, {
		name: "a repeated link journals nothing",
		msgs: []any{&messages.RegistryLink{Child: "c", Parent: "p"}, &messages.RegistryLink{Child: "c", Parent: "p"}},
		check: func(t *testing.T, s []*State) {
			if s[0].Version != 1 || s[1].Version != 1 {
				t.Errorf("versions %d, %d; want 1, 1", s[0].Version, s[1].Version)
			}
		},
	}, {
		name: "a self link is refused",
		msgs: []any{&messages.RegistryLink{Child: "p", Parent: "p"}},
		check: func(t *testing.T, s []*State) {
			if s[0].Parents.Len() != 0 {
				t.Errorf("parents %v", s[0].Parents.Map())
			}
		},
	}, {
		name: "a host changes only from the record the caller saw",
		msgs: []any{
			&messages.RegistrySetHost{Family: "p", Host: "a", IfCurrent: ""},
			&messages.RegistrySetHost{Family: "p", Host: "b", IfCurrent: ""}, // stale: the record is a now
			&messages.RegistrySetHost{Family: "p", Host: "b", IfCurrent: "a"},
		},
		check: func(t *testing.T, s []*State) {
			if s[0].Host("p") != "a" || s[1].Host("p") != "a" || s[2].Host("p") != "b" {
				t.Errorf("hosts %q %q %q, want a a b", s[0].Host("p"), s[1].Host("p"), s[2].Host("p"))
			}
		},
	}, {
		name: "an adopted directory never replaces a recorded one; a set one does",
		msgs: []any{
			&messages.RegistrySetDirectory{Family: "p", Directory: "/a"},
			&messages.RegistrySetDirectory{Family: "p", Directory: "/b", OnlyIfUnset: true},
			&messages.RegistrySetDirectory{Family: "p", Directory: "/c"},
		},
		check: func(t *testing.T, s []*State) {
			if s[1].Directory("p") != "/a" || s[2].Directory("p") != "/c" {
				t.Errorf("directories %q %q", s[1].Directory("p"), s[2].Directory("p"))
			}
		},
	}, {
		name: "dropping a record keeps the links under it",
		msgs: []any{
			&messages.RegistryLink{Child: "c", Parent: "t"},
			&messages.RegistrySetHost{Family: "t", Host: "h"},
			&messages.RegistrySetDirectory{Family: "t", Directory: "/t"},
			&messages.RegistryDropRecord{ID: "t"},
		},
		check: func(t *testing.T, s []*State) {
			last := s[3]
			if last.Host("t") != "" || last.Directory("t") != "" || last.Linked("c") != "t" {
				t.Errorf("after the drop: %+v", last)
			}
			if got := last.FamiliesOn("h"); len(got) != 0 {
				t.Errorf("families on h: %v", got)
			}
		},
	}, {
		name: "forgetting a family drops its children, host and directory, and nothing of another",
		msgs: []any{
			&messages.RegistryLink{Child: "c1", Parent: "p"},
			&messages.RegistryLink{Child: "c2", Parent: "q"},
			&messages.RegistrySetHost{Family: "p", Host: "h"},
			&messages.RegistrySetHost{Family: "q", Host: "h"},
			&messages.RegistryForget{Family: "p"},
			&messages.RegistryForget{Family: "p"},
		},
		check: func(t *testing.T, s []*State) {
			last := s[5]
			if _, ok := last.Parents.Get("c1"); ok || last.Linked("c2") != "q" || last.Host("p") != "" || last.Host("q") != "h" {
				t.Errorf("after the forget: %+v", last)
			}
			if s[4].Version != s[5].Version {
				t.Error("forgetting a forgotten family journaled again")
			}
			// The state answered before the forget is unchanged: readers
			// holding it are safe.
			if s[3].Linked("c1") != "p" || s[3].Host("p") != "h" {
				t.Errorf("an earlier state changed: %+v", s[3])
			}
		},
	}, {
		name: "an import fills an empty registry only",
		msgs: []any{
			&messages.RegistryImport{Parents: map[string]string{"c": "p"}, Hosts: map[string]string{"p": "h"}, Dirs: map[string]string{"p": "/p"}},
			&messages.RegistryImport{Hosts: map[string]string{"p": "other"}},
		},
		check: func(t *testing.T, s []*State) {
			if s[1].Family("c") != "p" || s[1].Host("p") != "h" || s[1].Directory("p") != "/p" {
				t.Errorf("after the imports: %+v", s[1])
			}
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.check(t, run(t, c.msgs...)) })
	}
}

func TestRegistryRefusesOtherMessages(t *testing.T) {
	k := Kind{}
	if d := k.Decide(k.Initial(ID), messages.RegistryRead{}, time.Time{}); !d.Unhandled {
		t.Error("a value where a pointer is expected was handled")
	}
	if d := k.Decide(k.Initial(ID), &actors.Tick{}, time.Time{}); !d.Unhandled {
		t.Error("a tick was handled")
	}
}

func TestFamilyWalkIsBounded(t *testing.T) {
	s := &State{Parents: tableOf(map[string]string{"a": "b", "b": "a"})}
	if got := s.Family("a"); got != "a" && got != "b" {
		t.Errorf("family in a cycle: %q", got)
	}
}

// A family seen on a host records its directory and, from the record the
// router saw, its host; a host change that asks for it releases the
// reconcile, carrying the router's hold, and nothing else does.
func TestFamilySeen(t *testing.T) {
	k := Kind{}
	cases := []struct {
		name   string
		before []any
		msg    *FamilySeen
		events []string
		moved  bool
		effect *ReconcileFamily
	}{{
		name:   "a first host and a directory, without a reconcile (a session.created)",
		msg:    &FamilySeen{Family: "p", Directory: "/p", Host: "h1"},
		events: []string{"opencode.registry.directory_set", "opencode.registry.host_set"},
		moved:  true,
	}, {
		name:   "a first host with a reconcile (a session first met through its idle)",
		msg:    &FamilySeen{Family: "p", Host: "h1", Reconcile: true, Hold: 3},
		events: []string{"opencode.registry.host_set"},
		moved:  true,
		effect: &ReconcileFamily{Family: "p", Host: "h1", Hold: 3},
	}, {
		name:   "a move from the record the router saw",
		before: []any{&FamilySeen{Family: "p", Host: "h1"}},
		msg:    &FamilySeen{Family: "p", Host: "h2", IfCurrent: "h1", Reconcile: true, Hold: 4},
		events: []string{"opencode.registry.host_set"},
		moved:  true,
		effect: &ReconcileFamily{Family: "p", Host: "h2", Hold: 4},
	}, {
		name:   "a move decided on a stale record changes nothing and reconciles nothing",
		before: []any{&FamilySeen{Family: "p", Host: "h1"}},
		msg:    &FamilySeen{Family: "p", Host: "h2", IfCurrent: "", Reconcile: true, Hold: 5},
		events: []string{},
	}, {
		name:   "the host already recorded",
		before: []any{&FamilySeen{Family: "p", Host: "h1"}},
		msg:    &FamilySeen{Family: "p", Host: "h1", IfCurrent: "h1", Reconcile: true, Hold: 6},
		events: []string{},
	}, {
		name:   "a directory alone",
		before: []any{&FamilySeen{Family: "p", Directory: "/a", Host: "h1"}},
		msg:    &FamilySeen{Family: "p", Directory: "/b"},
		events: []string{"opencode.registry.directory_set"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			states := run(t, append(c.before, c.msg)...)
			s := k.Initial(ID)
			if len(states) > 1 {
				s = states[len(states)-2]
			}
			d := k.Decide(s, c.msg, time.Time{})
			var names []string
			for _, ev := range d.Events {
				n, _ := messages.TypeName(ev)
				names = append(names, n)
			}
			if len(names) != len(c.events) || (len(names) > 0 && !reflect.DeepEqual(names, c.events)) {
				t.Errorf("events %v, want %v", names, c.events)
			}
			seen, ok := d.Reply.(*Seen)
			if !ok || seen.Moved != c.moved {
				t.Fatalf("answer %+v, want moved %v", d.Reply, c.moved)
			}
			var want []any
			if c.effect != nil {
				want = []any{c.effect}
			}
			if !reflect.DeepEqual(d.Effects, want) {
				t.Errorf("effects %+v, want %+v", d.Effects, want)
			}
			if last := states[len(states)-1]; c.moved && last.Host("p") != c.msg.Host {
				t.Errorf("host %q, want %q", last.Host("p"), c.msg.Host)
			}
		})
	}
}
