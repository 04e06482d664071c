package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/thatch-run/thatch/internal/retry"
)

// Names of what the nodes share in JetStream.
const (
	// StreamName is the stream of inbound updates, one subject per node
	// (SubjectPrefix + node).
	StreamName    = "THATCH_IM"
	SubjectPrefix = "im.in."
	// The buckets: who holds each adapter account's lease (entries
	// expire after the lease's TTL), who is up (a heartbeat per node,
	// expiring likewise), which node owns each thread, the confirmed
	// cursor of each account, and the chats' boards (boards.go).
	leaseBucket   = "thatch-leases"
	memberBucket  = "thatch-members"
	threadBucket  = "thatch-threads"
	cursorBucket  = "thatch-cursors"
	boardBucket   = "thatch-boards"
	clusterName   = "thatch"
	routeUser     = "thatch"
	dedupeWindow  = time.Hour
	opTimeout     = 5 * time.Second
	startTimeout  = 10 * time.Second
	setupInterval = time.Second
)

// DefaultLeaseTTL is the lease's lifetime when Options leaves it zero:
// longer than the election of a new leader after one died (NATS takes 4
// to 9 seconds), so that the death of the node leading the lease bucket
// does not cost the holder its lease.
const DefaultLeaseTTL = 15 * time.Second

// Options configure a Node.
type Options struct {
	// Node names this node among the others: unique, a NodeName.
	Node string
	// Listen is the host:port of this node's route listener; the other
	// nodes' servers connect to it.
	Listen string
	// Routes are the other nodes' route URLs (nats-route://host:port);
	// one naming this node's own Listen is skipped. None: a cluster of
	// one.
	Routes []string
	// Replicas is how many copies of the stream and the buckets the
	// cluster keeps; 0 picks min(3, the number of nodes).
	Replicas int
	// LeaseTTL is how long a lease outlives its holder's last renewal,
	// and a node its last heartbeat. Default DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Dir is where this node's server keeps its JetStream files.
	Dir string
	// TLSCert, TLSKey and TLSCA secure the routes (all three or none),
	// and Token is the routes' shared password.
	TLSCert, TLSKey, TLSCA string
	Token                  string
	Logger                 hclog.Logger
}

// nodeName is what a node may be called: it is a subject token and a
// key in the buckets.
var nodeName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidNode reports whether name may name a node.
func ValidNode(name string) bool { return nodeName.MatchString(name) }

// Node is this machine's member of the cluster: its embedded NATS server
// (JetStream on, every write synced) and a client connected to it in
// process. The server listens for routes only; no client port is opened.
type Node struct {
	o   Options
	log hclog.Logger
	srv *server.Server
	nc  *nats.Conn
	js  jetstream.JetStream

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	ready    chan struct{} // closed once the stream and buckets are there
	stopping *atomic.Bool  // set by Close: the server's log lines are the stop's

	// Set before ready is closed.
	leases, members, threads, cursors, boards jetstream.KeyValue

	owners ownerCache

	mu         sync.Mutex
	state      string
	lastErr    string
	memberList []Member
	// missed counts, per node ever listed, the reads in a row it was
	// missing from.
	missed map[string]int
	since  time.Time
}

