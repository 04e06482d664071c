package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/thatch-run/thatch/hosts/opencode/front"
	"github.com/thatch-run/thatch/messages"
)

func init() {
	register(Bench{
		Name: "soak",
		Doc: "1,000 opencode sessions posting tool calls at ~2/s each to the real daemon's plugin route for 60 s: " +
			"RSS, Go heap and goroutines must not grow once the load is steady",
		Order: 65,
		Run:   benchSoak,
	})
}

const (
	// soakSessions is how many sessions post tool calls. Like the other
	// concurrency levels it is never scaled.
	soakSessions = 1000
	// soakEvery is how often each session posts one (about 2 req/s).
	soakEvery = 500 * time.Millisecond
	// soakConns caps the client's connections to the daemon, so that the
	// sessions share a steady pool instead of dialing as they like.
	soakConns = 128
	// The bounds, from the steady start to the end of the window: the Go
	// heap and RSS may grow by soakGrowth plus their slack, the
	// goroutines by soakGoroutineGrowth plus soakGoroutineSlack.
	soakGrowth    = 0.25
	soakHeapSlack = 4 << 20
	soakRSSSlack  = 16 << 20
	// soakMemtables is what RSS may also grow by: Pebble's memtables are C
	// memory whose pages become resident as they fill, they double from
	// 256 KiB up to the store's 64 MiB default as the journal writes, and
	// under a write load one is flushed while the next fills. So RSS may
	// rise by two full memtables with no leak at all; the Go heap bound
	// is the tight one.
	soakMemtables       = 2 * 64 << 20
	soakGoroutineGrowth = 0.10
	soakGoroutineSlack  = 8
)

// soakSample is the process's memory and goroutines at one moment.
type soakSample struct {
	at         time.Duration // since the steady start
	heap       heapSample
	goMapped   uint64 // memory the Go runtime holds from the OS, not released
	goroutines int
}

func takeSoakSample(since time.Time) soakSample {
	h := sampleHeap()
	m := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(m)
	return soakSample{at: time.Since(since), heap: h, goMapped: m[0].Value.Uint64() - m[1].Value.Uint64(), goroutines: runtime.NumGoroutine()}
}

// benchSoak runs the real daemon (opencode front end, fake opencode
// server) under soakSessions sessions posting tool calls through the
// plugin route, and judges the growth of its heap, RSS and goroutines from
// the steady start to the end of the window, all sampled under the load.
func benchSoak(c *Config) ([]Record, error) {
	dur := c.Duration(60*time.Second, 6*time.Second)
	warm := dur / 4
	dir, remove, err := c.TempDir("soak")
	if err != nil {
		return nil, err
	}
	defer remove()
	addr, stopFake, err := serveFake(newFakeOpencode())
	if err != nil {
		return nil, err
	}
	defer stopFake()
	cfg := hostConfig(dir, "http://"+addr)
	oc, rt, err := startRuntime(cfg)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rt.Stop(context.Background()) }()
	c.Logf("soak: %d sessions", soakSessions)
	ids, err := seedParents(oc, soakSessions)
	if err != nil {
		return nil, err
	}
	// Every session's buffer starts full, so that the families' state is
	// at its steady size before the window opens.
	fill := cfg.OpenCode.BufferLimit + 1
	c.Logf("soak: filling %d buffers with %d tool calls each", soakSessions, fill)
	if err := fillSoakBuffers(oc, ids, fill); err != nil {
		return nil, err
	}
	cl, err := newSoakClient(rt.ControlAddr(), cfg.Control.TokenFile)
	if err != nil {
		return nil, err
	}
	defer cl.close()

	c.Logf("soak: %d sessions x 1 tool call per %v, %v warm-up + %v", soakSessions, soakEvery, warm, dur)
	drv := startSoakDriver(cl, ids)
	time.Sleep(warm)
	samples, posted := soakWindow(drv, dur)
	if err := drv.stop(); err != nil {
		return nil, err
	}
	return soakRecords(samples, posted, dur), nil
}

