package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	tgbot "github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/thatch-run/thatch/internal/retry"
)

// Button is one inline keyboard button.
type Button struct {
	// Text is the label.
	Text string
	// Data comes back as Callback.Data when the button is pressed: 1-64
	// bytes (Telegram's limit), else the call is refused with ErrButtonData.
	Data string
}

// Outbound is one message to send.
type Outbound struct {
	// ChatID is the chat to send to.
	ChatID int64
	// ThreadID is the forum topic; used only when Topic is true.
	ThreadID int64
	// Topic sends into ThreadID (message_thread_id).
	Topic bool
	// Text is Markdown-ish agent text (Markdown true) or plain text.
	Text string
	// Markdown renders Text with RenderHTML and sends HTML; plain otherwise.
	Markdown bool
	// Buttons are inline keyboard rows; they go on the last part only.
	Buttons [][]Button
	// FromPart skips the first parts of the split text: they were sent
	// before (a send going on after a failure or a restart).
	FromPart int
	// OnPart, if set, is called after each part but the last is sent, with
	// how many parts are sent in all (FromPart included), so that a caller
	// can record how far a long text got.
	OnPart func(sent int)
	// Silent sends without a notification (disable_notification).
	Silent bool
}

// maxNetRetries is how often a request that failed in the network (no
// answer from Telegram) is tried again before Send gives up.
const maxNetRetries = 3

// chatGate paces the requests to one chat: Telegram allows about one
// message a second per chat, and a 429 asks the whole chat to wait. It is
// never held while a request runs, so a request that hangs (one thread's
// send) holds up no other request to the chat (another thread's): each
// takes a turn, waits for it, and runs on its own.
type chatGate struct {
	mu sync.Mutex
	// next is the earliest start of the next request: ChatInterval after
	// the last turn taken and after the last answer.
	next time.Time
	// until is the end of the last 429's retry_after: no request to the
	// chat starts before it.
	until time.Time
	// starts are the starts of the last GroupPerMinute turns of a group
	// chat (nil for a private chat): the next starts a minute after the
	// oldest.
	starts []time.Time
	group  bool
}

func (b *Bot) gate(chatID int64) *chatGate {
	b.mu.Lock()
	defer b.mu.Unlock()
	g, ok := b.chats[chatID]
	if !ok {
		g = &chatGate{group: chatID < 0 && b.perMinute > 0}
		b.chats[chatID] = g
	}
	return g
}

// turn waits for the chat's next turn and takes it: requests start in the
// order they asked, spaced by ChatInterval, at most GroupPerMinute in any
// minute in a group (the typing sign not counted; an edit of a text only
// while the minute has taken fewer than half of them), none before a
// 429's retry_after is over. A turn further off than SendTimeout is not
// waited for (the wait is bounded as the request is): ErrRateLimited,
// and the turn is not taken.
func (b *Bot) turn(ctx context.Context, g *chatGate, method string) error {
	// The typing sign is no message: it is spaced, but not counted. An
	// edit of a message's text (a live turn, a board) may take only half
	// of a group's minute: the rest is kept for messages, which a user
	// waits for.
	counted := g.group && method != "sendChatAction"
	limit := b.perMinute
	if method == "editMessageText" {
		limit = max(b.perMinute/2, 1)
	}
	g.mu.Lock()
	now := time.Now()
	at := now
	if g.next.After(at) {
		at = g.next
	}
	if g.until.After(at) {
		at = g.until
	}
	if counted && len(g.starts) >= limit {
		if free := g.starts[len(g.starts)-limit].Add(time.Minute); free.After(at) {
			at = free
		}
	}
	if wait := at.Sub(now); wait > b.sendTO {
		g.mu.Unlock()
		return fmt.Errorf("%w: its next turn is %v away, over %v", ErrRateLimited, wait.Round(time.Millisecond), b.sendTO)
	}
	g.next = at.Add(max(b.interval, 0))
	if counted {
		g.starts = append(g.starts, at)
		if n := len(g.starts); n > b.perMinute {
			g.starts = slices.Delete(g.starts, 0, n-b.perMinute)
		}
	}
	g.mu.Unlock()
	retry.Sleep(ctx, time.Until(at))
	return ctx.Err()
}

