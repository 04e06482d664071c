package faketelegram

import (
	"math"
	"strings"
	"time"
)

var botUser = map[string]any{"id": 1, "is_bot": true, "first_name": "thatch fake", "username": "thatch_fake_bot"}

// throttle applies a pending 429 to a request in chat id, c, a scripted
// one (Fail429) when it is a send, and Telegram's rates when they are
// enforced (under s.mu).
func (s *Server) throttle(id int64, c *chat, send bool) *apiErr {
	now := time.Now()
	if now.Before(c.blocked) {
		s.early++
		return tooMany(c.blocked.Sub(now))
	}
	if send && s.fail429 > 0 {
		s.fail429--
		c.blocked = now.Add(time.Duration(s.retry) * time.Second)
		return tooMany(time.Duration(s.retry) * time.Second)
	}
	if !s.rates {
		return nil
	}
	const (
		perSecond = 900 * time.Millisecond // a second, less the slack
		minute    = 59 * time.Second
		perMinute = 20
	)
	kept := c.starts[:0]
	for _, at := range c.starts {
		if now.Sub(at) < minute {
			kept = append(kept, at)
		}
	}
	c.starts = kept
	if n := len(c.starts); n > 0 && now.Sub(c.starts[n-1]) < perSecond {
		s.limited++
		return tooMany(perSecond - now.Sub(c.starts[n-1]))
	}
	if id < 0 && len(c.starts) >= perMinute {
		s.limited++
		return tooMany(minute - now.Sub(c.starts[len(c.starts)-perMinute]))
	}
	c.starts = append(c.starts, now)
	return nil
}

// tooMany is a 429 that asks to wait d, in whole seconds (at least one).
func tooMany(d time.Duration) *apiErr {
	wait := max(int(math.Ceil(d.Seconds())), 1)
	return &apiErr{code: 429, desc: "Too Many Requests: retry after " + itoa(wait), retryAfter: wait}
}

func (s *Server) sendMessage(p params) (any, *apiErr) {
	chatID, ok := p.int64("chat_id")
	if !ok {
		return nil, badRequest("chat not found")
	}
	thread, _ := p.int64("message_thread_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chat(chatID)
	if aerr := s.throttle(chatID, c, true); aerr != nil {
		return nil, aerr
	}
	if s.fail > 0 {
		if s.failOK == 0 {
			s.fail--
			s.failed++
			return nil, &apiErr{code: 500, desc: "Internal Server Error"}
		}
		s.failOK--
	}
	mode := p["parse_mode"]
	if s.refuse > 0 && strings.EqualFold(mode, "HTML") {
		s.refuse--
		return nil, badRequest("can't parse entities: Unsupported start tag \"x\" at byte offset 0")
	}
	shown, aerr := checkText(p["text"], mode)
	if aerr != nil {
		return nil, aerr
	}
	rows, aerr := keyboard(p)
	if aerr != nil {
		return nil, aerr
	}
	if thread != 0 && !c.forum {
		return nil, badRequest("message thread not found")
	}
	if c.closed[thread] {
		return nil, badRequest("TOPIC_CLOSED")
	}
	m, id := s.newMessage(chatID, thread, botUser)
	m["text"] = shown
	if rows != nil {
		m["reply_markup"] = markupObj(rows)
	}
	c.msgs[id] = &message{obj: m, thread: thread, text: p["text"], mode: mode, buttons: rows}
	s.record(Sent{Method: "sendMessage", ChatID: chatID, ThreadID: thread, MessageID: id, Text: p["text"], ParseMode: mode, Buttons: rows,
		Silent: p["disable_notification"] == "true"})
	return snapshot(m), nil
}

// editMessage serves editMessageText (text true) and editMessageReplyMarkup.
// As on Telegram, an editMessageText without reply_markup drops the buttons.
func (s *Server) editMessage(p params, text bool) (any, *apiErr) {
	method := "editMessageReplyMarkup"
	if text {
		method = "editMessageText"
	}
	chatID, _ := p.int64("chat_id")
	msgID, _ := p.int64("message_id")
	rows, aerr := keyboard(p)
	if aerr != nil {
		return nil, aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if aerr := s.throttle(chatID, s.chat(chatID), false); aerr != nil {
		return nil, aerr
	}
	m, ok := s.chat(chatID).msgs[int(msgID)]
	if !ok {
		return nil, badRequest("message to edit not found")
	}
	newText, mode, shown := m.text, m.mode, ""
	if text {
		newText, mode = p["text"], p["parse_mode"]
		if shown, aerr = checkText(newText, mode); aerr != nil {
			return nil, aerr
		}
	}
	if newText == m.text && mode == m.mode && sameRows(rows, m.buttons) {
		return nil, badRequest("message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
	}
	if text {
		m.obj["text"] = shown
	}
	m.text, m.mode, m.buttons = newText, mode, rows
	delete(m.obj, "reply_markup")
	if rows != nil {
		m.obj["reply_markup"] = markupObj(rows)
	}
	m.obj["edit_date"] = time.Now().Unix()
	rec := Sent{Method: method, ChatID: chatID, ThreadID: m.thread, MessageID: int(msgID), Buttons: rows}
	if text {
		rec.Text, rec.ParseMode = newText, mode
	}
	s.record(rec)
	return snapshot(m.obj), nil
}

func sameRows(a, b [][]Button) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

// answerCallback accepts one answer per query the server made.
func (s *Server) answerCallback(p params) (any, *apiErr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := p["callback_query_id"]
	cb, ok := s.callbacks[id]
	if !ok {
		return nil, badRequest("query is too old and response timeout expired or query ID is invalid")
	}
	delete(s.callbacks, id)
	s.record(Sent{Method: "answerCallbackQuery", ChatID: cb.chat, ThreadID: cb.thread, Text: p["text"]})
	return true, nil
}

// botMessage finds the bot's message a request names; s.mu is held.
func (s *Server) botMessage(p params, what string) (chatID int64, msgID int, c *chat, m *message, aerr *apiErr) {
	chatID, _ = p.int64("chat_id")
	id, _ := p.int64("message_id")
	c = s.chat(chatID)
	m, ok := c.msgs[int(id)]
	if !ok {
		return 0, 0, nil, nil, badRequest("message to %s not found", what)
	}
	return chatID, int(id), c, m, nil
}

func (s *Server) deleteMessage(p params) (any, *apiErr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	chatID, msgID, c, m, aerr := s.botMessage(p, "delete")
	if aerr == nil {
		aerr = s.throttle(chatID, c, false)
	}
	if aerr != nil {
		return nil, aerr
	}
	delete(c.msgs, msgID)
	s.record(Sent{Method: "deleteMessage", ChatID: chatID, ThreadID: m.thread, MessageID: msgID})
	return true, nil
}

// pinMessage pins a message of the chat (pinChatMessage): the pinned one
// is Pinned's answer.
func (s *Server) pinMessage(p params) (any, *apiErr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	chatID, msgID, c, m, aerr := s.botMessage(p, "pin")
	if aerr == nil {
		aerr = s.throttle(chatID, c, false)
	}
	if aerr != nil {
		return nil, aerr
	}
	c.pinned = msgID
	s.record(Sent{Method: "pinChatMessage", ChatID: chatID, ThreadID: m.thread, MessageID: msgID,
		Silent: p["disable_notification"] == "true"})
	return true, nil
}

// Pinned returns the message pinned in a chat (0: none).
func (s *Server) Pinned(chatID int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.chat(chatID).pinned
}
