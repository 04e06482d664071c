package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/thatch-run/thatch/persistence"
)

func init() {
	register(Bench{
		Name:  "entity",
		Doc:   "messages/s through the supervision tree, each journaling one durable event before its reply",
		Order: 15,
		Run:   benchEntityThroughput,
	})
}

// entityLevels are the numbers of concurrent requesters, one per entity.
var entityLevels = []int{1, 1000}

func benchEntityThroughput(c *Config) ([]Record, error) {
	dur := c.Duration(3*time.Second, 400*time.Millisecond)
	var out []Record
	for _, level := range entityLevels {
		c.Logf("entity: %d entities, %v", level, dur)
		res, err := entityRequests(c, level, dur)
		if err != nil {
			return out, err
		}
		out = append(out, newRecord(fmt.Sprintf("entity.durable.c%d", level), res.rate(), "msgs/s",
			fmt.Sprintf("%d goroutines each sending Tree.Request to its own entity for %v; each message is decided, journaled (1 event, fsync'd) and applied before the reply; request latency p50 %v p99 %v; compare journal.durable.c%d for the journal alone and its SQLite baseline",
				level, dur.Round(time.Millisecond), res.p50, res.p99, level)))
	}
	return out, nil
}

// entityRequests drives n entities with request/reply messages that each
// journal one event, and checks every reply.
func entityRequests(c *Config, n int, dur time.Duration) (loadResult, error) {
	dir, remove, err := c.TempDir("entity")
	if err != nil {
		return loadResult{}, err
	}
	defer remove()
	st, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		return loadResult{}, err
	}
	a, err := startTree(st)
	if err != nil {
		return loadResult{}, errors.Join(err, st.Close())
	}
	res, err := load(n, dur, func(w int, i uint64) error {
		got, err := a.tree.Request(ident(entityID(w)), &addNote{N: 1}, time.Minute)
		if err != nil {
			return err
		}
		if total, ok := got.(int64); !ok || total != int64(i+1) {
			return fmt.Errorf("bench: entity %s answered %v to add number %d", entityID(w), got, i+1)
		}
		return nil
	})
	a.stop()
	return res, errors.Join(err, st.Close())
}
