package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/thatch-run/thatch/persistence"
)

func init() {
	register(Bench{
		Name:  "memory",
		Doc:   "Go heap per passivated entity (journaled, not live) and per live idle entity",
		Order: 40,
		Run:   benchMemory,
	})
}

// memoryEvents is how many events each journaled entity has.
const memoryEvents = 5

// heapSample is the memory in use at one moment, after a full GC.
type heapSample struct {
	alloc uint64 // HeapAlloc: bytes of live heap objects
	inuse uint64 // HeapInuse: bytes in in-use spans
	rss   int64  // VmRSS, including Pebble's C-allocated cache and memtables
}

func sampleHeap() heapSample {
	// Two cycles: the first may leave objects freed by finalizers for the
	// second.
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return heapSample{alloc: m.HeapAlloc, inuse: m.HeapInuse, rss: readRSS()}
}

// readRSS is the resident set size in bytes, or -1 where /proc is missing.
func readRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return -1
			}
			return kb << 10
		}
	}
	return -1
}

func diff(a, b uint64) float64 { return float64(b) - float64(a) }

func benchMemory(c *Config) ([]Record, error) {
	passive := c.Count(100_000, 20_000)
	live := min(c.Count(10_000, 2_000), passive)

	emptyDir, removeEmpty, err := c.TempDir("memory-empty")
	if err != nil {
		return nil, err
	}
	defer removeEmpty()
	fullDir, removeFull, err := c.TempDir("memory")
	if err != nil {
		return nil, err
	}
	defer removeFull()
	c.Logf("memory: journaling %d entities x %d events (not active)", passive, memoryEvents)
	if err := fillJournal(fullDir, passive, memoryEvents); err != nil {
		return nil, err
	}
	var s memorySamples
	c.Logf("memory: store + tree over an empty journal")
	if s.e0, s.e1, err = emptyTreeHeap(emptyDir); err != nil {
		return nil, err
	}
	c.Logf("memory: store + tree over %d passivated entities", passive)
	if err := s.measureFull(c, fullDir, live); err != nil {
		return nil, err
	}
	return s.records(passive, live), nil
}

// memorySamples are the heap samples of the memory benchmark: e0 and e1
// before and after a store and tree over an empty journal, f0 and f1 the
// same over the passivated entities, f2 once live of them are awake.
type memorySamples struct {
	e0, e1, f0, f1, f2 heapSample
}

// emptyTreeHeap samples the heap before and after opening a store and
// starting a tree over the empty journal in dir: what they cost with no
// entities at all.
func emptyTreeHeap(dir string) (before, after heapSample, err error) {
	before = sampleHeap()
	est, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		return before, after, err
	}
	ea, err := startTree(est)
	if err != nil {
		_ = est.Close()
		return before, after, err
	}
	after = sampleHeap()
	ea.stop()
	return before, after, est.Close()
}

// measureFull samples f0, f1 and f2 over the filled journal in dir, waking
// live entities by one message each, and checks that exactly those are live
// and recovered their state.
func (s *memorySamples) measureFull(c *Config, dir string, live int) error {
	s.f0 = sampleHeap()
	st, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	a, err := startTree(st)
	if err != nil {
		return err
	}
	defer a.stop()
	s.f1 = sampleHeap()
	if ids, err := a.tree.LiveIDs(benchKind, time.Minute); err != nil || len(ids) != 0 {
		return errors.Join(fmt.Errorf("bench: %d entities live before any message, want 0", len(ids)), err)
	}

	c.Logf("memory: waking %d entities", live)
	for i := range live {
		a.tree.Send(ident(entityID(i)), &touch{})
	}
	if err := a.tree.WaitIdle(waitTimeout); err != nil {
		return err
	}
	s.f2 = sampleHeap()
	if ids, err := a.tree.LiveIDs(benchKind, time.Minute); err != nil || len(ids) != live {
		return errors.Join(fmt.Errorf("bench: %d entities live after waking %d", len(ids), live), err)
	}
	return checkState(a.tree, entityID(live-1), memoryEvents, false)
}

// records turns the samples into the memory records.
func (s *memorySamples) records(passive, live int) []Record {
	e0, e1, f0, f1, f2 := s.e0, s.e1, s.f0, s.f1, s.f2
	perPassive := (diff(f0.alloc, f1.alloc) - diff(e0.alloc, e1.alloc)) / float64(passive)
	perLive := diff(f1.alloc, f2.alloc) / float64(live)
	return []Record{
		newRecord("memory.passivated", perPassive, "B/entity",
			fmt.Sprintf("%d entities x %d events journaled and flushed, none active; Go HeapAlloc after GC of store+tree over them (%s B) minus store+tree over an empty journal (%s B), per entity; HeapInuse: %.0f B/entity; RSS growth %s B vs %s B (Pebble cache and memtables are C memory, outside the Go heap)",
				passive, memoryEvents, formatNumber(diff(f0.alloc, f1.alloc)), formatNumber(diff(e0.alloc, e1.alloc)),
				(diff(f0.inuse, f1.inuse)-diff(e0.inuse, e1.inuse))/float64(passive),
				formatNumber(float64(f1.rss-f0.rss)), formatNumber(float64(e1.rss-e0.rss)))).
			atMost(1024),
		newRecord("memory.live", perLive, "B/entity",
			fmt.Sprintf("%d of them woken by one message each (no events), idle, passivation timer (%v) armed; HeapAlloc growth per entity; HeapInuse: %.0f B/entity; RSS: %.0f B/entity",
				live, passivateAfter, diff(f1.inuse, f2.inuse)/float64(live), float64(f2.rss-f1.rss)/float64(live))),
	}
}
