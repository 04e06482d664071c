package messages

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"reflect"
	"slices"
	"sync"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
)

// The first byte of every envelope says its format; any other first byte
// means the bytes were not written by this codec.
//
//   - formatV1: name length (uvarint), name, schema version (uvarint), JSON
//     body.
//   - formatV2: a CRC-32C (4 bytes, big endian) of everything after it,
//     then the formatV1 layout. Encode writes it. A body whose checksum
//     matches is the one Encode wrote, JSON by construction, so Decode
//     skips the JSON check that formatV1 bodies need (a third of replay's
//     decode time).
const (
	formatV1 byte = 0x01
	formatV2 byte = 0x02
)

// crcTable is the Castagnoli polynomial's table (hardware-accelerated).
var crcTable = crc32.MakeTable(crc32.Castagnoli)

var (
	// ErrUnknownType is returned by Decode for an envelope whose type name is
	// not registered, and by Encode for a value whose Go type is not.
	ErrUnknownType = errors.New("messages: unknown type")
	// ErrUnknownVersion is returned by Decode for a registered type whose
	// stored schema version has no decoder.
	ErrUnknownVersion = errors.New("messages: unknown version")
	// ErrRawJSON is returned by Encode for a value whose raw JSON (a tool
	// call's args) is not JSON: the codec embeds raw JSON as it is, and it
	// could not read such bytes back.
	ErrRawJSON = errors.New("messages: raw JSON that is not JSON")
	// ErrInvalidUTF8 is returned by Encode for a value with a string that
	// is not valid UTF-8: JSON would carry it as U+FFFD, so the value
	// replayed from the journal would not be the one decided on. The
	// edges make text valid before anything is decided on it.
	ErrInvalidUTF8 = errors.New("messages: text that is not valid UTF-8")
	// ErrCorrupt is returned by Decode for bytes that are not an envelope.
	ErrCorrupt = errors.New("messages: corrupt envelope")
)

// Upgrade turns the JSON body of an older schema version into the body of the
// next version. It is registered with RegisterUpgrade.
type Upgrade func(old json.RawMessage) (json.RawMessage, error)

type entry struct {
	name     string
	version  uint16
	typ      reflect.Type
	upgrades map[uint16]Upgrade // from version -> to version+1
	// raw is whether the type holds json.RawMessage anywhere: the codec
	// embeds such bytes as they are, so it checks them. rawPaths are their
	// field paths when every one is reached through struct fields alone
	// (a cheap check); otherwise the whole value is walked.
	raw      bool
	rawPaths [][]int
}

// rawFieldPaths returns the field paths of every json.RawMessage in t, and
// false when one sits behind a pointer, slice or map.
func rawFieldPaths(t reflect.Type, prefix []int) ([][]int, bool) {
	var out [][]int
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		path := append(append([]int(nil), prefix...), i)
		switch {
		case f.Type == rawType:
			out = append(out, path)
		case f.Type.Kind() == reflect.Struct:
			sub, ok := rawFieldPaths(f.Type, path)
			if !ok {
				return nil, false
			}
			out = append(out, sub...)
		case holdsRaw(f.Type, map[reflect.Type]bool{}):
			return nil, false
		}
	}
	return out, true
}

// checkRaw reports the first raw JSON inside v (a value of e's type, or a
// pointer to one) that is not JSON.
func (e *entry) checkRaw(v reflect.Value) (json.RawMessage, bool) {
	if !e.raw {
		return nil, false
	}
	if e.rawPaths == nil {
		return badRaw(v)
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, false
		}
		v = v.Elem()
	}
	for _, p := range e.rawPaths {
		if b := v.FieldByIndex(p).Bytes(); len(b) > 0 && (!json.Valid(b) || !utf8.Valid(b)) {
			return b, true
		}
	}
	return nil, false
}

var rawType = reflect.TypeFor[json.RawMessage]()

