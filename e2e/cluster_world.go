package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/thatch-run/thatch/e2e/faketelegram"
	"github.com/thatch-run/thatch/hosts/control"
)

// The cluster specs' world: several machines, each an IMWorld of its own
// (HOME, data dir, tmux socket, fake agents), whose daemons join one
// cluster ([cluster]: a NATS route port each, routes to the others) and
// share one fake Bot API and one bot token.

// clusterLeaseTTL is every node's cluster.lease_ttl.
const clusterLeaseTTL = 10 * time.Second

// clusterLease is the lease of the one poller of the bot: tg.<bot id>.
var clusterLease = "tg." + strings.Split(imToken, ":")[0]

// machineQuestion is the start of the question that asks a new thread's
// machine when more than one node is up.
const machineQuestion = "Which machine should this thread's agent run on?"

// ClusterWorld is n machines sharing one bot.
type ClusterWorld struct {
	// TG is the one Bot API every node polls and sends to.
	TG    *faketelegram.Server
	Nodes []*ClusterNode
}

// ClusterNode is one machine: its world, its name in the cluster and its
// daemon (nil while it is down).
type ClusterNode struct {
	*IMWorld
	Name string
	// D is the running daemon, nil after Kill until Start.
	D *Daemon
	// runs are every daemon this node ran, for the logs of a failure.
	runs []*Daemon
}

// NewClusterWorld makes n machines named n1..n<n>, each with a config
// whose [cluster] section routes to all the others; no daemon runs yet.
func NewClusterWorld(n int) *ClusterWorld {
	GinkgoHelper()
	cw := &ClusterWorld{TG: faketelegram.New(imToken)}
	DeferCleanup(cw.TG.Close)
	cw.TG.ServiceFrom(imUser)
	// Registered before any daemon: runs after they are stopped.
	DeferCleanup(cw.dumpOnFailure)
	ports := make([]int, n)
	for i := range ports {
		ports[i] = freePort()
	}
	for i := range n {
		iw := NewIMWorld()
		// The world's own fake stays unused: every node talks to cw.TG.
		cfg, err := os.ReadFile(iw.ThatchConfig)
		Expect(err).NotTo(HaveOccurred())
		old := "api_url = " + quote(iw.TG.URL())
		Expect(string(cfg)).To(ContainSubstring(old))
		text := strings.Replace(string(cfg), old, "api_url = "+quote(cw.TG.URL()), 1)
		iw.TG = cw.TG
		var routes []string
		for j, p := range ports {
			if j != i {
				routes = append(routes, quote(fmt.Sprintf("nats-route://127.0.0.1:%d", p)))
			}
		}
		name := fmt.Sprintf("n%d", i+1)
		text += strings.Join([]string{
			"[cluster]",
			"node = " + quote(name),
			"listen = " + quote(fmt.Sprintf("127.0.0.1:%d", ports[i])),
			"routes = [" + strings.Join(routes, ", ") + "]",
			"lease_ttl = " + quote(clusterLeaseTTL.String()),
			"",
		}, "\n")
		Expect(os.WriteFile(iw.ThatchConfig, []byte(text), 0o644)).To(Succeed())
		cw.Nodes = append(cw.Nodes, &ClusterNode{IMWorld: iw, Name: name})
	}
	return cw
}

// StartAll starts every node's daemon and waits until the cluster has
// formed: every node ready, every node a member, one lease holder.
func (cw *ClusterWorld) StartAll() {
	GinkgoHelper()
	for _, n := range cw.Nodes {
		n.Start()
	}
	cw.WaitFormed()
}

// Node returns the node named name.
func (cw *ClusterWorld) Node(name string) *ClusterNode {
	GinkgoHelper()
	for _, n := range cw.Nodes {
		if n.Name == name {
			return n
		}
	}
	Fail("no node " + name)
	return nil
}

