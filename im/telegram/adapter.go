package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	tgbot "github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/thatch-run/thatch/im/chat"
)

// Scheme is the prefix of Telegram's thread keys ("tg:<chat>:<thread>").
const Scheme = "tg"

// Limits are Telegram's: a message's text (UTF-16 units), a button's
// callback data, a topic's name.
var Limits = chat.Limits{MaxMessage: MaxMessageLen, MaxButtonData: 64, MaxName: 128}

// ThreadKey is the key of a conversation: the chat and the thread (a forum
// topic's message_thread_id; the chat id itself in a private chat, a group
// without topics and a forum's General topic).
func ThreadKey(chatID, threadID int64) string {
	return Scheme + ":" + strconv.FormatInt(chatID, 10) + ":" + strconv.FormatInt(threadID, 10)
}

// parseThread reads a ThreadKey back. A thread other than its chat is a
// forum topic: topic ids are message ids in a supergroup, whose chat id is
// negative, so the two never meet otherwise.
func parseThread(key string) (chatID, threadID int64, topic bool, err error) {
	rest, ok := strings.CutPrefix(key, Scheme+":")
	c, t, ok2 := strings.Cut(rest, ":")
	if ok && ok2 {
		chatID, err = strconv.ParseInt(c, 10, 64)
		if err == nil {
			threadID, err = strconv.ParseInt(t, 10, 64)
		}
		if err == nil && chatID != 0 && threadID != 0 {
			return chatID, threadID, threadID != chatID, nil
		}
	}
	return 0, 0, false, fmt.Errorf("%w: %q is not a Telegram thread", chat.ErrNoThread, key)
}

// Adapter is a Bot behind the chat interface (chat.Adapter): thread keys
// instead of chat and topic ids, text ids, the allow-list of user ids,
// and errors that say what the caller may do.
type Adapter struct {
	bot     *Bot
	allowed map[int64]bool
	name    atomic.Value // string: the bot's user name, from getMe
}

var (
	_ chat.Adapter       = (*Adapter)(nil)
	_ chat.Commander     = (*Adapter)(nil)
	_ chat.Typer         = (*Adapter)(nil)
	_ chat.PressAnswerer = (*Adapter)(nil)
)

// Open builds the Adapter: a Bot of o that starts receiving after
// r.Cursor (the last update handled + 1, as the Adapter's updates carry
// it; one that is not a number starts from Telegram's oldest), letting in
// the users of allowed (decimal user ids). It makes no request.
func Open(o Options, allowed []string, r chat.Resume) (*Adapter, error) {
	a := &Adapter{allowed: map[int64]bool{}}
	for _, u := range allowed {
		id, err := strconv.ParseInt(u, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: allowed user %q is not a user id", ErrOptions, u)
		}
		a.allowed[id] = true
	}
	if r.Cursor != "" {
		o.Offset, _ = strconv.ParseInt(r.Cursor, 10, 64)
		o.OffsetSaved = r.Saved
	}
	bot, err := New(o)
	if err != nil {
		return nil, err
	}
	a.bot = bot
	return a, nil
}

// Bot is the Bot behind the Adapter.
func (a *Adapter) Bot() *Bot { return a.bot }

// Name returns "telegram".
func (*Adapter) Name() string { return "telegram" }

// Scheme returns Scheme.
func (*Adapter) Scheme() string { return Scheme }

// Limits returns Limits.
func (*Adapter) Limits() chat.Limits { return Limits }

// Close closes the Bot.
func (a *Adapter) Close() { a.bot.Close() }

// Allows reports whether user (a decimal user id) is on the allow-list.
func (a *Adapter) Allows(user string) bool {
	id, err := strconv.ParseInt(user, 10, 64)
	return err == nil && a.allowed[id]
}

// Run runs the Bot's Run (see there), handing each update over as a
// chat.Update whose Cursor is the Inbound's.
func (a *Adapter) Run(ctx context.Context, handle chat.Handler) error {
	return a.bot.Run(ctx, func(ctx context.Context, in Inbound) error {
		return handle(ctx, Update(in))
	})
}

