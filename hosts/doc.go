// Package hosts is the root of thatch's host adapters: the code that speaks
// an agent host's external protocol (opencode's HTTP API and its SSE event
// stream, the plugin's control API) and translates it into the typed values
// of package messages.
//
// # Imports
//
// Packages under hosts/ may import messages, the standard library (net/http
// above all) and hclog. They must not import actors or persistence: a host
// adapter turns wire traffic into messages and carries out effects, and
// whoever owns the entities decides what to do with them.
//
// # Layout
//
//   - hosts/opencode: the v1 client for an opencode server (REST calls,
//     the /event stream decoder, a reconnecting stream loop).
//   - hosts/control: thatch's own loopback control API, which the opencode
//     plugin and local tools call.
package hosts
