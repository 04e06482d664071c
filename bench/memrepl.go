package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/thatch-run/thatch/persistence/memory"
)

// The memory's replication measured in process: three daemons (each its
// runtime with the IM front end, its journal and memory store) joined
// over their embedded NATS servers, as the cluster benchmark starts them.
// A memory remembered on one node goes through its OnChange hook to the
// node's outbox (a synced row), onto the THATCH_MEMORY stream, and to
// every node's consumer, which applies it to its store.
const (
	// memReplLimit is the target: replication lag p99 across
	// three local nodes.
	memReplLimit = 250 // ms
	// memReplPace is the time between two writes: slower than a change's
	// way through the stream, so that the lag measured is not a backlog.
	memReplPace = 20 * time.Millisecond
	// memReplPoll is how often the other nodes' stores are asked.
	memReplPoll = 2 * time.Millisecond
	// memReplWait is how long a write may take to reach every node
	// before the benchmark gives up on it.
	memReplWait = 30 * time.Second
)

func init() {
	register(Bench{
		Name: "memory-replication",
		Doc: "three nodes over embedded NATS JetStream: a memory remembered on one node, paced writes round-robin over the nodes, " +
			"until both others can Find it, p99 vs 250 ms",
		Order: 93,
		Run:   benchMemRepl,
	})
}