// answered spaces the chat's next request from the answer to the last one
// too, not only from its start.
func (b *Bot) answered(g *chatGate) {
	if b.interval <= 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if next := time.Now().Add(b.interval); next.After(g.next) {
		g.next = next
	}
}

// wait429 makes every request to the chat wait until retry_after is over.
func (g *chatGate) wait429(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if until := time.Now().Add(d); until.After(g.until) {
		g.until = until
	}
}

// Send delivers m, split under MaxMessageLen (see Split; a Markdown text is
// split before rendering, a code block cut in two is closed and reopened),
// in order from part m.FromPart on (the split is the same for the same
// text; a FromPart past the last part sends the whole text again), and
// returns the message ids of the parts it sent. A Markdown part that
// Telegram refuses to parse ("can't parse entities") is sent again as its
// plain text. Requests to one chat are spaced by ChatInterval; on 429
// every request to the chat waits the retry_after Telegram gives, and Send
// sends the same part again: it never drops or reorders a part. Each
// part's request and each wait for the chat's turn are bounded by
// SendTimeout: a part without an answer by then fails with ErrTimeout, a
// longer wait with ErrRateLimited, so the caller sends again later from
// the part it got to. A network failure is retried a few times; any other
// failure is returned, with the ids of the parts already sent. Parts that
// would show nothing are skipped.
func (b *Bot) Send(ctx context.Context, m Outbound) ([]int, error) {
	markup, err := keyboard(m.Buttons)
	if err != nil {
		return nil, err
	}
	parts := b.parts(m)
	if len(parts) == 0 {
		return nil, ErrEmptyText
	}
	if m.FromPart >= len(parts) {
		// The text splits into fewer parts than were sent (a new build
		// splits it otherwise): the last part, and a prompt's buttons,
		// must not be lost, so the whole text goes out again.
		m.FromPart = 0
	}
	g := b.gate(m.ChatID)
	var ids []int
	for i, p := range parts {
		if i < m.FromPart {
			continue
		}
		params := &tgbot.SendMessageParams{ChatID: m.ChatID, Text: p.plain, DisableNotification: m.Silent}
		if m.Topic {
			params.MessageThreadID = int(m.ThreadID)
		}
		if i == len(parts)-1 && markup != nil {
			params.ReplyMarkup = markup
		}
		id, err := b.sendPart(ctx, g, params, p)
		if err != nil {
			return ids, b.redact(fmt.Errorf("telegram: sendMessage to chat %d, part %d of %d: %w", m.ChatID, i+1, len(parts), err))
		}
		ids = append(ids, id)
		if i < len(parts)-1 && m.OnPart != nil {
			m.OnPart(i + 1)
		}
	}
	return ids, nil
}

// part is one message of a split text: its HTML ("" when sent plain) and
// its plain text.
type part struct{ html, plain string }

func (b *Bot) parts(m Outbound) []part {
	text := strings.ToValidUTF8(m.Text, "\uFFFD")
	var parts []part
	if !m.Markdown {
		for _, p := range Split(text, MaxMessageLen) {
			if strings.TrimSpace(p) != "" {
				parts = append(parts, part{plain: p})
			}
		}
		return parts
	}
	for _, p := range splitMarkdown(text, MaxMessageLen) {
		html := RenderHTML(p)
		if strings.TrimSpace(visibleText(html)) != "" {
			parts = append(parts, part{html: html, plain: p})
		}
	}
	return parts
}

// sendPart sends one part, as HTML when it has some and as plain text if
// Telegram cannot parse the HTML.
func (b *Bot) sendPart(ctx context.Context, g *chatGate, params *tgbot.SendMessageParams, p part) (int, error) {
	if p.html != "" {
		params.Text, params.ParseMode = p.html, models.ParseModeHTML
	}
	var msg *models.Message
	send := func(ctx context.Context) (err error) {
		msg, err = b.api.SendMessage(ctx, params)
		return err
	}
	err := b.attempt(ctx, g, "sendMessage", send)
	if err != nil && p.html != "" && isParseError(err) {
		b.log.Warn("Telegram refused the HTML of a part; sending it as plain text", "chat_id", params.ChatID, "error", b.redact(err))
		params.Text, params.ParseMode = p.plain, ""
		err = b.attempt(ctx, g, "sendMessage", send)
	}
	if err != nil {
		return 0, err
	}
	return msg.ID, nil
}

