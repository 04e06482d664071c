package feishu

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/thatch-run/thatch/im/chat"
)

// Event is one decoded Feishu event: *MessageReceived, *ChatRenamed,
// *ChatEnded or *CardPressed.
type Event interface{ isEvent() }

// MessageReceived is im.message.receive_v1.
type MessageReceived struct {
	ChatID string
	// ThreadID is the topic's thread (omt_...) in a topic group; empty
	// otherwise.
	ThreadID string
	// MessageID is the message's id (a reply target).
	MessageID string
	// ChatType is "group" or "p2p".
	ChatType string
	// SenderOpenID is the sender's open id (ou_...), what the allow-list
	// holds.
	SenderOpenID string
	// MessageType is Feishu's ("text", "post", "image", ...). Text is set
	// for text and for rich text ("post", as plain text: postText).
	MessageType string
	// Text is the message's text with every @-mention of the bot cut and
	// other mentions shown as @name; literal otherwise.
	Text string
	// File is the file an image, file, audio or media message carries
	// (messageFile); nil for none.
	File *chat.File
}

// ChatRenamed is im.chat.updated_v1 with a new name.
type ChatRenamed struct {
	ChatID         string
	Name           string
	OperatorOpenID string
}

// EndReason says why a chat ended for the bot.
type EndReason string

// Reasons a chat ends.
const (
	ChatDisbanded EndReason = "disbanded"   // im.chat.disbanded_v1
	BotRemoved    EndReason = "bot removed" // im.chat.member.bot.deleted_v1
)

// ChatEnded is a chat that is over for the bot.
type ChatEnded struct {
	ChatID         string
	Reason         EndReason
	OperatorOpenID string
}

// CardPressed is card.action.trigger: a button of a card pressed.
type CardPressed struct {
	ChatID    string
	MessageID string // the card's message
	// UserOpenID is who pressed.
	UserOpenID string
	// Value is the button's value as sent; a value that is not a string
	// is given as its JSON.
	Value map[string]string
}

func (*MessageReceived) isEvent() {}
func (*ChatRenamed) isEvent()     {}
func (*ChatEnded) isEvent()       {}
func (*CardPressed) isEvent()     {}

// Event types the adapter decodes.
const (
	typeMessage    = "im.message.receive_v1"
	typeChatUpdate = "im.chat.updated_v1"
	typeDisbanded  = "im.chat.disbanded_v1"
	typeBotRemoved = "im.chat.member.bot.deleted_v1"
	typeCardAction = "card.action.trigger"
)

type openID struct {
	OpenID string `json:"open_id"`
}

// decodeEvent decodes the event object of one event type. It answers
// nil, nil for a type the adapter does not take (and for a chat update
// that is not a rename).
func decodeEvent(eventType string, raw json.RawMessage, botOpenID string) (Event, error) {
	var (
		ev  Event
		err error
	)
	switch eventType {
	case typeMessage:
		ev, err = decodeMessage(raw, botOpenID)
	case typeChatUpdate:
		ev, err = decodeChatUpdate(raw)
	case typeDisbanded, typeBotRemoved:
		ev, err = decodeChatEnded(raw, eventType == typeBotRemoved)
	case typeCardAction:
		ev, err = decodeCardAction(raw)
	}
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", eventType, err)
	}
	return ev, nil
}

