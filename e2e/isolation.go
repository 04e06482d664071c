package e2e

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
)

// The suite runs its specs in parallel processes (ginkgo --procs), so
// every spec must keep to a world of its own. These are the rules, and
// the suite checks each one:
//
//  1. Folders: everything a spec writes is under its World's root (HOME,
//     the XDG folders, the data dir, the projects), a GinkgoT().TempDir().
//  2. Ports: a spec listens only on a port from freePort, which takes it
//     from a block of ports owned by its parallel process and below the
//     kernel's ephemeral range (so that no other process's port 0, nor an
//     outgoing connection, can take it between the check and the use).
//     Servers that can tell their port (the fakes) bind port 0.
//  3. tmux: a world's server has a socket of its own (-L, named after the
//     process and a counter), never the default one.
//  4. Processes: every process of a world carries the world's marker in
//     its environment (World.Env), and none may outlive the spec: after
//     the spec's cleanups ran, checkNothingOutlives waits for them, kills
//     what is left by its PID, and fails the spec naming them.
//
// What stays shared is read-only: the built binaries, the installed
// opencode, claude and codex, and the dependency template the worlds
// hard-link from.

// worldMarker names the environment variable that marks the processes
// of one world; its value is the world's root.
const worldMarker = "E2E_WORLD"

// Port blocks: parallel process n owns portBlock ports from
// portBase+(n-1)*portBlock.
const (
	portBase  = 10000
	portBlock = 500
)

var portNext atomic.Int64

// freePort returns a loopback port of this process's block that nothing
// listens on now. Only this process hands out ports of its block, and
// the kernel picks ephemeral ports above it, so the port stays free
// until the spec uses it.
func freePort() int {
	GinkgoHelper()
	lo := portBase + (GinkgoParallelProcess()-1)*portBlock
	if eph := ephemeralLow(); lo+portBlock > eph {
		Fail(fmt.Sprintf("parallel process %d's ports %d-%d reach the kernel's ephemeral range (from %d): run fewer processes",
			GinkgoParallelProcess(), lo, lo+portBlock-1, eph))
	}
	for range portBlock {
		p := lo + int((portNext.Add(1)-1)%portBlock)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		_ = ln.Close()
		return p
	}
	Fail(fmt.Sprintf("no free port in %d-%d", lo, lo+portBlock-1))
	return 0
}

// ephemeralLow is the lowest port the kernel hands out for port 0 and
// outgoing connections (32768 when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}

// checkNothingOutlives fails the spec if a process of the world rooted
// at root is still running once the spec's cleanups are done. The
// cleanups stop what they started and wait for it; a process still
// there after a grace period is a leak that could act on another spec's
// run, so it is killed (it carries this world's marker: the suite
// started it) and named in the failure.
func checkNothingOutlives(root string) {
	marker := []byte(worldMarker + "=" + root + "\x00")
	deadline := time.Now().Add(20 * time.Second)
	left := worldProcesses(marker)
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		left = worldProcesses(marker)
	}
	if len(left) == 0 {
		return
	}
	var named []string
	for _, pid := range left {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		named = append(named, fmt.Sprintf("%d (%s)", pid, strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	Fail("processes of this spec's world outlived it (killed now): " + strings.Join(named, "; "))
}

// worldProcesses lists the live processes whose environment carries
// marker (zombies have none: they are gone but for their exit status).
func worldProcesses(marker []byte) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		if bytes.HasPrefix(env, marker) || bytes.Contains(env, append([]byte{0}, marker...)) {
			pids = append(pids, pid)
		}
	}
	return pids
}
