package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thatch-run/thatch/im/cluster"
	"github.com/thatch-run/thatch/internal/testwait"
)

// freePorts returns n loopback ports free a moment ago.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return out, nil
}

var (
	trioOnce  sync.Once
	trioNodes []*cluster.Node
	trioErr   error
	trioDir   string
)

// trio returns three nodes routed to each other, started once for the
// package's tests (a cluster takes some seconds to elect its leaders).
// Each test uses keys and subjects of its own.
func trio(t *testing.T) []*cluster.Node {
	t.Helper()
	trioOnce.Do(func() { trioNodes, trioErr = startTrio() })
	if trioErr != nil {
		t.Fatal(trioErr)
	}
	return trioNodes
}

func startTrio() ([]*cluster.Node, error) {
	var err error
	if trioDir, err = os.MkdirTemp("", "thatch-cluster-test-"); err != nil {
		return nil, err
	}
	return startNodes(trioDir, 3, 0)
}

// startNodes starts count nodes routed to each other, keeping replicas
// copies of the shared state (0: the default), and waits until each is
// ready.
func startNodes(dir string, count, replicas int) ([]*cluster.Node, error) {
	ports, err := freePorts(count)
	if err != nil {
		return nil, err
	}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	var nodes []*cluster.Node
	for i := range count {
		n, err := cluster.Start(cluster.Options{Node: fmt.Sprintf("n%d", i), Listen: fmt.Sprintf("127.0.0.1:%d", ports[i]),
			Routes: routes, LeaseTTL: 2 * time.Second, Dir: filepath.Join(dir, fmt.Sprint(i)), Token: "secret", Replicas: replicas})
		if err != nil {
			return nodes, err
		}
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		select {
		case <-n.Ready():
		case <-time.After(90 * time.Second):
			return nodes, fmt.Errorf("node %s never became ready", n.Name())
		}
	}
	return nodes, nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, n := range trioNodes {
		n.Close()
	}
	if trioDir != "" {
		os.RemoveAll(trioDir)
	}
	os.Exit(code)
}

// One node holds a lease at a time; when it leaves, another takes it.
func TestLeaseHasOneHolderAndMovesWhenItLeaves(t *testing.T) {
	nodes := trio(t)
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
}

// runs numbers the runs of a test (go test -count): the trio outlives
// one run, so what a test writes to it is named after its run.
var runs atomic.Int64

