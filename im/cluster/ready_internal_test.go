package cluster

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestReadyMeansEveryBucketAnswers: a bucket handle made while the bucket
// had direct reads on (as when another node made or updated it at that
// moment) gets no responders once they are off again. Readiness reads
// through every handle, so such a node is not ready, and setup, tried
// again, makes handles that answer.
func TestReadyMeansEveryBucketAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	n, err := Start(Options{Node: "solo", Listen: addr, LeaseTTL: 2 * time.Second, Dir: filepath.Join(t.TempDir(), "n")})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	select {
	case <-n.Ready():
	case <-time.After(time.Minute):
		t.Fatal("the node never became ready")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.answering(ctx); err != nil {
		t.Fatalf("a ready node's buckets do not answer: %v", err)
	}

	// Another node's update turns direct reads on; a handle is made
	// meanwhile; they are turned off again.
	direct := func(on bool) {
		t.Helper()
		s, err := n.js.Stream(ctx, "KV_"+threadBucket)
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		cfg.AllowDirect = on
		if _, err := n.js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	direct(true)
	stale, err := n.js.KeyValue(ctx, threadBucket)
	if err != nil {
		t.Fatal(err)
	}
	direct(false)
	if _, err := stale.Get(ctx, "x"); errors.Is(err, jetstream.ErrKeyNotFound) || err == nil {
		t.Skipf("a handle made while direct reads were on still answers (%v): nothing to check", err)
	}
	n.threads = stale
	if err := n.answering(ctx); err == nil {
		t.Fatal("readiness did not see a bucket that does not answer")
	}
	if err := n.setup(); err != nil {
		t.Fatalf("setup tried again: %v", err)
	}
	if _, err := n.threads.Get(ctx, "x"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("after setup the thread bucket answers %v, want key not found", err)
	}
}
