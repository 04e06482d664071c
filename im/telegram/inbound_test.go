package telegram

import (
	"reflect"
	"testing"

	"github.com/go-telegram/bot/models"

	"github.com/thatch-run/thatch/im/chat"
)

// TestInboundReducesUpdatesTheFakeCannotMake covers the shapes the fake
// server does not produce: other update kinds, a forum's General topic, a
// button on a message too old to be shown.
func TestInboundReducesUpdatesTheFakeCannotMake(t *testing.T) {
	forumChat := models.Chat{ID: -100, Type: "supergroup", IsForum: true}
	cases := []struct {
		name string
		u    models.Update
		want Inbound
	}{
		{"edited message is passed without text", models.Update{ID: 1, EditedMessage: &models.Message{
			ID: 4, Chat: forumChat, From: &models.User{ID: 7}, Text: "edited", MessageThreadID: 3, IsTopicMessage: true,
		}}, Inbound{UpdateID: 1, UserID: 7, ChatID: -100, ThreadID: 3, Topic: true, Other: "edited_message"}},
		{"channel post", models.Update{ID: 2, ChannelPost: &models.Message{ID: 1, Chat: models.Chat{ID: -300, Type: "channel"}, Text: "news"}},
			Inbound{UpdateID: 2, ChatID: -300, ThreadID: -300, Other: "channel_post"}},
		{"member change", models.Update{ID: 3, MyChatMember: &models.ChatMemberUpdated{}}, Inbound{UpdateID: 3, Other: "my_chat_member"}},
		{"General topic is the chat", models.Update{ID: 4, Message: &models.Message{ID: 9, Chat: forumChat, From: &models.User{ID: 7}, Text: "in general"}},
			Inbound{UpdateID: 4, UserID: 7, ChatID: -100, ThreadID: -100, Text: "in general"}},
		{"reply thread in a group is not a topic", models.Update{ID: 5, Message: &models.Message{
			ID: 9, Chat: models.Chat{ID: -200, Type: "supergroup"}, From: &models.User{ID: 7}, Text: "re", MessageThreadID: 8,
			ReplyToMessage: &models.Message{ID: 8, ForumTopicCreated: &models.ForumTopicCreated{Name: "not a topic"}},
		}}, Inbound{UpdateID: 5, UserID: 7, ChatID: -200, ThreadID: -200, Text: "re"}},
		{"icon-only topic edit teaches no name", models.Update{ID: 6, Message: &models.Message{
			ID: 10, Chat: forumChat, From: &models.User{ID: 7}, MessageThreadID: 3, IsTopicMessage: true,
			ForumTopicEdited: &models.ForumTopicEdited{IconCustomEmojiID: "1"},
			ReplyToMessage:   &models.Message{ID: 3, ForumTopicCreated: &models.ForumTopicCreated{Name: "orig"}},
		}}, Inbound{UpdateID: 6, UserID: 7, ChatID: -100, ThreadID: 3, Topic: true, TopicName: "orig", NameSrc: chat.NameSeed}},
		{"a photo is named, with its caption", models.Update{ID: 8, Message: &models.Message{
			ID: 11, Chat: forumChat, From: &models.User{ID: 7}, MessageThreadID: 3, IsTopicMessage: true,
			Photo: []models.PhotoSize{{FileID: "small", Width: 90, Height: 60, FileSize: 900}, {FileID: "large", Width: 1280, Height: 960, FileSize: 90000},
				{FileID: "medium", Width: 320, Height: 240, FileSize: 9000}}, Caption: "the failing screen",
		}}, Inbound{UpdateID: 8, UserID: 7, ChatID: -100, ThreadID: 3, Topic: true, Media: "photo", Caption: "the failing screen",
			File: &chat.File{Kind: chat.FilePhoto, Size: 90000, Mime: "image/jpeg", Ref: "large"}}},
		{"a document keeps its name", models.Update{ID: 9, Message: &models.Message{
			ID: 12, Chat: forumChat, From: &models.User{ID: 7}, MessageThreadID: 3, IsTopicMessage: true,
			Document: &models.Document{FileID: "d", FileName: "../../etc/passwd", MimeType: "text/plain", FileSize: 12},
		}}, Inbound{UpdateID: 9, UserID: 7, ChatID: -100, ThreadID: 3, Topic: true, Media: "document",
			File: &chat.File{Kind: chat.FileDocument, Name: "../../etc/passwd", Size: 12, Mime: "text/plain", Ref: "d"}}},
		{"a voice note", models.Update{ID: 10, Message: &models.Message{
			ID: 13, Chat: forumChat, From: &models.User{ID: 7}, MessageThreadID: 3, IsTopicMessage: true,
			Voice: &models.Voice{FileID: "v", MimeType: "audio/ogg", FileSize: 5},
		}}, Inbound{UpdateID: 10, UserID: 7, ChatID: -100, ThreadID: 3, Topic: true, Media: "voice message",
			File: &chat.File{Kind: chat.FileVoice, Size: 5, Mime: "audio/ogg", Ref: "v"}}},
		{"press on an inaccessible message", models.Update{ID: 7, CallbackQuery: &models.CallbackQuery{
			ID: "q", From: models.User{ID: 7}, Data: "d",
			Message: models.MaybeInaccessibleMessage{Type: models.MaybeInaccessibleMessageTypeInaccessibleMessage,
				InaccessibleMessage: &models.InaccessibleMessage{Chat: forumChat, MessageID: 12}},
		}}, Inbound{UpdateID: 7, UserID: 7, ChatID: -100, ThreadID: -100, Callback: &Callback{ID: "q", Data: "d", MessageID: 12}}},
	}
	b := &Bot{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := b.inbound(&c.u); !reflect.DeepEqual(got, c.want) {
				t.Errorf("\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}