// A message published twice with one id is handed over once, to the
// node whose subject it names, and an unacknowledged one comes again.
func TestPublishDedupesAndConsumeDeliversToItsNode(t *testing.T) {
	nodes := trio(t)
	ctx := context.Background()
	run := runs.Add(1)
	id := func(i int) string { return fmt.Sprintf("r%d-m%d", run, i) }
	for i := range 3 {
		dup, err := nodes[0].Publish(ctx, "n2", id(i), []byte(fmt.Sprint(i)))
		if err != nil || dup {
			t.Fatalf("publish %d: dup=%v err=%v", i, dup, err)
		}
	}
	if dup, err := nodes[1].Publish(ctx, "n2", id(1), []byte("again")); err != nil || !dup {
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

// A thread's entry is written at most once from one revision: two nodes
// holding updates for a new thread, or giving it a node, cannot both win.
func TestThreadEntriesAreCompareAndSet(t *testing.T) {
	nodes := trio(t)
	ctx := context.Background()
	thread := fmt.Sprintf("tg:-100:%d", runs.Add(1))
	th, err := nodes[0].PutThread(ctx, cluster.Thread{Thread: thread, Held: [][]byte{[]byte("a")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[1].PutThread(ctx, cluster.Thread{Thread: thread, Node: "n2"}); !errors.Is(err, cluster.ErrConflict) {
		t.Fatalf("a second create of the thread: %v, want a conflict", err)
	}
	stale := th
	th.Held = append(th.Held, []byte("b"))
	if th, err = nodes[2].PutThread(ctx, th); err != nil {
		t.Fatal(err)
	}
	stale.Node = "n1"
	if _, err := nodes[1].PutThread(ctx, stale); !errors.Is(err, cluster.ErrConflict) {
		t.Fatalf("a write at an old revision: %v, want a conflict", err)
	}
	th.Node, th.Held = "n0", nil
	if _, err := nodes[1].PutThread(ctx, th); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		testwait.Within(t, 10*time.Second, "every node sees the thread's node", func() bool {
			got, ok, err := n.Thread(ctx, thread)
			return err == nil && ok && got.Node == "n0"
		})
	}
}

// Two machines with one copy of the shared state (replicas = 1, what the
// README tells two machines to use) still share a lease, a thread's
// entry and each other's messages.
func TestTwoNodesWithOneReplicaShareLeaseThreadsAndMessages(t *testing.T) {
	nodes, err := startNodes(t.TempDir(), 2, 1)
	t.Cleanup(func() {
		for _, n := range nodes {
			n.Close()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if st := nodes[1].Status(ctx); st.Replicas != 1 {
		t.Fatalf("status %+v, want one replica", st)
	}
	var holders, running atomic.Int32
	var overlap atomic.Bool
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.Hold(ctx, cluster.AccountKey("tg", "7"), func(ctx context.Context) {
				holders.Add(1)
				if running.Add(1) > 1 {
					overlap.Store(true)
				}
				<-ctx.Done()
				running.Add(-1)
			})
		}()
	}
	if _, err := nodes[0].PutThread(ctx, cluster.Thread{Thread: "tg:-1:2", Node: "n1"}); err != nil {
		t.Fatal(err)
	}
	if dup, err := nodes[0].Publish(ctx, "n1", "one", []byte("hello")); err != nil || dup {
		t.Fatalf("publish: dup=%v err=%v", dup, err)
	}
	got := make(chan string, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		nodes[1].Consume(ctx, func(_ context.Context, data []byte) error {
			select {
			case got <- string(data):
			default:
			}
			return nil
		})
	}()
	select {
	case m := <-got:
		if m != "hello" {
			t.Fatalf("n1 consumed %q", m)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("n1 never consumed the message n0 published to it")
	}
	testwait.Within(t, 10*time.Second, "n1 sees the thread n0 wrote", func() bool {
		th, ok, err := nodes[1].Thread(ctx, "tg:-1:2")
		return err == nil && ok && th.Node == "n1"
	})
	testwait.Within(t, 30*time.Second, "a lease holder", func() bool { return holders.Load() > 0 })
	cancel()
	wg.Wait()
	if overlap.Load() {
		t.Fatal("both nodes ran under the lease at once")
	}
}

// Beating reads a heartbeat from the bucket now: every node of the trio
// beats, a node that never joined does not.
func TestBeatingReadsTheHeartbeatFromTheBucket(t *testing.T) {
	nodes := trio(t)
	ctx := context.Background()
	for _, n := range nodes {
		testwait.UntilReason(t, "the trio's heartbeats in "+n.Name()+"'s read", func() (bool, string) {
			for _, o := range nodes {
				ok, err := n.Beating(ctx, o.Name())
				if err != nil || !ok {
					return false, fmt.Sprintf("%s: %v %v", o.Name(), ok, err)
				}
			}
			return true, ""
		})
	}
	if ok, err := nodes[0].Beating(ctx, "never-joined"); err != nil || ok {
		t.Fatalf("Beating(never-joined) = %v, %v; want false, nil", ok, err)
	}
}

// A chat's board entry and its threads' rows, put from any node, reach a
// watch on another: the board before the rows of the entries there when
// the watch begins, then every change. An ask for the board where it is
// shown already keeps its message; one elsewhere drops it.
func TestBoardsReachTheWriterBoardFirst(t *testing.T) {
	nodes := trio(t)
	ctx := context.Background()
	chat := fmt.Sprintf("tg:-%d", 1000+runs.Add(1))
	general := chat + ":1"
	if err := nodes[0].PutBoardRow(ctx, chat, chat+":7", []byte(`{"thread":"a"}`)); err != nil {
		t.Fatal(err)
	}
	if err := nodes[1].BoardShown(ctx, chat, general, "m9"); err != nil {
		t.Fatal(err)
	}
	if err := nodes[2].AskBoard(ctx, chat, general); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var got []cluster.BoardEntry
	go nodes[2].WatchBoards(wctx, func(e cluster.BoardEntry) {
		if e.Chat == chat {
			mu.Lock()
			got = append(got, e)
			mu.Unlock()
		}
	})
	seen := func(n int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got) >= n
		}
	}
	testwait.Within(t, 10*time.Second, "the board and its row", seen(2))
	mu.Lock()
	if b := got[0].Board; b == nil || *b != (cluster.Board{Thread: general, MessageID: "m9"}) || string(got[1].Row) != `{"thread":"a"}` {
		t.Fatalf("watched %+v", got)
	}
	mu.Unlock()
	if err := nodes[0].AskBoard(ctx, chat, chat+":2"); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, 10*time.Second, "the board asked elsewhere", seen(3))
	mu.Lock()
	defer mu.Unlock()
	if b := got[2].Board; b == nil || *b != (cluster.Board{Thread: chat + ":2"}) {
		t.Fatalf("after an ask elsewhere: %+v", got[2])
	}
}
