package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/persistence/memory"
)

// The chaos test (issue 11). Writers drive the plugin's real request
// bodies against the built daemon's control API, the way the plugin's
// tool.execute.after hook and its memory_remember tool do, while the
// daemon is SIGKILLed at random moments and started again. After every
// restart, each tool call and memory the daemon acknowledged (HTTP 200)
// must be there, by id:
//
//   - tool calls through the payload route an extraction child reads
//     (POST /v1/opencode/payload): `thatch status --json` says how many
//     calls each session holds, the payload hands over every pending one
//     with its call id, and from then on the session's claim holds them,
//     so the next status must count exactly the ids fetched so far;
//   - memories through POST /v1/memory/list, by label and content.
//
// The payload is fetched with the session itself as the caller, so the
// claim is the session's own and nothing else completes it; the config
// keeps claims from going stale and lets no buffer drop a call by design.
//
// Six writers post to 300 sessions. From a kill until the restarted
// daemon answers (control.json names the new process and GET /v1/status
// answers) and has been checked, the writers wait; their requests that
// fail while it is down are not acknowledged and not counted. Some kills
// hit a daemon just started, before it is up, to crash it during
// recovery too. A call or memory that was sent but not acknowledged (the
// kill came first) may or may not be there; one that was never sent must
// not be. Nothing acknowledged may be lost. THATCH_CHAOS_KILLS sets the
// number of kills (default 20; `make chaos` runs 1000). The totals go to
// the report and to stdout, which go test shows with -v or on failure.
var _ = Describe("daemon chaos", Label("chaos"), Serial, func() {
	It("loses no acknowledged tool call or memory across repeated SIGKILLs during concurrent plugin writes", func() {
		kills := chaosKills()
		c := newChaos(kills)
		c.run()
	})
})

const (
	chaosWriters  = 6
	chaosSessions = 300
	// chaosMaxUptime bounds how long a daemon runs under writes before
	// its kill; each kill comes at a uniformly random moment within it.
	chaosMaxUptime = 300 * time.Millisecond
	// chaosRecoveryShare is the share of kills that hit a daemon just
	// started, within chaosRecoveryWindow (about its start-up time here),
	// before the writers resume.
	chaosRecoveryShare  = 0.2
	chaosRecoveryWindow = 300 * time.Millisecond
	// chaosMemoryShare is the chance that a writer's next request is a
	// memory_remember rather than a tool call.
	chaosMemoryShare = 0.1
)

// chaosKills reads THATCH_CHAOS_KILLS (default 20).
func chaosKills() int {
	v := os.Getenv("THATCH_CHAOS_KILLS")
	if v == "" {
		return 20
	}
	n, err := strconv.Atoi(v)
	Expect(err).NotTo(HaveOccurred(), "THATCH_CHAOS_KILLS=%q", v)
	Expect(n).To(BeNumerically(">=", 1), "THATCH_CHAOS_KILLS")
	return n
}

// sentCall is what the test remembers of one tool call it posted.
type sentCall struct {
	session string
	tool    string
	output  uint64 // hash of the output as the payload hands it over
	acked   bool
}

// sentMemory is what the test remembers of one memory it posted.
type sentMemory struct {
	content uint64 // hash of the content
	acked   bool
}

// ledger is one writer's record of what it sent since the last check.
// The writer changes it only while it holds the chaos gate's read lock;
// the controller reads and empties it only while it holds the write lock.
type ledger struct {
	calls    map[string]*sentCall   // by call id
	memories map[string]*sentMemory // by label
	failed   int                    // requests not acknowledged
	answered int                    // of those, answered with an error status
	lastErr  string
}

// note records the outcome of a request and reports whether it was
// acknowledged. After a failure the writer waits a few milliseconds, as
// the plugin would not hammer a daemon that is down.
func (l *ledger) note(err error, rng *rand.Rand) bool {
	if err == nil {
		return true
	}
	l.failed++
	if errors.Is(err, control.ErrUnauthorized) || strings.Contains(err.Error(), "(HTTP ") {
		l.answered++
		l.lastErr = err.Error()
	}
	time.Sleep(time.Duration(1+rng.IntN(5)) * time.Millisecond)
	return false
}

func newLedger() *ledger {
	return &ledger{calls: map[string]*sentCall{}, memories: map[string]*sentMemory{}}
}

