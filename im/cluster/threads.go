package cluster

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/thatch-run/thatch/internal/retry"
)

// Thread is where a thread lives: the node that owns its window. A new
// thread whose machine is being asked has no Node yet: its updates wait
// in Held (each an envelope the front end made), and Asked is set once
// the question was asked (the receiving node's notices send it; entries
// written before that held the question's message id).
type Thread struct {
	Thread string   `json:"thread"`
	Node   string   `json:"node,omitempty"`
	Held   [][]byte `json:"held,omitempty"`
	Asked  string   `json:"asked,omitempty"`
	// Instance names the store of Node's that holds the thread's binding
	// (the caller's id of it), once Node took an update of the thread:
	// another one there means Node's data was replaced since.
	Instance string `json:"instance,omitempty"`
	// Rev is the entry's revision, for PutThread; 0: not stored yet.
	Rev uint64 `json:"-"`
}

// threadKey is the bucket key of a thread key: its bytes in hex, as a
// thread key may hold what a bucket key may not (":" above all).
func threadKey(thread string) string { return "t" + hex.EncodeToString([]byte(thread)) }

// ErrConflict: the entry changed since it was read; read it again.
var ErrConflict = errors.New("cluster: the entry changed meanwhile")

// Thread reads where thread lives; ok is false when it is not known. A
// thread whose node is set keeps it (nothing moves a thread), so one
// seen with its node in the bucket's watch is answered from memory;
// anything else is read from the bucket's leader.
func (n *Node) Thread(ctx context.Context, thread string) (t Thread, ok bool, err error) {
	if !n.isReady() {
		return t, false, errNotReady
	}
	n.owners.mu.Lock()
	owned, hit := n.owners.m[thread]
	n.owners.mu.Unlock()
	if hit {
		return owned, true, nil
	}
	c, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	e, err := n.threads.Get(c, threadKey(thread))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Thread{Thread: thread}, false, nil
	}
	if err != nil {
		return t, false, err
	}
	if err := json.Unmarshal(e.Value(), &t); err != nil {
		return t, false, fmt.Errorf("cluster: thread %s: %w", thread, err)
	}
	t.Rev = e.Revision()
	return t, true, nil
}

// PutThread writes t if its entry is still at t.Rev (0: not there yet),
// and returns it at its new revision; ErrConflict when it changed.
func (n *Node) PutThread(ctx context.Context, t Thread) (Thread, error) {
	if !n.isReady() {
		return t, errNotReady
	}
	body, err := json.Marshal(t)
	if err != nil {
		return t, err
	}
	c, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	var rev uint64
	if t.Rev == 0 {
		rev, err = n.threads.Create(c, threadKey(t.Thread), body)
	} else {
		rev, err = n.threads.Update(c, threadKey(t.Thread), body, t.Rev)
	}
	if isConflict(err) {
		return t, fmt.Errorf("%w: %w", ErrConflict, err)
	}
	if err != nil {
		return t, err
	}
	t.Rev = rev
	if t.Node != "" {
		n.owners.mu.Lock()
		n.owners.m[t.Thread] = t
		n.owners.mu.Unlock()
	}
	return t, nil
}

// Threads lists every known thread, sorted by key.
func (n *Node) Threads(ctx context.Context) ([]Thread, error) {
	if !n.isReady() {
		return nil, errNotReady
	}
	c, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	es, err := all(c, n.threads)
	if err != nil {
		return nil, err
	}
	out := make([]Thread, 0, len(es))
	for _, e := range es {
		var t Thread
		if json.Unmarshal(e.Value(), &t) != nil {
			continue
		}
		t.Rev = e.Revision()
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Thread < out[j].Thread })
	return out, nil
}

// ownerCache holds the threads whose node is set, as the bucket's watch
// delivers them.
type ownerCache struct {
	mu sync.Mutex
	m  map[string]Thread
}

// watchOwners fills n.owners from the thread bucket until the node
// closes, watching it again after a failure.
func (n *Node) watchOwners() {
	for n.ctx.Err() == nil {
		w, err := n.threads.WatchAll(n.ctx, jetstream.IgnoreDeletes())
		if err != nil {
			if !retry.Sleep(n.ctx, setupInterval) {
				return
			}
			continue
		}
		for e := range w.Updates() {
			if e == nil {
				continue // the initial values are all there
			}
			var t Thread
			if json.Unmarshal(e.Value(), &t) != nil || t.Node == "" {
				continue
			}
			t.Rev = e.Revision()
			n.owners.mu.Lock()
			n.owners.m[t.Thread] = t
			n.owners.mu.Unlock()
		}
		_ = w.Stop()
		retry.Sleep(n.ctx, setupInterval)
	}
}
