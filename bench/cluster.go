package main

import (
	"context"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/thatch-run/thatch/config"
)

// Several nodes, one bot, in process: three daemons (each its runtime,
// journal and tmux server) joined over their embedded NATS servers, one
// fake Bot API. The bindings live on a node that does not poll, so each
// update goes poller -> stream -> owner -> keys.
const (
	clusterNodes    = 3
	clusterReadyMax = 2 * time.Minute
)

func init() {
	register(Bench{
		Name: "cluster",
		Doc: "three nodes over embedded NATS JetStream: update to keys typed on a node that does not poll vs the same on one node " +
			"(<= 3x); poller failover after its node's server dies vs the lease TTL (<= 2x)",
		Order: 92,
		Run:   benchCluster,
	})
}

func benchCluster(c *Config) ([]Record, error) {
	n := c.Count(20, 4)
	msgs, d := c.Count(200, 12), c.Duration(20*time.Second, 4*time.Second)

	single, err := clusterSingle(c, n, msgs, d)
	if err != nil {
		return nil, err
	}
	remote, tracer, failover, formed, err := clusterRemote(c, n, msgs, d)
	if err != nil {
		return nil, err
	}
	parts := fmt.Sprintf("; in parts (p50/p99): received to published %s, published to consumed on the owner %s, consumed to typed %s",
		p50p99(tracer.between("received", "published", remote.ids)), p50p99(tracer.between("published", "consumed", remote.ids)),
		p50p99(tracer.between("consumed", "typed", remote.ids)))
	sp, rp := ms(percentile(single.inside, 99)), ms(percentile(remote.inside, 99))
	return []Record{
		newRecord("cluster.update_to_keys.single", sp, "ms",
			fmt.Sprintf("one node, %d planted bindings, %d messages over %v: received to typed, %s", n, msgs, d, imLatencies(single.inside))),
		newRecord("cluster.update_to_keys.remote", rp, "ms",
			fmt.Sprintf("three nodes, the %d bindings on a node that does not poll, %d messages over %v: received by the poller "+
				"to typed on the owner (a thread lookup, a publish acknowledged by the stream's replicas, the owner's fetch, its "+
				"binding's journal write and the keys), %s; baseline is cluster.update_to_keys.single of this run",
				n, msgs, d, imLatencies(remote.inside))+parts).withBaseline(sp).ratioAtMost(3),
		newRecord("cluster.poller_failover", failover.Seconds(), "s",
			fmt.Sprintf("from the poller's NATS server's death (nothing given up, as a SIGKILL) to another node holding the lease "+
				"and receiving; the cluster formed in %v; baseline is the lease TTL (the default)", formed.Round(time.Millisecond))).
			withBaseline(config.Defaults().Cluster.LeaseTTL.Seconds()).ratioAtMost(2),
	}, nil
}

// clusterSingle measures update to keys on one node with n bindings.
func clusterSingle(c *Config, n, msgs int, d time.Duration) (*keysRun, error) {
	w, err := newIMWorld(c, "cluster-single", 5*time.Minute)
	if err != nil {
		return nil, err
	}
	defer w.close()
	bs, err := w.boot(n)
	if err != nil {
		return nil, err
	}
	if _, err := w.typeRound(bs, n, time.Second, "w", true); err != nil {
		return nil, err
	}
	c.Logf("cluster: one node, %d messages over %v", msgs, d)
	return w.typeRound(bs, msgs, d, "s", true)
}

