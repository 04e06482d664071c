// Package feishu is the Feishu (Lark) adapter's core: the Open API calls
// thatch makes (send, reply, cards and their buttons, patch, delete, chat
// and user names) on github.com/larksuite/oapi-sdk-go/v3 v3.4.0, and the
// webhook receiver of events and card callbacks. It is a protocol adapter:
// it may use the network and the SDK, and knows nothing of entities,
// actors or storage (boundaries_test.go, the row of im/feishu). Adapter
// puts it behind the front end's chat interface (chat.Adapter), receiving
// over Feishu's long connection (mode "ws", the default) or through the
// webhook (mode "webhook").
//
// # The adapter
//
// Thread keys are "fs:<chat_id>" for a chat (a group or a P2P chat) and
// "fs:<chat_id>:<thread_id>" for a topic of a topic group (chat mode
// "topic", read from the chat API once per chat; a reply thread in
// another group belongs to its chat's thread). A group the chat API
// cannot describe is not handed over: Feishu is answered 500 and delivers
// the event again, since its key depends on its mode. Allows checks the open ids of
// im.feishu.allowed_users. In mode "ws" Run keeps the long connection up
// (Open binds nothing; Addr is nil and URL ""); in mode "webhook" it
// serves the Webhook on Options.Listen at Options.Path (an http.Server of
// its own, with read, write and idle timeouts, shut down when Run's
// context ends). Either way it hands each event over
// as a chat.Update, the events of one thread one at a time in the order
// they came and those of different threads at once: a message (the bot's @-mention cut; a
// message that is not text names its type in Media, and an image, file,
// audio or media message its file in File, which Download fetches with the
// message resource API), a rename
// (im.chat.updated_v1: Name with chat.NameEdited), a press
// (card.action.trigger: Press.Data from the button's value, Press.ID the
// event id, Press.Message the card) and a chat that ended (disbanded, the
// bot removed: Ended). Feishu is answered 200 (a frame's answer, or the
// webhook's response) only after the handler returned nil. A message's update carries its thread's display name as a
// seed (chat.NameSeed): the group's name (chat API; a rename updates it),
// a P2P chat's peer's (contact API), a topic's the chat's and the
// message's first line; each chat's name is asked once while the adapter
// runs.
//
// Buttons go out as an interactive card, the labels as given; each
// button's value is a JSON object {"data": press data, "thread": thread
// key}, since a press names only the card's chat, not its topic.
// EditButtons patches the card (its text is kept for cards sent since the
// adapter started; a card of an earlier run is patched to its buttons
// alone). AnswerPress does nothing: a card callback's answer is the
// webhook's response or the card frame's answer, written once the press
// was handled (no toast); Feishu has no later call to answer one.
// SendPhoto uploads the picture (im/v1/images, at most 10 MB) and sends it
// as an image message, its caption after it as text. A message to a topic goes out as a reply in
// the thread to the topic's last message the adapter saw; before it saw
// one (after a restart) it goes to the chat.
//
// # Deduplication and update ids
//
// Feishu delivers an event again after a 500, a timeout, or at will, and
// may deliver events out of order. The front end's cursor row cannot hold
// this: it is one value per platform, written at most once a second, and
// Feishu's event ids are neither ordered nor dense. So the adapter keeps
// each event id it takes in an EventStore the front end passes in (rows
// of the table im.feishu.events, one per event id, pruned after EventKeep,
// 7 days), in two writes:
//
//  1. before the handler: the id is recorded with the Update.ID it is
//     handed over with. IDs are the event's creation time on Feishu's
//     clock (header.create_time) in microseconds, or the largest id given
//     out before + 1 when that is not above it (the largest is read back
//     from the store at Open). So they increase along every thread in
//     Feishu's order, across restarts and on every node of a cluster,
//     whatever the machines' clocks do (only an event whose header has no
//     creation time takes this machine's);
//  2. after the handler returned nil: the record is marked done, and an
//     event delivered again is answered 200 and dropped without reaching
//     the handler.
//
// An event delivered again before it was marked done (the handler failed,
// or thatch crashed after the binding journaled it) is handed over with
// its recorded Update.ID, so the binding, which drops an id at or below
// the last one it handled in the thread, handles it once. The cost: an
// event whose handler failed and that Feishu delivers again only after a
// newer event of the same thread was handled is dropped by the binding
// (Feishu's first retry comes 15 s later; a failed handler means the
// store or the binding is failing). A refused request (401) records
// nothing. The Update's Cursor is empty: the front end stores no cursor
// for Feishu.
//
// # Sending
//
// Client calls go to Options.BaseURL (lark.WithOpenBaseUrl), so tests
// point them at e2e/fakefeishu. The SDK fetches and refreshes the tenant
// access token (in a cache of the client's own). Every attempt is bounded
// by Options.SendTimeout. Calls for one chat take the chat's turn and hold
// it while their request runs and while they wait out a rate limit, so
// one chat's messages go out one at a time, in order; other chats are not
// held up.
//
// The SDK returns no Go error for Feishu's refusals: the answer's code
// says it. 99991400 (the app's limit, HTTP 429) is made again after
// x-ogw-ratelimit-reset seconds, 230020 (the chat's limit) after
// Options.ChatLimitWait; nothing is dropped or reordered, and the waits
// are bounded by the caller's context. 230002 (the chat is gone or the
// bot is not in it) is ErrChatGone, permanent: check it with errors.Is and
// end the binding. Other codes are *APIError.
//
// Text goes out as text messages split by Split (MaxTextBytes a part, well
// under Feishu's 150 KB limit on a text request; a card's is 30 KB). A
// topic of a topic group has no address of its own: a message goes there
// as a reply in the thread to one of its messages (Target.InThread).
//
// # Receiving: the webhook (mode "webhook")
//
// Webhook is one http.Handler for events and card callbacks
// (card.action.trigger, schema 2.0). It answers the url_verification
// challenge, checks header.token against the verification token on every
// event (the SDK checks it only on the challenge), and with an encrypt key
// refuses a plain body, decrypts (AES-256-CBC, key SHA-256 of the encrypt
// key, IV first, base64), checks X-Lark-Signature (hex SHA-256 of
// timestamp, nonce, encrypt key and body) and refuses a timestamp more
// than an hour off. A refused request gets 401 and the handler is not
// called. An accepted event is decoded (MessageReceived, ChatRenamed,
// ChatEnded, CardPressed) and handed over with its event id; the 200 is
// written only after the handler returned nil, and an error answers 500
// so that Feishu delivers the event again.
//
// Feishu delivers events at least once, and the SDK does not deduplicate:
// deduplication by event id is the caller's, and it must be durable (the
// issue asks for ids kept 7 days, across restarts). The webhook keeps no
// ids.
//
// # Receiving: the long connection (mode "ws")
//
// The receiver (longconn.go) speaks the protocol of the SDK's ws package
// (v3.4.0) itself (see below why not the SDK's client), with the SDK's frame type (ws.Frame, a pbbp2
// protobuf) and models and gorilla/websocket: it POSTs {"AppID",
// "AppSecret"} to BaseURL+"/callback/ws/endpoint" (bounded by
// SendTimeout), dials the URL answered (device_id and service_id in its
// query; dial and handshake bounded by 10 s), pings at once and then at
// the PingInterval Feishu names (in the endpoint's client config, and
// again in any pong), and reads frames: method 0 is control (ping, pong),
// method 1 data, with headers type ("event" or "card"), message_id, sum
// and seq (a payload split in sum parts is put together by message id;
// parts wait 30 s), trace_id. A connection that hears nothing for three
// ping intervals (and 10 s) is taken for dead and dropped. Frames are
// taken in order: each is admitted to its thread's line as it comes, then
// handled and answered on its own (64 at most at once), so a slow thread
// holds up no other.
//
// Each data frame's payload is a schema 2.0 event, decoded by the
// webhook's decoder (readEvent: the same envelope, the same decodeEvent);
// "card" frames carry card.action.trigger and are handled as presses.
// The frame is answered on the same frame (its headers, biz_rt added; a
// ws.Response in the payload) only once the handler returned: 200 (a
// card's with data {}), 500 after a handler error so that Feishu delivers
// it again, 400 for an undecodable payload (logged as an error, as the
// webhook does). A frame dropped unanswered (the connection closed first)
// is delivered again; a handler running when the connection drops is let
// finish (with Run's context) before the receiver connects again. No
// token or signature is checked: the connection is authenticated by the
// app secret.
//
// After a dropped connection or a failed endpoint call or dial it
// connects again after a jittered backoff (internal/retry: 1 s doubling
// up to 2 min; reset once a connection heard from Feishu). A refusal of
// the app (the endpoint's client-error codes, a forbidden handshake:
// ErrAppRefused, a wrong app id or secret most likely) is retried slowly
// (1 min doubling up to 10 min) and shows in Health's LastError. Health's
// State is "connecting", "connecting again in ..." or "receiving Feishu
// events over the long connection". When Run's context ends the
// connection is closed and every goroutine of the receiver has ended
// before Run returns. Feishu's reconnect settings (ReconnectCount,
// ReconnectInterval, ReconnectNonce) are not taken: the backoff decides.
//
// Why not the SDK's ws.Client: Start ends in select {} (it never returns
// and cannot be stopped), its ping loop restarts itself forever, it
// reconnects with time.Sleep (up to 2 min, deaf to the context), its
// endpoint request has no timeout of its own (http.DefaultClient), and it
// returns without an answer for every frame of type "card" (handleDataFrame:
// case MessageTypeCard: return), so card presses never arrive and the user
// sees error 200340. Reports against the other official SDKs
// (oapi-sdk-python issue 126) say the same: Feishu delivers
// card.action.trigger over the long connection in "card" frames.
package feishu
