package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// NoLimit, passed as Replay's max, replays every event in range.
const NoLimit = math.MaxUint64

// ActiveMark tells Append what to do with the entity's "unfinished work"
// marker, which the supervisor reads on start to decide whom to rehydrate.
type ActiveMark uint8

const (
	// MarkUnchanged leaves the marker as it is.
	MarkUnchanged ActiveMark = iota
	// MarkActive records that the entity has unfinished work.
	MarkActive
	// MarkIdle clears the marker.
	MarkIdle
)

// Journal is the per-entity event store. An entity must have one writer at a
// time (its actor); different entities may append concurrently.
type Journal struct{ s *Store }

// Snapshot is an entity's saved state as of event Seq.
type Snapshot struct {
	Seq  uint64
	Data []byte
}

// Append durably writes events with sequence numbers first, first+1, ... and
// raises the entity's highest sequence number to the last of them. It
// returns only after the write is fsync'd; on error nothing is acknowledged
// and the caller must treat the events as not written. The mark is applied
// in the same atomic batch.
func (j *Journal) Append(id Identity, first uint64, events [][]byte, mark ActiveMark) error {
	w := waiters.Get().(*waiter)
	j.AppendAsync(id, first, events, mark, w.done)
	err := <-w.ch
	waiters.Put(w)
	return err
}

// waiter is what a synchronous Append waits on; they are pooled, as a
// thousand entities appending make one per append.
type waiter struct {
	ch   chan error
	done func(error)
}

var waiters = sync.Pool{New: func() any {
	w := &waiter{ch: make(chan error, 1)}
	w.done = func(err error) { w.ch <- err }
	return w
}}

// AppendAsync is Append without the wait: it checks its arguments, queues
// the events into the next synced batch and returns at once; done is called
// (on a journal goroutine; it must not block) with nil once the events are
// durable, or with the error that makes them not written. Actors use it so
// that one entity's append in flight does not hold its goroutine.
func (j *Journal) AppendAsync(id Identity, first uint64, events [][]byte, mark ActiveMark, done func(error)) {
	if err := j.s.check(); err != nil {
		done(err)
		return
	}
	if err := validateIdentity(id); err != nil {
		done(err)
		return
	}
	if len(events) == 0 && mark == MarkUnchanged {
		done(nil)
		return
	}
	if first == 0 || first > math.MaxUint64-uint64(len(events)) {
		done(fmt.Errorf("%w: append %s at %d", ErrSequence, id, first))
		return
	}
	j.s.commit.add(appendReq{id: id, first: first, events: events, mark: mark, done: done})
}

// HighestSeq is the highest sequence number ever appended (or snapshotted)
// for id, or 0 for an unknown entity. Deleting events never lowers it.
func (j *Journal) HighestSeq(id Identity) (uint64, error) {
	if err := j.s.check(); err != nil {
		return 0, err
	}
	if err := validateIdentity(id); err != nil {
		return 0, err
	}
	return j.highest(id)
}

// highest is the largest of the highest-seq key (kept through deletions),
// the last event's sequence number and the last snapshot's.
func (j *Journal) highest(id Identity) (uint64, error) {
	floor, err := j.floor(id)
	if err != nil {
		return 0, err
	}
	// A snapshot can only hold the highest number when no event is left:
	// Compact deletes every event up to its seq, which must not exceed the
	// highest, and SaveSnapshot raises the key itself.
	last, err := j.lastSeq(prefixEvent, id)
	if err == nil && last == 0 {
		last, err = j.lastSeq(prefixSnapshot, id)
	}
	if err != nil {
		return 0, fmt.Errorf("persistence: highest seq of %s: %w", id, err)
	}
	return max(floor, last), nil
}

// HighestFloor is the part of HighestSeq that is not the entity's last
// event or snapshot: the number its index key holds (set by its first
// append, raised by a snapshot and by deleting events). HighestSeq is the
// larger of the two; a caller that has just replayed the entity's newest
// snapshot and every event after it knows the other part already, and
// saves the two scans HighestSeq makes for it.
func (j *Journal) HighestFloor(id Identity) (uint64, error) {
	if err := j.s.check(); err != nil {
		return 0, err
	}
	if err := validateIdentity(id); err != nil {
		return 0, err
	}
	return j.floor(id)
}

