package thatch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/opencode"
)

func TestConnectReusesAServerWatchedUnderAnotherName(t *testing.T) {
	work := &hostConn{name: "work", url: "http://127.0.0.1:4096"}
	o := &openCode{hosts: map[string]*hostConn{"work": work}}
	// The plugin of the configured server registers it under its own name.
	h, err := o.connect(context.Background(), config.Server{Name: "opencode@127.0.0.1:4096", URL: "http://127.0.0.1:4096/"}, 4242, "/src/project")
	if err != nil {
		t.Fatal(err)
	}
	if h != work || len(o.hosts) != 1 {
		t.Fatalf("got host %q, %d hosts watched; want the configured one, once", h.name, len(o.hosts))
	}
}

func TestSameServer(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"http://127.0.0.1:4096", "http://127.0.0.1:4096/", true},
		{"HTTP://127.0.0.1:4096/", "http://127.0.0.1:4096", true},
		{"http://127.0.0.1:4096", "http://127.0.0.1:4097", false},
		{"http://127.0.0.1:4096", "https://127.0.0.1:4096", false},
		{"http://127.0.0.1:4096/a", "http://127.0.0.1:4096/b", false},
		{"http://127.0.0.1:4096", "://bad", false},
	} {
		if got := sameServer(c.a, c.b); got != c.want {
			t.Errorf("sameServer(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

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
	o := &openCode{log: hclog.NewNullLogger(), dir: &sessionDirectory{parents: map[string]string{}, hosts: map[string]string{}, dirs: map[string]string{}}}

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