// Update turns an Inbound into a chat.Update. An update of no
// conversation (an inline query) has no Thread.
func Update(in Inbound) chat.Update {
	cursor := in.Cursor
	if cursor == 0 {
		cursor = in.UpdateID + 1 // an Inbound made by hand
	}
	u := chat.Update{ID: in.UpdateID, Cursor: strconv.FormatInt(cursor, 10), Topic: in.Topic,
		Text: in.Text, Media: in.Media, Caption: in.Caption, File: in.File, Name: in.TopicName, NameSrc: in.NameSrc, Other: in.Other}
	if in.ChatID != 0 && in.ThreadID != 0 {
		u.Thread = ThreadKey(in.ChatID, in.ThreadID)
	}
	if in.UserID != 0 {
		u.User = strconv.FormatInt(in.UserID, 10)
	}
	if c := in.Callback; c != nil {
		u.Press = &chat.Press{ID: c.ID, Data: c.Data, Message: strconv.Itoa(c.MessageID)}
	}
	switch {
	case in.Closed:
		u.Ended = &chat.Ended{Reason: "topic closed", Reopenable: true}
	case in.Reopened:
		u.Reopened = true
	}
	return u
}

// Send sends m with the Bot's Send (see there) into m.Thread.
func (a *Adapter) Send(ctx context.Context, m chat.Message) ([]string, error) {
	chatID, threadID, topic, err := parseThread(m.Thread)
	if err != nil {
		return nil, err
	}
	ids, err := a.bot.Send(ctx, Outbound{ChatID: chatID, ThreadID: threadID, Topic: topic, Text: m.Text, Markdown: m.Markdown,
		Buttons: buttons(m.Buttons), FromPart: m.FromPart, OnPart: m.OnPart, Silent: m.Silent})
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strconv.Itoa(id)
	}
	return out, chatErr(err)
}

// EditButtons replaces the buttons of a message (Bot.EditButtons).
func (a *Adapter) EditButtons(ctx context.Context, thread, messageID string, rows [][]chat.Button) error {
	chatID, id, err := chatMessage(thread, messageID)
	if err != nil {
		return err
	}
	return chatErr(a.bot.EditButtons(ctx, chatID, id, buttons(rows)))
}

// chatMessage parses a thread key and a message id of it.
func chatMessage(thread, messageID string) (int64, int, error) {
	chatID, _, _, err := parseThread(thread)
	if err != nil {
		return 0, 0, err
	}
	id, err := messageNumber(messageID)
	return chatID, id, err
}

// EditText replaces the text of a message (Bot.EditText); chat.Editor.
func (a *Adapter) EditText(ctx context.Context, thread, messageID, text string) error {
	chatID, id, err := chatMessage(thread, messageID)
	if err != nil {
		return err
	}
	return chatErr(a.bot.EditText(ctx, chatID, id, text))
}

// Pin pins a message (Bot.Pin); chat.Pinner.
func (a *Adapter) Pin(ctx context.Context, thread, messageID string) error {
	chatID, id, err := chatMessage(thread, messageID)
	if err != nil {
		return err
	}
	return chatErr(a.bot.Pin(ctx, chatID, id))
}

// Delete deletes a message (Bot.Delete).
func (a *Adapter) Delete(ctx context.Context, thread, messageID string) error {
	chatID, _, _, err := parseThread(thread)
	if err != nil {
		return err
	}
	id, err := messageNumber(messageID)
	if err != nil {
		return err
	}
	return chatErr(a.bot.Delete(ctx, chatID, id))
}

// AnswerPress answers a press (Bot.AnswerCallback); the thread is not
// needed on Telegram.
func (a *Adapter) AnswerPress(ctx context.Context, _, pressID, text string) error {
	return chatErr(a.bot.AnswerCallback(ctx, pressID, text))
}

// SendPhoto uploads p (sendPhoto), paced as the chat's other requests.
func (a *Adapter) SendPhoto(ctx context.Context, p chat.Photo) (string, error) {
	chatID, threadID, topic, err := parseThread(p.Thread)
	if err != nil {
		return "", err
	}
	if len(p.Data) == 0 {
		return "", chatErr(fmt.Errorf("telegram: sendPhoto: %w", ErrEmptyText))
	}
	name := p.Name
	if name == "" {
		name = "photo.png"
	}
	kb, err := keyboard(buttons(p.Buttons))
	if err != nil {
		return "", chatErr(err)
	}
	var msg *models.Message
	err = a.bot.attempt(ctx, a.bot.gate(chatID), "sendPhoto", func(ctx context.Context) (err error) {
		params := &tgbot.SendPhotoParams{ChatID: chatID, Caption: strings.ToValidUTF8(p.Caption, "\uFFFD"),
			Photo: &models.InputFileUpload{Filename: name, Data: bytes.NewReader(p.Data)}}
		if kb != nil {
			params.ReplyMarkup = kb
		}
		if topic {
			params.MessageThreadID = int(threadID)
		}
		msg, err = a.bot.api.SendPhoto(ctx, params)
		return err
	})
	if err != nil {
		return "", chatErr(a.bot.redact(fmt.Errorf("telegram: sendPhoto to chat %d: %w", chatID, err)))
	}
	return strconv.Itoa(msg.ID), nil
}

