// Package opencode is thatch's client for the v1 HTTP API of an opencode
// server (checked against opencode 1.18.33): the REST calls that carry out
// the effects of opencode session entities, the decoder that turns the
// server's /event stream into typed messages, and a Stream that keeps that
// subscription alive.
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
//		Handler:   func(msg any) { root.Send(hostPID, msg) },
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
package opencode
