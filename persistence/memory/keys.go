package memory

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Key layout. The journal owns 'e', 'h', 's', 'a' and 'r'; this package
// owns 'm' (entries) and 'n' (vectors and hygiene state). The second byte
// names the record kind; stores and slugs never contain NUL.
//
//	m e store 0 slug          -> Entry as JSON
//	n v store 0 slug          -> index record (see encodeIndex)
//	n p store 0 slugA 0 slugB -> float32 cosine: candidate duplicate pair, slugA < slugB
//	n j store 0 slugA 0 slugB -> verdict: a judged pair, slugA < slugB
const (
	prefixEntry  = 'm'
	prefixHidden = 'n'
	kindEntry    = 'e'
	kindIndex    = 'v'
	kindPair     = 'p'
	kindVerdict  = 'j'
)

func storeKey(p, kind byte, store string) []byte {
	b := make([]byte, 0, 3+len(store)+40)
	b = append(b, p, kind)
	b = append(b, store...)
	return append(b, 0)
}

func entryKey(store, slug string) []byte {
	return append(storeKey(prefixEntry, kindEntry, store), slug...)
}

func indexKey(store, slug string) []byte {
	return append(storeKey(prefixHidden, kindIndex, store), slug...)
}

// pairRecordKey is the key of a pair in kind 'p' or 'j'; a and b are
// ordered.
func pairRecordKey(kind byte, store string, p pairKey) []byte {
	b := storeKey(prefixHidden, kind, store)
	b = append(b, p.a...)
	b = append(b, 0)
	return append(b, p.b...)
}

// parseKey splits a key of this package into store and the rest.
func parseKey(k []byte) (store string, rest []byte, ok bool) {
	if len(k) < 3 {
		return "", nil, false
	}
	k = k[2:]
	i := bytes.IndexByte(k, 0)
	if i < 0 {
		return "", nil, false
	}
	return string(k[:i]), k[i+1:], true
}

func parsePairKey(k []byte) (store string, p pairKey, ok bool) {
	store, rest, ok := parseKey(k)
	if !ok {
		return "", pairKey{}, false
	}
	i := bytes.IndexByte(rest, 0)
	if i < 0 {
		return "", pairKey{}, false
	}
	return store, pairKey{a: string(rest[:i]), b: string(rest[i+1:])}, true
}

// prefixEnd is the smallest key above every key that starts with p.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// pairKey names an unordered pair of slugs: a < b.
type pairKey struct{ a, b string }

func makePair(x, y string) pairKey {
	if x > y {
		x, y = y, x
	}
	return pairKey{a: x, b: y}
}

// indexRecord is what Open loads for every entry: all that recall, dedup
// and hygiene need, without the entry's text.
type indexRecord struct {
	archived bool
	activity int64 // unix nanos of max(updated, last recalled)
	branch   string
	embedder string
	dim      int // 0: no vector
	inv      float32
	vec      []int8
	sketchV  byte
	sketch   []uint64
}

const indexVersion = 1

var errBadRecord = errors.New("memory: corrupt index record")

// encodeIndex lays a record out as:
//
//	version(1) flags(1) activity(8) uvarint+branch uvarint+embedder uvarint dim
//	[ inv float32(4) vec int8*dim sketchVersion(1) uvarint words, uint64*words ]
//
// all integers big endian.
func encodeIndex(r *indexRecord) []byte {
	b := make([]byte, 0, 32+len(r.branch)+len(r.embedder)+len(r.vec)+8*len(r.sketch))
	var flags byte
	if r.archived {
		flags |= 1
	}
	b = append(b, indexVersion, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(r.activity))
	b = binary.AppendUvarint(b, uint64(len(r.branch)))
	b = append(b, r.branch...)
	b = binary.AppendUvarint(b, uint64(len(r.embedder)))
	b = append(b, r.embedder...)
	if len(r.vec) == 0 {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(r.vec)))
	b = binary.BigEndian.AppendUint32(b, math.Float32bits(r.inv))
	for _, x := range r.vec {
		b = append(b, byte(x))
	}
	b = append(b, r.sketchV)
	b = binary.AppendUvarint(b, uint64(len(r.sketch)))
	for _, w := range r.sketch {
		b = binary.BigEndian.AppendUint64(b, w)
	}
	return b
}

func decodeIndex(b []byte) (*indexRecord, error) {
	if len(b) < 10 || b[0] != indexVersion {
		return nil, errBadRecord
	}
	r := &indexRecord{archived: b[1]&1 != 0, activity: int64(binary.BigEndian.Uint64(b[2:10]))}
	b = b[10:]
	str := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return "", false
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, true
	}
	var ok bool
	if r.branch, ok = str(); !ok {
		return nil, errBadRecord
	}
	if r.embedder, ok = str(); !ok {
		return nil, errBadRecord
	}
	dim, k := binary.Uvarint(b)
	if k <= 0 || dim > 1<<16 {
		return nil, errBadRecord
	}
	b = b[k:]
	if dim == 0 {
		return r, nil
	}
	r.dim = int(dim)
	if len(b) < 4+r.dim+1 {
		return nil, errBadRecord
	}
	r.inv = math.Float32frombits(binary.BigEndian.Uint32(b))
	b = b[4:]
	r.vec = make([]int8, r.dim)
	for i := range r.vec {
		r.vec[i] = int8(b[i])
	}
	b = b[r.dim:]
	r.sketchV = b[0]
	b = b[1:]
	words, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) != 8*words {
		return nil, errBadRecord
	}
	b = b[k:]
	r.sketch = make([]uint64, words)
	for i := range r.sketch {
		r.sketch[i] = binary.BigEndian.Uint64(b[8*i:])
	}
	return r, nil
}

func encodeScore(f float64) []byte {
	return binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(f)))
}

func decodeScore(b []byte) (float64, error) {
	if len(b) != 4 {
		return 0, fmt.Errorf("memory: corrupt pair score of %d bytes", len(b))
	}
	return float64(math.Float32frombits(binary.BigEndian.Uint32(b))), nil
}