// Up lists the nodes whose daemon runs.
func (cw *ClusterWorld) Up() []*ClusterNode {
	var up []*ClusterNode
	for _, n := range cw.Nodes {
		if n.D != nil {
			up = append(up, n)
		}
	}
	return up
}

func names(ns []*ClusterNode) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out
}

// Start runs the node's `thatch serve` (with its data dir, so a start
// after Kill is a restart) and waits until its control API listens.
func (n *ClusterNode) Start() {
	GinkgoHelper()
	Expect(n.D).To(BeNil(), "%s runs already", n.Name)
	cmd := exec.Command(bins.Thatch, "serve", "--config", n.ThatchConfig)
	cmd.Env = n.Env
	cmd.Dir = n.Root
	prefix := fmt.Sprintf("[%s#%d] ", n.Name, len(n.runs)+1)
	sess, err := gexec.Start(cmd, gexec.NewPrefixedWriter(prefix, GinkgoWriter), gexec.NewPrefixedWriter(prefix, GinkgoWriter))
	Expect(err).NotTo(HaveOccurred())
	d := &Daemon{w: n.World, Sess: sess}
	n.D = d
	n.runs = append(n.runs, d)
	DeferCleanup(func() {
		if sess.ExitCode() == -1 {
			sess.Terminate()
			Eventually(sess, 30*time.Second).Should(gexec.Exit())
		}
	})
	Eventually(sess.Err, 60*time.Second).Should(gbytes.Say("control API listening"), "%s did not start", n.Name)
}

// Kill SIGKILLs the node's daemon; its tmux server and agents keep
// running, as they would on a machine whose daemon crashed.
func (n *ClusterNode) Kill() {
	GinkgoHelper()
	Expect(n.D).NotTo(BeNil(), "%s is down already", n.Name)
	n.D.Kill()
	n.D = nil
}

// Pause stops the node's daemon (SIGSTOP) as a machine that hangs: its
// connections stay open and nothing answers on them. Continue (also run
// at the spec's cleanup, before the daemon is stopped) lets it go on.
func (n *ClusterNode) Pause() {
	GinkgoHelper()
	Expect(n.D).NotTo(BeNil(), "%s is down", n.Name)
	n.D.Sess.Signal(syscall.SIGSTOP)
	DeferCleanup(n.Continue)
}

// Continue lets a paused daemon go on (SIGCONT); it does nothing to one
// that runs.
func (n *ClusterNode) Continue() {
	if n.D != nil {
		n.D.Sess.Signal(syscall.SIGCONT)
	}
}

// ClusterStatus is the cluster as one node's `thatch status --json` shows
// it (frontEnds.im.details.cluster).
type ClusterStatus struct {
	Node      string `json:"node"`
	State     string `json:"state"`
	LastError string `json:"lastError"`
	Members   []struct {
		Node string `json:"node"`
	} `json:"members"`
	// Leases maps each account to the node that polls for it.
	Leases map[string]string `json:"leases"`
	// BoardWriter is the node that writes the chats' boards.
	BoardWriter string `json:"boardWriter"`
	// Threads maps each thread key to its node ("" while it is asked).
	Threads map[string]string `json:"threads"`
	// MemoryBehind is how many memory changes each node has yet to
	// apply.
	MemoryBehind map[string]uint64 `json:"memoryBehind"`
}

// MemberNames are the members' names, sorted.
func (s ClusterStatus) MemberNames() []string {
	var out []string
	for _, m := range s.Members {
		out = append(out, m.Node)
	}
	sort.Strings(out)
	return out
}

type clusterReport struct {
	FrontEnds struct {
		IM struct {
			Details struct {
				Cluster *ClusterStatus `json:"cluster"`
			} `json:"details"`
		} `json:"im"`
	} `json:"frontEnds"`
}