// fillSoakBuffers delivers per tool calls to each session, from 64
// goroutines.
func fillSoakBuffers(oc *front.FrontEnd, ids []string, per int) error {
	return forEachParallel(64, len(ids)*per, func(i int) error {
		id := ids[i%len(ids)]
		return oc.DeliverHostEvent(&messages.ToolExecuted{Host: "bench", Interaction: messages.Interaction{
			ID: fmt.Sprintf("fill_%d", i), SessionID: id, Tool: "bash", Args: sessionArgs, Output: sessionOutput}})
	})
}

// soakWindow samples the process at the steady start and every quarter of
// dur under the driver's load, and returns the samples and the tool calls
// posted between the first and the last.
func soakWindow(drv *soakDriver, dur time.Duration) ([]soakSample, int64) {
	start := time.Now()
	samples := []soakSample{takeSoakSample(start)}
	base := drv.posted.Load()
	for k := 1; k <= 4; k++ {
		time.Sleep(time.Until(start.Add(time.Duration(k) * dur / 4)))
		samples = append(samples, takeSoakSample(start))
	}
	return samples, drv.posted.Load() - base
}

// soakClient posts to the daemon's plugin route as the opencode plugin
// does, with the bearer token from the daemon's token file.
type soakClient struct {
	url, token string
	tr         *http.Transport
	hc         *http.Client
}

func newSoakClient(addr, tokenFile string) (*soakClient, error) {
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, fmt.Errorf("soak: token: %w", err)
	}
	tr := &http.Transport{MaxConnsPerHost: soakConns, MaxIdleConnsPerHost: soakConns, IdleConnTimeout: time.Minute}
	return &soakClient{url: "http://" + addr + "/v1/opencode/tool", token: strings.TrimSpace(string(tok)), tr: tr,
		hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}, nil
}

func (cl *soakClient) close() { cl.tr.CloseIdleConnections() }

// tool posts one tool call of session id and fails unless it was accepted
// (journaled).
func (cl *soakClient) tool(ctx context.Context, id string, call uint64) error {
	body, err := json.Marshal(map[string]any{"host": "bench", "sessionID": id, "callID": fmt.Sprintf("soak_%d", call),
		"tool": "bash", "args": sessionArgs, "output": sessionOutput})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cl.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+cl.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := cl.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("soak: POST /v1/opencode/tool: %s: %s", resp.Status, bytes.TrimSpace(answer))
	}
	return nil
}

// soakDriver runs one goroutine per session, each posting a tool call
// every soakEvery; the sessions' first calls are spread over one period.
// A session that falls behind skips the slots it missed rather than burst.
type soakDriver struct {
	cl      *soakClient
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	posted  atomic.Int64
	calls   atomic.Uint64
	errOnce sync.Once
	err     error
}

func startSoakDriver(cl *soakClient, ids []string) *soakDriver {
	d := &soakDriver{cl: cl}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	start := time.Now()
	for i, id := range ids {
		d.wg.Add(1)
		go d.session(id, start.Add(time.Duration(i)*soakEvery/time.Duration(len(ids))))
	}
	return d
}

func (d *soakDriver) session(id string, next time.Time) {
	defer d.wg.Done()
	t := time.NewTimer(time.Until(next))
	defer t.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-t.C:
		}
		if err := d.cl.tool(d.ctx, id, d.calls.Add(1)); err != nil {
			if d.ctx.Err() == nil {
				d.errOnce.Do(func() { d.err = err })
				d.cancel()
			}
			return
		}
		d.posted.Add(1)
		next = next.Add(soakEvery)
		if now := time.Now(); next.Before(now) {
			next = now.Add(soakEvery - now.Sub(next)%soakEvery)
		}
		t.Reset(time.Until(next))
	}
}

// stop ends every session and returns the first failed call, if any.
func (d *soakDriver) stop() error {
	d.cancel()
	d.wg.Wait()
	return d.err
}