// clusterRemote starts three nodes, moves n bindings onto one that does
// not poll, measures update to keys there, then kills the poller's
// server and measures the failover.
func clusterRemote(c *Config, n, msgs int, d time.Duration) (run *keysRun, tr *imTracer, failover, formed time.Duration, err error) {
	ports, err := clusterPorts(clusterNodes)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	ws := make([]*imWorld, clusterNodes)
	defer func() {
		for _, w := range ws {
			if w != nil {
				w.close()
			}
		}
	}()
	for i := range ws {
		w, err := newIMWorld(c, fmt.Sprintf("cluster-n%d", i), 5*time.Minute)
		if err != nil {
			return nil, nil, 0, 0, err
		}
		ws[i] = w
		if i > 0 { // one fake Bot API, one tracer for all
			w.cfg.IM.Telegram.APIURL = ws[0].tg.URL()
			w.tracer = ws[0].tracer
		}
		cl := &w.cfg.Cluster
		cl.Node, cl.Listen, cl.Routes = fmt.Sprintf("n%d", i), fmt.Sprintf("127.0.0.1:%d", ports[i]), routes
	}
	start := time.Now()
	for _, w := range ws {
		if err := w.start(); err != nil {
			return nil, nil, 0, 0, err
		}
	}
	holder, err := clusterHolder(ws, -1)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	formed = time.Since(start)
	owner := (holder + 1) % clusterNodes
	c.Logf("cluster: formed in %v; n%d polls, n%d gets the %d bindings", formed.Round(time.Millisecond), holder, owner, n)

	// The owner is stopped, given its windows and bindings, and started
	// again: at its start it claims their threads.
	o := ws[owner]
	o.stop()
	bs, err := o.windows(n)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	if err := o.plant(bs); err != nil {
		return nil, nil, 0, 0, err
	}
	if err := o.start(); err != nil {
		return nil, nil, 0, 0, err
	}
	node := o.fe.ClusterNode()
	err = imWaitFor(clusterReadyMax, "the owner claims its threads", func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ts, err := node.Threads(ctx)
		if err != nil {
			return false, nil
		}
		mine := 0
		for _, t := range ts {
			if t.Node == node.Name() {
				mine++
			}
		}
		return mine == n, nil
	})
	if err != nil {
		return nil, nil, 0, 0, err
	}
	if _, err := ws[0].typeRound(bs, n, time.Second, "w", true); err != nil {
		return nil, nil, 0, 0, err
	}
	c.Logf("cluster: %d messages over %v to n%d's bindings", msgs, d, owner)
	if run, err = ws[0].typeRound(bs, msgs, d, "r", true); err != nil {
		return nil, nil, 0, 0, err
	}

	// The poller's server dies; a survivor takes the lease.
	c.Logf("cluster: n%d's server dies", holder)
	crashed := time.Now()
	ws[holder].fe.ClusterNode().Crash()
	next, err := clusterHolder(ws, holder)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	failover = time.Since(crashed)
	c.Logf("cluster: n%d took over after %v", next, failover.Round(time.Millisecond))
	// Receiving goes on: a message after the handover is typed.
	if _, err := ws[0].typeRound(bs[:1], 1, 0, "f", true); err != nil {
		return nil, nil, 0, 0, fmt.Errorf("bench: cluster: after the failover: %w", err)
	}
	return run, ws[0].tracer, failover, formed, nil
}

// clusterHolder waits until a node other than not holds the Telegram
// lease and returns its index.
func clusterHolder(ws []*imWorld, not int) (int, error) {
	holder := -1
	err := imWaitFor(clusterReadyMax, "a node holding the poller's lease", func() (bool, error) {
		for i, w := range ws {
			if i == not || w.fe == nil || w.fe.ClusterNode() == nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			h, err := w.fe.ClusterNode().Holders(ctx)
			cancel()
			if err != nil {
				continue
			}
			for _, node := range h {
				if j := slices.IndexFunc(ws, func(x *imWorld) bool { return x.cfg.Cluster.Node == node }); j >= 0 && j != not {
					holder = j
					return true, nil
				}
			}
		}
		return false, nil
	})
	return holder, err
}

// clusterPorts returns n loopback ports free a moment ago.
func clusterPorts(n int) ([]int, error) {
	var out []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// p50p99 says the p50 and p99 of sorted times, in ms.
func p50p99(sorted []time.Duration) string {
	if len(sorted) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f/%.2f ms", ms(percentile(sorted, 50)), ms(percentile(sorted, 99)))
}
