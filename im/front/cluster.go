package front

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/thatch-run/thatch/actors/imbinding"
	"github.com/thatch-run/thatch/actors/implace"
	"github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/im/cluster"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// A cluster of nodes shares one bot (cluster.Node): the node holding an
// account's lease receives from the platform (relay) and puts each
// update on the stream subject of the node that owns the update's
// thread; every node takes its own subject's updates (consume) and hands
// them to its bindings as a single node hands its adapter's. Replies and
// every other send go out from the node that makes them.

// envelope is an update on its way to the node that owns its thread.
type envelope struct {
	Platform string      `json:"platform"`
	Update   chat.Update `json:"update"`
}

// clusterPart is what the front end keeps of the cluster.
type clusterPart struct {
	node *cluster.Node
	// instance names this node's store: made when the store was, so a
	// node whose data was replaced has another (cluster.Thread.Instance).
	instance string

	// since is when the node started, for the health's grace.
	since time.Time

	mu sync.Mutex
	// noticed holds the threads told their node is down, with that node:
	// one notice per outage (cleared once the node is up again).
	noticed map[string]string
}

// startCluster starts this node's NATS server and, in the background,
// the polling under each account's lease, the consuming of this node's
// subject and the publishing of the threads this node owns.
func (f *FrontEnd) startCluster(ctx context.Context) error {
	c := f.cfg.Cluster
	n, err := cluster.Start(cluster.Options{Node: c.Node, Listen: c.Listen, Routes: c.Routes, Replicas: c.Replicas,
		LeaseTTL: c.LeaseTTL, Dir: filepath.Join(f.cfg.Data.Dir, "nats"), TLSCert: c.TLSCert, TLSKey: c.TLSKey,
		TLSCA: c.TLSCA, Token: c.Token.Reveal(), Logger: f.log.Named("cluster")})
	if err != nil {
		return fmt.Errorf("im: %w", err)
	}
	instance, err := f.storeInstance()
	if err != nil {
		n.Close()
		return err
	}
	f.cl = &clusterPart{node: n, instance: instance, noticed: map[string]string{}, since: time.Now()}
	for _, p := range f.chats {
		p.cursor.mu.Lock()
		p.cursor.put = func(cur string) error { return n.PutCursor(f.runCtx, p.account, cur) }
		p.cursor.mu.Unlock()
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			if p.everywhere {
				// Only the platform's connection to one node is
				// exclusive; a webhook's posts go where its URL says.
				if n.Wait(ctx) {
					f.receive(ctx, p)
				}
				return
			}
			n.Hold(ctx, p.account, func(lctx context.Context) { f.receive(lctx, p) })
		}()
	}
	f.wg.Add(4)
	go func() {
		defer f.wg.Done()
		n.Consume(ctx, f.consume)
	}()
	go func() {
		defer f.wg.Done()
		f.runBoardOutbox(ctx)
	}()
	go func() {
		defer f.wg.Done()
		n.Hold(ctx, cluster.BoardLease, f.writeBoards)
	}()
	go func() {
		defer f.wg.Done()
		f.publishOwn(ctx)
	}()
	f.startMemoryReplica(ctx)
	return nil
}

// instanceKey is the row (of clusterTable) of this store's id.
const instanceKey = "instance"

// storeInstance returns the id of this node's store, made (at random)
// the first time it is asked for and kept in the store's rows.
func (f *FrontEnd) storeInstance() (string, error) {
	row, ok, err := f.rows.Get(clusterTable, instanceKey)
	if err != nil {
		return "", fmt.Errorf("im: read this store's id: %w", err)
	}
	if ok && len(row.Value) > 0 {
		return string(row.Value), nil
	}
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("im: make this store's id: %w", err)
	}
	id := hex.EncodeToString(b)
	if err := f.rows.Put(clusterTable, instanceKey, []byte(id)); err != nil {
		return "", fmt.Errorf("im: keep this store's id: %w", err)
	}
	return id, nil
}

