package telegram

import (
	"github.com/go-telegram/bot/models"

	"github.com/thatch-run/thatch/im/chat"
)

// Inbound is one update, reduced to what a binding needs. Fields that the
// update does not carry are zero.
type Inbound struct {
	// UpdateID is the update's id.
	UpdateID int64
	// Cursor is what the caller may persist as the next Offset once it
	// has handled the update: every update before it is handled by then
	// (UpdateID+1 when nothing before this one is still being handled;
	// Run hands other conversations' updates over at once).
	Cursor int64
	// UserID is the sender (or the user who pressed a button).
	UserID int64
	// ChatID is the chat the update happened in.
	ChatID int64
	// ThreadID is the forum topic's message_thread_id when Topic is true;
	// otherwise (a private chat, a group without topics, a forum's General
	// topic) it is ChatID, so that (ChatID, ThreadID) always names one
	// conversation.
	ThreadID int64
	// Topic is true when ThreadID is a forum topic.
	Topic bool
	// Text is the message text; "" for service messages, callbacks and
	// updates of other kinds. A photo's caption is not text.
	Text string
	// Media names what a message without text carries instead ("photo",
	// "document", "voice message", ...); Caption is its caption. Bindings
	// pass text only: the caller says so, and may pass the caption on.
	Media, Caption string
	// File is the file the message carries that a binding may save (see
	// fileOf); nil for none.
	File *chat.File
	// TopicName is a topic name the update teaches, with NameSrc saying how.
	TopicName string
	// NameSrc says where TopicName comes from (chat.NameNone when it is
	// ""): forum_topic_created, forum_topic_edited, or the seed every
	// topic message carries (the topic's original name).
	NameSrc chat.NameSource
	// Closed and Reopened are set for the service messages of a topic
	// closed (forum_topic_closed) and reopened (forum_topic_reopened).
	Closed, Reopened bool
	// Callback is set when a user pressed an inline button.
	Callback *Callback
	// Other names the kind of an update that is neither a message nor a
	// callback query ("edited_message", "channel_post", ...). Such updates
	// are passed on with Text "" so that the caller can drop them and still
	// persist UpdateID+1.
	Other string
}

// Callback is a button press.
type Callback struct {
	// ID answers the press (AnswerCallback); Telegram shows a spinner until then.
	ID string
	// Data is the pressed Button's Data.
	Data string
	// MessageID is the message that carries the button.
	MessageID int
}

// inbound reduces an update to an Inbound.
func (b *Bot) inbound(u *models.Update) Inbound {
	in := Inbound{UpdateID: u.ID}
	switch {
	case u.Message != nil:
		fromMessage(&in, u.Message)
		in.Text = u.Message.Text
		if in.Text == "" {
			in.Media, in.Caption = mediaOf(u.Message), u.Message.Caption
			in.File = fileOf(u.Message)
		}
		teachName(&in, u.Message)
		in.Closed, in.Reopened = u.Message.ForumTopicClosed != nil, u.Message.ForumTopicReopened != nil
		if in.Closed || in.Reopened {
			in.Media = ""
		}
	case u.CallbackQuery != nil:
		q := u.CallbackQuery
		in.UserID = q.From.ID
		in.Callback = &Callback{ID: q.ID, Data: q.Data}
		switch {
		case q.Message.Message != nil:
			fromMessage(&in, q.Message.Message)
			in.Callback.MessageID = q.Message.Message.ID
		case q.Message.InaccessibleMessage != nil:
			// Too old to show its thread: the chat is all Telegram says.
			in.ChatID = q.Message.InaccessibleMessage.Chat.ID
			in.ThreadID = in.ChatID
			in.Callback.MessageID = q.Message.InaccessibleMessage.MessageID
		}
	default:
		in.Other = otherKind(u)
		for _, m := range []*models.Message{u.EditedMessage, u.ChannelPost, u.EditedChannelPost, u.BusinessMessage, u.EditedBusinessMessage} {
			if m != nil {
				fromMessage(&in, m)
				break
			}
		}
	}
	return in
}

// mediaOf names what a message carries that is not text ("" for none).
func mediaOf(m *models.Message) string {
	switch {
	case len(m.Photo) > 0:
		return "photo"
	case m.Document != nil:
		return "document"
	case m.Voice != nil:
		return "voice message"
	case m.Audio != nil:
		return "audio file"
	case m.Video != nil, m.VideoNote != nil, m.Animation != nil:
		return "video"
	case m.Sticker != nil:
		return "sticker"
	case m.Location != nil:
		return "location"
	case m.Contact != nil:
		return "contact"
	case m.Poll != nil:
		return "poll"
	}
	return ""
}

// fromMessage fills the sender and the conversation of m.
func fromMessage(in *Inbound, m *models.Message) {
	if m.From != nil && in.UserID == 0 {
		in.UserID = m.From.ID
	}
	in.ChatID = m.Chat.ID
	in.ThreadID = m.Chat.ID
	topic := m.IsTopicMessage || m.ForumTopicCreated != nil
	if topic {
		in.Topic = true
		in.ThreadID = int64(m.MessageThreadID)
		if in.ThreadID == 0 {
			// forum_topic_created opens the thread it names.
			in.ThreadID = int64(m.ID)
		}
	}
}

// teachName reports the topic name a message carries, the service
// messages first: they are newer than the seed.
func teachName(in *Inbound, m *models.Message) {
	switch {
	case m.ForumTopicCreated != nil:
		in.TopicName, in.NameSrc = m.ForumTopicCreated.Name, chat.NameCreated
	case m.ForumTopicEdited != nil && m.ForumTopicEdited.Name != "":
		in.TopicName, in.NameSrc = m.ForumTopicEdited.Name, chat.NameEdited
	case in.Topic && m.ReplyToMessage != nil && m.ReplyToMessage.ForumTopicCreated != nil:
		in.TopicName, in.NameSrc = m.ReplyToMessage.ForumTopicCreated.Name, chat.NameSeed
	}
}

// otherKind names an update that is neither a message nor a callback.
func otherKind(u *models.Update) string {
	switch {
	case u.EditedMessage != nil:
		return "edited_message"
	case u.ChannelPost != nil:
		return "channel_post"
	case u.EditedChannelPost != nil:
		return "edited_channel_post"
	case u.BusinessMessage != nil:
		return "business_message"
	case u.EditedBusinessMessage != nil:
		return "edited_business_message"
	case u.MyChatMember != nil:
		return "my_chat_member"
	case u.ChatMember != nil:
		return "chat_member"
	case u.MessageReaction != nil:
		return "message_reaction"
	case u.InlineQuery != nil:
		return "inline_query"
	}
	return "unknown"
}