func isParseError(err error) bool {
	return errors.Is(err, tgbot.ErrorBadRequest) && strings.Contains(err.Error(), "can't parse entities")
}

// attempt runs one request until it gets an answer other than 429. Each
// try first waits for the chat's turn (g nil: no pacing; see turn), and
// gets SendTimeout to be answered: one that is not fails with ErrTimeout
// and is not tried again here (Telegram may have acted on it; the caller
// decides when to try again). A 429 makes the chat wait its retry_after
// (no longer than SendTimeout: ErrRateLimited) and the same request is
// tried again; a network failure is retried up to maxNetRetries times. It
// returns ctx's error once ctx ends.
func (b *Bot) attempt(ctx context.Context, g *chatGate, method string, fn func(context.Context) error) error {
	netFailures := 0
	for {
		if g != nil {
			if err := b.turn(ctx, g, method); err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, b.sendTO)
		err := fn(rctx)
		timedOut := errors.Is(rctx.Err(), context.DeadlineExceeded)
		cancel()
		if g != nil {
			b.answered(g)
		}
		var tooMany *tgbot.TooManyRequestsError
		var netErr *url.Error
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case timedOut:
			return fmt.Errorf("%w: %s got no answer within %v: %w", ErrTimeout, method, b.sendTO, err)
		case errors.As(err, &tooMany):
			wait := time.Duration(tooMany.RetryAfter) * time.Second
			if wait <= 0 {
				wait = time.Second
			}
			b.log.Warn("Telegram asks to slow down; retrying the same request", "method", method, "retry_after", wait)
			if g != nil {
				g.wait429(wait) // the next turn waits it out, or says it is too far off
				continue
			}
			if wait > b.sendTO {
				return fmt.Errorf("%w: %s was asked to wait %v: %w", ErrRateLimited, method, wait, err)
			}
			retry.Sleep(ctx, wait)
		case errors.As(err, &netErr) && netFailures < maxNetRetries:
			netFailures++
			wait := minBackoff << netFailures
			b.log.Warn("request failed in the network; retrying", "method", method, "error", b.redact(err), "wait", wait)
			retry.Sleep(ctx, wait)
		default:
			return err
		}
	}
}

// keyboard checks rows and builds their markup; nil rows make nil markup.
func keyboard(rows [][]Button) (*models.InlineKeyboardMarkup, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	kb := &models.InlineKeyboardMarkup{InlineKeyboard: make([][]models.InlineKeyboardButton, 0, len(rows))}
	for _, row := range rows {
		r := make([]models.InlineKeyboardButton, 0, len(row))
		for _, btn := range row {
			if len(btn.Data) == 0 || len(btn.Data) > 64 {
				return nil, fmt.Errorf("%w: button %q has %d bytes", ErrButtonData, btn.Text, len(btn.Data))
			}
			r = append(r, models.InlineKeyboardButton{Text: btn.Text, CallbackData: btn.Data})
		}
		kb.InlineKeyboard = append(kb.InlineKeyboard, r)
	}
	return kb, nil
}

// EditButtons replaces the inline keyboard of a message the bot sent
// (editMessageReplyMarkup); nil rows remove it. Setting the keyboard a
// message already has succeeds (Telegram's "message is not modified").
func (b *Bot) EditButtons(ctx context.Context, chatID int64, messageID int, rows [][]Button) error {
	markup, err := keyboard(rows)
	if err != nil {
		return err
	}
	params := &tgbot.EditMessageReplyMarkupParams{ChatID: chatID, MessageID: messageID}
	if markup != nil {
		params.ReplyMarkup = markup
	} else {
		params.ReplyMarkup = &models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{}}
	}
	return b.inChat(ctx, chatID, "editMessageReplyMarkup", func(ctx context.Context) error {
		_, err := b.api.EditMessageReplyMarkup(ctx, params)
		return err
	})
}

