// Command bench is thatch's benchmark harness (`make bench`). In one run it
// measures, side by side with a SQLite baseline measured in the same run on
// the same disk, the numbers thatch's design rests on: durable journal
// throughput, replay rate, cold recovery time and memory per entity; and,
// against limits measured in the same run, the journal's share of what
// Pebble alone can commit and a soak's growth of memory and goroutines from
// its own steady start. It prints a table and writes the records as JSON
// so that runs can be compared over time.
//
//	go run ./bench                      # full run, a few minutes on 2 cores
//	go run ./bench -quick               # CI smoke run, < 30 s
//	go run ./bench -only journal,replay -out /tmp/b.json
//	go run ./bench -list                # the benchmarks and what they measure
//	go run ./bench -only recovery -cpuprofile cpu.out
//	go run ./bench -only host -memprofile allocs.out  # what the run allocated
//
// bench may import every thatch package and the modules in go.mod. It only
// reads and writes its own temporary folders under os.TempDir (set TMPDIR to
// measure another disk), which it removes before it exits.
//
// # The baseline
//
// The TypeScript implementation journals its runtime state as one JSON row
// per entity, rewritten whole on every change. The baseline does the same
// with modernc.org/sqlite (pure Go): WAL mode with synchronous=FULL so that
// every INSERT OR REPLACE is durable, through one database/sql pool. SQLite
// admits one writer at a time, so its throughput does not grow with the
// number of writers; Pebble's group commit lets many entities share one
// fsync. Each record's baseline is in the record's unit, and ratio is
// value/baseline: above 1 is better for rates, below 1 for times and sizes.
//
// A record named "<metric>.vs_<limit>" compares a metric with a limit
// instead, measured in the same run on the same disk and named in its
// notes: journal.durable.c1000.vs_batched_limit has as its baseline what
// Pebble alone commits in synced 100-event batches, and its notes give raw
// Pebble Set+Sync from 1000 goroutines, the figure the journal's group
// commit must beat.
//
// # Records
//
// Every record has the keys name, value, unit, baseline, ratio, target, pass
// and notes; baseline, ratio and pass are null when they do not apply. A
// missed target prints "NO" and sets pass to false, but does not fail the
// run: the exit status is non-zero only when a benchmark could not measure
// (a database would not open, an entity recovered the wrong state). Notes
// carry the parameters (sizes, workers, durations) and secondary numbers
// such as latency percentiles and phase breakdowns. The run.wall record
// names the mode, Go version, CPU count and time, so that files from
// different machines are not compared by mistake.
//
// # Sizes
//
// Full and quick runs use fixed sizes (Config.Count, Config.Duration);
// -scale multiplies them, which the tests use to run everything on tiny
// data. The concurrency levels (1, 64, 1000 entities) are never scaled.
//
// # Adding a benchmark
//
// Put it in a new file of this package and register it from init:
//
//	func init() {
//		register(Bench{
//			Name:  "session",                    // selects it with -only; prefixes its records
//			Doc:   "session-actor messages/s",   // shown by -list
//			Order: 50,                           // position in a full run
//			Run:   benchSession,
//		})
//	}
//
//	func benchSession(c *Config) ([]Record, error) {
//		dir, remove, err := c.TempDir("session") // removed by remove()
//		if err != nil {
//			return nil, err
//		}
//		defer remove()
//		n := c.Count(10_000, 1_000)               // full, quick
//		res, err := load(64, c.Duration(3*time.Second, 400*time.Millisecond), func(w int, i uint64) error { ... })
//		...
//		return []Record{
//			newRecord("session.throughput", res.rate(), "msgs/s", "64 sessions, ...").
//				withBaseline(sqliteRate).atLeast(50_000),
//		}, nil
//	}
//
// Name records "<bench>.<metric>" and keep names stable: they are the keys
// runs are compared by. Helpers: load runs N workers for a measured window
// and reports rate and latency percentiles; forEachParallel spreads work over
// goroutines; fillJournal, fillSQLite and startTree build data sets and a
// supervision tree of the benchmark entity kind (kind.go), whose events and
// state have fixed sizes. A benchmark checks what it measured (counts,
// recovered state) and returns an error when it is wrong, so that a fast
// number is never a broken one. main_test.go runs every registered benchmark
// at a tiny scale; a new one is covered without further work.
package main
