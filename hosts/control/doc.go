// Package control is thatch's control API: an HTTP server bound to loopback
// that the opencode plugin, `thatch status` and other local clients use.
//
// # Security
//
// The server listens on a loopback address only (config validation refuses
// anything else). Every route except /healthz needs the bearer token kept in
// a 0600 file next to the data; clients read it from there. The token never
// appears in logs or errors.
//
// A web page must not reach the API either, not even /healthz: a page whose
// DNS name is rebound to 127.0.0.1 talks to the loopback port as its own
// origin. So before any route the server refuses (403) a request whose Host
// is not 127.0.0.1, localhost, [::1] or the bound address with the bound
// port, and any request that carries an Origin header, which browsers add
// and local clients do not.
//
// The one exception is thatch's own web page (package ui), mounted with
// MountBrowser under BrowserPrefix (/ui/) and authenticated by its own
// session cookie instead of the token: there, and only there, a request
// may carry an Origin header, and only the origin it was sent to
// (http://HOST:PORT with the Host the guard accepted), as a same-origin
// form POST from the page does. A path that merely starts with /ui/ but
// cleans to another route does not count.
//
// # Handlers
//
// Handlers answer with WriteJSON and WriteError, and read a JSON body with
// DecodeJSON, which takes exactly one value under a size limit:
//
//	var b struct{ SessionID string `json:"sessionID"` }
//	if !control.DecodeJSON(w, r, &b, control.DefaultBodyLimit) {
//		return // it has answered 400
//	}
//
// # Discovery
//
// With a random port (the default), the bound address is published in a
// state file (JSON: address, pid, start time, version), written atomically
// with mode 0600 once the listener is open and removed on a clean stop.
// A crash leaves it behind, so Dial trusts it only when the recorded pid is
// running and the address answers /healthz with that pid (PIDHeader); a
// file without a pid, from an older daemon, is judged by /healthz alone.
// Otherwise Dial returns ErrStaleState, which matches ErrNoDaemon.
//
// # Imports
//
// control may import net/http, hclog and messages. Routes that reach actors
// are mounted by the caller through Mount, so this package knows nothing of
// actors or persistence.
package control
