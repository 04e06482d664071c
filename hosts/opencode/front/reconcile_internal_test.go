package front

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/hosts/opencode"
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
	o := &FrontEnd{log: hclog.NewNullLogger(), dir: &sessionDirectory{parents: map[string]string{}, hosts: map[string]string{}, dirs: map[string]string{}}}

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