func (j *Journal) floor(id Identity) (uint64, error) {
	v, closer, err := j.s.db.Get(entityPrefix(prefixHighest, id))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("persistence: highest seq of %s: %w", id, err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("persistence: highest seq of %s: corrupt value (%d bytes)", id, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// lastSeq is the sequence number of id's last key under prefix p, or 0.
func (j *Journal) lastSeq(p byte, id Identity) (uint64, error) {
	ep := entityPrefix(p, id)
	it, err := j.s.db.NewIter(&pebble.IterOptions{LowerBound: ep, UpperBound: prefixEnd(ep)})
	if err != nil {
		return 0, err
	}
	var last uint64
	if it.Last() {
		k := it.Key()
		last = binary.BigEndian.Uint64(k[len(k)-8:])
	}
	return last, errors.Join(it.Error(), it.Close())
}

func seqBytes(seq uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	return b[:]
}

// Replay calls fn for each stored event of id with from <= seq <= to, in
// order, at most max times. A from above to replays nothing. fn must not
// keep ev after it returns. An error from fn stops the replay and is
// returned as it is.
func (j *Journal) Replay(id Identity, from, to, max uint64, fn func(seq uint64, ev []byte) error) error {
	if err := j.s.check(); err != nil {
		return err
	}
	if err := validateIdentity(id); err != nil {
		return err
	}
	if from > to || max == 0 {
		return nil
	}
	if from == 0 {
		from = 1
	}
	lower := seqKey(prefixEvent, id, from)
	var upper []byte
	if to == math.MaxUint64 {
		upper = prefixEnd(entityPrefix(prefixEvent, id))
	} else {
		upper = seqKey(prefixEvent, id, to+1)
	}
	it, err := j.s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("persistence: replay %s: %w", id, err)
	}
	var n uint64
	for ok := it.First(); ok && n < max; ok = it.Next() {
		k := it.Key()
		seq := binary.BigEndian.Uint64(k[len(k)-8:])
		if err := fn(seq, it.Value()); err != nil {
			it.Close()
			return err
		}
		n++
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("persistence: replay %s: %w", id, err)
	}
	return nil
}

// DeleteUpTo removes the events of id with seq <= to. The highest sequence
// number is kept.
func (j *Journal) DeleteUpTo(id Identity, to uint64) error {
	if err := j.s.check(); err != nil {
		return err
	}
	if err := validateIdentity(id); err != nil {
		return err
	}
	if to == 0 {
		return nil
	}
	if err := j.deleteKeepingHighest(prefixEvent, id, to); err != nil {
		return fmt.Errorf("persistence: delete %s up to %d: %w", id, to, err)
	}
	return nil
}

// deleteKeepingHighest deletes id's keys under prefix p (events or
// snapshots) with seq <= to, and in the same batch writes the highest-seq
// key, since the deleted keys may have held the highest number.
func (j *Journal) deleteKeepingHighest(p byte, id Identity, to uint64) error {
	end := seqKey(p, id, to+1)
	if to == math.MaxUint64 {
		end = prefixEnd(entityPrefix(p, id))
	}
	high, err := j.highest(id)
	if err != nil {
		return err
	}
	b := j.s.db.NewBatch()
	defer b.Close()
	if high > 0 {
		_ = b.Set(entityPrefix(prefixHighest, id), seqBytes(high), nil)
	}
	_ = b.DeleteRange(seqKey(p, id, 0), end, nil)
	return b.Commit(j.s.wo)
}

// SaveSnapshot stores data as id's state after event seq, replacing any
// snapshot at the same seq. A snapshot's seq counts toward the highest
// sequence number, as if its events had been appended, and a snapshot at a
// seq above 0 lists the entity.
func (j *Journal) SaveSnapshot(id Identity, seq uint64, data []byte) error {
	if err := j.s.check(); err != nil {
		return err
	}
	if err := validateIdentity(id); err != nil {
		return err
	}
	high, err := j.highest(id)
	if err != nil {
		return err
	}
	b := j.s.db.NewBatch()
	defer b.Close()
	if seq > 0 {
		// The highest-seq key is also the entity index.
		_ = b.Set(entityPrefix(prefixHighest, id), seqBytes(max(high, seq)), nil)
	}
	_ = b.Set(seqKey(prefixSnapshot, id, seq), data, nil)
	if err := b.Commit(j.s.wo); err != nil {
		return fmt.Errorf("persistence: snapshot %s at %d: %w", id, seq, err)
	}
	return nil
}

// Compact saves a snapshot at seq and, in the same atomic batch, deletes the
// events and older snapshots that it makes redundant. The actor base calls
// it every N events.
//
// seq must not exceed HighestSeq(id). Compact reads nothing (the snapshot
// key itself keeps the highest sequence number when every event is
// deleted) and does not wait for an fsync: the batch is atomic and becomes
// durable with the next synced write, and losing it in a crash loses
// nothing, since the events it deletes are then still there. So the entity
// that calls it is not held up by the disk.
func (j *Journal) Compact(id Identity, seq uint64, data []byte) error {
	if err := j.s.check(); err != nil {
		return err
	}
	if err := validateIdentity(id); err != nil {
		return err
	}
	b := j.s.db.NewBatch()
	defer b.Close()
	_ = b.DeleteRange(seqKey(prefixSnapshot, id, 0), seqKey(prefixSnapshot, id, seq), nil)
	_ = b.Set(seqKey(prefixSnapshot, id, seq), data, nil)
	_ = b.DeleteRange(seqKey(prefixEvent, id, 0), seqKey(prefixEvent, id, seq+1), nil)
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("persistence: compact %s at %d: %w", id, seq, err)
	}
	return nil
}

// LoadSnapshot returns the newest snapshot of id whose seq is <= maxSeq.
func (j *Journal) LoadSnapshot(id Identity, maxSeq uint64) (Snapshot, bool, error) {
	if err := j.s.check(); err != nil {
		return Snapshot{}, false, err
	}
	if err := validateIdentity(id); err != nil {
		return Snapshot{}, false, err
	}
	lower := seqKey(prefixSnapshot, id, 0)
	var upper []byte
	if maxSeq == math.MaxUint64 {
		upper = prefixEnd(entityPrefix(prefixSnapshot, id))
	} else {
		upper = seqKey(prefixSnapshot, id, maxSeq+1)
	}
	it, err := j.s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return Snapshot{}, false, fmt.Errorf("persistence: load snapshot %s: %w", id, err)
	}
	defer it.Close()
	if !it.Last() {
		return Snapshot{}, false, it.Error()
	}
	k := it.Key()
	snap := Snapshot{Seq: binary.BigEndian.Uint64(k[len(k)-8:]), Data: append([]byte(nil), it.Value()...)}
	return snap, true, nil
}

