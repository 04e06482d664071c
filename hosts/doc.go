// Package hosts is the root of thatch's host adapters: the code that speaks
// an agent host's external protocol (opencode's HTTP API and its SSE event
// stream, the plugin's control API) and translates it into the typed values
// of package messages.
//
// # Imports
//
// The protocol adapters under hosts/ may import messages, the standard
// library (net/http above all) and hclog. They must not import actors,
// supervisor or persistence: an adapter turns wire traffic into messages and
// carries out calls, and decides nothing. The opencode front end
// (hosts/opencode/front) is the one package here that composes them with
// the entities; it must not import another front end.
//
// # Layout
//
//   - hosts/opencode: the v1 and v2 client for an opencode server (REST
//     calls, the /event stream decoder, a reconnecting stream loop).
//   - hosts/opencode/front: the opencode front end (see ARCHITECTURE.md).
//   - hosts/opencode/install, hosts/opencode/plugin: the installer and the
//     plugin it writes.
//   - hosts/control: thatch's own loopback control API, which the opencode
//     plugin and local tools call.
package hosts