// Start starts the node's server and client, and (in the background)
// makes the stream and the buckets once the cluster has a quorum: Ready
// is closed then. Close stops it.
func Start(o Options) (*Node, error) {
	if !ValidNode(o.Node) {
		return nil, fmt.Errorf("cluster: node name %q: use 1 to 64 letters, digits, - or _", o.Node)
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	host, port, err := splitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("cluster: listen %q: %w", o.Listen, err)
	}
	routes, err := parseRoutes(o.Routes, o.Listen)
	if err != nil {
		return nil, err
	}
	if o.Replicas <= 0 {
		o.Replicas = min(3, len(routes)+1)
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: store directory: %w", err)
	}
	so, clientToken, err := serverOptions(o, host, port, routes)
	if err != nil {
		return nil, err
	}
	srv, err := server.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("cluster: NATS server: %w", err)
	}
	log := o.Logger
	stopping := new(atomic.Bool)
	srv.SetLoggerV2(natsLogger{l: log.Named("nats"), stopping: stopping}, false, false, false)
	srv.Start()
	if !srv.ReadyForConnections(startTimeout) {
		srv.Shutdown()
		return nil, fmt.Errorf("cluster: the NATS server did not start within %s (is %s free?)", startTimeout, o.Listen)
	}
	nc, err := nats.Connect("", nats.InProcessServer(srv), nats.Name("thatch-"+o.Node), nats.Token(clientToken),
		nats.MaxReconnects(-1), nats.Timeout(opTimeout))
	if err != nil {
		srv.Shutdown()
		return nil, fmt.Errorf("cluster: connect to the embedded server: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		srv.Shutdown()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	n := &Node{o: o, log: log, srv: srv, nc: nc, js: js, ready: make(chan struct{}), stopping: stopping,
		state: "waiting for a quorum of the nodes", since: time.Now(), owners: ownerCache{m: map[string]Thread{}}, missed: map[string]int{}}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.run()
	}()
	return n, nil
}

// serverOptions are the embedded server's options: JetStream synced, the
// routes (with the token as their password and TLS when set), and the
// client port. The daemon's own client connects in process, but the
// server still opens a client port (its routes start only once one is
// open): a random loopback one, closed to all without clientToken, this
// process's own random token.
func serverOptions(o Options, host string, port int, routes []*url.URL) (so *server.Options, clientToken string, err error) {
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return nil, "", fmt.Errorf("cluster: client token: %w", err)
	}
	clientToken = hex.EncodeToString(tok)
	so = &server.Options{
		ServerName:    o.Node,
		Host:          "127.0.0.1",
		Port:          server.RANDOM_PORT,
		Authorization: clientToken,
		JetStream:     true,
		StoreDir:      filepath.Clean(o.Dir),
		SyncAlways:    true,
		NoSigs:        true,
		MaxPayload:    4 << 20,
	}
	if len(routes) == 0 {
		return so, clientToken, nil // a cluster of one
	}
	so.Cluster = server.ClusterOpts{Name: clusterName, Host: host, Port: port, ConnectRetries: -1}
	if o.Token != "" {
		// This listener asks the token, and so do the other nodes'.
		so.Cluster.Username, so.Cluster.Password = routeUser, o.Token
		for _, u := range routes {
			if u.User == nil {
				u.User = url.UserPassword(routeUser, o.Token)
			}
		}
	}
	so.Routes = routes
	if o.TLSCert != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: o.TLSCert, KeyFile: o.TLSKey, CaFile: o.TLSCA, Verify: true})
		if err != nil {
			return nil, "", fmt.Errorf("cluster: route TLS: %w", err)
		}
		so.Cluster.TLSConfig, so.Cluster.TLSTimeout = tc, 5
	}
	return so, clientToken, nil
}

// Name is the node's name.
func (n *Node) Name() string { return n.o.Node }

// LeaseTTL is the leases' lifetime.
func (n *Node) LeaseTTL() time.Duration { return n.o.LeaseTTL }

// Ready is closed once the stream and buckets can be used.
func (n *Node) Ready() <-chan struct{} { return n.ready }

// Close stops the node's loops, its client and its server.
func (n *Node) Close() {
	n.stopping.Store(true)
	n.cancel()
	n.wg.Wait()
	n.nc.Close()
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
}

