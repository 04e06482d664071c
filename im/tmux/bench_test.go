package tmux

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// serverPID is the pid of the test client's tmux server.
func serverPID(b *testing.B, c *Client) int {
	b.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(tmuxCmd(b, c, "display-message", "-p", "#{pid}")))
	if err != nil {
		b.Fatal(err)
	}
	return pid
}

// procCPU is the user and system CPU time process pid used so far.
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	_, after, _ := strings.Cut(string(raw), ") ") // the name may hold spaces
	f := strings.Fields(after)
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// selfCPU is the user and system CPU time this process used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchWindow starts a window whose pane reads and drops what is typed,
// as an agent's prompt does (tmux still renders the echo).
func benchWindow(b *testing.B, c *Client, name string) Window {
	b.Helper()
	w, err := c.NewWindow(testCtx(b), name, "", "", []string{"sh", "-c", "exec cat > /dev/null"})
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// BenchmarkSendText is one single-line SendText (send-keys -l, then
// Enter) over the control-mode client.
func BenchmarkSendText(b *testing.B) {
	c := newTestClient(b, func(o *Options) { o.Logger = nil })
	w := benchWindow(b, c, "bench")
	ctx := context.Background()
	for b.Loop() {
		if err := c.SendText(ctx, w.ID, "please run the tests again"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecSendKeysRoundTrip is the cost SendText avoids: a forked
// `tmux -L SOCKET send-keys` per command.
func BenchmarkExecSendKeysRoundTrip(b *testing.B) {
	c := newTestClient(b, func(o *Options) { o.Logger = nil })
	w := benchWindow(b, c, "bench")
	for b.Loop() {
		out, err := exec.Command("tmux", "-L", c.o.Socket, "send-keys", "-t", w.ID, "-l", "please run the tests again").CombinedOutput()
		if err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}

// BenchmarkMessage is what the IM front end does per message: Window
// (alive, name, pane pid), then SendText.
func BenchmarkMessage(b *testing.B) {
	c := newTestClient(b, func(o *Options) { o.Logger = nil })
	w := benchWindow(b, c, "bench")
	ctx := context.Background()
	for b.Loop() {
		if _, err := c.Window(ctx, w.ID); err != nil {
			b.Fatal(err)
		}
		if err := c.SendText(ctx, w.ID, "please run the tests again"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMessage500WindowsAt500PerSecond sends messages (Window, then
// SendText) at 500/s spread over 500 windows, each on its own goroutine
// as they arrive, and reports the latency percentiles of the whole
// message; the IM front end's target is p99 <= 20ms on 2 cores.
func BenchmarkMessage500WindowsAt500PerSecond(b *testing.B) {
	const windows, rate = 500, 500
	c := newTestClient(b, func(o *Options) { o.Logger = nil })
	ws := make([]Window, windows)
	for i := range ws {
		ws[i] = benchWindow(b, c, fmt.Sprintf("agent-%d", i))
	}
	ctx := context.Background()
	serverPID := serverPID(b, c)
	serverCPU, ownCPU := procCPU(b, serverPID), selfCPU()
	lat := make([]time.Duration, 0, b.N)
	var mu sync.Mutex
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		<-tick.C
		w := ws[i%windows]
		wg.Go(func() {
			start := time.Now()
			_, err := c.Window(ctx, w.ID)
			if err == nil {
				err = c.SendText(ctx, w.ID, "please run the tests again")
			}
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
				return
			}
			d := time.Since(start)
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		})
	}
	wg.Wait()
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64((procCPU(b, serverPID)-serverCPU).Microseconds())/n, "tmux-cpu-us/msg")
	b.ReportMetric(float64((selfCPU()-ownCPU).Microseconds())/n, "client-cpu-us/msg")
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d messages failed, the first with %v", n, firstErr.Load())
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}