// holdsRaw reports whether values of t can hold a json.RawMessage.
func holdsRaw(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == rawType {
		return true
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return holdsRaw(t.Elem(), seen)
	case reflect.Map:
		return holdsRaw(t.Key(), seen) || holdsRaw(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() && holdsRaw(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// badRaw returns the first json.RawMessage inside v that is not JSON (an
// empty one is written as null and is fine).
func badRaw(v reflect.Value) (json.RawMessage, bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return badRaw(v.Elem())
		}
	case reflect.Slice:
		if v.Type() == rawType {
			b := v.Bytes()
			return b, len(b) > 0 && !json.Valid(b)
		}
		fallthrough
	case reflect.Array:
		for i := range v.Len() {
			if b, bad := badRaw(v.Index(i)); bad {
				return b, true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if b, bad := badRaw(it.Value()); bad {
				return b, true
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				if b, bad := badRaw(v.Field(i)); bad {
					return b, true
				}
			}
		}
	}
	return nil, false
}

var registry = struct {
	sync.RWMutex
	byName map[string]*entry
	byType map[reflect.Type]*entry
}{byName: map[string]*entry{}, byType: map[reflect.Type]*entry{}}

// Register makes T encodable under name at the given schema version. Register
// panics on a duplicate name or type: registrations happen in init functions,
// and a clash there is a programming error.
func Register[T any](name string, version uint16) {
	typ := reflect.TypeFor[T]()
	registry.Lock()
	defer registry.Unlock()
	if _, ok := registry.byName[name]; ok {
		panic(fmt.Sprintf("messages: type name %q registered twice", name))
	}
	if _, ok := registry.byType[typ]; ok {
		panic(fmt.Sprintf("messages: Go type %v registered twice", typ))
	}
	e := &entry{name: name, version: version, typ: typ, upgrades: map[uint16]Upgrade{}, raw: holdsRaw(typ, map[reflect.Type]bool{})}
	if e.raw && typ.Kind() == reflect.Struct {
		if paths, ok := rawFieldPaths(typ, nil); ok {
			e.rawPaths = paths
		}
	}
	registry.byName[name] = e
	registry.byType[typ] = e
}

// Registered lists the registered types, by name: for tests that check a
// kind's events are all there (and Apply knows them).
func Registered() []reflect.Type {
	registry.RLock()
	defer registry.RUnlock()
	names := slices.Sorted(maps.Keys(registry.byName))
	out := make([]reflect.Type, len(names))
	for i, n := range names {
		out[i] = registry.byName[n].typ
	}
	return out
}

// RegisterUpgrade lets Decode read bodies written at schema version from of
// the named type, by converting them to version from+1.
func RegisterUpgrade(name string, from uint16, up Upgrade) {
	registry.Lock()
	defer registry.Unlock()
	e, ok := registry.byName[name]
	if !ok {
		panic(fmt.Sprintf("messages: upgrade for unregistered type %q", name))
	}
	e.upgrades[from] = up
}

// TypeName returns the registered name of v's type (v may be a pointer).
func TypeName(v any) (string, bool) {
	t := reflect.TypeOf(v)
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	registry.RLock()
	defer registry.RUnlock()
	e, ok := registry.byType[t]
	if !ok {
		return "", false
	}
	return e.name, true
}

// Encode writes v, a registered type or a pointer to one, as an envelope.
func Encode(v any) ([]byte, error) {
	t := reflect.TypeOf(v)
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	registry.RLock()
	e, ok := registry.byType[t]
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: Go type %v", ErrUnknownType, t)
	}
	// Raw JSON is written as it is: what is not JSON could not be read
	// back, so it is refused here rather than journaled.
	if b, bad := e.checkRaw(reflect.ValueOf(v)); bad {
		return nil, fmt.Errorf("%w: encode %s: %.40q", ErrRawJSON, e.name, b)
	}
	// goccy/go-json reads and writes the same JSON as encoding/json (the
	// tests round-trip through both) at several times the speed, which
	// recovery and replay feel: every event is decoded once per restart.
	body, err := gojson.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("messages: encode %s: %w", e.name, err)
	}
	// The marshaler writes each invalid byte as the escape \ufffd (a
	// valid U+FFFD is written as itself), so only a body that holds the
	// escape needs the walk that tells which it was.
	if bytes.Contains(body, escapedFFFD) && invalidUTF8(reflect.ValueOf(v)) {
		return nil, fmt.Errorf("%w: encode %s", ErrInvalidUTF8, e.name)
	}
	return Envelope(e.name, uint64(e.version), body), nil
}

// Envelope is the envelope Encode writes for a JSON body of the type
// registered as name, at version: the format byte, a checksum of the rest,
// the name, the version, the body. Tests write the events of an older
// version with it, as an older thatch wrote them.
func Envelope(name string, version uint64, body []byte) []byte {
	out := make([]byte, 5, 5+binary.MaxVarintLen64*2+len(name)+len(body))
	out[0] = formatV2
	out = binary.AppendUvarint(out, uint64(len(name)))
	out = append(out, name...)
	out = binary.AppendUvarint(out, version)
	out = append(out, body...)
	binary.BigEndian.PutUint32(out[1:5], crc32.Checksum(out[5:], crcTable))
	return out
}

// Body returns the registered name, the version and the JSON body of an
// envelope, without decoding the body.
func Body(b []byte) (name string, version uint16, body []byte, err error) {
	name, version, body, _, err = split(b)
	return name, version, body, err
}

// Decode reads an envelope written by Encode and returns a pointer to a new
// value of the registered type.
func Decode(b []byte) (any, error) {
	name, version, body, checked, err := split(b)
	if err != nil {
		return nil, err
	}
	registry.RLock()
	e, ok := registry.byName[name]
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownType, name)
	}
	for version < e.version {
		up, ok := e.upgrades[version]
		if !ok {
			return nil, fmt.Errorf("%w: %q version %d (current %d, no upgrade)", ErrUnknownVersion, name, version, e.version)
		}
		if body, err = up(body); err != nil {
			return nil, fmt.Errorf("messages: upgrade %q from version %d: %w", name, version, err)
		}
		version++
		checked = false // an upgrade's output is not what Encode wrote
	}
	if version != e.version {
		return nil, fmt.Errorf("%w: %q version %d is newer than this build (%d)", ErrUnknownVersion, name, version, e.version)
	}
	return e.decodeBody(name, version, body, checked)
}

