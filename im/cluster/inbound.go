package cluster

import (
	"context"
	"errors"
	"fmt"
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

// ackWait is how long a message handed to handle may stay unacknowledged
// before the stream offers it again; handle is bounded well below it.
const ackWait = 2 * time.Minute

// nakDelay is how long a message handle failed waits before it is
// offered again.
const nakDelay = time.Second

// Consume hands each message of this node's subject to handle, one at a
// time and in order, until ctx ends: one acknowledged only once handle
// returned nil for it (then it leaves the stream), one handle failed is
// offered again after nakDelay, and nothing after it is handed over
// meanwhile. The consumer is durable: what arrives while the node is
// down waits in the stream.
func (n *Node) Consume(ctx context.Context, handle func(ctx context.Context, data []byte) error) {
	if !n.Wait(ctx) {
		return
	}
	var cons jetstream.Consumer
	for {
		c, cancel := context.WithTimeout(ctx, opTimeout)
		var err error
		cons, err = n.js.CreateOrUpdateConsumer(c, StreamName, jetstream.ConsumerConfig{
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
		})
		cancel()
		if err == nil {
			break
		}
		n.log.Warn("cannot make this node's consumer; trying again", "error", err)
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
		if err := handle(ctx, msg.Data()); err != nil {
			if ctx.Err() != nil {
				return // not acknowledged: offered again after the restart
			}
			n.log.Warn("an update from the stream failed; it is offered again", "error", err)
			_ = msg.NakWithDelay(nakDelay)
			continue
		}
		c, cancel := context.WithTimeout(ctx, opTimeout)
		if err := msg.DoubleAck(c); err != nil && !errors.Is(err, context.Canceled) {
			// Offered again after ackWait; the binding drops an update
			// it handled.
			n.log.Warn("cannot acknowledge an update; it will be offered again and dropped", "error", err)
		}
		cancel()
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