// DeleteSnapshotsUpTo removes the snapshots of id with seq <= to.
func (j *Journal) DeleteSnapshotsUpTo(id Identity, to uint64) error {
	if err := j.s.check(); err != nil {
		return err
	}
	if err := validateIdentity(id); err != nil {
		return err
	}
	if err := j.deleteKeepingHighest(prefixSnapshot, id, to); err != nil {
		return fmt.Errorf("persistence: delete snapshots of %s: %w", id, err)
	}
	return nil
}

// Forget removes every trace of id, its highest sequence number included.
// It is for entities that are gone for good (a deleted session); an entity
// that comes back under the same identity starts from sequence 1.
func (j *Journal) Forget(id Identity) error {
	if err := j.s.check(); err != nil {
		return err
	}
	if err := validateIdentity(id); err != nil {
		return err
	}
	b := j.s.db.NewBatch()
	defer b.Close()
	for _, p := range []byte{prefixEvent, prefixSnapshot} {
		ep := entityPrefix(p, id)
		_ = b.DeleteRange(ep, prefixEnd(ep), nil)
	}
	_ = b.Delete(entityPrefix(prefixHighest, id), nil)
	_ = b.Delete(entityPrefix(prefixActive, id), nil)
	if err := b.Commit(j.s.wo); err != nil {
		return fmt.Errorf("persistence: forget %s: %w", id, err)
	}
	return nil
}

// Entities calls fn for every entity of the kind (every kind when kind is
// "") that has ever appended and was not forgotten, with its highest seq.
func (j *Journal) Entities(kind string, fn func(id Identity, highest uint64) error) error {
	return j.scanIndex(prefixHighest, kind, func(id Identity) error {
		high, err := j.highest(id)
		if err != nil {
			return err
		}
		return fn(id, high)
	})
}

// EntityIDs is Entities without the highest sequence numbers: one index
// scan, for callers that only count or list (status).
func (j *Journal) EntityIDs(kind string, fn func(id Identity) error) error {
	return j.scanIndex(prefixHighest, kind, func(id Identity) error { return fn(id) })
}

// Active calls fn for every entity of the kind (every kind when kind is "")
// whose last append carried MarkActive.
func (j *Journal) Active(kind string, fn func(id Identity) error) error {
	return j.scanIndex(prefixActive, kind, fn)
}

func (j *Journal) scanIndex(p byte, kind string, fn func(Identity) error) error {
	if err := j.s.check(); err != nil {
		return err
	}
	if strings.IndexByte(kind, 0) >= 0 {
		return fmt.Errorf("%w: kind %q", ErrBadIdentity, kind)
	}
	lower := []byte{p}
	if kind != "" {
		lower = append(append(lower, kind...), 0)
	}
	it, err := j.s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
	if err != nil {
		return fmt.Errorf("persistence: scan index: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		id, _, ok := parseEntityKey(it.Key())
		if !ok {
			return fmt.Errorf("persistence: corrupt index key %q", it.Key())
		}
		if err := fn(id); err != nil {
			return err
		}
	}
	return it.Error()
}
