package faketelegram

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// BotCommand is one command the bot registered with setMyCommands.
type BotCommand struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}

// maxPhoto is Telegram's limit on a photo a bot uploads.
const maxPhoto = 10 << 20

// sendPhoto takes a multipart upload (the "photo" file) into a chat or a
// topic, with a caption and buttons, and records it with its bytes.
func (s *Server) sendPhoto(r *http.Request, p params) (any, *apiErr) {
	chatID, ok := p.int64("chat_id")
	if !ok {
		return nil, badRequest("chat not found")
	}
	if r.MultipartForm == nil || len(r.MultipartForm.File["photo"]) == 0 {
		return nil, badRequest("there is no photo in the request")
	}
	f, err := r.MultipartForm.File["photo"][0].Open()
	if err != nil {
		return nil, badRequest("photo: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPhoto+1))
	if err != nil || len(data) == 0 || len(data) > maxPhoto {
		return nil, badRequest("PHOTO_INVALID_DIMENSIONS")
	}
	rows, aerr := keyboard(p)
	if aerr != nil {
		return nil, aerr
	}
	thread, _ := p.int64("message_thread_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chat(chatID)
	if aerr := s.throttle(chatID, c, true); aerr != nil {
		return nil, aerr
	}
	if thread != 0 && !c.forum {
		return nil, badRequest("message thread not found")
	}
	m, id := s.newMessage(chatID, thread, botUser)
	m["photo"] = []any{map[string]any{"file_id": "photo-" + itoa(id), "file_unique_id": "u" + itoa(id), "width": 1, "height": 1}}
	if caption := p["caption"]; caption != "" {
		m["caption"] = caption
	}
	if rows != nil {
		m["reply_markup"] = markupObj(rows)
	}
	c.msgs[id] = &message{obj: m, thread: thread, buttons: rows}
	s.record(Sent{Method: "sendPhoto", ChatID: chatID, ThreadID: thread, MessageID: id, Text: p["caption"], Buttons: rows, Photo: data})
	return snapshot(m), nil
}

// setMyCommands keeps the bot's command list (Commands reads it).
func (s *Server) setMyCommands(p params) (any, *apiErr) {
	var cmds []BotCommand
	if err := json.Unmarshal([]byte(p["commands"]), &cmds); err != nil {
		return nil, badRequest("can't parse commands JSON object")
	}
	for _, c := range cmds {
		if c.Command == "" || len(c.Command) > 32 || c.Command != strings.ToLower(c.Command) || c.Description == "" {
			return nil, badRequest("BOT_COMMAND_INVALID")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commands = cmds
	return true, nil
}

// sendChatAction records a chat action (Actions reads them).
func (s *Server) sendChatAction(p params) (any, *apiErr) {
	chatID, ok := p.int64("chat_id")
	if !ok {
		return nil, badRequest("chat not found")
	}
	thread, _ := p.int64("message_thread_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.actions = append(s.actions, Sent{Method: "sendChatAction", ChatID: chatID, ThreadID: thread, Text: p["action"]})
	return true, nil
}

// Commands returns the command list the bot registered last.
func (s *Server) Commands() []BotCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]BotCommand(nil), s.commands...)
}

// Actions returns the chat actions sent, in order.
func (s *Server) Actions() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.actions...)
}