type chaos struct {
	w        *World
	kills    int
	rng      *rand.Rand
	sess     *gexec.Session
	prevLog  []byte
	sessions []string
	// gate pauses the writers: each request runs under its read lock;
	// the controller takes the write lock from a kill until the restarted
	// daemon has been checked.
	gate    sync.RWMutex
	ledgers [chaosWriters]*ledger
	// calls and memories are everything sent, taken from the ledgers.
	calls    map[string]*sentCall
	memories map[string]*sentMemory
	// fetched are the call ids each session's payload has handed over so
	// far; the session's claim must hold exactly these.
	fetched map[string]map[string]bool
	// totals over the run
	acked, recovered, lost, extra          int
	memAcked, memRecovered, memLost, memEx int
	failedTotal, answeredErrors            int
	recoveryKills, killed                  int
	restartTime                            time.Duration
	// progress sums the restarts since the last progress line (line
	// number progressLine): how many, and their start and check times.
	progressLine, progressN     int
	progressStarts, progressChk time.Duration
}

func newChaos(kills int) *chaos {
	w := NewWorld()
	// Info logs (the debug ones of a thousand daemons are too many to
	// keep); a buffer large enough that no session drops a call by design
	// within one round; claims that never go stale during the run.
	cfg := strings.Join([]string{
		"[data]",
		"dir = " + quote(w.DataDir),
		"[log]",
		`level = "info"`,
		"[opencode]",
		"buffer_limit = 1000",
		`stale_after = "24h"`,
		"",
	}, "\n")
	Expect(os.WriteFile(w.ThatchConfig, []byte(cfg), 0o644)).To(Succeed())
	seed := uint64(GinkgoRandomSeed())
	c := &chaos{w: w, kills: kills, rng: rand.New(rand.NewPCG(seed, 0x7ac4)), fetched: map[string]map[string]bool{},
		calls: map[string]*sentCall{}, memories: map[string]*sentMemory{}}
	for i := range chaosSessions {
		c.sessions = append(c.sessions, opencodeID("ses", seed, uint64(i)))
	}
	for i := range c.ledgers {
		c.ledgers[i] = newLedger()
	}
	DeferCleanup(func() {
		if c.sess != nil && c.sess.ExitCode() == -1 {
			c.sess.Terminate()
			Eventually(c.sess, 30*time.Second).Should(gexec.Exit())
		}
		if CurrentSpecReport().Failed() {
			fmt.Fprintf(GinkgoWriter, "--- log of the daemon before the last one:\n%s\n--- log of the last daemon:\n%s\n", c.prevLog, c.log())
		}
	})
	return c
}

// opencodeID makes an id shaped like opencode's ("ses_" or "call_", 12
// hex digits of time, 14 base62 characters), deterministic in seed and n.
func opencodeID(prefix string, seed, n uint64) string {
	const b62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	r := rand.New(rand.NewPCG(seed, n))
	var tail [14]byte
	for i := range tail {
		tail[i] = b62[r.IntN(len(b62))]
	}
	return fmt.Sprintf("%s_%012x%s", prefix, 0xdd4cbcb89ffe+n, tail[:])
}

// payloadCut is output as an extraction child receives it: at most 500
// characters, the last of a cut one an ellipsis (the payload's documented
// output limit, not configurable).
func payloadCut(s string) string {
	r := []rune(s)
	if len(r) <= 500 {
		return s
	}
	return string(r[:499]) + "…"
}

func hash(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return h.Sum64()
}

func (c *chaos) log() []byte {
	if c.sess == nil {
		return nil
	}
	return c.sess.Err.Contents()
}

func (c *chaos) stateFile() string { return filepath.Join(c.w.DataDir, "control.json") }
func (c *chaos) tokenFile() string { return filepath.Join(c.w.DataDir, "control.token") }

