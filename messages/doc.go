// Package messages holds every typed message that thatch's actors exchange and
// every event that they journal, together with the versioned encoding used to
// store them.
//
// # Imports
//
// messages may import only the standard library and encoding libraries. Every
// other thatch package may import it; it imports none of them.
//
// # Encoding
//
// A journaled value is written as an envelope: a format byte, a CRC-32C of
// the rest, the registered type name, the type's schema version, and a JSON
// body. A body whose checksum matches is what Encode wrote, so Decode skips
// the JSON check on it; envelopes of the first format (no checksum) still
// decode, checked. Decoding an envelope
// whose type or version is not registered fails with ErrUnknownType or
// ErrUnknownVersion; it never yields a zero value.
//
//	messages.Register[SessionIdle]("opencode.session_idle", 1)
//	b, err := messages.Encode(&SessionIdle{SessionID: "ses_1"})
//	v, err := messages.Decode(b) // v is *SessionIdle
package messages
