package cluster_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/im/cluster"
	"github.com/thatch-run/thatch/internal/testwait"
)

// freePorts returns n loopback ports free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

// trio starts three nodes routed to each other.
func trio(t *testing.T, ttl time.Duration) []*cluster.Node {
	t.Helper()
	ports := freePorts(t, 3)
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	nodes := make([]*cluster.Node, 3)
	for i := range nodes {
		n, err := cluster.Start(cluster.Options{Node: fmt.Sprintf("n%d", i), Listen: fmt.Sprintf("127.0.0.1:%d", ports[i]),
			Routes: routes, LeaseTTL: ttl, Dir: t.TempDir(), Token: "secret",
			Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}})})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
	}
	for _, n := range nodes {
		select {
		case <-n.Ready():
		case <-time.After(60 * time.Second):
			t.Fatalf("node %s never became ready", n.Name())
		}
	}
	return nodes
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// One node holds a lease at a time; when it leaves, another takes it.
func TestLeaseHasOneHolderAndMovesWhenItLeaves(t *testing.T) {
	nodes := trio(t, 2*time.Second)
	var running atomic.Int32
	var overlap atomic.Bool
	var who sync.Map
	ctxs := make([]context.CancelFunc, 3)
	var wg sync.WaitGroup
	for i, n := range nodes {
		ctx, cancel := context.WithCancel(context.Background())
		ctxs[i] = cancel
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.Hold(ctx, cluster.AccountKey("tg", "42"), func(ctx context.Context) {
				if running.Add(1) > 1 {
					overlap.Store(true)
				}
				who.Store("holder", i)
				<-ctx.Done()
				running.Add(-1)
			})
		}()
	}
	testwait.Within(t, 30*time.Second, "a holder", func() bool { _, ok := who.Load("holder"); return ok })
	first, _ := who.Load("holder")
	ctxs[first.(int)]()
	testwait.Within(t, 30*time.Second, "another holder", func() bool { h, _ := who.Load("holder"); return h != first })
	for _, c := range ctxs {
		c()
	}
	wg.Wait()
	if overlap.Load() {
		t.Fatal("two nodes ran under the lease at once")
	}
	for _, n := range nodes {
		n.Close()
	}
}

// A message published twice with one id is handed over once, to the
// node whose subject it names, and an unacknowledged one comes again.
func TestPublishDedupesAndConsumeDeliversToItsNode(t *testing.T) {
	nodes := trio(t, 2*time.Second)
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()
	ctx := context.Background()
	for i := range 3 {
		dup, err := nodes[0].Publish(ctx, "n2", fmt.Sprintf("m%d", i), []byte(fmt.Sprint(i)))
		if err != nil || dup {
			t.Fatalf("publish %d: dup=%v err=%v", i, dup, err)
		}
	}
	if dup, err := nodes[1].Publish(ctx, "n2", "m1", []byte("again")); err != nil || !dup {
		t.Fatalf("second publish of m1: dup=%v err=%v", dup, err)
	}
	var mu sync.Mutex
	var got []string
	failed := false
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		nodes[2].Consume(cctx, func(_ context.Context, data []byte) error {
			mu.Lock()
			defer mu.Unlock()
			if string(data) == "1" && !failed {
				failed = true
				return fmt.Errorf("not now")
			}
			got = append(got, string(data))
			return nil
		})
	}()
	testwait.Within(t, 30*time.Second, "three messages", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 3 })
	cancel()
	<-done
	if fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("got %v, want [0 1 2] in order, each once", got)
	}
}

// A thread's entry is written at most once from one revision.
func TestThreadEntriesAreCompareAndSet(t *testing.T) {
	nodes := trio(t, 2*time.Second)
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()
	ctx := context.Background()
	th, err := nodes[0].PutThread(ctx, cluster.Thread{Thread: "tg:-100:7", Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[1].PutThread(ctx, cluster.Thread{Thread: "tg:-100:7", Node: "n2"}); err == nil {
		t.Fatal("a second create of the thread succeeded")
	}
	th.Node = "n0"
	if _, err := nodes[2].PutThread(ctx, th); err != nil {
		t.Fatal(err)
	}
	got, ok, err := nodes[1].Thread(ctx, "tg:-100:7")
	if err != nil || !ok || got.Node != "n0" {
		t.Fatalf("thread: %+v %v %v", got, ok, err)
	}
	if _, err := nodes[1].PutThread(ctx, th); err == nil {
		t.Fatal("a write at an old revision succeeded")
	}
}
