// Package faketelegram is an in-memory stand-in for Telegram's Bot API,
// for tests of the Telegram adapter and the e2e suite: it serves getMe,
// getUpdates (long poll), sendMessage, editMessageText,
// editMessageReplyMarkup, answerCallbackQuery and deleteMessage on
// 127.0.0.1 with the real API's JSON shapes, lets a test play the users'
// side (messages, topics, button presses), and records what the bot did.
//
// It may import only the standard library. It is test support: it holds no
// thatch logic and never reaches beyond 127.0.0.1.
//
// # The users' side
//
// Each push (Message, CreateTopic, EditTopic, Press) makes one update with
// a fresh, increasing update_id. A topic message carries
// reply_to_message.forum_topic_created with the topic's original name, as
// Telegram's do. getUpdates drops every update below the offset it is asked
// with, for good, as Telegram does; Confirmed reports the highest update id
// so dropped. As on Telegram, one getUpdates is served at a time: one that
// comes while another is still being served (a long poll waiting, say) is
// answered 409 Conflict and counted (Conflicts). A poll ends when its
// client's connection closes, so a bot killed and started again does not
// conflict with itself.
//
// # The bot's side
//
// Requests may be multipart/form-data (what go-telegram/bot sends), JSON or
// URL-encoded; reply_markup is a JSON string in the first and last. The
// token in the path is checked (401 otherwise); unknown methods answer 404.
// The server checks what Telegram checks that a test is likely to trip on:
// HTML that does not parse ("can't parse entities"), text over 4096 UTF-16
// units after parsing, empty text, callback data over 64 bytes, edits that
// change nothing, unknown messages. Sent records every successful
// sendMessage, edit, delete and answerCallbackQuery in order.
//
// # Failures on demand
//
// Fail429(n, retryAfter) answers the next n sendMessage calls with 429 and
// parameters.retry_after; a request to that chat (a send, an edit, a
// delete, a pin) before retry_after has passed is answered 429 again and
// counted (Early), so a test can assert that the bot honoured the wait
// without measuring durations. EnforceRates answers 429 past Telegram's
// rates (a request a second in a chat, 20 a minute in a group) and counts
// them (RateLimited).
// RefuseEntities(n) refuses the next n HTML sendMessage calls.
//
//	s := faketelegram.New("123:abc")
//	defer s.Close()
//	thread := s.CreateTopic(-100, "claude: fix the build")
//	s.Message(-100, thread, 42, "hello")
//	// ... run the bot against s.URL() ...
//	for _, m := range s.Messages(-100, thread) { ... }
package faketelegram
