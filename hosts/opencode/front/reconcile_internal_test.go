package front

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/hosts/opencode"
	"github.com/thatch-run/thatch/messages"
)

// flakyLister fails its first listings, then lists nothing.
type flakyLister struct{ fails, calls int }

func (l *flakyLister) ListSessions(context.Context) ([]opencode.Session, error) {
	l.calls++
	if l.calls <= l.fails {
		return nil, errors.New("connection reset")
	}
	return nil, nil
}

func (l *flakyLister) SessionStatus(context.Context) (map[string]opencode.SessionStatus, error) {
	return map[string]opencode.SessionStatus{}, nil
}

func TestConnectReconcileTriesAgainAfterAFailure(t *testing.T) {
	defer func(w time.Duration) { reconcileRetryWait = w }(reconcileRetryWait)
	reconcileRetryWait = time.Millisecond
	o := &FrontEnd{log: hclog.NewNullLogger(), dir: newDirectory()}

	l := &flakyLister{fails: 2}
	o.reconcileRetrying(context.Background(), "h", l)
	if l.calls != 3 {
		t.Errorf("listed %d times, want 2 failures and a success", l.calls)
	}
	l = &flakyLister{fails: 10}
	o.reconcileRetrying(context.Background(), "h", l)
	if l.calls != reconcileAttempts {
		t.Errorf("listed %d times, want %d tries before giving up", l.calls, reconcileAttempts)
	}
}

func TestPlanReconcile(t *testing.T) {
	hs := func(id, parent string) messages.HostSession {
		return messages.HostSession{SessionID: id, ParentID: parent, Directory: "/dir/" + id}
	}
	// dirOf is a directory that knows the links given (child -> parent).
	dirOf := func(links map[string]string) func(string) string {
		return func(id string) string {
			for range 64 {
				p, ok := links[id]
				if !ok {
					return id
				}
				id = p
			}
			return id
		}
	}
	type want struct {
		links      []link
		strays     []string
		dirs       map[string]string
		deliveries []*messages.FamilyReconciled
		keptAll    bool
	}
	cases := []struct {
		name string
		in   reconcileInput
		want want
	}{{
		name: "a listed parent with a child: one delivery, the link and the directory",
		in:   reconcileInput{Host: "h", Listed: []messages.HostSession{hs("p", ""), hs("c", "p")}, Known: []string{"p"}, Family: dirOf(nil)},
		want: want{
			links: []link{{"c", "p"}},
			dirs:  map[string]string{"p": "/dir/p"},
			deliveries: []*messages.FamilyReconciled{{Host: "h", Present: true, Parent: hs("p", ""),
				Children: []messages.HostSession{hs("c", "p")}}},
		},
	}, {
		name: "a known family the host no longer lists is delivered as gone",
		in:   reconcileInput{Host: "h", Listed: []messages.HostSession{hs("q", "")}, Known: []string{"p"}, Family: dirOf(nil)},
		want: want{deliveries: []*messages.FamilyReconciled{{Host: "h", Parent: messages.HostSession{SessionID: "p"}}}},
	}, {
		name: "a session thatch never saw is left alone",
		in:   reconcileInput{Host: "h", Listed: []messages.HostSession{hs("p", ""), hs("stranger", "")}, Known: []string{"p"}, Family: dirOf(nil)},
		want: want{
			dirs:       map[string]string{"p": "/dir/p"},
			deliveries: []*messages.FamilyReconciled{{Host: "h", Present: true, Parent: hs("p", "")}},
		},
	}, {
		name: "a 'family' the listing shows to be a child is a stray, and its session joins the real family",
		in:   reconcileInput{Host: "h", Listed: []messages.HostSession{hs("p", ""), hs("t", "p")}, Known: []string{"p", "t"}, Family: dirOf(nil)},
		want: want{
			links:  []link{{"t", "p"}},
			strays: []string{"t"},
			dirs:   map[string]string{"p": "/dir/p"},
			deliveries: []*messages.FamilyReconciled{{Host: "h", Present: true, Parent: hs("p", ""),
				Children: []messages.HostSession{hs("t", "p")}}},
		},
	}, {
		name: "a grandchild reaches its family through a link the directory already had",
		in:   reconcileInput{Host: "h", Listed: []messages.HostSession{hs("p", ""), hs("g", "c")}, Known: []string{"p"}, Family: dirOf(map[string]string{"c": "p"})},
		want: want{
			links: []link{{"g", "c"}},
			dirs:  map[string]string{"p": "/dir/p"},
			deliveries: []*messages.FamilyReconciled{{Host: "h", Present: true, Parent: hs("p", ""),
				Children: []messages.HostSession{hs("g", "c")}}},
		},
	}, {
		name: "an empty listing for a host with families tells no family anything",
		in:   reconcileInput{Host: "h", Known: []string{"p", "q"}, Family: dirOf(nil)},
		want: want{keptAll: true},
	}, {
		name: "a one-family reconcile never judges its family deleted",
		in:   reconcileInput{Host: "h", Listed: []messages.HostSession{hs("q", "")}, Known: []string{"p", "q"}, Family: dirOf(nil), Only: map[string]bool{"p": true}},
		want: want{},
	}, {
		name: "a one-family reconcile leaves the other families alone",
		in:   reconcileInput{Host: "h", Listed: []messages.HostSession{hs("p", ""), hs("q", "")}, Known: []string{"p", "q"}, Family: dirOf(nil), Only: map[string]bool{"q": true}},
		want: want{
			dirs:       map[string]string{"q": "/dir/q"},
			deliveries: []*messages.FamilyReconciled{{Host: "h", Present: true, Parent: hs("q", "")}},
		},
	}, {
		name: "deliveries are sorted by family",
		in:   reconcileInput{Host: "h", Listed: []messages.HostSession{hs("b", ""), hs("a", "")}, Known: []string{"b", "a"}, Family: dirOf(nil)},
		want: want{
			dirs: map[string]string{"a": "/dir/a", "b": "/dir/b"},
			deliveries: []*messages.FamilyReconciled{
				{Host: "h", Present: true, Parent: hs("a", "")},
				{Host: "h", Present: true, Parent: hs("b", "")},
			},
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := planReconcile(c.in)
			if !reflect.DeepEqual(got.Links, c.want.links) {
				t.Errorf("links %v, want %v", got.Links, c.want.links)
			}
			if !reflect.DeepEqual(got.Strays, c.want.strays) {
				t.Errorf("strays %v, want %v", got.Strays, c.want.strays)
			}
			if !reflect.DeepEqual(got.Directories, c.want.dirs) {
				t.Errorf("directories %v, want %v", got.Directories, c.want.dirs)
			}
			if !reflect.DeepEqual(got.Deliveries, c.want.deliveries) {
				t.Errorf("deliveries %+v, want %+v", got.Deliveries, c.want.deliveries)
			}
			if got.KeptAll != c.want.keptAll {
				t.Errorf("kept all %v, want %v", got.KeptAll, c.want.keptAll)
			}
		})
	}
}
