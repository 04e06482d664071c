package cluster

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/thatch-run/thatch/internal/retry"
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

// Wait blocks until the node is ready, or returns false when ctx ends
// (or the node closes) first.
func (n *Node) Wait(ctx context.Context) bool {
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
// by updating it every fifth of the TTL at the revision this node wrote
// last. An entry written after a request was sent expires no sooner than
// the TTL after that send, so the lease is surely this node's until then
// (less a margin for the clocks): a renewal that fails for want of an
// answer (the bucket's leader died and another is being elected, which
// takes NATS 4 to 9 seconds) is tried again until that moment, and run's
// context ends at it, before another node can take the lease. A renewal
// refused because the entry changed ends it at once. When run returns on
// its own, or ctx ends, the lease is given up (deleted at its revision),
// so that another node takes it at once rather than after the TTL.
func (n *Node) Hold(ctx context.Context, key string, run func(ctx context.Context)) {
	if !n.Wait(ctx) {
		return
	}
	ttl := n.o.LeaseTTL
	for ctx.Err() == nil && n.ctx.Err() == nil {
		sent := time.Now()
		rev, err := n.take(ctx, key)
		if err != nil {
			if !errors.Is(err, jetstream.ErrKeyExists) {
				n.log.Debug("cannot take the lease", "lease", key, "error", err)
			}
			// Ask again soon: a holder that died frees the lease at
			// most a TTL after its last renewal.
			if !retry.Sleep(ctx, ttl/10+rand.N(ttl/10)) {
				return
			}
			continue
		}
		n.log.Info("took the lease", "lease", key, "node", n.o.Node)
		n.holdTaken(ctx, key, rev, sent.Add(ttl-leaseMargin(ttl)), run)
		if !retry.Sleep(ctx, ttl/10) {
			return
		}
	}
}

// leaseMargin is how much sooner than its TTL a holder counts its lease
// as gone: room for the clocks of the nodes to disagree.
func leaseMargin(ttl time.Duration) time.Duration { return ttl / 20 }

func (n *Node) take(ctx context.Context, key string) (uint64, error) {
	c, cancel := context.WithTimeout(ctx, min(opTimeout, n.o.LeaseTTL/4))
	defer cancel()
	return n.leases.Create(c, key, []byte(n.o.Node))
}

// holdTaken runs run under the lease taken at rev, surely this node's
// until valid, renewing it, until the lease is lost, run returns or ctx
// ends.
func (n *Node) holdTaken(ctx context.Context, key string, rev uint64, valid time.Time, run func(ctx context.Context)) {
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
	every := ttl / 5
	tick := time.NewTimer(every)
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
		}
		left := time.Until(valid)
		if left <= 0 {
			n.log.Warn("lost the lease: no renewal was answered in time; stopping", "lease", key)
			return
		}
		sent := time.Now()
		c, cancel := context.WithTimeout(ctx, min(every, left))
		next, err := n.leases.Update(c, key, []byte(n.o.Node), rev)
		cancel()
		switch {
		case err == nil:
			rev, valid = next, sent.Add(ttl-leaseMargin(ttl))
			tick.Reset(every)
		case isConflict(err):
			n.log.Warn("lost the lease: it changed (expired and taken); stopping at once", "lease", key, "error", err)
			return
		default:
			// No answer: try again while the lease is surely still
			// this node's.
			n.log.Debug("a renewal of the lease failed; trying again", "lease", key, "error", err, "valid_for", time.Until(valid))
			tick.Reset(min(time.Second, max(time.Until(valid), 0)))
		}
	}
}

// isConflict reports whether err says an entry is not at the revision a
// write expected.
func isConflict(err error) bool {
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyNotFound) {
		return true
	}
	var api *jetstream.APIError
	return errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
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
