package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The memory's changes: one stream every node writes to and reads all of,
// in the stream's one order, so that every node's memory store ends the
// same (memory.Store.Apply).
const (
	MemoryStream  = "THATCH_MEMORY"
	memorySubject = "memory.changes"
	// memoryKeep is how long a change stays in the stream: a node down
	// longer misses what is older.
	memoryKeep = 90 * 24 * time.Hour
	// memoryConsumerPrefix names each node's durable consumer.
	memoryConsumerPrefix = "mem-"
)

// memoryStreamConfig is the memory stream's configuration.
func (n *Node) memoryStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{Name: MemoryStream, Subjects: []string{memorySubject}, Storage: jetstream.FileStorage,
		Retention: jetstream.LimitsPolicy, MaxAge: memoryKeep, Replicas: n.o.Replicas, Duplicates: dedupeWindow}
}

// PublishMemory puts a change of this node's memory store on the stream,
// with msgID as its id (a second publish of one id within an hour is
// dropped); it returns once the stream's replicas acknowledged it.
func (n *Node) PublishMemory(ctx context.Context, msgID string, data []byte) error {
	if !n.isReady() {
		return errNotReady
	}
	c, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if _, err := n.js.PublishMsg(c, &nats.Msg{Subject: memorySubject, Data: data}, jetstream.WithMsgID(msgID)); err != nil {
		return fmt.Errorf("cluster: publish a memory change: %w", err)
	}
	return nil
}

// ConsumeMemory hands every change on the stream, this node's own too, to
// apply, one at a time and in the stream's order, until ctx ends; a
// change apply failed is offered again (nothing after it meanwhile). The
// consumer is durable: a node that was down reads on from where it
// stopped.
func (n *Node) ConsumeMemory(ctx context.Context, apply func(ctx context.Context, data []byte) error) {
	n.consume(ctx, MemoryStream, jetstream.ConsumerConfig{
		Durable: memoryConsumerPrefix + n.o.Node, AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait,
		MaxAckPending: 1, DeliverPolicy: jetstream.DeliverAllPolicy, MaxDeliver: -1,
	}, apply)
}

// MemoryBehind is how many changes of the memory stream each node has
// not applied yet, by node (a node that never read it is not listed).
func (n *Node) MemoryBehind(ctx context.Context) (map[string]uint64, error) {
	if !n.isReady() {
		return nil, errNotReady
	}
	c, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	st, err := n.js.Stream(c, MemoryStream)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	l := st.ListConsumers(c)
	for ci := range l.Info() {
		if node, ok := strings.CutPrefix(ci.Name, memoryConsumerPrefix); ok {
			out[node] = ci.NumPending + uint64(ci.NumAckPending)
		}
	}
	return out, l.Err()
}