// decodeMessage reads an im.message.receive_v1: a text message's text has
// the bot's @-mention cut and other mentions shown as @name.
func decodeMessage(raw json.RawMessage, botOpenID string) (Event, error) {
	var e struct {
		Sender struct {
			SenderID openID `json:"sender_id"`
		} `json:"sender"`
		Message struct {
			MessageID   string `json:"message_id"`
			ChatID      string `json:"chat_id"`
			ThreadID    string `json:"thread_id"`
			ChatType    string `json:"chat_type"`
			MessageType string `json:"message_type"`
			Content     string `json:"content"`
			Mentions    []struct {
				Key  string `json:"key"`
				Name string `json:"name"`
				ID   openID `json:"id"`
			} `json:"mentions"`
		} `json:"message"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, err
	}
	m := e.Message
	if m.ChatID == "" || e.Sender.SenderID.OpenID == "" {
		return nil, errors.New("no chat or no sender")
	}
	ev := &MessageReceived{ChatID: m.ChatID, ThreadID: m.ThreadID, MessageID: m.MessageID, ChatType: m.ChatType,
		SenderOpenID: e.Sender.SenderID.OpenID, MessageType: m.MessageType}
	var text string
	switch m.MessageType {
	case "text":
		var c struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal([]byte(m.Content), &c); err != nil {
			return nil, fmt.Errorf("content: %w", err)
		}
		text = c.Text
	case "post":
		var err error
		if text, err = postText(m.Content); err != nil {
			return nil, fmt.Errorf("content: %w", err)
		}
	default:
		ev.File = messageFile(m.MessageType, m.MessageID, m.Content)
		return ev, nil
	}
	// Replace longer keys first: @_user_1 is a prefix of @_user_10.
	sort.Slice(m.Mentions, func(i, j int) bool { return len(m.Mentions[i].Key) > len(m.Mentions[j].Key) })
	for _, men := range m.Mentions {
		if men.Key == "" {
			continue
		}
		with := "@" + men.Name
		if botOpenID != "" && men.ID.OpenID == botOpenID {
			with = ""
		}
		text = strings.ReplaceAll(text, men.Key, with)
	}
	ev.Text = strings.TrimSpace(text)
	return ev, nil
}

// postElement is one element of a rich-text ("post") message's line.
type postElement struct {
	Tag      string `json:"tag"`
	Text     string `json:"text"`
	Href     string `json:"href"`
	UserID   string `json:"user_id"`
	UserName string `json:"user_name"`
}

// postText is a rich-text message as plain text, to be typed: the title
// (when there is one) and each line, its text, links as "text (url)",
// @-mentions by their key (replaced like a text message's), a code block
// as its code; an image or a video stands as "[image]" or "[media]"
// (they are not passed on); emoji and other tags are left out.
func postText(content string) (string, error) {
	var c struct {
		Title   string          `json:"title"`
		Content [][]postElement `json:"content"`
	}
	if err := json.Unmarshal([]byte(content), &c); err != nil {
		return "", err
	}
	var lines []string
	if strings.TrimSpace(c.Title) != "" {
		lines = append(lines, c.Title)
	}
	for _, line := range c.Content {
		var b strings.Builder
		for _, el := range line {
			switch el.Tag {
			case "text", "code_block", "md":
				b.WriteString(el.Text)
			case "a":
				switch {
				case el.Text == "" || el.Text == el.Href:
					b.WriteString(el.Href)
				default:
					b.WriteString(el.Text + " (" + el.Href + ")")
				}
			case "at":
				if el.UserID != "" {
					b.WriteString(el.UserID)
				} else {
					b.WriteString("@" + el.UserName)
				}
			case "img":
				b.WriteString("[image]")
			case "media":
				b.WriteString("[media]")
			}
		}
		lines = append(lines, b.String())
	}
	return strings.Join(lines, "\n"), nil
}

// decodeChatUpdate reads an im.chat.updated_v1; only a new name is an
// event (nil otherwise).
func decodeChatUpdate(raw json.RawMessage) (Event, error) {
	var e struct {
		ChatID     string `json:"chat_id"`
		OperatorID openID `json:"operator_id"`
		Before     struct {
			Name *string `json:"name"`
		} `json:"before_change"`
		After struct {
			Name *string `json:"name"`
		} `json:"after_change"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, err
	}
	if e.After.Name == nil || (e.Before.Name != nil && *e.Before.Name == *e.After.Name) {
		return nil, nil
	}
	return &ChatRenamed{ChatID: e.ChatID, Name: *e.After.Name, OperatorOpenID: e.OperatorID.OpenID}, nil
}

// decodeChatEnded reads an im.chat.disbanded_v1 or, with botRemoved, an
// im.chat.member.bot.deleted_v1.
func decodeChatEnded(raw json.RawMessage, botRemoved bool) (Event, error) {
	var e struct {
		ChatID     string `json:"chat_id"`
		OperatorID openID `json:"operator_id"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, err
	}
	if e.ChatID == "" {
		return nil, errors.New("no chat")
	}
	reason := ChatDisbanded
	if botRemoved {
		reason = BotRemoved
	}
	return &ChatEnded{ChatID: e.ChatID, Reason: reason, OperatorOpenID: e.OperatorID.OpenID}, nil
}

// decodeCardAction reads a card.action.trigger; its value's strings are
// taken as they are, other values as their JSON.
func decodeCardAction(raw json.RawMessage) (Event, error) {
	var e struct {
		Operator openID `json:"operator"`
		Action   struct {
			Value map[string]json.RawMessage `json:"value"`
		} `json:"action"`
		Context struct {
			MessageID string `json:"open_message_id"`
			ChatID    string `json:"open_chat_id"`
		} `json:"context"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, err
	}
	ev := &CardPressed{ChatID: e.Context.ChatID, MessageID: e.Context.MessageID, UserOpenID: e.Operator.OpenID,
		Value: map[string]string{}}
	for k, v := range e.Action.Value {
		var s string
		if json.Unmarshal(v, &s) == nil {
			ev.Value[k] = s
		} else {
			ev.Value[k] = string(v)
		}
	}
	return ev, nil
}
