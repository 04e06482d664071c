// Package telegram is thatch's Telegram adapter: it long-polls a bot's
// updates and hands them, in order within each conversation and
// conversations at once, to the IM front end
// as Inbound values (one forum topic = one agent session), and it sends the
// front end's replies (split, rendered, paced) back. It decides nothing
// about bindings: it translates.
//
// It may import the standard library, github.com/go-telegram/bot,
// go-hclog and im/chat. It must not import Pebble, protoactor, hosts/...
// or supervisor: what it learns goes to its caller, which owns the state.
//
// # The chat interface
//
// Adapter (Open) is the Bot behind chat.Adapter, which is all the IM
// front end sees: a conversation is the thread key "tg:<chat>:<thread>"
// (ThreadKey; the chat id twice outside a forum topic), user and message
// ids are decimal text, an update's Cursor is its id + 1 (given back as
// chat.Resume, it is Options.Offset), the allow-list is of user ids, and
// errors carry chat.ErrRefused (Permanent), chat.ErrTimeout or
// chat.ErrRateLimited beside this package's own.
//
// # Receiving: exact offsets
//
// Telegram drops an update once a getUpdates call asks with an offset past
// it. The library's polling loop (get_updates.go) advances its offset as
// soon as it pushes an update to its channel, so its next getUpdates would
// confirm updates the handler has not finished, and a crash would lose
// them. Run therefore issues getUpdates itself (a small JSON POST decoded
// into the library's models.Update) and uses the library for everything
// else. The offset Run sends is always "last update handle returned nil for
// + 1": it starts at Options.Offset, advances only after a successful
// handle, and the updates of a batch are handled strictly in order, so an
// update is confirmed only after it and every update before it were
// handled. When handle fails, Run first confirms what it handled (a
// getUpdates with that offset, limit 1, no wait), then waits and calls
// handle again with the same update; it does the same on its way out when
// ctx ends. A crash before handle returns leaves the update unconfirmed and
// Telegram delivers it again; the caller, which persists UpdateID+1, may
// see an update twice across a crash but never misses one.
//
// # What Run passes on
//
// Messages (Text, topic names) and callback queries are passed as they
// are. Updates of every other kind (edited messages, channel posts, member
// changes, ...) are passed too, with Text "" and Other naming the kind: the
// caller drops them but still persists their UpdateID. Topic names come
// from forum_topic_created (chat.NameCreated), forum_topic_edited (chat.NameEdited)
// and, on every message in a topic, reply_to_message.forum_topic_created
// (chat.NameSeed, the topic's original name); ranking them is the caller's job.
// A message's photo (its largest size), document, voice note, audio or
// video comes as a chat.File (its file_id the Ref); Download asks getFile
// for its path and reads <api_url>/file/bot<token>/<path>, up to
// MaxDownload (20 MB, the Bot API's limit for bots).
//
// # Sending
//
// Send splits a text under Telegram's 4096 UTF-16 units (Split; Markdown
// is split before it is rendered and rendering only removes characters),
// renders Markdown to HTML with everything escaped (RenderHTML), falls back
// to plain text when Telegram cannot parse a part, spaces requests to one
// chat by Options.ChatInterval, and waits out 429s (retry_after, which
// holds every request to the chat) without dropping or reordering a part.
//
// Every request that acts in a chat, and every wait for the chat's turn,
// is bounded by Options.SendTimeout (ErrTimeout, ErrRateLimited; neither
// is Permanent, so the caller sends again later from the part it got to).
// The requests to one chat take turns but hold no lock while they run: a
// send that hangs in one thread of a forum holds up no other thread of
// it.
//
// # Secrets
//
// The token is part of every request URL. No error this package returns or
// logs holds it: the text of each is redacted ("<token>").
//
// # Example
//
//	b, err := telegram.New(telegram.Options{Token: token, Offset: persisted, Logger: log.Named("telegram")})
//	if err != nil { return err }
//	defer b.Close()
//	go b.Run(ctx, func(ctx context.Context, in telegram.Inbound) error {
//		if err := front.Handle(ctx, in); err != nil { return err } // retried
//		return store.SaveOffset(in.UpdateID + 1)
//	})
//	ids, err := b.Send(ctx, telegram.Outbound{ChatID: c, ThreadID: t, Topic: true, Text: reply, Markdown: true})
package telegram