// Cluster reads the cluster part of the node's GET /v1/status (what
// `thatch status --json` prints), for polls.
func (n *ClusterNode) Cluster() (ClusterStatus, error) {
	if n.D == nil {
		return ClusterStatus{}, fmt.Errorf("%s is down", n.Name)
	}
	c, _, err := control.Dial(filepath.Join(n.DataDir, "control.json"), filepath.Join(n.DataDir, "control.token"), 5*time.Second)
	if err != nil {
		return ClusterStatus{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rep clusterReport
	if err := c.Do(ctx, "GET", "/v1/status", nil, &rep); err != nil {
		return ClusterStatus{}, err
	}
	if rep.FrontEnds.IM.Details.Cluster == nil {
		return ClusterStatus{}, fmt.Errorf("%s: the status has no frontEnds.im.details.cluster", n.Name)
	}
	return *rep.FrontEnds.IM.Details.Cluster, nil
}

// ClusterCLI runs `thatch status --json` on the node, as a person would,
// and returns its cluster part. Exit status 3 (a front end is down) still
// prints the status.
func (n *ClusterNode) ClusterCLI() (ClusterStatus, error) {
	cmd := exec.Command(bins.Thatch, "status", "--json", "--config", n.ThatchConfig)
	cmd.Env = n.Env
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 3) {
		return ClusterStatus{}, fmt.Errorf("%s: thatch status --json: %w", n.Name, err)
	}
	var rep clusterReport
	if err := json.Unmarshal(out, &rep); err != nil {
		return ClusterStatus{}, fmt.Errorf("%s: thatch status --json printed %q: %w", n.Name, out, err)
	}
	if rep.FrontEnds.IM.Details.Cluster == nil {
		return ClusterStatus{}, fmt.Errorf("%s: thatch status --json has no frontEnds.im.details.cluster", n.Name)
	}
	return *rep.FrontEnds.IM.Details.Cluster, nil
}

// WaitFormed waits until every node that runs is ready, sees exactly the
// running nodes as members, and all agree on one lease holder among them.
func (cw *ClusterWorld) WaitFormed() {
	GinkgoHelper()
	cw.waitHolder()
}

// waitHolder waits until the cluster formed and returns the holder the
// nodes agreed on.
func (cw *ClusterWorld) waitHolder() string {
	GinkgoHelper()
	var holder string
	Eventually(func() (err error) {
		holder, err = cw.formed()
		return err
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed(), "the cluster did not form")
	return holder
}

func (cw *ClusterWorld) formed() (string, error) {
	up := names(cw.Up())
	holders := map[string]bool{}
	for _, n := range cw.Up() {
		st, err := n.Cluster()
		if err != nil {
			return "", err
		}
		if st.State != "ready" {
			return "", fmt.Errorf("%s is %q (%s)", n.Name, st.State, st.LastError)
		}
		if !slices.Equal(st.MemberNames(), up) {
			return "", fmt.Errorf("%s sees members %v, want %v", n.Name, st.MemberNames(), up)
		}
		holders[st.Leases[clusterLease]] = true
	}
	if len(holders) != 1 {
		return "", fmt.Errorf("the nodes disagree on the holder of %s: %v", clusterLease, holders)
	}
	for h := range holders {
		if !slices.Contains(up, h) {
			return "", fmt.Errorf("the lease %s is held by %q, not a running node", clusterLease, h)
		}
		return h, nil
	}
	return "", nil
}

// Holder waits until the running nodes agree on one holder of the bot's
// lease among them, and returns it.
func (cw *ClusterWorld) Holder() *ClusterNode {
	GinkgoHelper()
	return cw.Node(cw.waitHolder())
}

// threadKey is the thread's key in the status (tg:<chat>:<thread>).
func threadKey(thread int64) string { return fmt.Sprintf("tg:%d:%d", imChat, thread) }

// Setup makes a topic named name, sends first in it, answers the machine
// question with on, then runs the setup on that machine as IMWorld.Setup
// does (agent, a project under on's Projects, a new session). It returns
// the thread.
func (cw *ClusterWorld) Setup(on *ClusterNode, name, agent, project, first string) int64 {
	GinkgoHelper()
	thread := cw.TG.CreateTopic(imChat, name)
	cw.TG.Message(imChat, thread, imUser, first)
	cw.PickMachine(thread, on)
	on.SetUp(thread, 0, agent, project)
	return thread
}

// SetUp answers the setup of thread on the node, looking only at what
// the bot said from its from-th message of the thread on: agent, a
// project under its Projects, a new session; it returns once the session
// is ready.
func (on *ClusterNode) SetUp(thread int64, from int, agent, project string) {
	GinkgoHelper()
	prompt := func(want string) faketelegram.Sent { return on.PromptFrom(thread, from, want) }
	said := func() []string {
		all := on.Said(thread)()
		return all[min(from, len(all)):]
	}
	on.Press(thread, imUser, prompt("Which agent"), agent)
	on.Press(thread, imUser, prompt("Working directory: "+on.Projects), project)
	on.Press(thread, imUser, prompt("Working directory: "+filepath.Join(on.Projects, project)), "Use this directory")
	Eventually(func() bool {
		s := said()
		return len(s) > 0 && (s[len(s)-1] == "Session ready!" || strings.Contains(s[len(s)-1], "Resume one?"))
	}).Should(BeTrue(), func() string { return fmt.Sprintf("the bot said %q", said()) })
	if s := said(); strings.Contains(s[len(s)-1], "Resume one?") {
		on.Press(thread, imUser, prompt("Resume one?"), "New")
	}
	Eventually(said).Should(ContainElement("Session ready!"))
}

// PickMachine waits for the machine question in thread, checks that it
// offers exactly the running nodes (label: the node's name, data
// m:<node>), and presses on's button.
func (cw *ClusterWorld) PickMachine(thread int64, on *ClusterNode) {
	GinkgoHelper()
	q := on.Prompt(thread, machineQuestion)
	var labels []string
	var press faketelegram.Button
	for _, row := range q.Buttons {
		for _, b := range row {
			labels = append(labels, b.Text)
			Expect(b.Data).To(Equal("m:"+b.Text), "the button of %s", b.Text)
			if b.Text == on.Name {
				press = b
			}
		}
	}
	sort.Strings(labels)
	Expect(labels).To(Equal(names(cw.Up())), "the machine question offers the nodes that are up")
	cw.TG.Press(imChat, thread, imUser, q.MessageID, press.Data)
}

// Lines returns a poll of the user lines the node's fake claude got that
// start with label + "-", in order.
func (n *ClusterNode) Lines(label string) func() []string {
	all := n.UserLines("claude")
	return func() []string {
		var out []string
		for _, l := range all() {
			if strings.HasPrefix(l, label+"-") {
				out = append(out, l)
			}
		}
		return out
	}
}

// EchoesOf returns a poll of the replies relayed to thread for the
// messages that start with label + "-", in order.
func (cw *ClusterWorld) EchoesOf(thread int64, label string) func() []string {
	return func() []string {
		var out []string
		for _, m := range cw.TG.Messages(imChat, thread) {
			if t := visible(m); strings.HasPrefix(t, "echo: "+label+"-") {
				out = append(out, t)
			}
		}
		return out
	}
}

// Notices counts the outage notices ("<node> is unreachable; your
// messages are queued") sent to thread.
func (cw *ClusterWorld) Notices(thread int64, node string) int {
	n := 0
	for _, m := range cw.TG.Messages(imChat, thread) {
		if strings.Contains(visible(m), node+" is unreachable; your messages are queued") {
			n++
		}
	}
	return n
}

// Settle waits until every running node has nothing left to do: each
// thread's binding on its owner has nothing queued or unsent, and every
// daemon came to rest. What has not happened by then will not.
func (cw *ClusterWorld) Settle(owners map[int64]*ClusterNode) {
	GinkgoHelper()
	for thread, n := range owners {
		if n.D != nil {
			n.Settled(n.D, thread)
		}
	}
	for _, n := range cw.Up() {
		n.D.Quiesce()
	}
}

// dumpOnFailure prints, when the spec failed, the tail of every daemon's
// log, every thread's conversation and the nodes' windows, and writes the
// whole logs to $THATCH_CLUSTER_LOGS when that is set.
func (cw *ClusterWorld) dumpOnFailure() {
	if !CurrentSpecReport().Failed() {
		return
	}
	dir := os.Getenv("THATCH_CLUSTER_LOGS")
	if dir != "" {
		dir = filepath.Join(dir, fmt.Sprintf("%d-%s", time.Now().Unix(), slug(CurrentSpecReport().LeafNodeText)))
		_ = os.MkdirAll(dir, 0o755)
		GinkgoWriter.Printf("cluster logs in %s\n", dir)
	}
	for _, n := range cw.Nodes {
		for i, d := range n.runs {
			log := d.Log()
			if dir != "" {
				_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.log", n.Name, i+1)), []byte(log), 0o644)
			}
			lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
			GinkgoWriter.Printf("==== %s run %d: last lines of its log\n%s\n", n.Name, i+1, strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
		out, _ := n.Tmux("list-windows", "-a")
		GinkgoWriter.Printf("==== %s tmux windows:\n%s\n", n.Name, out)
	}
	var chat []string
	for _, s := range cw.TG.Sent() {
		chat = append(chat, fmt.Sprintf("%s thread %d: %q", s.Method, s.ThreadID, visible(s)))
	}
	GinkgoWriter.Printf("==== the bot's requests (%d conflicts):\n%s\n", cw.TG.Conflicts(), strings.Join(chat, "\n"))
	if dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "bot.txt"), []byte(strings.Join(chat, "\n")), 0o644)
	}
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
			b.WriteByte('-')
		}
		if b.Len() >= 60 {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}

// chatWriter is the user who keeps writing: every interval it sends the
// next numbered message (<label>-001, <label>-002, ...) to each thread it
// is not paused for, in label order.
type chatWriter struct {
	tg      *faketelegram.Server
	threads map[string]int64

	mu     sync.Mutex
	paused map[string]bool
	sent   map[string][]string
	stop   chan struct{}
	done   chan struct{}
}

// StartWriter starts a writer to threads (label -> thread) that sends
// every interval; the spec's cleanup stops it.
func (cw *ClusterWorld) StartWriter(every time.Duration, threads map[string]int64) *chatWriter {
	w := &chatWriter{tg: cw.TG, threads: threads, paused: map[string]bool{}, sent: map[string][]string{},
		stop: make(chan struct{}), done: make(chan struct{})}
	labels := make([]string, 0, len(threads))
	for l := range threads {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	go func() {
		defer close(w.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
			w.mu.Lock()
			for _, l := range labels {
				if w.paused[l] {
					continue
				}
				text := fmt.Sprintf("%s-%03d", l, len(w.sent[l])+1)
				w.sent[l] = append(w.sent[l], text)
				w.tg.Message(imChat, w.threads[l], imUser, text)
			}
			w.mu.Unlock()
		}
	}()
	DeferCleanup(w.Stop)
	return w
}

// Pause stops sending to labels; when it returns, nothing more is sent
// to them until Resume.
func (w *chatWriter) Pause(labels ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range labels {
		w.paused[l] = true
	}
}

// Resume sends to labels again.
func (w *chatWriter) Resume(labels ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range labels {
		delete(w.paused, l)
	}
}

// Sent is what was sent to label so far, in order.
func (w *chatWriter) Sent(label string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.sent[label]...)
}

// Count is how many messages were sent to label so far.
func (w *chatWriter) Count(label string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.sent[label])
}

// WaitSent waits until at least n messages were sent to label.
func (w *chatWriter) WaitSent(label string, n int) {
	GinkgoHelper()
	Eventually(func() int { return w.Count(label) }).Should(BeNumerically(">=", n))
}

// Stop ends the writer; it may be called more than once.
func (w *chatWriter) Stop() {
	w.mu.Lock()
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.mu.Unlock()
	<-w.done
}
