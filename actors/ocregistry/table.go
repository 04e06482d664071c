package ocregistry

import (
	"encoding/json"
	"hash/maphash"
	"iter"
	"maps"
)

// tableShards is how many maps a table spreads its keys over. A change
// copies one of them, not the whole table: with the registry's thousands
// of sessions, copying every entry on every change was most of what the
// daemon allocated, and its garbage collections were the slow tail of an
// idle's path to its REST call.
const tableShards = 64

// shardSeed places keys in shards; a table's placement lives only in
// memory (its JSON form is one plain object), so any seed will do.
var shardSeed = maphash.MakeSeed()

// table is an immutable map from string to string. With and Without
// return a new table that shares every shard but the one they change. A
// nil *table is the empty table.
type table struct {
	shards [tableShards]map[string]string
	n      int
}

func shardOf(k string) int { return int(maphash.String(shardSeed, k) % tableShards) }

// Get returns the value of k and whether it is set.
func (t *table) Get(k string) (string, bool) {
	if t == nil {
		return "", false
	}
	v, ok := t.shards[shardOf(k)][k]
	return v, ok
}

// Value returns the value of k ("" when unset).
func (t *table) Value(k string) string {
	v, _ := t.Get(k)
	return v
}

// Len is the number of keys.
func (t *table) Len() int {
	if t == nil {
		return 0
	}
	return t.n
}

// With is t with k set to v; t is left as it was.
func (t *table) With(k, v string) *table {
	cur, ok := t.Get(k)
	if ok && cur == v {
		return t
	}
	n := &table{}
	if t != nil {
		*n = *t
	}
	if !ok {
		n.n++
	}
	i := shardOf(k)
	old := n.shards[i]
	m := make(map[string]string, len(old)+1)
	maps.Copy(m, old)
	m[k] = v
	n.shards[i] = m
	return n
}

// Without is t without k (t itself when k is not set).
func (t *table) Without(k string) *table {
	if _, ok := t.Get(k); !ok {
		return t
	}
	n := *t
	i := shardOf(k)
	m := maps.Clone(n.shards[i])
	delete(m, k)
	n.shards[i] = m
	n.n--
	return &n
}

// All yields every key and value, in no order.
func (t *table) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		if t == nil {
			return
		}
		for _, m := range t.shards {
			for k, v := range m {
				if !yield(k, v) {
					return
				}
			}
		}
	}
}

// Map is a copy of t as a plain map (nil when t is empty).
func (t *table) Map() map[string]string {
	if t.Len() == 0 {
		return nil
	}
	out := make(map[string]string, t.n)
	maps.Insert(out, t.All())
	return out
}

// tableOf is a table holding m's entries (nil when m is empty).
func tableOf(m map[string]string) *table {
	if len(m) == 0 {
		return nil
	}
	t := &table{n: len(m)}
	for k, v := range m {
		i := shardOf(k)
		if t.shards[i] == nil {
			t.shards[i] = map[string]string{}
		}
		t.shards[i][k] = v
	}
	return t
}

// MarshalJSON writes the table as one JSON object, the form a State's
// maps had before tables: snapshots read either way.
func (t *table) MarshalJSON() ([]byte, error) {
	m := t.Map()
	if m == nil {
		m = map[string]string{}
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads a JSON object of strings.
func (t *table) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if nt := tableOf(m); nt != nil {
		*t = *nt
	} else {
		*t = table{}
	}
	return nil
}