func benchMemRepl(c *Config) ([]Record, error) {
	n := c.Count(200, 20)
	ws, formed, err := memReplCluster(c)
	defer func() {
		// Last first: the first world's fake Bot API serves them all.
		for i := len(ws) - 1; i >= 0; i-- {
			if ws[i] != nil {
				ws[i].close()
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	// A first write from each node, awaited everywhere: every node's
	// consumer reads the stream before the measured writes.
	c.Logf("memory-replication: formed in %v; one warm-up write per node", formed.Round(time.Millisecond))
	if _, err := memReplRound(ws, "warm", clusterNodes); err != nil {
		return nil, err
	}
	c.Logf("memory-replication: %d writes, one every %v, round-robin over the nodes", n, memReplPace)
	m := startCPU()
	writes, err := memReplRound(ws, "probe", n)
	if err != nil {
		return nil, err
	}
	cpu := m.String()
	for i, w := range ws {
		es, err := w.rt.Memory().List(memory.GlobalStore, "")
		if err != nil {
			return nil, err
		}
		if len(es) != n+clusterNodes {
			return nil, fmt.Errorf("bench: memory-replication: n%d's global store holds %d memories, want %d", i, len(es), n+clusterNodes)
		}
	}
	return memReplRecords(writes, formed, cpu, c.Quick), nil
}

// memReplCluster starts three IM worlds joined into a cluster and waits
// until it formed (a node holds the poller's lease). The caller closes
// every world returned, also on an error.
func memReplCluster(c *Config) ([]*imWorld, time.Duration, error) {
	ws := make([]*imWorld, clusterNodes)
	ports, err := clusterPorts(clusterNodes)
	if err != nil {
		return ws, 0, err
	}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	for i := range ws {
		w, err := newIMWorld(c, fmt.Sprintf("memrepl-n%d", i), 5*time.Minute)
		if err != nil {
			return ws, 0, err
		}
		ws[i] = w
		if i > 0 { // one fake Bot API for all
			w.cfg.IM.Telegram.APIURL = ws[0].tg.URL()
		}
		cl := &w.cfg.Cluster
		cl.Node, cl.Listen, cl.Routes = fmt.Sprintf("n%d", i), fmt.Sprintf("127.0.0.1:%d", ports[i]), routes
	}
	start := time.Now()
	for _, w := range ws {
		if err := w.start(); err != nil {
			return ws, 0, err
		}
	}
	if _, err := clusterHolder(ws, -1); err != nil {
		return ws, 0, err
	}
	return ws, time.Since(start), nil
}

// replWrite is one memory written on node from, and when each node could
// Find it, counted from the start of the write.
type replWrite struct {
	label string
	from  int
	start time.Time
	wrote time.Duration               // the Remember call on its node
	seen  [clusterNodes]time.Duration // 0 until seen; from's own stays 0
}

// everywhere is the time until the last of the other nodes could Find it.
func (wr *replWrite) everywhere() time.Duration {
	var d time.Duration
	for j, s := range wr.seen {
		if j != wr.from {
			d = max(d, s)
		}
	}
	return d
}

// memReplRound writes n memories, one every memReplPace, node i%3 writing
// the i-th, while a poller looks for each on the other nodes; it returns
// once every write was seen everywhere.
func memReplRound(ws []*imWorld, prefix string, n int) ([]*replWrite, error) {
	pending := make(chan *replWrite, n) // never blocks the writer
	polled := make(chan error, 1)
	go func() { polled <- memReplPolls(ws, pending) }()
	var all []*replWrite
	var werr error
	t0 := time.Now()
	for i := range n {
		time.Sleep(time.Until(t0.Add(time.Duration(i) * memReplPace)))
		wr := &replWrite{label: fmt.Sprintf("replication %s %04d", prefix, i), from: i % clusterNodes, start: time.Now()}
		ctx, cancel := context.WithTimeout(context.Background(), mcpCallTimeout)
		_, err := ws[wr.from].rt.Memory().Remember(ctx, memory.RememberInput{Label: wr.label,
			Content: fmt.Sprintf("Write %d of the %s round, made on node n%d: the cluster replicates every memory to every node.", i, prefix, wr.from)})
		cancel()
		wr.wrote = time.Since(wr.start)
		if err != nil {
			werr = fmt.Errorf("bench: memory-replication: remember %q on n%d: %w", wr.label, wr.from, err)
			break
		}
		all = append(all, wr)
		pending <- wr
	}
	close(pending)
	if err := errors.Join(werr, <-polled); err != nil {
		return nil, err
	}
	return all, nil
}

// memReplPolls asks the other nodes' stores for every write it is handed,
// every memReplPoll, until each was seen everywhere and in is closed.
func memReplPolls(ws []*imWorld, in <-chan *replWrite) error {
	var open []*replWrite
	closed := false
	for {
		for more := !closed; more; {
			select {
			case wr, ok := <-in:
				if !ok {
					closed, more = true, false
					break
				}
				open = append(open, wr)
			default:
				more = false
			}
		}
		if closed && len(open) == 0 {
			return nil
		}
		keep := open[:0]
		for _, wr := range open {
			left, err := wr.look(ws)
			if err != nil {
				return err
			}
			if left {
				if time.Since(wr.start) > memReplWait {
					return fmt.Errorf("bench: memory-replication: %q, written on n%d, not on every node after %v (seen after %v)",
						wr.label, wr.from, memReplWait, wr.seen)
				}
				keep = append(keep, wr)
			}
		}
		open = keep
		time.Sleep(memReplPoll)
	}
}

// look asks each other node that has not shown the write yet for it, and
// reports whether one still has not.
func (wr *replWrite) look(ws []*imWorld) (left bool, err error) {
	for j, w := range ws {
		if j == wr.from || wr.seen[j] > 0 {
			continue
		}
		_, err := w.rt.Memory().Find(memory.GlobalStore, wr.label)
		switch {
		case err == nil:
			wr.seen[j] = time.Since(wr.start)
		case errors.Is(err, memory.ErrNotFound):
			left = true
		default:
			return false, fmt.Errorf("bench: memory-replication: find %q on n%d: %w", wr.label, j, err)
		}
	}
	return left, nil
}

// memReplRecords turns the writes into the memory-replication records.
func memReplRecords(writes []*replWrite, formed time.Duration, cpu string, quick bool) []Record {
	var lag, each, afterWrite, wrote latencies
	for _, wr := range writes {
		lag = append(lag, wr.everywhere())
		afterWrite = append(afterWrite, wr.everywhere()-wr.wrote)
		wrote = append(wrote, wr.wrote)
		for j, s := range wr.seen {
			if j != wr.from {
				each = append(each, s)
			}
		}
	}
	for _, l := range []latencies{lag, each, afterWrite, wrote} {
		slices.Sort(l)
	}
	mode := ""
	if quick {
		mode = " (QUICK MODE: few writes, the p99 is about the slowest)"
	}
	setup := fmt.Sprintf("three nodes in the bench process (each a daemon runtime with the IM front end, its own journal and memory store, "+
		"joined over embedded NATS on loopback, replicas min(3, nodes); formed in %v); %d memories remembered in the global store "+
		"through each node's memory.Store.Remember, node i%%3 writing the i-th, one every %v (paced, so that the lag is not a backlog: "+
		"a change takes longer than that only when replication falls behind); the other two nodes' stores polled with Find every %v%s",
		formed.Round(time.Millisecond), len(writes), memReplPace, memReplPoll, mode)
	return []Record{
		newRecord("memory-replication.lag.p99", ms(lag.p(99)), "ms",
			fmt.Sprintf("p99 of the time from the start of a write on one node until both other nodes could Find it (Remember -> "+
				"OnChange -> synced outbox row -> publish acknowledged by the stream -> each node's consumer -> Store.Apply); %s; "+
				"until both: %v; until each of the two (per receiving node): %v; from the write's return: %v; %s; "+
				"baseline is the %d ms limit, not a measurement", setup, lag, each, afterWrite, cpu, memReplLimit)).
			withBaseline(memReplLimit).atMost(memReplLimit),
		newRecord("memory-replication.lag.p50", ms(lag.p(50)), "ms",
			"p50 of the same lag (from the start of a write until both other nodes could Find it)"),
		newRecord("memory-replication.write.p99", ms(wrote.p(99)), "ms",
			fmt.Sprintf("for context: the write on its own node (Remember, its synced batch and the synced outbox row): %v", wrote)),
	}
}
