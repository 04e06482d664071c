package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/thatch-run/thatch/internal/retry"
)

// Publish puts data on node's subject of the stream, with msgID as its
// message id: a second publish of one id within an hour is dropped by
// the stream (dup is then true). It returns once the stream's replicas
// acknowledged it.
func (n *Node) Publish(ctx context.Context, node, msgID string, data []byte) (dup bool, err error) {
	if !n.isReady() {
		return false, errNotReady
	}
	c, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	ack, err := n.js.PublishMsg(c, &nats.Msg{Subject: SubjectPrefix + node, Data: data}, jetstream.WithMsgID(msgID))
	if err != nil {
		return false, fmt.Errorf("cluster: publish to %s: %w", node, err)
	}
	return ack.Duplicate, nil
}

// consumerName is the durable consumer of a node's subject.
func consumerName(node string) string { return "in-" + node }

// ackWait is how long a message handed out may stay unacknowledged
// before the stream offers it again. While handle runs, Consume tells the
// stream every progressEvery that it still works on it, so ackWait bounds
// only a message that was lost on its way (a fetch answered while this
// node was stopped, or as the consumer's leader moved): it is offered
// again within seconds, not after a long handle's bound.
const (
	ackWait       = 10 * time.Second
	progressEvery = ackWait / 4
)

// nakDelay is how long a message handle failed waits before it is
// offered again.
const nakDelay = time.Second

// Consume hands each message of this node's subject to handle, one at a
// time and in order, until ctx ends: one acknowledged only once handle
// returned nil for it (then it leaves the stream; an acknowledgement that
// fails, as in an election, is made again until ackWait has passed), one
// handle failed is offered again after nakDelay, and nothing after it is
// handed over meanwhile. The consumer is durable: what arrives while the node is
// down waits in the stream.
func (n *Node) Consume(ctx context.Context, handle func(ctx context.Context, data []byte) error) {
	n.consume(ctx, StreamName, jetstream.ConsumerConfig{
		Durable: consumerName(n.o.Node), FilterSubject: SubjectPrefix + n.o.Node,
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxAckPending: 1,
		DeliverPolicy: jetstream.DeliverAllPolicy, MaxDeliver: -1,
		// The consumer's state (what was acknowledged) is kept in
		// memory on its replicas: an acknowledged update leaves the
		// stream (a work queue) anyway, so losing the state with
		// every replica at once only offers unacknowledged updates
		// again, which the bindings drop; and no acknowledgement
		// waits for a disk.
		MemoryStorage: true,
	}, handle)
}

// consume runs Consume's loop on the durable consumer cfg of stream.
func (n *Node) consume(ctx context.Context, stream string, cfg jetstream.ConsumerConfig, handle func(ctx context.Context, data []byte) error) {
	if !n.Wait(ctx) {
		return
	}
	var cons jetstream.Consumer
	for {
		c, cancel := context.WithTimeout(ctx, opTimeout)
		var err error
		cons, err = n.js.CreateOrUpdateConsumer(c, stream, cfg)
		cancel()
		if err == nil {
			break
		}
		n.log.Warn("cannot make this node's consumer; trying again", "stream", stream, "error", err)
		if !retry.Sleep(ctx, setupInterval) {
			return
		}
	}
	for ctx.Err() == nil && n.ctx.Err() == nil {
		msg, err := next(ctx, cons)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			n.log.Debug("fetch from the stream failed; trying again", "error", err)
			retry.Sleep(ctx, nakDelay)
			continue
		}
		if msg == nil {
			continue
		}
		if err := handleInProgress(ctx, msg, handle); err != nil {
			if ctx.Err() != nil {
				return // not acknowledged: offered again after the restart
			}
			n.log.Warn("an update from the stream failed; it is offered again", "error", err)
			_ = msg.NakWithDelay(nakDelay)
			continue
		}
		n.ack(ctx, msg)
	}
}

// handleInProgress runs handle on msg, telling the stream every
// progressEvery meanwhile that the message is still worked on.
func handleInProgress(ctx context.Context, msg jetstream.Msg, handle func(ctx context.Context, data []byte) error) error {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = msg.InProgress() // a lost one: the next tick, or ackWait
			}
		}
	})
	defer wg.Wait()
	defer close(done)
	return handle(ctx, msg.Data())
}

// ack acknowledges a handled message, again and again while it fails (the
// consumer's leader may be moving) until ackWait has passed, when the
// stream offers it again anyway and its binding drops it.
func (n *Node) ack(ctx context.Context, msg jetstream.Msg) {
	deadline := time.Now().Add(ackWait)
	for attempt := 1; ; attempt++ {
		c, cancel := context.WithTimeout(ctx, opTimeout)
		err := msg.DoubleAck(c)
		cancel()
		if err == nil || ctx.Err() != nil {
			return
		}
		if time.Now().After(deadline) {
			n.log.Warn("cannot acknowledge an update; it will be offered again and dropped", "attempts", attempt, "error", err)
			return
		}
		n.log.Debug("cannot acknowledge an update yet; trying again", "error", err)
		if !retry.Sleep(ctx, nakDelay) {
			return
		}
	}
}

// next fetches one message, waiting up to a few seconds (nil: none came).
func next(ctx context.Context, cons jetstream.Consumer) (jetstream.Msg, error) {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	b, err := cons.Fetch(1, jetstream.FetchContext(c))
	if err != nil {
		return nil, err
	}
	for m := range b.Messages() {
		return m, nil
	}
	if err := b.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
		return nil, err
	}
	return nil, nil
}