// start runs `thatch serve` and waits until it is up: it logged that its
// control API listens, control.json names this process, and GET
// /v1/status answers.
func (c *chaos) start() {
	t0 := time.Now()
	if c.sess != nil {
		c.prevLog = c.log()
	}
	cmd := exec.Command(bins.Thatch, "serve", "--config", c.w.ThatchConfig)
	cmd.Env, cmd.Dir = c.w.Env, c.w.Root
	sess, err := gexec.Start(cmd, nil, nil)
	Expect(err).NotTo(HaveOccurred())
	c.sess = sess
	Eventually(sess.Err, 60*time.Second, 5*time.Millisecond).Should(gbytes.Say("control API listening"), "the daemon did not start:\n%s", sess.Err.Contents())
	pid := sess.Command.Process.Pid
	Eventually(func() error {
		cl, st, err := control.Dial(c.stateFile(), c.tokenFile(), 5*time.Second)
		if err != nil {
			return err
		}
		if st.PID != pid {
			return fmt.Errorf("control.json names pid %d, not %d", st.PID, pid)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return cl.Do(ctx, "GET", "/v1/status", nil, nil)
	}, 60*time.Second, 20*time.Millisecond).Should(Succeed())
	c.restartTime += time.Since(t0)
}

func (c *chaos) kill() {
	c.killed++
	c.sess.Signal(syscall.SIGKILL)
	Eventually(c.sess, 30*time.Second, 2*time.Millisecond).Should(gexec.Exit())
}

// startAndKillDuringRecovery starts the daemon and kills it a random
// moment later, often before it is up: while it opens the journal and
// rehydrates the families that hold claims.
func (c *chaos) startAndKillDuringRecovery() {
	c.prevLog = c.log()
	cmd := exec.Command(bins.Thatch, "serve", "--config", c.w.ThatchConfig)
	cmd.Env, cmd.Dir = c.w.Env, c.w.Root
	sess, err := gexec.Start(cmd, nil, nil)
	Expect(err).NotTo(HaveOccurred())
	c.sess = sess
	time.Sleep(time.Duration(c.rng.Int64N(int64(chaosRecoveryWindow))))
	c.kill()
}

// post sends body to path as the plugin does: it reads control.json and
// the token file for every call. Only a 2xx answer is nil (the routes
// answer 200).
func (c *chaos) post(path string, body, out any) error {
	cl, _, err := control.Dial(c.stateFile(), c.tokenFile(), 5*time.Second)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return cl.Do(ctx, "POST", path, body, out)
}

func (c *chaos) run() {
	start := time.Now()
	c.start()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	locked := false
	defer func() { // also when a check fails: the writers wait on the gate
		cancel()
		if locked {
			c.gate.Unlock()
		}
		wg.Wait()
	}()
	seed := uint64(GinkgoRandomSeed())
	for i := range chaosWriters {
		wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			c.write(ctx, i, rand.New(rand.NewPCG(seed, uint64(1000+i))))
		}()
	}
	DeferCleanup(func() { c.report(time.Since(start)) })
	for k := 1; k <= c.kills; k++ {
		time.Sleep(time.Duration(c.rng.Int64N(int64(chaosMaxUptime))))
		c.kill()
		c.gate.Lock() // waits for the requests in flight, which fail
		locked = true
		if k < c.kills && c.rng.Float64() < chaosRecoveryShare {
			k++
			c.recoveryKills++
			c.startAndKillDuringRecovery()
		}
		t0 := time.Now()
		c.start()
		t1 := time.Now()
		c.check(k)
		c.progress(k, t1.Sub(t0), time.Since(t1))
		locked = false
		c.gate.Unlock()
	}
	Expect(c.acked).To(BeNumerically(">", 0), "no tool call was acknowledged")
	Expect(c.memAcked).To(BeNumerically(">", 0), "no memory was acknowledged")
}

// write is one writer: it posts tool calls to random sessions and, now
// and then, a memory, until ctx ends.
func (c *chaos) write(ctx context.Context, w int, rng *rand.Rand) {
	child := opencodeID("ses", uint64(GinkgoRandomSeed()), uint64(100000+w)) // the extraction child that writes its memories
	for n := 0; ctx.Err() == nil; n++ {
		c.gate.RLock()
		if ctx.Err() != nil {
			c.gate.RUnlock()
			return
		}
		l := c.ledgers[w] // the controller swaps it under the write lock
		if rng.Float64() < chaosMemoryShare {
			label, content, body := chaosMemory(rng, child, w, n)
			m := &sentMemory{content: hash(content)}
			l.memories[label] = m
			m.acked = l.note(c.post("/v1/memory/remember", body, nil), rng)
		} else {
			session := c.sessions[rng.IntN(len(c.sessions))]
			id := opencodeID("call", uint64(GinkgoRandomSeed()), uint64(w)<<40|uint64(n))
			body := chaosToolCall(rng, session, id)
			sc := &sentCall{session: session, tool: body["tool"].(string), output: hash(payloadCut(body["output"].(string)))}
			l.calls[id] = sc
			sc.acked = l.note(c.post("/v1/opencode/tool", body, nil), rng)
		}
		c.gate.RUnlock()
	}
}