// Health says how polling goes, in words for status.
func (a *Adapter) Health() chat.Health {
	b := a.bot.Health()
	h := chat.Health{Up: b.Polling, Refused: b.Refused, LastError: b.LastError, Since: b.Since}
	switch {
	case b.Polling:
		h.State = "polling Telegram"
	case b.Refused:
		h.State = "Telegram refuses the bot token (check im.telegram.token); asking again"
	case b.LastError != "":
		h.State = "cannot reach Telegram; retrying"
	default:
		h.State = "starting"
	}
	return h
}

func buttons(rows [][]chat.Button) [][]Button {
	var out [][]Button
	for _, row := range rows {
		r := make([]Button, 0, len(row))
		for _, b := range row {
			r = append(r, Button{Text: b.Text, Data: b.Data})
		}
		out = append(out, r)
	}
	return out
}

func messageNumber(id string) (int, error) {
	n, err := strconv.Atoi(id)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: %q is not a Telegram message id", chat.ErrRefused, id)
	}
	return n, nil
}

// chatError keeps an error's text and causes, and adds the chat sentinel
// that says what the caller may do.
type chatError struct{ err, kind error }

func (e *chatError) Error() string   { return e.err.Error() }
func (e *chatError) Unwrap() []error { return []error{e.err, e.kind} }

// chatErr marks err with chat.ErrRefused (Permanent; with chat.ErrGone
// too when Gone), chat.ErrTimeout or chat.ErrRateLimited.
func chatErr(err error) error {
	switch {
	case err == nil:
		return nil
	case Gone(err):
		return &chatError{err, errors.Join(chat.ErrRefused, chat.ErrGone)}
	case Permanent(err):
		return &chatError{err, chat.ErrRefused}
	case errors.Is(err, ErrTimeout):
		return &chatError{err, chat.ErrTimeout}
	case errors.Is(err, ErrRateLimited):
		return &chatError{err, chat.ErrRateLimited}
	}
	return err
}

// SetCommands learns the bot's user name (getMe) and registers cmds with
// setMyCommands, so that clients offer them.
func (a *Adapter) SetCommands(ctx context.Context, cmds []chat.CommandHelp) error {
	var me *models.User
	err := a.bot.attempt(ctx, nil, "getMe", func(ctx context.Context) (err error) {
		me, err = a.bot.api.GetMe(ctx)
		return err
	})
	if err != nil {
		return chatErr(a.bot.redact(fmt.Errorf("telegram: getMe: %w", err)))
	}
	a.name.Store(me.Username)
	list := make([]models.BotCommand, len(cmds))
	for i, c := range cmds {
		list[i] = models.BotCommand{Command: c.Name, Description: c.Description}
	}
	err = a.bot.attempt(ctx, nil, "setMyCommands", func(ctx context.Context) error {
		_, err := a.bot.api.SetMyCommands(ctx, &tgbot.SetMyCommandsParams{Commands: list})
		return err
	})
	if err != nil {
		return chatErr(a.bot.redact(fmt.Errorf("telegram: setMyCommands: %w", err)))
	}
	return nil
}

// BotName is the bot's user name, once SetCommands learned it.
func (a *Adapter) BotName() string {
	name, _ := a.name.Load().(string)
	return name
}

// Typing sends the "typing" chat action to the thread (Telegram shows it
// for about 5 seconds, or until the bot's next message).
func (a *Adapter) Typing(ctx context.Context, thread string) error {
	chatID, threadID, topic, err := parseThread(thread)
	if err != nil {
		return err
	}
	params := &tgbot.SendChatActionParams{ChatID: chatID, Action: models.ChatActionTyping}
	if topic {
		params.MessageThreadID = int(threadID)
	}
	return chatErr(a.bot.inChat(ctx, chatID, "sendChatAction", func(ctx context.Context) error {
		_, err := a.bot.api.SendChatAction(ctx, params)
		return err
	}))
}

// Resume makes the next Run start after r.Cursor when that is further
// than where the Bot is (chat.Resumer).
func (a *Adapter) Resume(r chat.Resume) error {
	n, err := strconv.ParseInt(r.Cursor, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("%w: cursor %q is not an update id", ErrOptions, r.Cursor)
	}
	return a.bot.Resume(n, r.Saved)
}
