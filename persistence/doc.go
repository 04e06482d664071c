// Package persistence is thatch's durable storage: per-entity event journals
// with snapshots, a small table of rows with write times, and (in later
// files) the memory store and IM bindings. Everything lives in one Pebble
// database.
//
// # Imports
//
// persistence may import Pebble, hclog and messages. It must not import
// actors, supervisor, hosts or im: storage knows nothing of who writes it.
//
// # Journal
//
// An entity is named by an Identity (kind + id). Its events carry sequence
// numbers from 1 up. Append returns only after the batch is fsync'd; the
// appends of many entities are merged into one synced batch per fsync. The
// highest sequence number of an entity is the largest of its last event, its
// last snapshot and a key written on its first append and on every deletion
// that could remove both, so DeleteUpTo, DeleteSnapshotsUpTo and Compact
// never lower it. Snapshots are tagged with the sequence number of the last
// event they include. Compact is the one write that does not wait for an
// fsync: it only replaces events by a snapshot, atomically, so losing it in
// a crash loses nothing.
//
//	j := st.Journal()
//	id := persistence.Identity{Kind: "parent", ID: "ses_1"}
//	err := j.Append(id, 1, [][]byte{ev1, ev2}, persistence.MarkUnchanged)
//	err = j.Replay(id, 1, math.MaxUint64, 0, func(seq uint64, ev []byte) error { ... })
//
// # The folder
//
// One process at a time owns a database folder: Open takes Pebble's lock
// and writes the process id to thatch.pid, so that a second daemon fails
// with an InUseError saying "another thatch (pid N) is using DIR". On the
// OS filesystem the folder is kept 0700 and its files 0600 (they hold
// session transcripts and memories); Open tightens a looser folder and
// reports it through Options.Warn.
//
// # A full disk
//
// Pebble does not fail on a full disk while it opens: it retries the flush
// of the replayed write-ahead log forever. OpenContext therefore checks the
// free space first, fails on the first ENOSPC Pebble reports while opening,
// and returns when its context ends; each error wraps ErrDiskFull or the
// context's error. Once open, the first ENOSPC (a WAL write, a flush) fails
// the store for good with an error that wraps ErrFailed and ErrDiskFull,
// reported once to Options.OnFailure. Nothing acknowledged is lost: free
// some space and open again.
//
// # Rows
//
// Rows hold state that is not an event stream (bindings, runtime state). Each
// row records when it was last written, so sweepers can age rows out.
package persistence
