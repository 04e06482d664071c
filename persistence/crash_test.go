package persistence

// Crash tests: every acknowledged event survives a crash, and what survives
// of each entity is a prefix 1..k of its events with no holes.
//
// TestCrashCloneKeepsAcknowledgedEvents simulates machine crashes with
// vfs.NewCrashableMem: clones keep what was synced and a random share of
// what was not.
//
// TestProcessCrashLosesNoAcknowledgedEvent kills a real child process with
// SIGKILL. It runs 5 trials by default to keep CI fast; the long mode is
//
//	THATCH_CRASH_TRIALS=200 go test -race -run TestProcessCrash -timeout 60m ./persistence/
//
// (the `make crash` target). THATCH_CRASH_SEED replays a failing run with the
// seed it logged.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/thatch-run/thatch/internal/testwait"
)

const crashKind = "crash"

func crashID(writer, entity int) Identity {
	return Identity{Kind: crashKind, ID: fmt.Sprintf("w%d-e%d", writer, entity)}
}

// crashSeed is THATCH_CRASH_SEED or a fresh seed, logged for replay.
func crashSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("THATCH_CRASH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("THATCH_CRASH_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (set THATCH_CRASH_SEED to replay)", seed)
	return seed
}

// crashWriter appends batches of 1..3 events to its own entities, one
// writer per entity as the journal requires, and calls ack after each
// Append that returned nil.
func crashWriter(j *Journal, rng *rand.Rand, writer int, next []uint64, stop func() bool, ack func(id Identity, entity int, last uint64)) error {
	for !stop() {
		e := rng.IntN(len(next))
		id := crashID(writer, e)
		n := 1 + rng.IntN(3)
		mark := ActiveMark(rng.IntN(3))
		if err := j.Append(id, next[e], payloads(id, next[e], n), mark); err != nil {
			return err
		}
		next[e] += uint64(n)
		ack(id, e, next[e]-1)
	}
	return nil
}

func TestCrashCloneKeepsAcknowledgedEvents(t *testing.T) {
	const (
		writers   = 6
		perWriter = 4
		clones    = 12
	)
	seed := crashSeed(t)
	mem := vfs.NewCrashableMem()
	st := openMem(t, Options{FS: mem})
	j := st.Journal()

	acked := make([]atomic.Uint64, writers*perWriter)
	var appends atomic.Int64
	var stopped atomic.Bool
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			next := make([]uint64, perWriter)
			for i := range next {
				next[i] = 1
			}
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			errs <- crashWriter(j, rng, w, next, stopped.Load, func(_ Identity, e int, last uint64) {
				acked[w*perWriter+e].Store(last)
				appends.Add(1)
			})
		})
	}

	type crashPoint struct {
		fs      *vfs.MemFS
		acked   []uint64
		percent int
	}
	var points []crashPoint
	rng := rand.New(rand.NewPCG(seed, 1<<32))
	for i := range clones {
		target := appends.Load() + 10 + rng.Int64N(200)
		testwait.Until(t, fmt.Sprintf("%d appends", target), func() bool { return appends.Load() >= target })
		// Read the acknowledgements before cloning: each of them was
		// synced before it was recorded, so the clone must hold it.
		p := crashPoint{acked: make([]uint64, len(acked)), percent: []int{0, 10, 50, 100}[i%4]}
		for e := range acked {
			p.acked[e] = acked[e].Load()
		}
		p.fs = mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: p.percent, RNG: rand.New(rand.NewPCG(seed, uint64(i)))})
		points = append(points, p)
	}
	stopped.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("append: %v", err)
		}
	}
	t.Logf("%d appends, %d crash clones", appends.Load(), len(points))

	for i, p := range points {
		re, err := Open("db", Options{FS: p.fs})
		if err != nil {
			t.Fatalf("clone %d (%d%% unsynced kept): open: %v", i, p.percent, err)
		}
		listed := entities(t, re.Journal(), crashKind)
		for e, a := range p.acked {
			id := crashID(e/perWriter, e%perWriter)
			k := checkPrefix(t, re.Journal(), id, a)
			if k > 0 && listed[id] != k {
				t.Fatalf("clone %d: %s listed with %d, holds 1..%d", i, id, listed[id], k)
			}
		}
		if err := re.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// With every writer done, the live store holds exactly what was
	// acknowledged.
	for e := range acked {
		id := crashID(e/perWriter, e%perWriter)
		if k := checkPrefix(t, j, id, acked[e].Load()); k != acked[e].Load() {
			t.Fatalf("%s holds 1..%d, acknowledged 1..%d", id, k, acked[e].Load())
		}
	}
}