// run makes the stream and the buckets (again and again until the
// cluster can: a majority of the nodes must be up), then beats this
// node's heartbeat and keeps the member list until Close.
func (n *Node) run() {
	for attempt := 1; ; attempt++ {
		err := n.setup()
		if err == nil {
			break
		}
		n.setState("waiting for a quorum of the nodes", err)
		if attempt == 1 || attempt%30 == 0 {
			n.log.Info("waiting for the cluster to form (a majority of the nodes must be up)", "error", err, "attempt", attempt)
		}
		if !retry.Sleep(n.ctx, setupInterval) {
			return
		}
	}
	n.setState("ready", nil)
	n.log.Info("cluster ready", "node", n.o.Node, "replicas", n.o.Replicas, "lease_ttl", n.o.LeaseTTL)
	close(n.ready)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.watchOwners()
	}()
	// A heartbeat expires a TTL after it was written: one every fifth
	// of it, and one that failed (an election) tried again each second,
	// keep a node that is up listed through a leader's election.
	every := n.o.LeaseTTL / 5
	for {
		wait := every
		if !n.beat() {
			wait = min(time.Second, every)
		}
		if !retry.Sleep(n.ctx, wait) {
			return
		}
	}
}

// setup makes (or updates) the stream and the buckets.
func (n *Node) setup() error {
	ctx, cancel := context.WithTimeout(n.ctx, 2*opTimeout)
	defer cancel()
	r := n.o.Replicas
	if _, err := n.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: StreamName, Subjects: []string{SubjectPrefix + "*"}, Storage: jetstream.FileStorage,
		Retention: jetstream.WorkQueuePolicy, Replicas: r, Duplicates: dedupeWindow,
	}); err != nil {
		return fmt.Errorf("stream %s: %w", StreamName, err)
	}
	if _, err := n.js.CreateOrUpdateStream(ctx, n.memoryStreamConfig()); err != nil {
		return fmt.Errorf("stream %s: %w", MemoryStream, err)
	}
	kv := func(bucket string, ttl time.Duration) (jetstream.KeyValue, error) {
		// Making or updating a bucket turns its direct reads back on
		// (below) for a moment, and a handle another node makes in that
		// moment reads directly, and gets no answer at all once they are
		// off again: so a bucket that is there as wanted is left as it is.
		want := jetstream.KeyValueConfig{Bucket: bucket, TTL: ttl, Replicas: r, Storage: jetstream.FileStorage, History: 1}
		if have, err := n.js.KeyValue(ctx, bucket); errors.Is(err, jetstream.ErrBucketNotFound) {
			if _, err := n.js.CreateKeyValue(ctx, want); err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
				return nil, fmt.Errorf("bucket %s: %w", bucket, err)
			}
		} else if err != nil {
			return nil, fmt.Errorf("bucket %s: %w", bucket, err)
		} else if st, err := have.Status(ctx); err != nil {
			return nil, fmt.Errorf("bucket %s: %w", bucket, err)
		} else if st.TTL() != ttl || r > 0 && st.Config().Replicas != r || st.History() != 1 {
			if _, err := n.js.UpdateKeyValue(ctx, want); err != nil {
				return nil, fmt.Errorf("bucket %s: %w", bucket, err)
			}
		}
		// A bucket answers reads from any replica ("direct get") unless
		// told not to, and a replica may lag behind a write just made:
		// the thread map's compare-and-set reads must see the last
		// write, so every read goes through the stream's leader.
		s, err := n.js.Stream(ctx, "KV_"+bucket)
		if err != nil {
			return nil, fmt.Errorf("bucket %s: %w", bucket, err)
		}
		if cfg := s.CachedInfo().Config; cfg.AllowDirect {
			cfg.AllowDirect = false
			if _, err := n.js.UpdateStream(ctx, cfg); err != nil {
				return nil, fmt.Errorf("bucket %s: reads through the leader: %w", bucket, err)
			}
		}
		b, err := n.js.KeyValue(ctx, bucket)
		if err != nil {
			return nil, fmt.Errorf("bucket %s: %w", bucket, err)
		}
		return b, nil
	}
	var err error
	if n.leases, err = kv(leaseBucket, n.o.LeaseTTL); err != nil {
		return err
	}
	if n.members, err = kv(memberBucket, n.o.LeaseTTL); err != nil {
		return err
	}
	if n.threads, err = kv(threadBucket, 0); err != nil {
		return err
	}
	if n.cursors, err = kv(cursorBucket, 0); err != nil {
		return err
	}
	if n.boards, err = kv(boardBucket, 0); err != nil {
		return err
	}
	return n.answering(ctx)
}

