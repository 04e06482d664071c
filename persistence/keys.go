package persistence

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/thatch-run/thatch/messages"
)

// Key prefixes. Each kind of record has its own first byte so that scans of
// one never see the others. Prefixes 'm' and above are reserved for the
// memory store and bindings.
const (
	prefixEvent    byte = 'e' // e kind 0 id 0 seq(8, big endian) -> event
	prefixHighest  byte = 'h' // h kind 0 id 0 -> highest seq (8)
	prefixSnapshot byte = 's' // s kind 0 id 0 seq(8) -> snapshot
	prefixActive   byte = 'a' // a kind 0 id 0 -> empty: entity has unfinished work
	prefixRow      byte = 'r' // r table 0 key -> written-at unix nanos (8) + value
)

// Identity names one entity (see messages.Identity).
type Identity = messages.Identity

// validateIdentity reports whether the identity can be stored.
func validateIdentity(i Identity) error {
	if i.Kind == "" || i.ID == "" || strings.IndexByte(i.Kind, 0) >= 0 || strings.IndexByte(i.ID, 0) >= 0 {
		return fmt.Errorf("%w: %q", ErrBadIdentity, i.String())
	}
	return nil
}

// entityPrefix is prefix kind 0 id 0.
func entityPrefix(p byte, id Identity) []byte {
	return appendEntityPrefix(make([]byte, 0, 3+len(id.Kind)+len(id.ID)+8), p, id)
}

// appendEntityPrefix appends prefix kind 0 id 0 to b.
func appendEntityPrefix(b []byte, p byte, id Identity) []byte {
	b = append(b, p)
	b = append(b, id.Kind...)
	b = append(b, 0)
	b = append(b, id.ID...)
	return append(b, 0)
}

func seqKey(p byte, id Identity, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(entityPrefix(p, id), seq)
}

// parseEntityKey splits a key made by entityPrefix (with or without a
// trailing sequence number).
func parseEntityKey(k []byte) (Identity, []byte, bool) {
	k = k[1:]
	i := bytes.IndexByte(k, 0)
	if i < 0 {
		return Identity{}, nil, false
	}
	kind := string(k[:i])
	k = k[i+1:]
	j := bytes.IndexByte(k, 0)
	if j < 0 {
		return Identity{}, nil, false
	}
	return Identity{Kind: kind, ID: string(k[:j])}, k[j+1:], true
}

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}