const (
	childWriters   = 8
	childPerWriter = 3
	childMaxAcks   = 200000 // a child whose parent vanished stops by itself
)

// runCrashChild is the child process: it opens the store in dir, resumes
// every entity after its highest seq, and appends from many goroutines,
// printing "ack <id> <last seq>" only after Append has returned nil.
func runCrashChild(dir string) int {
	st, err := Open(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		return 2
	}
	j := st.Journal()
	nexts := make([][]uint64, childWriters)
	for w := range nexts {
		nexts[w] = make([]uint64, childPerWriter)
		for e := range nexts[w] {
			h, err := j.HighestSeq(crashID(w, e))
			if err != nil {
				fmt.Fprintln(os.Stderr, "child: highest:", err)
				return 2
			}
			nexts[w][e] = h + 1
		}
	}
	var mu sync.Mutex
	write := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		// One write per line; a write to a vanished parent ends the
		// process with SIGPIPE.
		if _, err := os.Stdout.WriteString(line); err != nil {
			os.Exit(3)
		}
	}
	write("ready\n")
	var acks atomic.Int64
	stop := func() bool { return acks.Load() >= childMaxAcks }
	var wg sync.WaitGroup
	errs := make(chan error, childWriters)
	for w := range childWriters {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			errs <- crashWriter(j, rng, w, nexts[w], stop, func(id Identity, _ int, last uint64) {
				write(fmt.Sprintf("ack %s %d\n", id.ID, last))
				acks.Add(1)
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			fmt.Fprintln(os.Stderr, "child: append:", err)
			return 2
		}
	}
	_ = st.Close()
	return 0
}

// crashTrials is THATCH_CRASH_TRIALS, 5 by default.
func crashTrials(t *testing.T) int {
	t.Helper()
	s := os.Getenv("THATCH_CRASH_TRIALS")
	if s == "" {
		return 5
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("THATCH_CRASH_TRIALS=%q: want a positive number", s)
	}
	return n
}

// killChildAfter starts a child on dir, reads its acknowledgements into
// acked, and SIGKILLs it after killAfter lines (the "ready" line counts).
func killChildAfter(t *testing.T, dir string, killAfter int, acked map[string]uint64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	lines, killed := 0, false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			// EOF: the child is gone. A line cut short was never
			// complete, so it acknowledges nothing.
			break
		}
		lines++
		if line != "ready\n" {
			var id string
			var last uint64
			if _, err := fmt.Sscanf(line, "ack %s %d\n", &id, &last); err != nil {
				_ = cmd.Process.Kill()
				t.Fatalf("child printed %q: %v", line, err)
			}
			acked[id] = max(acked[id], last)
		}
		if lines == killAfter && !killed {
			// Only this child's PID is signalled. Lines already in the
			// pipe are read on: they were acknowledged before the kill.
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("kill child: %v", err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !killed || !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child ended by itself after %d lines (kill planned after %d): %v\n%s", lines, killAfter, err, stderr.String())
	}
}

func TestProcessCrashLosesNoAcknowledgedEvent(t *testing.T) {
	const rounds = 2 // the second child recovers what the first left
	trials := crashTrials(t)
	rng := rand.New(rand.NewPCG(crashSeed(t), 0))
	for trial := range trials {
		dir := t.TempDir()
		acked := map[string]uint64{}
		for round := range rounds {
			killAfter := 1 + rng.IntN(400)
			killChildAfter(t, dir, killAfter, acked)

			st, err := Open(dir, Options{})
			if err != nil {
				t.Fatalf("trial %d round %d: reopen: %v", trial, round, err)
			}
			j := st.Journal()
			listed := entities(t, j, crashKind)
			for id := range listed {
				if _, ok := acked[id.ID]; !ok {
					acked[id.ID] = 0 // written but never acknowledged: allowed
				}
			}
			var n uint64
			for idStr, a := range acked {
				checkPrefix(t, j, Identity{Kind: crashKind, ID: idStr}, a)
				n += a
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			if testing.Verbose() {
				t.Logf("trial %d round %d: killed after %d lines; %d acknowledged events all present", trial, round, killAfter, n)
			}
		}
	}
}