// chaosProject is the folder the recorded tool calls name.
const chaosProject = "/home/dev/src/github.com/acme/ledger"

// chaosToolCall is a body of POST /v1/opencode/tool as the plugin's
// tool.execute.after hook sends it, for one of the tools an agent calls
// most.
func chaosToolCall(rng *rand.Rand, session, callID string) map[string]any {
	pkgs := []string{"internal/journal", "internal/api", "cmd/ledger", "pkg/money", "internal/store"}
	pkg := pkgs[rng.IntN(len(pkgs))]
	file := fmt.Sprintf("%s/%s_%d.go", pkg, filepath.Base(pkg), rng.IntN(40))
	var tool, title, output string
	var args map[string]any
	switch rng.IntN(6) {
	case 0:
		tool, title = "read", file
		args = map[string]any{"filePath": chaosProject + "/" + file}
		var b strings.Builder
		fmt.Fprintf(&b, "<file>\n00001| package %s\n00002| \n", filepath.Base(pkg))
		for i := 3; i < 3+rng.IntN(8); i++ {
			fmt.Fprintf(&b, "%05d| func f%d(x int) int { return x * %d }\n", i, i, rng.IntN(100))
		}
		b.WriteString("\n(End of file - total lines)\n</file>")
		output = b.String()
	case 1:
		tool, title = "bash", "Run the package tests"
		args = map[string]any{"command": "go test ./" + pkg + "/...", "description": title}
		output = fmt.Sprintf("ok  \tgithub.com/acme/ledger/%s\t%d.%03ds\n", pkg, rng.IntN(3), rng.IntN(1000))
		if rng.IntN(4) == 0 {
			output = fmt.Sprintf("--- FAIL: TestBalance%d (0.00s)\n    %s:%d: got %d, want %d\nFAIL\nexit status 1\n", rng.IntN(9), file, rng.IntN(200), rng.IntN(50), rng.IntN(50))
		}
	case 2:
		tool, title = "grep", "func New"
		args = map[string]any{"pattern": "func New", "path": chaosProject, "include": "*.go"}
		n := 1 + rng.IntN(5)
		var b strings.Builder
		fmt.Fprintf(&b, "Found %d matches\n", n)
		for range n {
			fmt.Fprintf(&b, "%s/%s:\n  Line %d: func New%s() *%s {\n", chaosProject, file, rng.IntN(300), "Store", "Store")
		}
		output = b.String()
	case 3:
		tool, title = "glob", "**/*_test.go"
		args = map[string]any{"pattern": "**/*_test.go", "path": chaosProject}
		output = fmt.Sprintf("%s/%s/%s_test.go\n%s/cmd/ledger/main_test.go", chaosProject, pkg, filepath.Base(pkg), chaosProject)
	case 4:
		tool, title = "edit", file
		args = map[string]any{"filePath": chaosProject + "/" + file,
			"oldString": fmt.Sprintf("return x * %d", rng.IntN(100)), "newString": fmt.Sprintf("return x * %d", rng.IntN(100))}
		output = "Edit applied successfully."
	default:
		tool, title = "list", pkg
		args = map[string]any{"path": chaosProject + "/" + pkg}
		output = fmt.Sprintf("%s/%s/\n  %s.go\n  %s_test.go\n  doc.go\n", chaosProject, pkg, filepath.Base(pkg), filepath.Base(pkg))
	}
	return map[string]any{
		"host":      "opencode@127.0.0.1:4096",
		"sessionID": session,
		"callID":    callID,
		"tool":      tool,
		"args":      args,
		"title":     title,
		"output":    output,
	}
}

