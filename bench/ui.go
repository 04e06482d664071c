package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/persistence/memory"
	"github.com/thatch-run/thatch/ui"
)

func init() {
	register(Bench{
		Name:  "ui",
		Doc:   "web page: the memory list of a store with 10,000 memories, served over loopback, p99",
		Order: 65,
		Run:   benchUI,
	})
}

const (
	// uiMemories is how many memories the listed store holds.
	uiMemories = 10_000
	// uiListTarget is the target: the page's memory list of 10k
	// memories served in at most this, p99.
	uiListTarget = 100 // ms
)

func benchUI(c *Config) ([]Record, error) {
	n := c.Count(uiMemories, uiMemories/5)
	dir, cleanup, err := c.TempDir("ui")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	c.Logf("ui: writing %d memories", n)
	g := newTextGen(23)
	if err := buildMemories(filepath.Join(dir, "journal"), memFixture(g, n), runtime.GOMAXPROCS(0)); err != nil {
		return nil, fmt.Errorf("bench ui: build: %w", err)
	}
	st, err := persistence.Open(filepath.Join(dir, "journal"), persistence.Options{})
	if err != nil {
		return nil, err
	}
	mem, err := memory.Open(st, memory.Options{Now: func() time.Time { return memNow }})
	if err != nil {
		return nil, errors.Join(err, st.Close())
	}
	defer func() { _ = mem.Close(); _ = st.Close() }()
	srv, err := control.New(control.Options{Listen: "127.0.0.1:0", TokenFile: filepath.Join(dir, "control.token")})
	if err != nil {
		return nil, err
	}
	page := ui.New(ui.Options{Memory: mem})
	page.MountPages(srv)
	if err := srv.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = srv.Stop(context.Background()) }()

	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	fetch := func(u string) (time.Duration, int, error) {
		start := time.Now()
		resp, err := client.Get(u)
		if err != nil {
			return 0, 0, err
		}
		nb, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("bench ui: GET %s: HTTP %d", u, resp.StatusCode)
		}
		return d, int(nb), err
	}
	if _, _, err := fetch(page.MintURL(srv.Addr()).URL); err != nil {
		return nil, fmt.Errorf("bench ui: login: %w", err)
	}
	base := "http://" + srv.Addr() + "/ui/memories?store=" + url.QueryEscape(memStore)
	pages := (n + 99) / 100
	rng := rand.New(rand.NewPCG(3, 5))
	for range 5 { // warm the connection and the caches
		if _, _, err := fetch(base); err != nil {
			return nil, err
		}
	}
	reqs := c.Count(300, 60)
	c.Logf("ui: %d list pages of %d", reqs, pages)
	lat := make([]time.Duration, 0, reqs)
	var bytes int
	for i := range reqs {
		u := base
		if i%2 == 1 {
			u += "&page=" + fmt.Sprint(1+rng.IntN(pages))
		}
		d, nb, err := fetch(u)
		if err != nil {
			return nil, err
		}
		lat = append(lat, d)
		bytes += nb
	}
	slices.Sort(lat)
	sreqs := c.Count(100, 20)
	c.Logf("ui: %d searches", sreqs)
	slat := make([]time.Duration, 0, sreqs)
	for range sreqs {
		d, _, err := fetch(base + "&q=" + url.QueryEscape(g.words(2, 5)))
		if err != nil {
			return nil, err
		}
		slat = append(slat, d)
	}
	slices.Sort(slat)
	return []Record{
		newRecord("ui.list.p99", ms(percentile(lat, 99)), "ms",
			fmt.Sprintf("GET /ui/memories of a store with %d memories (100 a page; half page 1, half a random page of %d), logged in, over loopback, body read; %d requests, p50 %v, max %v, %d B a page on average",
				n, pages, reqs, percentile(lat, 50), lat[len(lat)-1], bytes/reqs)).atMost(uiListTarget),
		newRecord("ui.search.p99", ms(percentile(slat, 99)), "ms",
			fmt.Sprintf("GET /ui/memories?q= (the store's recall, limit 50) over the same store; %d searches of fresh text, p50 %v", sreqs, percentile(slat, 50))),
	}, nil
}