// stopCluster closes the node once its loops have ended (Stop waits for
// them first).
func (f *FrontEnd) stopCluster() {
	if f.cl != nil {
		f.cl.node.Close()
	}
}

// receive runs p's adapter while this node holds its account's lease,
// from the cursor the holder before stored.
func (f *FrontEnd) receive(ctx context.Context, p *chatPort) {
	if cur, err := f.cl.node.Cursor(ctx, p.account); err != nil {
		f.log.Warn("cannot read the stored cursor; the platform redelivers what it still holds", "account", p.account, "error", err)
	} else if r, ok := p.a.(chat.Resumer); ok && cur != "" {
		if err := r.Resume(chat.Resume{Cursor: cur}); err != nil {
			f.log.Warn("cannot resume from the stored cursor", "account", p.account, "cursor", cur, "error", err)
		}
	}
	f.log.Info("receiving for the cluster", "platform", p.a.Name(), "node", f.cl.node.Name())
	if err := p.a.Run(ctx, f.relay(p)); err != nil && ctx.Err() == nil {
		f.log.Error("receiving from the chat stopped", "platform", p.a.Name(), "error", err)
	}
}

// relay takes one update from the adapter this node receives for: it
// returns once the update is on its owner's stream subject (or dropped,
// or held while the thread's machine is asked), so that the adapter
// confirms nothing the cluster could lose.
func (f *FrontEnd) relay(p *chatPort) chat.Handler {
	return func(ctx context.Context, u chat.Update) error {
		if f.opts.Trace != nil {
			f.opts.Trace("received", u.ID)
		}
		if err := f.relayOne(ctx, p, u); err != nil {
			return err
		}
		p.cursor.note(u.Cursor)
		return nil
	}
}

func (f *FrontEnd) relayOne(ctx context.Context, p *chatPort, u chat.Update) error {
	if u.Thread == "" || chat.SchemeOf(u.Thread) != p.a.Scheme() {
		return nil // nothing to bind (route drops it too)
	}
	n := f.cl.node
	if u.Ended != nil || u.Reopened {
		// Every node may have bindings in the ended chat (its topics).
		return f.toEveryNode(ctx, p, u)
	}
	t, _, err := n.Thread(ctx, u.Thread)
	if err != nil {
		return err
	}
	var members []string
	for _, m := range n.Members() {
		members = append(members, m.Node)
	}
	in := implace.Update{Allowed: f.cfg.IM.Open || p.a.Allows(u.User), Pressed: u.Press != nil}
	if u.Press != nil {
		in.Press = u.Press.Data
	}
	plan := implace.Decide(implace.Entry{Node: t.Node, Held: len(t.Held), Asked: t.Asked != ""}, in,
		implace.Cluster{Self: n.Name(), Members: members, Up: n.Up})
	return f.place(ctx, p, t, u, plan)
}

// place carries out a placement plan (actors/implace) for u, in its
// order. A write that finds the thread's entry changed fails the update:
// the platform offers it again, and it is planned on the new entry.
func (f *FrontEnd) place(ctx context.Context, p *chatPort, t cluster.Thread, u chat.Update, plan implace.Plan) error {
	n := f.cl.node
	if plan.PublishHeld {
		for _, raw := range t.Held {
			var e envelope
			if err := json.Unmarshal(raw, &e); err != nil {
				f.log.Warn("a held update cannot be read; dropped", "thread", t.Thread, "error", err)
				continue
			}
			if err := f.publish(ctx, p, plan.Node, e.Update); err != nil {
				return err
			}
		}
	}
	switch {
	case plan.Node != "":
		t.Node, t.Held, t.Asked = plan.Node, nil, ""
		if _, err := n.PutThread(ctx, t); err != nil {
			return err
		}
	case plan.Hold:
		raw, err := json.Marshal(envelope{Platform: p.a.Name(), Update: u})
		if err != nil {
			return err
		}
		t.Held, t.Asked = append(t.Held, raw), "asked"
		if _, err := n.PutThread(ctx, t); err != nil {
			return err
		}
	}
	if plan.PublishTo != "" {
		if err := f.publish(ctx, p, plan.PublishTo, u); err != nil {
			return err
		}
	}
	if plan.Answer && u.Press != nil {
		f.answerWith(ctx, p.a, u.Thread, u.Press.ID, plan.AnswerText)
	}
	if plan.Ask {
		q := &messages.IMNotice{Text: implace.Question, Question: true}
		for _, m := range plan.Offer {
			q.Buttons = append(q.Buttons, []messages.IMButton{{Text: m, Data: implace.Prefix + m}})
		}
		f.tell(ctx, u.Thread, q)
	}
	if plan.CloseAsk {
		f.tell(ctx, u.Thread, &messages.IMCloseQuestion{})
	}
	if plan.Notice != "" {
		f.notice(ctx, p.a, chat.Update{Thread: u.Thread}, plan.Notice)
	}
	return nil
}