// chaosMemory is a body of POST /v1/memory/remember as the plugin's
// memory_remember tool sends it from an extraction child, with a label
// unique to writer w's n-th request.
func chaosMemory(rng *rand.Rand, child string, w, n int) (label, content string, body map[string]any) {
	facts := []string{
		"The build needs CGO_ENABLED=1 because the store links sqlite.",
		"Run the integration tests with `make itest`; they need Docker.",
		"Money amounts are int64 cents; never use float64 for them.",
		"TestBalance is flaky under -race on CI; rerun it before digging in.",
		"The API listens on :8080 in development and reads LEDGER_DSN.",
	}
	label = fmt.Sprintf("chaos fact w%d n%d", w, n)
	content = fmt.Sprintf("%s (writer %d, request %d)", facts[rng.IntN(len(facts))], w, n)
	return label, content, map[string]any{
		"sessionID":  child,
		"label":      label,
		"content":    content,
		"confidence": 1 + rng.IntN(10),
	}
}

// check accounts, after restart k, for everything the writers sent.
func (c *chaos) check(k int) {
	// What was sent since the last check; its fate is settled now: the
	// daemon that got it is dead, and nothing is sent again.
	newCalls := map[string]*sentCall{}
	newMemories := map[string]*sentMemory{}
	for i, l := range c.ledgers {
		for id, sc := range l.calls {
			newCalls[id] = sc
			c.calls[id] = sc
		}
		for label, m := range l.memories {
			newMemories[label] = m
			c.memories[label] = m
		}
		c.failedTotal += l.failed
		c.answeredErrors += l.answered
		if l.answered > 0 {
			fmt.Fprintf(GinkgoWriter, "chaos restart %d: a daemon answered %d requests with an error, the last: %s\n", k, l.answered, l.lastErr)
		}
		c.ledgers[i] = newLedger()
	}
	calls, memories := c.calls, c.memories

	By(fmt.Sprintf("restart %d: the status counts every call fetched so far and the payloads hand over the rest", k))
	fams := StatusCLI(c.w)
	lost := 0
	var lostIDs []string
	for _, s := range c.sessions {
		f := fams[s]
		if held := f.Claims[s]; held != len(c.fetched[s]) {
			lost += max(0, len(c.fetched[s])-held)
			lostIDs = append(lostIDs, fmt.Sprintf("%s: its claim holds %d, %d were fetched", s, held, len(c.fetched[s])))
		}
		if f.Pending == 0 {
			continue
		}
		var payload struct {
			Interactions []struct {
				ID        string `json:"id"`
				SessionID string `json:"sessionID"`
				Tool      string `json:"tool"`
				Output    string `json:"output"`
			} `json:"interactions"`
		}
		Expect(c.post("/v1/opencode/payload", map[string]any{"sessionID": s}, &payload)).To(Succeed(), "payload of %s", s)
		Expect(payload.Interactions).To(HaveLen(f.Pending), "the payload of %s hands over what status counts as pending", s)
		if c.fetched[s] == nil {
			c.fetched[s] = map[string]bool{}
		}
		for _, in := range payload.Interactions {
			sc := calls[in.ID]
			Expect(sc).NotTo(BeNil(), "session %s holds call %q, which no writer sent", s, in.ID)
			Expect(sc.session).To(Equal(s), "call %s", in.ID)
			Expect(in.SessionID).To(Equal(s), "call %s", in.ID)
			Expect(in.Tool).To(Equal(sc.tool), "call %s", in.ID)
			Expect(hash(in.Output)).To(Equal(sc.output), "call %s: the output differs from what was sent: %q", in.ID, in.Output)
			if c.fetched[s][in.ID] {
				Fail(fmt.Sprintf("call %s of %s was handed over twice", in.ID, s))
			}
			c.fetched[s][in.ID] = true
		}
	}
	for id, sc := range newCalls {
		got := c.fetched[sc.session][id]
		switch {
		case sc.acked && got:
			c.acked++
			c.recovered++
		case sc.acked:
			c.acked++
			lost++
			lostIDs = append(lostIDs, id+" of "+sc.session)
		case got:
			c.extra++
		}
	}
	c.lost += lost

	By(fmt.Sprintf("restart %d: the memory list holds every acknowledged memory", k))
	var list struct {
		Entries []memory.Entry `json:"entries"`
	}
	Expect(c.post("/v1/memory/list", map[string]any{}, &list)).To(Succeed())
	stored := map[string]memory.Entry{}
	for _, e := range list.Entries {
		if _, dup := stored[e.Label]; dup {
			Fail(fmt.Sprintf("memory %q is listed twice", e.Label))
		}
		stored[e.Label] = e
	}
	memLost := 0
	var lostLabels []string
	for label, m := range memories {
		e, ok := stored[label]
		if ok && hash(e.Content) != m.content {
			Fail(fmt.Sprintf("memory %q: content %q differs from what was sent", label, e.Content))
		}
		if m.acked && !ok {
			memLost++
			lostLabels = append(lostLabels, label)
		}
		if newMemories[label] == nil {
			continue
		}
		switch {
		case m.acked && ok:
			c.memAcked++
			c.memRecovered++
		case m.acked:
			c.memAcked++
		case ok:
			c.memEx++
		}
	}
	for label := range stored {
		if memories[label] == nil {
			Fail(fmt.Sprintf("memory %q was never sent", label))
		}
	}
	c.memLost += memLost
	fmt.Fprintf(GinkgoWriter, "chaos restart %d/%d: calls %d sent, %d acknowledged, %d recovered, %d lost, %d unacknowledged but kept; memories %d sent, %d acknowledged, %d recovered, %d lost, %d unacknowledged but kept; %d requests failed\n",
		k, c.kills, len(calls), c.acked, c.recovered, c.lost, c.extra, len(memories), c.memAcked, c.memRecovered, c.memLost, c.memEx, c.failedTotal)
	sort.Strings(lostIDs)
	sort.Strings(lostLabels)
	Expect(lost).To(BeZero(), "restart %d lost acknowledged tool calls: %v", k, lostIDs)
	Expect(memLost).To(BeZero(), "restart %d lost acknowledged memories: %v", k, lostLabels)
}