// answering reads a key of each bucket through this node's handles: the
// node is ready only once every bucket answers (a handle made while
// another node had direct reads on gets no responders, and setup, tried
// again, makes a new one).
func (n *Node) answering(ctx context.Context) error {
	for name, b := range map[string]jetstream.KeyValue{leaseBucket: n.leases, memberBucket: n.members,
		threadBucket: n.threads, cursorBucket: n.cursors, boardBucket: n.boards} {
		if _, err := b.Get(ctx, "ready-probe"); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("bucket %s does not answer a read: %w", name, err)
		}
	}
	return nil
}

// beat writes this node's heartbeat and reads the others'; false when
// it could not.
func (n *Node) beat() bool {
	ctx, cancel := context.WithTimeout(n.ctx, opTimeout)
	defer cancel()
	if _, err := n.members.Put(ctx, n.o.Node, []byte(n.since.UTC().Format(time.RFC3339))); err != nil {
		n.setState("cannot reach the cluster", err)
		n.log.Debug("cannot write this node's heartbeat", "error", err)
		return false
	}
	entries, err := all(ctx, n.members)
	if err != nil {
		n.setState("cannot reach the cluster", err)
		return false
	}
	var ms []Member
	for _, e := range entries {
		since, _ := time.Parse(time.RFC3339, string(e.Value()))
		ms = append(ms, Member{Node: e.Key(), Since: since, Seen: e.Created()})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Node < ms[j].Node })
	n.mu.Lock()
	listed := map[string]bool{}
	for _, m := range ms {
		listed[m.Node] = true
		n.missed[m.Node] = 0
	}
	for node := range n.missed {
		if !listed[node] {
			n.missed[node]++
		}
	}
	n.memberList = ms
	n.mu.Unlock()
	n.setState("ready", nil)
	return true
}

// Member is a node that is up: its heartbeat has not expired.
type Member struct {
	Node  string    `json:"node"`
	Since time.Time `json:"since"`
	Seen  time.Time `json:"seen"`
}

// Members are the nodes up at the last heartbeat, sorted by name.
func (n *Node) Members() []Member {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Member(nil), n.memberList...)
}

// Up reports whether node counts as up: it is not missing from two reads
// of the heartbeats in a row (right after a leader's election, a
// heartbeat may have aged out before its node could write again).
func (n *Node) Up(node string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	missed, known := n.missed[node]
	return known && missed < 2
}

// Beating reads node's heartbeat from the members bucket's leader now:
// true while it has not expired. Up is this node's view as of its last
// heartbeat round, which may be a round or more old (longer while an
// election holds the rounds up); Beating is for a decision that a stale
// view would get wrong, such as telling a thread its node is down.
func (n *Node) Beating(ctx context.Context, node string) (bool, error) {
	if !n.isReady() {
		return false, errNotReady
	}
	c, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err := n.members.Get(c, node)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cluster: the heartbeat of %s: %w", node, err)
	}
	return true, nil
}

func (n *Node) setState(s string, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.state = s
	n.lastErr = ""
	if err != nil {
		n.lastErr = err.Error()
	}
}

// all reads every entry of a bucket.
func all(ctx context.Context, kv jetstream.KeyValue) ([]jetstream.KeyValueEntry, error) {
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, err
	}
	defer func() { _ = w.Stop() }()
	var out []jetstream.KeyValueEntry
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return out, ctx.Err()
			}
			if e == nil { // the initial values are all there
				return out, nil
			}
			out = append(out, e)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func splitHostPort(hp string) (string, int, error) {
	host, p, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port %q is not a port number", p)
	}
	return host, port, nil
}