// decodeBody decodes the JSON body of a value of e's type. goccy/go-json
// reads past the end of some truncated bodies (a memory fault under the race
// detector's pointer checks, an index panic or a wrong value without it),
// and it accepts raw JSON that is not JSON: a body is checked to be JSON
// first, so that a corrupt record is ErrCorrupt. The check costs replay
// about a third of its decode time, so a body whose envelope checksum
// matched (checked: the bytes Encode wrote) skips it.
func (e *entry) decodeBody(name string, version uint16, body []byte, checked bool) (v any, err error) {
	if !checked && !json.Valid(body) {
		return nil, fmt.Errorf("%w: the body of %q is not JSON", ErrCorrupt, name)
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("%w: the body of %q does not decode: %v", ErrCorrupt, name, r)
		}
	}()
	ptr := reflect.New(e.typ)
	if err := gojson.Unmarshal(body, ptr.Interface()); err != nil {
		return nil, fmt.Errorf("messages: decode %q version %d: %w", name, version, err)
	}
	return ptr.Interface(), nil
}

// DecodeAs decodes b and checks that it holds a *T.
func DecodeAs[T any](b []byte) (*T, error) {
	v, err := Decode(b)
	if err != nil {
		return nil, err
	}
	t, ok := v.(*T)
	if !ok {
		return nil, fmt.Errorf("messages: decoded %T, want *%v", v, reflect.TypeFor[T]())
	}
	return t, nil
}

// split reads an envelope's header; checked reports a formatV2 envelope
// whose checksum matched.
func split(b []byte) (name string, version uint16, body []byte, checked bool, err error) {
	switch {
	case len(b) == 0:
		return "", 0, nil, false, fmt.Errorf("%w: empty", ErrCorrupt)
	case b[0] == formatV1:
		b = b[1:]
	case b[0] == formatV2:
		if len(b) < 5 || binary.BigEndian.Uint32(b[1:5]) != crc32.Checksum(b[5:], crcTable) {
			return "", 0, nil, false, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
		}
		b, checked = b[5:], true
	default:
		return "", 0, nil, false, fmt.Errorf("%w: bad format byte", ErrCorrupt)
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return "", 0, nil, false, fmt.Errorf("%w: bad name length", ErrCorrupt)
	}
	name = string(b[k : k+int(n)])
	b = b[k+int(n):]
	v, k := binary.Uvarint(b)
	if k <= 0 || v > 0xffff {
		return "", 0, nil, false, fmt.Errorf("%w: bad version", ErrCorrupt)
	}
	return name, uint16(v), b[k:], checked, nil
}

var escapedFFFD = []byte(`\ufffd`)

// invalidUTF8 reports whether a string inside v (a field, an element, a
// map key or value) is not valid UTF-8. Raw JSON is checkRaw's.
func invalidUTF8(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && invalidUTF8(v.Elem())
	case reflect.String:
		return !utf8.ValidString(v.String())
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return false // bytes are base64 in JSON; raw JSON is checkRaw's
		}
		fallthrough
	case reflect.Array:
		for i := range v.Len() {
			if invalidUTF8(v.Index(i)) {
				return true
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && invalidUTF8(v.Field(i)) {
				return true
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if invalidUTF8(it.Key()) || invalidUTF8(it.Value()) {
				return true
			}
		}
	}
	return false
}