// report prints the totals of the run, passed or not.
// chaosProgressEvery is how many kills go by between progress lines.
const chaosProgressEvery = 50

// progress prints a line each time the kills pass a multiple of
// chaosProgressEvery, so that a long run shows it is moving and how its
// restarts and checks grow with the data: kills so far, the calls and
// memories acknowledged, and the mean restart and check time of the
// restarts since the last line.
func (c *chaos) progress(k int, restart, check time.Duration) {
	c.progressN++
	c.progressStarts += restart
	c.progressChk += check
	if k/chaosProgressEvery == c.progressLine && k != c.kills {
		return
	}
	c.progressLine = k / chaosProgressEvery
	n := time.Duration(c.progressN)
	fmt.Fprintf(GinkgoWriter, "chaos progress: %d/%d kills, %d calls and %d memories acknowledged; last %d restarts: %v to start, %v to check on average\n",
		k, c.kills, c.acked, c.memAcked, c.progressN, (c.progressStarts / n).Round(time.Millisecond), (c.progressChk / n).Round(time.Millisecond))
	c.progressN, c.progressStarts, c.progressChk = 0, 0, 0
}

func (c *chaos) report(d time.Duration) {
	line := fmt.Sprintf("chaos totals: %d kills (%d during recovery) in %s (restarts took %s): tool calls %d acknowledged, %d recovered, %d lost (%d more kept unacknowledged); memories %d acknowledged, %d recovered, %d lost (%d more kept unacknowledged); %d requests failed while the daemon was down, %d were answered with an error",
		c.killed, c.recoveryKills, d.Round(time.Millisecond), c.restartTime.Round(time.Millisecond), c.acked, c.recovered, c.lost, c.extra,
		c.memAcked, c.memRecovered, c.memLost, c.memEx, c.failedTotal-c.answeredErrors, c.answeredErrors)
	AddReportEntry("chaos totals", line, ReportEntryVisibilityAlways)
	fmt.Fprintln(os.Stdout, line)
	b, _ := json.Marshal(map[string]any{"kills": c.killed, "recoveryKills": c.recoveryKills, "seconds": d.Seconds(),
		"calls":    map[string]int{"acknowledged": c.acked, "recovered": c.recovered, "lost": c.lost, "extra": c.extra},
		"memories": map[string]int{"acknowledged": c.memAcked, "recovered": c.memRecovered, "lost": c.memLost, "extra": c.memEx}})
	fmt.Fprintf(GinkgoWriter, "%s\n", b)
}