// publish puts u on node's subject, and tells the thread once per outage
// when that node is down.
func (f *FrontEnd) publish(ctx context.Context, p *chatPort, node string, u chat.Update) error {
	raw, err := json.Marshal(envelope{Platform: p.a.Name(), Update: u})
	if err != nil {
		return err
	}
	// The thread and the update id name the update (Feishu's ids are per
	// thread), so that one offered again is dropped by the stream.
	if _, err := f.cl.node.Publish(ctx, node, u.Thread+"/"+strconv.FormatInt(u.ID, 10), raw); err != nil {
		return err
	}
	if f.opts.Trace != nil {
		f.opts.Trace("published", u.ID)
	}
	f.noticeDown(ctx, p, node, u.Thread)
	return nil
}

// noticeDown tells thread, once per outage, that its node is down and
// its messages wait. This node's view of the members (Up) can be a
// heartbeat round old, so each change of what it decides (telling a
// thread, and forgetting that it told one once the node is back) is made
// only on a fresh read of the node's heartbeat: a stale view must
// neither tell a thread of an outage that is over nor take a node that
// is still down for one that came back, and tell the thread again.
func (f *FrontEnd) noticeDown(ctx context.Context, p *chatPort, node, thread string) {
	c := f.cl
	up := c.node.Up(node)
	c.mu.Lock()
	told := false
	for _, n := range c.noticed {
		if n == node {
			told = true
			break
		}
	}
	if up && !told || !up && c.noticed[thread] == node {
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	beating, err := c.node.Beating(ctx, node)
	if err != nil {
		// The cluster cannot say now (an election); the next update
		// to the thread decides.
		f.log.Debug("cannot read a node's heartbeat; the thread is told nothing now", "node", node, "error", err)
		return
	}
	c.mu.Lock()
	if beating {
		for th, n := range c.noticed {
			if n == node {
				delete(c.noticed, th)
			}
		}
		c.mu.Unlock()
		return
	}
	if up || c.noticed[thread] == node {
		c.mu.Unlock()
		return
	}
	c.noticed[thread] = node
	c.mu.Unlock()
	f.notice(ctx, p.a, chat.Update{Thread: thread}, node+" is unreachable; your messages are queued and reach the agent when it is back.")
}

// toEveryNode publishes u to every node that is up or owns a thread.
func (f *FrontEnd) toEveryNode(ctx context.Context, p *chatPort, u chat.Update) error {
	n := f.cl.node
	nodes := map[string]bool{n.Name(): true}
	for _, m := range n.Members() {
		nodes[m.Node] = true
	}
	ts, err := n.Threads(ctx)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.Node != "" {
			nodes[t.Node] = true
		}
	}
	raw, err := json.Marshal(envelope{Platform: p.a.Name(), Update: u})
	if err != nil {
		return err
	}
	for node := range nodes {
		id := u.Thread + "/" + strconv.FormatInt(u.ID, 10) + "/" + node
		if _, err := n.Publish(ctx, node, id, raw); err != nil {
			return err
		}
	}
	return nil
}

