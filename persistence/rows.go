package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// ErrBadRowKey is returned for an empty table name or a table name with a
// NUL byte.
var ErrBadRowKey = errors.New("persistence: bad row key")

// Rows is a table store for state that is not an event stream: IM bindings,
// update offsets, runtime state. Every write is fsync'd and stamped with the
// store's clock.
type Rows struct{ s *Store }

// Row is one stored row.
type Row struct {
	Table     string
	Key       string
	Value     []byte
	WrittenAt time.Time
}

func rowKey(table, key string) ([]byte, error) {
	if table == "" || strings.IndexByte(table, 0) >= 0 {
		return nil, fmt.Errorf("%w: table %q", ErrBadRowKey, table)
	}
	b := make([]byte, 0, 2+len(table)+len(key))
	b = append(b, prefixRow)
	b = append(b, table...)
	b = append(b, 0)
	return append(b, key...), nil
}

// entry is a row's key and value as written: the value after the time it
// is written.
func (r *Rows) entry(table, key string, value []byte) (k, v []byte, err error) {
	if err := r.s.check(); err != nil {
		return nil, nil, err
	}
	if k, err = rowKey(table, key); err != nil {
		return nil, nil, err
	}
	v = make([]byte, 8+len(value))
	binary.BigEndian.PutUint64(v, uint64(r.s.now().UnixNano()))
	copy(v[8:], value)
	return k, v, nil
}

// PutIn adds a row's write to b, a batch of this store's database: the
// row is written when b is committed, with whatever else b holds.
func (r *Rows) PutIn(b *pebble.Batch, table, key string, value []byte) error {
	k, v, err := r.entry(table, key, value)
	if err != nil {
		return err
	}
	if err := b.Set(k, v, nil); err != nil {
		return fmt.Errorf("persistence: put row %s/%s: %w", table, key, err)
	}
	return nil
}

// PutMany writes rows of table, keys[i] holding values[i], in one synced
// commit: all of them or none.
func (r *Rows) PutMany(table string, keys []string, values [][]byte) error {
	if len(keys) != len(values) {
		return fmt.Errorf("persistence: put rows of %s: %d keys, %d values", table, len(keys), len(values))
	}
	r.s.rowsMu.RLock()
	defer r.s.rowsMu.RUnlock()
	b := r.s.db.NewBatch()
	defer b.Close()
	for i, key := range keys {
		if err := r.PutIn(b, table, key, values[i]); err != nil {
			return err
		}
	}
	if err := b.Commit(r.s.wo); err != nil {
		return fmt.Errorf("persistence: put rows of %s: %w", table, err)
	}
	return nil
}

// Put writes a row, replacing any row at the same key.
func (r *Rows) Put(table, key string, value []byte) error {
	r.s.rowsMu.RLock()
	defer r.s.rowsMu.RUnlock()
	k, v, err := r.entry(table, key, value)
	if err != nil {
		return err
	}
	if err := r.s.db.Set(k, v, r.s.wo); err != nil {
		return fmt.Errorf("persistence: put row %s/%s: %w", table, key, err)
	}
	return nil
}

// Get reads a row; ok is false when there is none.
func (r *Rows) Get(table, key string) (row Row, ok bool, err error) {
	if err := r.s.check(); err != nil {
		return Row{}, false, err
	}
	k, err := rowKey(table, key)
	if err != nil {
		return Row{}, false, err
	}
	v, closer, err := r.s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return Row{}, false, nil
	}
	if err != nil {
		return Row{}, false, fmt.Errorf("persistence: get row %s/%s: %w", table, key, err)
	}
	defer closer.Close()
	row, err = decodeRow(table, key, v)
	return row, err == nil, err
}

func decodeRow(table, key string, v []byte) (Row, error) {
	if len(v) < 8 {
		return Row{}, fmt.Errorf("persistence: corrupt row %s/%s", table, key)
	}
	return Row{
		Table:     table,
		Key:       key,
		Value:     append([]byte(nil), v[8:]...),
		WrittenAt: time.Unix(0, int64(binary.BigEndian.Uint64(v))),
	}, nil
}

// Delete removes a row; deleting a missing row is not an error.
func (r *Rows) Delete(table, key string) error {
	if err := r.s.check(); err != nil {
		return err
	}
	k, err := rowKey(table, key)
	if err != nil {
		return err
	}
	r.s.rowsMu.RLock()
	defer r.s.rowsMu.RUnlock()
	if err := r.s.db.Delete(k, r.s.wo); err != nil {
		return fmt.Errorf("persistence: delete row %s/%s: %w", table, key, err)
	}
	return nil
}

// Scan calls fn for every row of the table in key order.
func (r *Rows) Scan(table string, fn func(Row) error) error {
	if err := r.s.check(); err != nil {
		return err
	}
	lower, err := rowKey(table, "")
	if err != nil {
		return err
	}
	it, err := r.s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
	if err != nil {
		return fmt.Errorf("persistence: scan %s: %w", table, err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		row, err := decodeRow(table, string(it.Key()[len(lower):]), it.Value())
		if err != nil {
			return err
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	return it.Error()
}

// DeleteWrittenBefore removes the rows of table last written before cutoff
// and returns how many it removed. Rows written while it runs are kept.
func (r *Rows) DeleteWrittenBefore(table string, cutoff time.Time) (int, error) {
	r.s.rowsMu.Lock()
	defer r.s.rowsMu.Unlock()
	var stale []string
	err := r.Scan(table, func(row Row) error {
		if row.WrittenAt.Before(cutoff) {
			stale = append(stale, row.Key)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if len(stale) == 0 {
		return 0, nil
	}
	b := r.s.db.NewBatch()
	defer b.Close()
	for _, key := range stale {
		k, _ := rowKey(table, key)
		_ = b.Delete(k, nil)
	}
	if err := b.Commit(r.s.wo); err != nil {
		return 0, fmt.Errorf("persistence: age out %s: %w", table, err)
	}
	return len(stale), nil
}
