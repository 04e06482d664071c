package faketelegram

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// apiErr is a Bot API error answer.
type apiErr struct {
	code       int
	desc       string
	retryAfter int
}

func (e *apiErr) body() map[string]any {
	b := map[string]any{"ok": false, "error_code": e.code, "description": e.desc}
	if e.retryAfter > 0 {
		b["parameters"] = map[string]any{"retry_after": e.retryAfter}
	}
	return b
}

func badRequest(format string, args ...any) *apiErr {
	return &apiErr{code: 400, desc: "Bad Request: " + fmt.Sprintf(format, args...)}
}

// params are a request's parameters, every value as text (JSON values that
// are not strings keep their JSON text).
type params map[string]string

func (p params) int64(name string) (int64, bool) {
	v, ok := p[name]
	if !ok || v == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/file/bot") {
		s.serveFile(w, r)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		writeJSON(w, 404, (&apiErr{code: 404, desc: "Not Found"}).body())
		return
	}
	if token != s.token || s.revoked.Load() {
		writeJSON(w, 401, (&apiErr{code: 401, desc: "Unauthorized"}).body())
		return
	}
	p, err := parseParams(r)
	if err != nil {
		writeJSON(w, 400, badRequest("%v", err).body())
		return
	}
	s.keep(method, p)
	var result any
	var aerr *apiErr
	switch strings.ToLower(method) {
	case "getme":
		id, _ := strconv.ParseInt(strings.Split(s.token, ":")[0], 10, 64)
		result = map[string]any{"id": id, "is_bot": true, "first_name": "thatch fake", "username": "thatch_fake_bot"}
	case "getupdates":
		result, aerr = s.getUpdates(r, p)
	case "sendmessage":
		result, aerr = s.sendMessage(p)
	case "editmessagetext":
		result, aerr = s.editMessage(p, true)
	case "editmessagereplymarkup":
		result, aerr = s.editMessage(p, false)
	case "answercallbackquery":
		result, aerr = s.answerCallback(p)
	case "deletemessage":
		result, aerr = s.deleteMessage(p)
	case "pinchatmessage":
		result, aerr = s.pinMessage(p)
	case "sendphoto":
		result, aerr = s.sendPhoto(r, p)
	case "setmycommands":
		result, aerr = s.setMyCommands(p)
	case "sendchataction":
		result, aerr = s.sendChatAction(p)
	case "getfile":
		result, aerr = s.getFile(p)
	default:
		aerr = &apiErr{code: 404, desc: "Not Found"}
	}
	if aerr != nil {
		writeJSON(w, aerr.code, aerr.body())
		return
	}
	writeJSON(w, 200, map[string]any{"ok": true, "result": result})
}

// parseParams reads the query and a multipart, JSON or URL-encoded body.
func parseParams(r *http.Request) (params, error) {
	p := params{}
	for k, v := range r.URL.Query() {
		p[k] = v[0]
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		if err := r.ParseMultipartForm(12 << 20); err != nil {
			if errors.Is(err, io.EOF) {
				return p, nil // an empty form: a method with no parameters
			}
			return nil, fmt.Errorf("multipart body: %w", err)
		}
		for k, v := range r.MultipartForm.Value {
			p[k] = v[0]
		}
	case "application/json":
		body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
		if err != nil {
			return nil, err
		}
		var m map[string]json.RawMessage
		if len(body) > 0 {
			if err := json.Unmarshal(body, &m); err != nil {
				return nil, fmt.Errorf("JSON body: %w", err)
			}
		}
		for k, v := range m {
			var str string
			if json.Unmarshal(v, &str) == nil {
				p[k] = str
			} else {
				p[k] = string(v)
			}
		}
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			return nil, err
		}
		for k, v := range r.PostForm {
			p[k] = v[0]
		}
	}
	return p, nil
}

// errConflict is Telegram's answer to a getUpdates while another one of
// the same bot is still being served.
var errConflict = &apiErr{code: 409, desc: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}

