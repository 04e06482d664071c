// Package opencode is thatch's client for the HTTP API of an opencode
// server, v1 and the /api/* v2 surface (checked against opencode 1.18.33):
// the REST calls that carry out the effects of opencode session entities,
// the decoder that turns the server's /event stream into typed messages,
// and a Stream that keeps that subscription alive.
//
// # Imports
//
// opencode may import messages, the standard library and hclog. It must not
// import actors or persistence: it reports what the server says and does
// what it is asked, and decides nothing.
//
// # Events
//
// GET /event is a text/event-stream of JSON frames {"type", "properties"}.
// SSEReader splits the stream into frames and Decoder maps the few that
// thatch follows to messages (session.created, session.idle and
// session.status idle, session.error, session.deleted, session.compacted),
// plus Connected and Heartbeat for liveness. All other frames decode to
// nil. The stream has no ids and no replay: whoever owns it reconciles
// after every (re)connect, which is what Stream's OnConnect is for.
//
//	st, err := opencode.NewStream(opencode.StreamOptions{
//		Client:    client,
//		Handler:   func(msg any) { deliver(msg) },       // in stream order
//		OnConnect: func(ctx context.Context) { reconcile(ctx, client) },
//	})
//	st.Start()
//	defer st.Stop()
//
// # Calls
//
// Every call is bounded by Options.Timeout (Summarize by LongTimeout).
// Idempotent calls (the GETs, DeleteSession, ShowToast) are retried with
// jittered exponential backoff on network errors and 5xx; the others are
// tried once, because a repeat could create a second session or post a
// prompt twice. DeleteSession treats 404 as done. Errors wrap sentinels
// (ErrNotFound, ErrServer, ...) for errors.Is, and never contain the
// password.
//
// # The v2 surface
//
// V2Client (Client.V2 or NewV2) offers the same effect calls over /api/*,
// for servers that only speak that. It maps what exists (create a
// top-level session, list and find a child, prompt, compact, read the
// context as Messages) and degrades the rest: a call whose result the
// caller needs returns a wrapped ErrNotInV2 (creating a child: the v2 body
// has no parentID), a fire-and-forget one (noReply prompt, delete, toast,
// TUI commands) is logged and returns nil. A route the server lacks, or
// one it says is not available yet, also becomes ErrNotInV2. The event
// stream stays on the v1 Client.
//
// # Sessions across directories
//
// ListProjectSessions lists every session of a project, whatever
// directory each records (the strand sweep's v1 enumeration), and
// MoveSessionChecked moves one within its project, turning opencode's
// refusal into ErrMoveRefused. ReadSessionDB reads opencode's own
// database read-only for machine-wide rows, which the v2 API cannot list.
package opencode