// Pin pins a message of a chat without a notification (pinChatMessage).
func (b *Bot) Pin(ctx context.Context, chatID int64, messageID int) error {
	params := &tgbot.PinChatMessageParams{ChatID: chatID, MessageID: messageID, DisableNotification: true}
	return b.inChat(ctx, chatID, "pinChatMessage", func(ctx context.Context) error {
		_, err := b.api.PinChatMessage(ctx, params)
		return err
	})
}

// EditText replaces the text of a message the bot sent, as plain text.
// Telegram drops the message's buttons when an edit carries none: call
// EditButtons afterwards to keep some. Setting the text a message already
// has succeeds.
func (b *Bot) EditText(ctx context.Context, chatID int64, messageID int, text string) error {
	text = strings.ToValidUTF8(text, "\uFFFD")
	if strings.TrimSpace(text) == "" {
		return ErrEmptyText
	}
	if utf16Len(text) > MaxMessageLen {
		return fmt.Errorf("%w: %d units", ErrTooLong, utf16Len(text))
	}
	params := &tgbot.EditMessageTextParams{ChatID: chatID, MessageID: messageID, Text: text}
	return b.inChat(ctx, chatID, "editMessageText", func(ctx context.Context) error {
		_, err := b.api.EditMessageText(ctx, params)
		return err
	})
}

// Delete deletes a message. A message that is gone already counts as deleted.
func (b *Bot) Delete(ctx context.Context, chatID int64, messageID int) error {
	params := &tgbot.DeleteMessageParams{ChatID: chatID, MessageID: messageID}
	return b.inChat(ctx, chatID, "deleteMessage", func(ctx context.Context) error {
		_, err := b.api.DeleteMessage(ctx, params)
		return err
	})
}

// AnswerCallback answers a button press, showing text as a toast ("" shows
// nothing and only stops the spinner).
func (b *Bot) AnswerCallback(ctx context.Context, callbackID, text string) error {
	params := &tgbot.AnswerCallbackQueryParams{CallbackQueryID: callbackID, Text: text}
	err := b.attempt(ctx, nil, "answerCallbackQuery", func(ctx context.Context) error {
		_, err := b.api.AnswerCallbackQuery(ctx, params)
		return err
	})
	if err != nil {
		return b.redact(fmt.Errorf("telegram: answerCallbackQuery: %w", err))
	}
	return nil
}

// inChat runs one request to chatID, paced by its gate, and treats the
// answers that mean "already so" as success.
func (b *Bot) inChat(ctx context.Context, chatID int64, method string, fn func(context.Context) error) error {
	err := b.attempt(ctx, b.gate(chatID), method, fn)
	if err == nil || alreadySo(err) {
		return nil
	}
	return b.redact(fmt.Errorf("telegram: %s in chat %d: %w", method, chatID, err))
}

// alreadySo recognizes Telegram's answers for an edit that changes nothing
// and a delete of a message that is gone, so that a retried call after a
// crash succeeds.
func alreadySo(err error) bool {
	if !errors.Is(err, tgbot.ErrorBadRequest) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "message is not modified") || strings.Contains(msg, "message to delete not found")
}

// Gone reports whether Send failed because the thread is over for the
// bot: the chat or the topic is gone (400 "chat not found", "message
// thread not found", "TOPIC_DELETED"), or the bot was removed or blocked
// (403 Forbidden). The binding of such a thread ends.
func Gone(err error) bool {
	if errors.Is(err, tgbot.ErrorForbidden) {
		return true
	}
	if !errors.Is(err, tgbot.ErrorBadRequest) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "chat not found") || strings.Contains(msg, "message thread not found") ||
		strings.Contains(msg, "TOPIC_DELETED")
}

// Permanent reports whether Send failed in a way that sending again
// cannot mend: Telegram refused the request (400 Bad Request: the topic or
// chat is gone, the text cannot be sent; 403 Forbidden: the bot was
// removed or blocked), or the message has nothing to send. A 429
// (ErrRateLimited), a network failure or a timeout (ErrTimeout) is not
// permanent.
func Permanent(err error) bool {
	return errors.Is(err, tgbot.ErrorBadRequest) || errors.Is(err, tgbot.ErrorForbidden) ||
		errors.Is(err, tgbot.ErrorNotFound) || errors.Is(err, ErrEmptyText) || errors.Is(err, ErrTooLong) ||
		errors.Is(err, ErrButtonData)
}