// getUpdates drops the updates below offset for good, then answers those
// pending (at most limit), waiting up to timeout seconds for one to come.
// One is served at a time: another that comes meanwhile is answered 409
// and counted (Conflicts), and it drops nothing.
func (s *Server) getUpdates(r *http.Request, p params) (any, *apiErr) {
	s.mu.Lock()
	if s.serving > 0 {
		s.conflicts++
		s.mu.Unlock()
		return nil, errConflict
	}
	s.serving++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.serving--
		s.mu.Unlock()
	}()
	offset, _ := p.int64("offset")
	limit, ok := p.int64("limit")
	if !ok || limit <= 0 || limit > 100 {
		limit = 100
	}
	timeout, _ := p.int64("timeout")
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if offset > 0 {
			if offset-1 > s.confirmed {
				s.confirmed = offset - 1
			}
			i := 0
			for i < len(s.updates) && s.updates[i].id < offset {
				i++
			}
			s.updates = s.updates[i:]
		}
		if len(s.updates) > 0 || timeout <= 0 {
			n := min(int(limit), len(s.updates))
			out := make([]json.RawMessage, 0, n)
			for _, u := range s.updates[:n] {
				out = append(out, u.obj)
			}
			s.mu.Unlock()
			return out, nil
		}
		pushed := s.pushed
		s.polls++
		s.mu.Unlock()
		ended := false
		select {
		case <-pushed:
		case <-deadline.C:
			timeout = 0
		case <-r.Context().Done():
			ended = true
		case <-s.done:
			ended = true
		}
		s.mu.Lock()
		s.polls--
		s.mu.Unlock()
		if ended {
			return []any{}, nil
		}
	}
}

// keyboard decodes reply_markup: nil for none or an empty inline keyboard.
func keyboard(p params) ([][]Button, *apiErr) {
	raw, ok := p["reply_markup"]
	if !ok || raw == "" {
		return nil, nil
	}
	var mk struct {
		InlineKeyboard [][]struct {
			Text         string `json:"text"`
			CallbackData string `json:"callback_data"`
		} `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(raw), &mk); err != nil {
		return nil, badRequest("can't parse reply keyboard markup JSON object")
	}
	var rows [][]Button
	for _, row := range mk.InlineKeyboard {
		var r []Button
		for _, b := range row {
			if len(b.CallbackData) == 0 || len(b.CallbackData) > 64 {
				return nil, badRequest("BUTTON_DATA_INVALID")
			}
			r = append(r, Button{Text: b.Text, Data: b.CallbackData})
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func markupObj(rows [][]Button) map[string]any {
	kb := make([][]map[string]any, 0, len(rows))
	for _, row := range rows {
		r := make([]map[string]any, 0, len(row))
		for _, b := range row {
			r = append(r, map[string]any{"text": b.Text, "callback_data": b.Data})
		}
		kb = append(kb, r)
	}
	return map[string]any{"inline_keyboard": kb}
}

// checkText applies Telegram's checks on a text and its parse mode and
// returns the text as shown.
func checkText(text, mode string) (string, *apiErr) {
	shown := text
	switch strings.ToUpper(mode) {
	case "":
	case "HTML":
		var err error
		if shown, err = parseHTML(text); err != nil {
			return "", badRequest("can't parse entities: %v", err)
		}
	default:
		return "", badRequest("unsupported parse_mode %q", mode)
	}
	if strings.TrimSpace(shown) == "" {
		return "", badRequest("message text is empty")
	}
	if utf16Len(shown) > 4096 {
		return "", badRequest("message is too long")
	}
	return shown, nil
}

// keep keeps a request's method and parameters, in a stable order.
func (s *Server) keep(method string, p params) {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(method)
	for _, k := range keys {
		b.WriteString(" " + k + "=" + p[k])
	}
	s.mu.Lock()
	s.requests = append(s.requests, b.String())
	s.mu.Unlock()
}

// Requests returns every request the bot made, each its method and its
// parameters as received (a file's bytes left out): what left thatch for
// Telegram's servers.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}