// consume takes one update of this node's subject to its binding, as
// handle does for a single node's adapter (the cursor is the poller's).
func (f *FrontEnd) consume(ctx context.Context, data []byte) error {
	var e envelope
	if err := json.Unmarshal(data, &e); err != nil {
		f.log.Error("an update from the cluster cannot be read; dropped", "error", err)
		return nil
	}
	if f.opts.Trace != nil {
		f.opts.Trace("consumed", e.Update.ID)
	}
	for _, p := range f.chats {
		if p.a.Name() == e.Platform {
			forgotten, claim := f.forgotten(ctx, e.Update.Thread)
			if err := f.deliver(ctx, p, e.Update, forgotten); err != nil {
				return err
			}
			claim()
			return nil
		}
	}
	f.log.Error("an update from the cluster names a platform this node does not run; dropped", "platform", e.Platform)
	return nil
}

// forgotten reports whether this node owns thread in the cluster's map
// while another store of its own took the thread's updates before (the
// node's data was replaced since): it returns this node's name then, for
// the binding, which starts anew, to say why. claim records this node's
// store as the thread's, once the update was delivered, so that only the
// first update says it.
func (f *FrontEnd) forgotten(ctx context.Context, thread string) (node string, claim func()) {
	n := f.cl.node
	t, ok, err := n.Thread(ctx, thread)
	if err != nil || !ok || t.Node != n.Name() || t.Instance == f.cl.instance {
		return "", func() {}
	}
	if t.Instance != "" {
		node = n.Name()
	}
	return node, func() {
		t.Instance = f.cl.instance
		if _, err := n.PutThread(ctx, t); err != nil {
			f.log.Debug("cannot record this node's store as a thread's; the next update tries again", "thread", thread, "error", err)
		}
	}
}

// publishOwn writes, once the cluster is ready, each thread this node has
// a binding for as this node's: the map is rebuilt from the nodes'
// own bindings (a reconcile), so a node that joins with bindings keeps
// them.
func (f *FrontEnd) publishOwn(ctx context.Context) {
	n := f.cl.node
	select {
	case <-n.Ready():
	case <-ctx.Done():
		return
	}
	views, _ := frontend.Entities(f.tree, f.jr, imbinding.KindName, "thread", 0, 5*time.Second)
	for _, raw := range views {
		v, ok := raw.(imbinding.View)
		if !ok || v.State == imbinding.PhaseEnded || v.Window == "" {
			continue
		}
		for attempt := 0; attempt < 3; attempt++ {
			t, _, err := n.Thread(ctx, v.Thread)
			if err != nil {
				break
			}
			if t.Node == n.Name() && t.Instance == f.cl.instance {
				break
			}
			if t.Node != "" && t.Node != n.Name() {
				f.log.Warn("a thread this node has a binding for is another node's; that node keeps it",
					"thread", v.Thread, "owner", t.Node)
				break
			}
			if t.Node == "" {
				t.Held, t.Asked = nil, ""
			}
			t.Node, t.Instance = n.Name(), f.cl.instance
			if _, err := n.PutThread(ctx, t); err == nil {
				break
			}
		}
	}
}

// clusterReceiving is how receiving for p goes seen from this node: its
// adapter's own health while this node holds p's lease, else the
// holder's word (another node receives for all), and down while no node
// holds it past the grace.
func (f *FrontEnd) clusterReceiving(p *chatPort, own chat.Health) chat.Health {
	ctx, cancel := context.WithTimeout(f.runCtx, 2*time.Second)
	defer cancel()
	h, err := f.cl.node.Holders(ctx)
	if err != nil {
		return chat.Health{State: "cluster not ready: " + err.Error(), Since: f.cl.since}
	}
	switch holder := h[p.account]; holder {
	case f.cl.node.Name():
		return own
	case "":
		return chat.Health{State: "no node receives yet (the lease is free)", Since: f.cl.since}
	default:
		return chat.Health{Up: true, State: "received by " + holder}
	}
}

// ClusterNode is this node's part of the cluster; nil for a single node
// (or before Start).
func (f *FrontEnd) ClusterNode() *cluster.Node {
	if f.cl == nil {
		return nil
	}
	return f.cl.node
}