// parseRoutes parses the route URLs, leaving out the one that names this
// node's own listener.
func parseRoutes(routes []string, self string) ([]*url.URL, error) {
	var out []*url.URL
	for _, r := range routes {
		u, err := url.Parse(r)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("cluster: route %q is not a URL like nats-route://host:port", r)
		}
		if u.Host == self {
			continue
		}
		out = append(out, u)
	}
	return out, nil
}

// natsLogger hands the NATS server's log lines to hclog. Its notices
// (many at start) are debug lines; its errors, mostly routes to a node
// that is down, warnings. Once the node stops (stopping is set), the
// warnings and errors are the stop's own (a replica's snapshot cut
// short by its store closing) and go to debug too: a clean stop logs no
// warning.
type natsLogger struct {
	l        hclog.Logger
	stopping *atomic.Bool
}

func (g natsLogger) Noticef(f string, v ...any) { g.l.Debug(fmt.Sprintf(f, v...)) }
func (g natsLogger) Warnf(f string, v ...any)   { g.warn(fmt.Sprintf(f, v...)) }
func (g natsLogger) Fatalf(f string, v ...any)  { g.l.Error(fmt.Sprintf(f, v...)) }
func (g natsLogger) Errorf(f string, v ...any)  { g.warn(fmt.Sprintf(f, v...)) }
func (g natsLogger) Debugf(f string, v ...any)  { g.l.Trace(fmt.Sprintf(f, v...)) }
func (g natsLogger) Tracef(f string, v ...any)  { g.l.Trace(fmt.Sprintf(f, v...)) }

func (g natsLogger) warn(msg string) {
	if g.stopping.Load() {
		g.l.Debug(msg, "while", "stopping")
		return
	}
	g.l.Warn(msg)
}

var errNotReady = errors.New("cluster: not ready (waiting for a quorum of the nodes)")

// Status is what `thatch status` shows of the cluster.
type Status struct {
	Node      string   `json:"node"`
	State     string   `json:"state"`
	LastError string   `json:"lastError,omitempty"`
	Replicas  int      `json:"replicas"`
	LeaseTTL  string   `json:"leaseTTL"`
	Members   []Member `json:"members"`
	// Leases maps each adapter account to the node polling it.
	Leases map[string]string `json:"leases,omitempty"`
	// BoardWriter is the node that writes the chats' boards ("" while no
	// node holds BoardLease).
	BoardWriter string `json:"boardWriter,omitempty"`
	// Threads maps each thread to the node that owns it ("" while its
	// machine is being asked).
	Threads map[string]string `json:"threads,omitempty"`
	// MemoryBehind is how many memory changes each node has yet to
	// apply.
	MemoryBehind map[string]uint64 `json:"memoryBehind,omitempty"`
}

// Status reads the cluster's state as this node sees it.
func (n *Node) Status(ctx context.Context) Status {
	n.mu.Lock()
	st := Status{Node: n.o.Node, State: n.state, LastError: n.lastErr, Replicas: n.o.Replicas,
		LeaseTTL: n.o.LeaseTTL.String(), Members: append([]Member(nil), n.memberList...)}
	n.mu.Unlock()
	if !n.isReady() {
		return st
	}
	if h, err := n.Holders(ctx); err == nil {
		st.BoardWriter = h[BoardLease]
		delete(h, BoardLease)
		st.Leases = h
	} else if st.LastError == "" {
		st.LastError = "leases: " + err.Error()
	}
	if ts, err := n.Threads(ctx); err == nil {
		st.Threads = map[string]string{}
		for _, t := range ts {
			st.Threads[t.Thread] = t.Node
		}
	}
	if b, err := n.MemoryBehind(ctx); err == nil {
		st.MemoryBehind = b
	}
	return st
}

// Crash stops the node's server as a killed process would: its routes
// drop and nothing is given up (a lease it holds expires after its TTL).
// Benchmarks and tests measure a failover with it; Close still has to be
// called.
func (n *Node) Crash() {
	n.srv.Shutdown()
}
