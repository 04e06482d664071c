package cluster

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// isReady reports whether Ready is closed.
func (n *Node) isReady() bool {
	select {
	case <-n.ready:
		return true
	default:
		return false
	}
}

// wait blocks until the node is ready, or returns false when ctx ends.
func (n *Node) wait(ctx context.Context) bool {
	select {
	case <-n.ready:
		return true
	case <-ctx.Done():
		return false
	case <-n.ctx.Done():
		return false
	}
}

// AccountKey makes a lease key of an adapter account ("tg", "12345"):
// what a bucket key may not hold becomes "_".
func AccountKey(platform, account string) string {
	return platform + "." + keySafe(account)
}

func keySafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '=':
			return r
		}
		return '_'
	}, s)
}

// Hold runs run while this node holds the lease named key, each time it
// takes the lease, until ctx ends. The lease is an entry of a bucket
// whose entries expire LeaseTTL after their last write: it is taken by
// creating the entry (which fails while another node holds it), and kept
// by updating it every third of the TTL at the revision this node wrote
// last. The first renewal that fails ends run's context at once, before
// the entry can expire and another node can take it, so that two nodes
// never run together while their clocks agree. When run returns on its
// own, or ctx ends, the lease is given up (deleted at its revision), so
// that another node takes it at once rather than after the TTL.
func (n *Node) Hold(ctx context.Context, key string, run func(ctx context.Context)) {
	if !n.wait(ctx) {
		return
	}
	ttl := n.o.LeaseTTL
	for ctx.Err() == nil && n.ctx.Err() == nil {
		rev, err := n.take(ctx, key)
		if err != nil {
			if !errors.Is(err, jetstream.ErrKeyExists) {
				n.log.Debug("cannot take the lease", "lease", key, "error", err)
			}
			// Ask again soon: a holder that died frees the lease at
			// most a TTL after its last renewal.
			if !sleep(ctx, ttl/8+rand.N(ttl/8)) {
				return
			}
			continue
		}
		n.log.Info("took the lease", "lease", key, "node", n.o.Node)
		n.holdTaken(ctx, key, rev, run)
		if !sleep(ctx, ttl/8) {
			return
		}
	}
}

func (n *Node) take(ctx context.Context, key string) (uint64, error) {
	c, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return n.leases.Create(c, key, []byte(n.o.Node))
}

// holdTaken runs run under the lease taken at rev, renewing it, until
// the lease is lost, run returns or ctx ends.
func (n *Node) holdTaken(ctx context.Context, key string, rev uint64, run func(ctx context.Context)) {
	ttl := n.o.LeaseTTL
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(rctx)
	}()
	defer func() {
		stop()
		<-done
	}()
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-done:
			n.release(key, rev)
			return
		case <-ctx.Done():
			stop()
			<-done
			n.release(key, rev)
			return
		case <-n.ctx.Done():
			stop()
			<-done
			n.release(key, rev)
			return
		case <-tick.C:
			c, cancel := context.WithTimeout(ctx, ttl/3)
			next, err := n.leases.Update(c, key, []byte(n.o.Node), rev)
			cancel()
			if err != nil {
				n.log.Warn("lost the lease: a renewal failed; stopping at once", "lease", key, "error", err)
				return
			}
			rev = next
		}
	}
}

// release gives the lease up, if this node still holds it.
func (n *Node) release(key string, rev uint64) {
	c, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := n.leases.Delete(c, key, jetstream.LastRevision(rev)); err != nil {
		n.log.Debug("could not give the lease up; it expires", "lease", key, "error", err)
		return
	}
	n.log.Info("gave the lease up", "lease", key)
}

// Holders maps each lease to the node holding it.
func (n *Node) Holders(ctx context.Context) (map[string]string, error) {
	if !n.isReady() {
		return nil, errNotReady
	}
	c, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	es, err := all(c, n.leases)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range es {
		out[e.Key()] = string(e.Value())
	}
	return out, nil
}

// Cursor reads the cursor stored for key ("" when none).
func (n *Node) Cursor(ctx context.Context, key string) (string, error) {
	if !n.isReady() {
		return "", errNotReady
	}
	c, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	e, err := n.cursors.Get(c, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(e.Value()), nil
}

// PutCursor stores the cursor of key.
func (n *Node) PutCursor(ctx context.Context, key, cursor string) error {
	if !n.isReady() {
		return errNotReady
	}
	c, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err := n.cursors.Put(c, key, []byte(cursor))
	return err
}