// soakRecords judges growth from the first sample (the steady start) to
// the last.
func soakRecords(s []soakSample, posted int64, dur time.Duration) []Record {
	first, last := s[0], s[len(s)-1]
	load := fmt.Sprintf("%d sessions posting a tool call (%d B output) every %v each to POST /v1/opencode/tool of the real daemon (opencode front end, journaled, fsync), over at most %d client connections; %s calls/s in the %v window; ",
		soakSessions, len(sessionOutput), soakEvery, soakConns, formatNumber(rate(posted, dur)), dur.Round(time.Millisecond))
	steady := "baseline: the same process at the steady start (after a warm-up of a quarter of the window), in-process client included; "
	trend := func(f func(soakSample) float64, unit string) string {
		var parts []string
		for _, x := range s {
			parts = append(parts, fmt.Sprintf("%.0fs %s", x.at.Seconds(), formatNumber(f(x))))
		}
		return "samples (" + unit + "): " + strings.Join(parts, ", ")
	}
	mib := func(b float64) float64 { return b / (1 << 20) }
	heapOf := func(x soakSample) float64 { return mib(float64(x.heap.alloc)) }
	rssOf := func(x soakSample) float64 { return mib(float64(x.heap.rss)) }
	gorOf := func(x soakSample) float64 { return float64(x.goroutines) }
	heapLimit := heapOf(first)*(1+soakGrowth) + mib(soakHeapSlack)
	outsideGo := func(x soakSample) float64 { return rssOf(x) - mib(float64(x.goMapped)) }
	rssLimit := rssOf(first)*(1+soakGrowth) + mib(soakRSSSlack+soakMemtables)
	gorLimit := gorOf(first)*(1+soakGoroutineGrowth) + soakGoroutineSlack
	heap := newRecord("soak.heap", heapOf(last), "MiB",
		load+steady+fmt.Sprintf("Go HeapAlloc after GC at the end; bound: <= +%.0f%% + %d MiB from the steady start (%.1f MiB); %s",
			soakGrowth*100, soakHeapSlack>>20, heapLimit, trend(heapOf, "MiB"))).withBaseline(heapOf(first))
	rss := newRecord("soak.rss", rssOf(last), "MiB",
		"load as in soak.heap; "+steady+fmt.Sprintf("VmRSS at the end (Pebble's cache and memtables included); bound: <= +%.0f%% + %d MiB + %d MiB for two of Pebble's memtables filling, from the steady start (%.1f MiB); %s; "+
			"RSS outside the Go runtime's memory (Pebble's C memory, mostly): %s",
			soakGrowth*100, soakRSSSlack>>20, soakMemtables>>20, rssLimit, trend(rssOf, "MiB"), trend(outsideGo, "MiB"))).withBaseline(rssOf(first))
	gor := newRecord("soak.goroutines", gorOf(last), "goroutines",
		"load as in soak.heap; "+steady+fmt.Sprintf("runtime.NumGoroutine at the end, the %d session goroutines included; bound: <= +%.0f%% + %d from the steady start (%.0f); %s",
			soakSessions, soakGoroutineGrowth*100, soakGoroutineSlack, gorLimit, trend(gorOf, "goroutines"))).withBaseline(gorOf(first))
	heap = heap.addTarget(fmt.Sprintf("<= %.0f%% growth + %d MiB", soakGrowth*100, soakHeapSlack>>20), heap.Value <= heapLimit)
	if first.heap.rss >= 0 && last.heap.rss >= 0 {
		rss = rss.addTarget(fmt.Sprintf("<= %.0f%% growth + %d MiB", soakGrowth*100, (soakRSSSlack+soakMemtables)>>20), rss.Value <= rssLimit)
	} else {
		rss.Notes += "; no /proc/self/status: not judged"
	}
	gor = gor.addTarget(fmt.Sprintf("<= %.0f%% growth + %d", soakGoroutineGrowth*100, soakGoroutineSlack), gor.Value <= gorLimit)
	return []Record{heap, rss, gor}
}
