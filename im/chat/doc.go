// Package chat is the one interface the IM front end speaks to a chat
// platform through: an Adapter receives a platform's updates (messages,
// thread renames, button presses, chats that end) and acts in its chats
// (send, edit buttons, delete, photos, answer presses). Telegram
// (im/telegram) is its first implementation; Feishu is the second.
//
// It holds types, sentinel errors and helpers only. It may import the
// standard library; it must not import anything of thatch, Pebble,
// protoactor or net/http: adapters import it, not the other way round.
//
// # Files
//
// A message that carries a file (a photo, a document, a voice note) names
// it in Update.File, whose Ref only its adapter reads; Download fetches
// it later, bounded by the platform's limit, the caller's and the
// context, failing with ErrTooLarge over them. The front end downloads a
// file after the update is journaled, never while the adapter waits to
// confirm it.
//
// # Threads
//
// A thread is one conversation bound to one agent session. Its key is
// made by the adapter, never by the front end, and starts with the
// adapter's Scheme and a colon: "tg:<chat>:<thread>" on Telegram (a
// forum topic; the chat id twice for a private chat),
// "fs:<chat_id>" and "fs:<chat_id>:<thread_id>" on Feishu. The key is
// the binding entity's id, so it must never change for a thread; every
// call that acts in a chat is addressed by it (SchemeOf finds the
// adapter).
//
// # Receiving: confirm after journal
//
// Run hands the updates of one thread to its Handler one at a time, in
// the platform's order, and those of different threads at once (a thread
// whose binding is slow holds up no other); it confirms one to the
// platform only once the Handler returned nil for it and, where the
// platform confirms a prefix (Telegram's offset), for every one before it
// (the front end returns once the thread's binding journaled it). A Handler that fails gets the same update again: nothing is
// skipped. A crash before the confirmation makes the platform deliver the
// update again, and the binding drops an Update.ID it has handled: so IDs
// must be the same when an update is delivered again, and increase along
// a thread. Each Update also carries a Cursor, which passes only updates
// handled by the time this one is: once it is handled, the front end stores it, and gives it back to the adapter as Resume at the
// next start, so that it asks for what follows.
//
// # Sending
//
// Send splits a text under the platform's Limits, in order, and may be
// called for several threads at once; one thread's send that hangs or
// waits out a rate limit must not hold up another thread's. Errors say
// what the caller may do (errors.Is): ErrRefused (the platform refused
// for good: do not send again), ErrTimeout and ErrRateLimited (send again
// later, from the part reached: Message.FromPart).
//
// # Example
//
//	a, err := telegram.Open(opts, chat.Resume{Cursor: stored})
//	go a.Run(ctx, func(ctx context.Context, u chat.Update) error {
//		if err := deliver(ctx, u); err != nil { return err } // offered again
//		return store(u.Cursor)
//	})
//	ids, err := a.Send(ctx, chat.Message{Thread: u.Thread, Text: reply, Markdown: true})
package chat
