// Package fakefeishu is an in-memory stand-in for the parts of Feishu's
// (Lark's) Open API that thatch's Feishu adapter uses, for the adapter's
// unit tests and the e2e suite: it serves, on 127.0.0.1 only, the tenant
// access token, sending, replying to, patching and deleting messages,
// uploading images (Image reads an upload back), chat
// info, user info and bot info, with the real API's paths and JSON shapes,
// and it records what the bot did. It also plays Feishu's side of the
// webhook (it builds events and posts them signed and encrypted, as Feishu
// does) and of the long connection (it pushes them in frames).
//
// It may import only the standard library, and for the long connection
// gorilla/websocket and the SDK's ws frame type (github.com/larksuite/
// oapi-sdk-go/v3/ws). It is test support: it holds no thatch logic and
// never reaches beyond 127.0.0.1.
//
// # The bot's side
//
// Every API call but the token's needs "Authorization: Bearer <token>" with
// a token the server issued (401, code 99991663, otherwise); the token call
// checks the app id and secret. Message calls check what Feishu checks that
// a test is likely to trip on: content that is not the JSON its msg_type
// needs, a request body over Feishu's limits (150 KB for text and post,
// 30 KB for a card), a card button whose value is not a JSON object, a
// patch of a message that is not a card, unknown message ids. Sent returns
// every successful message call in order. A user's message that a test
// posts as an event is known to the fake only once Received names it, so
// that the bot can reply to it (a topic's messages go out as such
// replies).
//
// # Failures on demand
//
// RateLimitApp(n, reset) answers the next n message calls with HTTP 429,
// code 99991400 and the header x-ogw-ratelimit-reset; RateLimitChat(n, wait)
// answers them with code 230020 (the per-chat limit). Until the wait has
// passed, a message call to that chat is answered the same again and counted
// (Early), so a test can assert that a client honoured the wait without
// measuring durations. EndChat makes a chat gone: every message call for
// it is answered 230002 (the chat is gone or the bot is not in it).
//
// # Feishu's side of the webhook
//
// Poster posts events to a webhook URL the way Feishu does: a schema 2.0
// envelope whose header carries the verification token, encrypted with the
// encrypt key (AES-256-CBC, key SHA-256 of the encrypt key, random IV
// first, base64) and signed (X-Lark-Signature: hex SHA-256 of timestamp,
// nonce, encrypt key and body). Its fields can be set wrong on purpose.
//
// # Feishu's side of the long connection
//
// POST /callback/ws/endpoint checks {"AppID", "AppSecret"} against the
// fake's app (CodeWSBadApp, a client error, otherwise) and answers a
// ws:// URL on the same server, with device_id and service_id, and a
// client config whose PingInterval is DefaultPingInterval (120 s) until
// SetPingInterval. The websocket answers each ping that carries its
// service id with a pong carrying the client config (WSPings counts
// them). PushEvent and PushCard send an event ("event" frame) or a card
// press (a card.action.trigger in a "card" frame), as Envelope builds it
// without a token, optionally split in parts (headers sum and seq), on the
// newest connection (waiting for one), and return the client's answer
// (WSAnswer: its status code, data and biz_rt) once it came, within the
// context and PushTimeout; a connection that closes first gives
// ErrDropped. DropConnections closes every connection, as Feishu does when
// it moves a client; WSConnections counts those accepted, WSOpen those
// open, WSEndpointCalls the endpoint's calls.
//
//	s := fakefeishu.New("cli_app", "secret")
//	defer s.Close()
//	s.AddChat(fakefeishu.Chat{ID: "oc_1", Name: "build box"})
package fakefeishu
