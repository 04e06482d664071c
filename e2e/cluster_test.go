package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Several machines, one bot (issue 24): three daemons on loopback, each
// with its own data dir, HOME and tmux socket, joined over embedded NATS
// JetStream ([cluster]) and sharing one fake Bot API, which answers 409
// to a getUpdates that overlaps another and counts them. One node polls
// (it holds the lease tg.<bot id>); each thread lives on the node picked
// for it, and its messages are typed there.
//
// Exactly once is checked where the user would see it: the lines each
// node's fake agent got (its transcripts under that node's HOME) and the
// replies in the chat. A daemon that owns threads is killed only once
// its bindings settled (a kill between a send and its journal repeats
// that send, by design, as on a single node); the poller is killed at any
// moment, since what it relays is confirmed only once the owner's stream
// has it.
var _ = Describe("Several machines, one bot", Label("im", "cluster"), func() {
	var cw *ClusterWorld

	BeforeEach(func() {
		cw = NewClusterWorld(3)
		cw.StartAll()
	})

	It("relays the threads of two machines through the one poller, typing each on its own machine", func() {
		holder := cw.Holder()
		n1, n2, n3 := cw.Node("n1"), cw.Node("n2"), cw.Node("n3")

		By("thread A set up on n1 and thread B on n2, each after the machine question")
		a := cw.Setup(n1, "alpha", "claude", "api", "A-000")
		b := cw.Setup(n2, "beta", "claude", "web", "B-000")
		Expect(cw.TG.Messages(imChat, a)).To(ContainElement(HaveField("Text", ContainSubstring(machineQuestion))))

		By("messages are typed in the owner's tmux only, and the replies come back")
		for i := 1; i <= 3; i++ {
			cw.TG.Message(imChat, a, imUser, fmt.Sprintf("A-%03d", i))
			cw.TG.Message(imChat, b, imUser, fmt.Sprintf("B-%03d", i))
		}
		wantA := []string{"A-000", "A-001", "A-002", "A-003"}
		wantB := []string{"B-000", "B-001", "B-002", "B-003"}
		Eventually(cw.EchoesOf(a, "A")).Should(HaveLen(4))
		Eventually(cw.EchoesOf(b, "B")).Should(HaveLen(4))
		cw.Settle(map[int64]*ClusterNode{a: n1, b: n2})

		Expect(n1.Lines("A")()).To(Equal(wantA))
		Expect(n2.Lines("B")()).To(Equal(wantB))
		Expect(n1.Lines("B")()).To(BeEmpty(), "n1 typed nothing of B")
		Expect(n2.Lines("A")()).To(BeEmpty(), "n2 typed nothing of A")
		Expect(n3.Lines("A")()).To(BeEmpty())
		Expect(n3.Lines("B")()).To(BeEmpty())
		Expect(n1.Tagged()).To(ConsistOf(HaveField("Name", "alpha")))
		Expect(n2.Tagged()).To(ConsistOf(HaveField("Name", "beta")))
		Expect(n3.Tagged()).To(BeEmpty())
		Expect(cw.EchoesOf(a, "A")()).To(Equal(echoesOf(wantA)))
		Expect(cw.EchoesOf(b, "B")()).To(Equal(echoesOf(wantB)))

		By("every node's thatch status --json shows one lease holder and where each thread lives")
		for _, n := range cw.Nodes {
			st, err := n.ClusterCLI()
			Expect(err).NotTo(HaveOccurred())
			Expect(st.Node).To(Equal(n.Name))
			Expect(st.State).To(Equal("ready"))
			Expect(st.MemberNames()).To(Equal([]string{"n1", "n2", "n3"}))
			Expect(st.Leases).To(HaveKeyWithValue(clusterLease, holder.Name))
			Expect(st.Threads).To(HaveKeyWithValue(threadKey(a), "n1"))
			Expect(st.Threads).To(HaveKeyWithValue(threadKey(b), "n2"))
		}
		GinkgoWriter.Printf("the poller: %s\n", holder.Name)
		Expect(cw.TG.Conflicts()).To(BeZero(), "only one node polled")
	})

	It("keeps one board for the chat, written by one machine, naming each thread's machine, and the next writer edits it", func() {
		n1, n2 := cw.Node("n1"), cw.Node("n2")
		a := cw.Setup(n1, "alpha", "claude", "api", "A-000")
		b := cw.Setup(n2, "beta", "claude", "web", "B-000")
		Eventually(cw.EchoesOf(b, "B")).Should(HaveLen(1))

		By("/board in a thread of n1 pins one board with the threads of both machines")
		cw.TG.Message(imChat, a, imUser, "/board")
		Eventually(boardText(cw.TG)).Should(And(ContainSubstring("• alpha — claude on n1"), ContainSubstring("• beta — claude on n2")))
		sends := boardSends(cw.TG)
		Expect(sends).To(HaveLen(1), "one writer sent one board")
		Eventually(func() int { return cw.TG.Pinned(imChat) }).Should(Equal(sends[0].MessageID))
		var writer string
		for _, n := range cw.Nodes {
			st, err := n.ClusterCLI()
			Expect(err).NotTo(HaveOccurred())
			Expect(st.BoardWriter).NotTo(BeEmpty())
			Expect(writer == "" || writer == st.BoardWriter).To(BeTrue(), "every node names one writer")
			writer = st.BoardWriter
		}

		owned := map[string]string{"n1": "alpha", "n2": "beta"}[writer]
		if owned == "" {
			owned = "delta" // the writer gets a thread of its own, to see it go down
			cw.Setup(cw.Node(writer), owned, "claude", "api", "D-000")
			Eventually(boardText(cw.TG)).Should(ContainSubstring("• delta — claude on " + writer))
		}

		By("SIGKILL of the writer " + writer + "; the next one edits the same message")
		cw.Node(writer).Kill()
		var survivor *ClusterNode
		for _, n := range cw.Up() {
			survivor = n
		}
		cw.WaitFormed()
		cw.Setup(survivor, "gamma", "claude", "docs", "G-000")
		Eventually(boardText(cw.TG)).Should(ContainSubstring("• gamma — claude on " + survivor.Name))
		Eventually(boardText(cw.TG)).Should(ContainSubstring("• "+owned+" — claude on "+writer+": its machine is down"),
			"the thread of the machine that died says so")
		Expect(boardSends(cw.TG)).To(HaveLen(1), "no second board")
		for _, r := range boardRequests(cw.TG) {
			Expect(r.MessageID).To(Equal(sends[0].MessageID))
		}
		Expect(cw.TG.Pinned(imChat)).To(Equal(sends[0].MessageID))
	})

	It("queues the messages of a machine that is down, says so once, and types each once, in order, when it is back", func() {
		holder := cw.Holder()
		owner := cw.otherThan(holder)
		thread := cw.Setup(owner, "queued", "claude", "docs", "Q-000")
		owners := map[int64]*ClusterNode{thread: owner}
		w := cw.StartWriter(clusterWriteEvery, map[string]int64{"Q": thread})

		By("the owner takes the first messages, and settles")
		w.WaitSent("Q", 5)
		w.Pause("Q")
		before := append([]string{"Q-000"}, w.Sent("Q")...)
		Eventually(cw.EchoesOf(thread, "Q")).Should(HaveLen(len(before)))
		cw.Settle(owners)

		By("SIGKILL of the owner; once the others no longer count it a member, the writer goes on")
		owner.Kill()
		Eventually(func() ([]string, error) {
			st, err := holder.ClusterCLI()
			return st.MemberNames(), err
		}, time.Minute, 250*time.Millisecond).ShouldNot(ContainElement(owner.Name))
		w.Resume("Q")
		w.WaitSent("Q", len(before)-1+6)
		Eventually(func() int { return cw.Notices(thread, owner.Name) }).Should(Equal(1),
			"the thread is told its machine is down")

		By("the cluster holds the messages: Telegram has them confirmed, the agent has none of them")
		w.Pause("Q")
		Eventually(cw.TG.Pending).Should(BeZero(), "the poller confirmed what the stream took")
		Expect(owner.Lines("Q")()).To(Equal(before), "nothing was typed while the owner was down")

		By("restarted, the owner types what waited, in order, and the writer goes on")
		owner.Start()
		cw.WaitFormed()
		w.Resume("Q")
		w.WaitSent("Q", len(before)-1+9)
		w.Stop()
		all := append([]string{"Q-000"}, w.Sent("Q")...)
		Eventually(owner.Lines("Q")).Should(ContainElement(all[len(all)-1]))
		Eventually(cw.EchoesOf(thread, "Q")).Should(ContainElement("echo: " + all[len(all)-1]))
		cw.Settle(owners)
		Expect(owner.Lines("Q")()).To(Equal(all), "each message typed once, in order")
		Expect(cw.EchoesOf(thread, "Q")()).To(Equal(echoesOf(all)), "each reply relayed once, in order")
		Expect(cw.Notices(thread, owner.Name)).To(Equal(1), "one notice for the one outage")
		for _, n := range cw.Nodes {
			if n != owner {
				Expect(n.Lines("Q")()).To(BeEmpty(), "%s typed none of them", n.Name)
			}
		}
		Expect(cw.TG.Conflicts()).To(BeZero())
	})

	It("starts a thread over on a machine whose data was replaced, says why, and types what waited once it is set up", func() {
		holder := cw.Holder()
		owner := cw.otherThan(holder)
		thread := cw.Setup(owner, "wiped", "claude", "docs", "W-000")
		owners := map[int64]*ClusterNode{thread: owner}
		Eventually(cw.EchoesOf(thread, "W")).Should(HaveLen(1))
		cw.Settle(owners)

		By("the owner's data is replaced while it is down (its tmux and agents go on)")
		owner.Kill()
		Expect(os.RemoveAll(owner.DataDir)).To(Succeed())
		owner.Start()
		cw.WaitFormed()

		By("the next message starts the thread over, saying why; one more sent meanwhile waits")
		from := len(owner.Said(thread)())
		cw.TG.Message(imChat, thread, imUser, "W-001")
		why := owner.Name + " no longer has a record of this thread"
		Eventually(func() []string { return owner.Said(thread)()[from:] }).Should(ContainElement(HavePrefix(why)))
		cw.TG.Message(imChat, thread, imUser, "W-002")
		owner.SetUp(thread, from, "claude", "docs")

		By("both are typed once, in order, in the new session, and the user was told once")
		Eventually(owner.Lines("W")).Should(ContainElement("W-002"))
		cw.Settle(owners)
		Expect(owner.Lines("W")()).To(Equal([]string{"W-000", "W-001", "W-002"}), "each message typed once, in order")
		n := 0
		for _, s := range owner.Said(thread)() {
			if strings.HasPrefix(s, why) {
				n++
			}
		}
		Expect(n).To(Equal(1), "told once why the thread starts over")
	})

	It("types a healthy machine's messages while another machine hangs, and the hung one's once it goes on", func() {
		holder := cw.Holder()
		healthy := cw.otherThan(holder)
		var hung *ClusterNode
		for _, n := range cw.Nodes {
			if n != holder && n != healthy {
				hung = n
			}
		}
		h := cw.Setup(healthy, "healthy", "claude", "api", "H-000")
		p := cw.Setup(hung, "hung", "claude", "web", "P-000")
		owners := map[int64]*ClusterNode{h: healthy, p: hung}
		Eventually(cw.EchoesOf(h, "H")).Should(HaveLen(1))
		Eventually(cw.EchoesOf(p, "P")).Should(HaveLen(1))
		cw.Settle(owners)

		By("SIGSTOP of a machine that owns a thread and does not poll")
		hung.Pause()
		wantH, wantP := []string{"H-000"}, []string{"P-000"}
		for i := 1; i <= 3; i++ {
			cw.TG.Message(imChat, p, imUser, fmt.Sprintf("P-%03d", i))
			cw.TG.Message(imChat, h, imUser, fmt.Sprintf("H-%03d", i))
			wantH, wantP = append(wantH, fmt.Sprintf("H-%03d", i)), append(wantP, fmt.Sprintf("P-%03d", i))
		}

		By("the healthy machine types its thread's messages while the other one hangs")
		Eventually(healthy.Lines("H")).Should(Equal(wantH))
		Eventually(cw.EchoesOf(h, "H")).Should(HaveLen(len(wantH)))
		Expect(hung.Lines("P")()).To(Equal([]string{"P-000"}), "the hung machine typed nothing")

		By("once it goes on, the hung machine types what waited, once, in order")
		hung.Continue()
		Eventually(hung.Lines("P")).Should(Equal(wantP))
		cw.Settle(owners)
		Expect(healthy.Lines("H")()).To(Equal(wantH))
		Expect(hung.Lines("P")()).To(Equal(wantP))
		Expect(cw.EchoesOf(p, "P")()).To(Equal(echoesOf(wantP)))
	})

	It("hands the polling to another machine when the poller dies, losing and repeating no update", func() {
		holder := cw.Holder()
		var others []*ClusterNode
		for _, n := range cw.Nodes {
			if n != holder {
				others = append(others, n)
			}
		}
		x, y := others[0], others[1]
		a := cw.Setup(x, "on x", "claude", "api", "X-000")
		b := cw.Setup(y, "on y", "claude", "web", "Y-000")
		owners := map[int64]*ClusterNode{a: x, b: y}
		w := cw.StartWriter(clusterWriteEvery, map[string]int64{"X": a, "Y": b})
		w.WaitSent("X", 4)
		Eventually(x.Lines("X")).Should(ContainElement("X-003"))

		By("SIGKILL of the poller " + holder.Name)
		killed := time.Now()
		holder.Kill()
		var next string
		Eventually(func() (string, error) {
			st, err := x.Cluster()
			next = st.Leases[clusterLease]
			return next, err
		}, time.Minute, 50*time.Millisecond).Should(And(Not(BeEmpty()), Not(Equal(holder.Name))), "another node takes the lease")
		took := time.Since(killed)
		GinkgoWriter.Printf("lease %s taken by %s %v after the kill of %s (lease_ttl %v; target <= %v)\n",
			clusterLease, next, took.Round(time.Millisecond), holder.Name, clusterLeaseTTL, 2*clusterLeaseTTL)
		AddReportEntry("poller failover", took.Round(time.Millisecond).String())

		By("the new poller polls: a message sent after the takeover is typed")
		after := fmt.Sprintf("X-%03d", w.Count("X")+1)
		Eventually(x.Lines("X")).Should(ContainElement(after))
		GinkgoWriter.Printf("polling resumed: %s typed %v after the kill\n", after, time.Since(killed).Round(time.Millisecond))
		conflicts := cw.TG.Conflicts()

		By("the old poller restarts and leaves the lease where it is")
		holder.Start()
		cw.WaitFormed()
		Expect(cw.Holder().Name).To(Equal(next))
		n := w.Count("X")
		w.WaitSent("X", n+5)
		w.Stop()

		By("every update typed once, in order, on its machine; no 409 after the handover")
		wantX := append([]string{"X-000"}, w.Sent("X")...)
		wantY := append([]string{"Y-000"}, w.Sent("Y")...)
		Eventually(x.Lines("X")).Should(ContainElement(wantX[len(wantX)-1]))
		Eventually(y.Lines("Y")).Should(ContainElement(wantY[len(wantY)-1]))
		Eventually(cw.EchoesOf(a, "X")).Should(ContainElement("echo: " + wantX[len(wantX)-1]))
		Eventually(cw.EchoesOf(b, "Y")).Should(ContainElement("echo: " + wantY[len(wantY)-1]))
		cw.Settle(owners)
		Expect(x.Lines("X")()).To(Equal(wantX))
		Expect(y.Lines("Y")()).To(Equal(wantY))
		Expect(cw.EchoesOf(a, "X")()).To(Equal(echoesOf(wantX)))
		Expect(cw.EchoesOf(b, "Y")()).To(Equal(echoesOf(wantY)))
		Eventually(cw.TG.Pending).Should(BeZero(), "polling goes on from the confirmed offset")
		Expect(cw.TG.Conflicts()).To(Equal(conflicts), "no 409 after the handover")
		GinkgoWriter.Printf("409s: %d before the new poller polled, %d at the end\n", conflicts, cw.TG.Conflicts())
	})

	It("delivers every message once, in order, across SIGKILLs of each machine in turn", Label("chaos"), Serial, func() {
		kills := clusterKills()
		seed := uint64(time.Now().UnixNano())
		GinkgoWriter.Printf("%d kills, seed %d\n", kills, seed)
		rng := rand.New(rand.NewPCG(seed, 0))

		labels := []string{"A", "B", "C"}
		threads := map[string]int64{}
		owner := map[string]*ClusterNode{}
		owners := map[int64]*ClusterNode{}
		for i, l := range labels {
			n := cw.Nodes[i]
			threads[l] = cw.Setup(n, "chaos "+l, "claude", "api", l+"-000")
			owner[l] = n
			owners[threads[l]] = n
		}
		w := cw.StartWriter(clusterWriteEvery, threads)
		outages := map[string]int{}
		var failovers []time.Duration

		for round := 1; round <= kills; round++ {
			victim := cw.Nodes[rng.IntN(len(cw.Nodes))]
			holder := cw.Holder()
			var mine []string
			for _, l := range labels {
				if owner[l] == victim {
					mine = append(mine, l)
				}
			}
			By(fmt.Sprintf("round %d: SIGKILL of %s (the poller is %s)", round, victim.Name, holder.Name))
			// The victim's threads settle first; the others' keep coming.
			w.Pause(mine...)
			for _, l := range mine {
				sent := w.Sent(l)
				if len(sent) > 0 {
					Eventually(victim.Lines(l)).Should(ContainElement(sent[len(sent)-1]))
					Eventually(cw.EchoesOf(threads[l], l)).Should(ContainElement("echo: " + sent[len(sent)-1]))
				}
				victim.Settled(victim.D, threads[l])
			}
			// Let the writer reach the poller mid-stream.
			for _, l := range labels {
				if owner[l] != victim {
					w.WaitSent(l, w.Count(l)+rng.IntN(4)+1)
					break
				}
			}
			killed := time.Now()
			victim.Kill()
			outages[victim.Name]++
			w.Resume(mine...)
			if rng.IntN(2) == 0 || victim == holder {
				// Down for good in the others' eyes: the notice, or the
				// lease's failover.
				other := cw.otherThan(victim)
				Eventually(func() error {
					st, err := other.Cluster()
					if err != nil {
						return err
					}
					if slices.Contains(st.MemberNames(), victim.Name) {
						return fmt.Errorf("%s still counts %s a member", other.Name, victim.Name)
					}
					if h := st.Leases[clusterLease]; h == "" || h == victim.Name {
						return fmt.Errorf("the lease is held by %q", h)
					}
					return nil
				}, time.Minute, 50*time.Millisecond).Should(Succeed())
				if victim == holder {
					failovers = append(failovers, time.Since(killed))
				}
			}
			for _, l := range labels {
				w.WaitSent(l, w.Count(l)+2)
			}
			victim.Start()
			cw.WaitFormed()
		}

		By("the writer stops; every thread got each message once, in order, on its machine")
		w.Stop()
		for _, l := range labels {
			want := append([]string{l + "-000"}, w.Sent(l)...)
			Eventually(owner[l].Lines(l)).Should(ContainElement(want[len(want)-1]), "thread %s on %s", l, owner[l].Name)
			Eventually(cw.EchoesOf(threads[l], l)).Should(ContainElement("echo: "+want[len(want)-1]), "thread %s", l)
		}
		cw.Settle(owners)
		for _, l := range labels {
			want := append([]string{l + "-000"}, w.Sent(l)...)
			Expect(owner[l].Lines(l)()).To(Equal(want), "thread %s on %s: typed once each, in order", l, owner[l].Name)
			Expect(cw.EchoesOf(threads[l], l)()).To(Equal(echoesOf(want)), "thread %s: replies once each, in order", l)
			for _, n := range cw.Nodes {
				if n != owner[l] {
					Expect(n.Lines(l)()).To(BeEmpty(), "%s typed none of thread %s", n.Name, l)
				}
			}
			Expect(cw.Notices(threads[l], owner[l].Name)).To(BeNumerically("<=", outages[owner[l].Name]),
				"thread %s: at most one notice per outage of %s", l, owner[l].Name)
		}
		Eventually(cw.TG.Pending).Should(BeZero())
		GinkgoWriter.Printf("outages %v; poller failovers %v; 409s %d; messages %d/%d/%d\n",
			outages, failovers, cw.TG.Conflicts(), w.Count("A"), w.Count("B"), w.Count("C"))
	})
})

// clusterWriteEvery is how often the writer sends to each thread: much
// slower than a node types a message and relays its reply (the worlds
// space requests to a chat by 100 ms), so that no backlog grows even on
// a loaded machine.
const clusterWriteEvery = time.Second

// otherThan returns a running node other than n.
func (cw *ClusterWorld) otherThan(n *ClusterNode) *ClusterNode {
	GinkgoHelper()
	for _, o := range cw.Up() {
		if o != n {
			return o
		}
	}
	Fail("no running node but " + n.Name)
	return nil
}

// echoesOf is the fake agent's replies to texts, in order.
func echoesOf(texts []string) []string {
	out := make([]string, 0, len(texts))
	for _, t := range texts {
		out = append(out, "echo: "+t)
	}
	return out
}

// clusterKills reads THATCH_CLUSTER_KILLS (default 3; `make chaos`
// runs 60).
func clusterKills() int {
	if n, err := strconv.Atoi(os.Getenv("THATCH_CLUSTER_KILLS")); err == nil && n > 0 {
		return n
	}
	return 3
}
