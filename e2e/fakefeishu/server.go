package fakefeishu

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Feishu's answer codes the fake gives.
const (
	CodeOK          = 0
	CodeRateLimit   = 99991400 // the app's frequency limit (HTTP 429)
	CodeChatLimit   = 230020   // the per-chat limit
	CodeChatGone    = 230002   // the chat is gone or the bot is not in it
	CodeBadToken    = 99991663 // the tenant access token is invalid
	CodeBadRequest  = 230001   // the request's parameters are invalid
	CodeTooLarge    = 230025   // the message's content is over the limit
	CodeNotFound    = 230011   // no such message (recalled or never sent)
	CodeNotCard     = 230031   // a patch of a message that is not a card
	CodeUnknownChat = 232011   // chat info of a chat the bot is not in
)

// Size limits of a message call's request body, as Feishu documents them.
const (
	MaxTextBody = 150 * 1024
	MaxCardBody = 30 * 1024
)

// Chat is a chat the fake knows. Mode is "group" (the default), "topic"
// or "p2p"; Peer is a P2P chat's other member.
type Chat struct {
	ID   string
	Name string
	Mode string
	Peer string
}

// Sent is one successful message call, as the bot made it.
type Sent struct {
	// Op is "create", "reply", "patch" or "delete".
	Op string
	// ChatID is the chat the message is in.
	ChatID string
	// MessageID is the new message's id (create, reply) or the one the
	// call was about (patch, delete).
	MessageID string
	// ReplyTo is the message a reply answers; InThread says it went to
	// that message's thread (reply_in_thread).
	ReplyTo  string
	InThread bool
	// MsgType and Content are as sent: Content is the JSON string.
	MsgType string
	Content string
}

// Text is the text of a text message (empty for other types).
func (s Sent) Text() string {
	var c struct {
		Text string `json:"text"`
	}
	if s.MsgType != "text" || json.Unmarshal([]byte(s.Content), &c) != nil {
		return ""
	}
	return c.Text
}

type message struct {
	chatID  string
	msgType string
	deleted bool
}

type limit struct {
	code  int
	reset time.Duration
}

// Server is the fake. It is ready when New returns.
type Server struct {
	// URL is the base URL to give the client (lark.WithOpenBaseUrl).
	URL string
	// BotOpenID is the bot's open id, as bot info answers it.
	BotOpenID string

	appID, appSecret string
	srv              *httptest.Server

	mu       sync.Mutex
	tokens   map[string]bool
	issued   int
	chats    map[string]*Chat
	gone     map[string]bool
	goneHits map[string]int
	users    map[string]string
	messages map[string]*message
	nextID   int
	sent     []Sent
	images   map[string][]byte // image_key -> the uploaded bytes
	limits   []limit
	until    map[string]limitUntil
	early    int
	calls    int

	ws wsSide // the long connection's side (ws.go)

	// resources are the files users' messages carry (files.go).
	fmu       sync.Mutex
	resources map[string]resource
}

type limitUntil struct {
	code int
	at   time.Time
}

// New starts a fake for one app on 127.0.0.1.
func New(appID, appSecret string) *Server {
	s := &Server{
		BotOpenID: "ou_bot",
		appID:     appID,
		appSecret: appSecret,
		tokens:    map[string]bool{},
		chats:     map[string]*Chat{},
		gone:      map[string]bool{},
		goneHits:  map[string]int{},
		images:    map[string][]byte{},
		users:     map[string]string{},
		messages:  map[string]*message{},
		until:     map[string]limitUntil{},
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("fakefeishu: listen: %v", err))
	}
	s.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(s.serve)}}
	s.srv.Start()
	s.URL = s.srv.URL
	return s
}

// Close stops the server, long connections included.
func (s *Server) Close() {
	s.DropConnections()
	s.srv.Close()
}

// AddChat makes a chat known (chat info answers it, sends to it succeed).
func (s *Server) AddChat(c Chat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Mode == "" {
		c.Mode = "group"
	}
	s.chats[c.ID] = &c
	delete(s.gone, c.ID)
}

// AddUser makes a user known to the contact API.
func (s *Server) AddUser(openID, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[openID] = name
}

// Received makes a user's message known (one a test posts as an event),
// so that the bot can reply to it.
func (s *Server) Received(chatID, messageID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.messages[messageID] = &message{chatID: chatID, msgType: "text"}
}

// EndChat makes a chat gone: message calls for it answer 230002 from now.
func (s *Server) EndChat(chatID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone[chatID] = true
}

// GoneAnswers is how many message calls for chatID were answered 230002
// (the chat unknown or ended).
func (s *Server) GoneAnswers(chatID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.goneHits[chatID]
}

// RateLimitApp answers the next n message calls with HTTP 429, code
// 99991400 and x-ogw-ratelimit-reset (whole seconds, rounded up).
func (s *Server) RateLimitApp(n int, reset time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.limits = append(s.limits, limit{code: CodeRateLimit, reset: reset})
	}
}

// RateLimitChat answers the next n message calls with code 230020; a call
// to that chat within wait is answered so again (and counted early).
func (s *Server) RateLimitChat(n int, wait time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.limits = append(s.limits, limit{code: CodeChatLimit, reset: wait})
	}
}

// Sent returns every successful message call so far, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// Early counts message calls made to a chat before its rate-limit wait
// had passed.
func (s *Server) Early() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.early
}

// TokensIssued counts the tenant access tokens the server handed out.
func (s *Server) TokensIssued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issued
}

// RevokeTokens makes every issued token invalid (401, 99991663).
func (s *Server) RevokeTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = map[string]bool{}
}

// answer is one API answer: an HTTP status, Feishu's code and data.
type answer struct {
	status int
	code   int
	msg    string
	data   any
	header http.Header
	// extra is put beside code and msg (the token and bot info answers
	// carry their fields there, not in data).
	extra map[string]any
}

func ok(data any) answer { return answer{status: http.StatusOK, data: data} }

func fail(status, code int, format string, args ...any) answer {
	return answer{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.serveWS(w, r) || s.serveResource(w, r) {
		return
	}
	a := s.route(r)
	for k, vs := range a.header {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(a.status)
	body := map[string]any{"code": a.code, "msg": a.msg}
	if a.msg == "" {
		body["msg"] = "success"
	}
	if a.data != nil {
		body["data"] = a.data
	}
	for k, v := range a.extra {
		body[k] = v
	}
	_ = json.NewEncoder(w).Encode(body)
}

func (s *Server) route(r *http.Request) answer {
	const im = "/open-apis/im/v1/"
	p := r.URL.Path
	if r.Method == http.MethodPost && p == "/open-apis/auth/v3/tenant_access_token/internal" {
		return s.token(r)
	}
	if !s.authorized(r) {
		return fail(http.StatusUnauthorized, CodeBadToken, "Invalid access token for authorization")
	}
	switch {
	case r.Method == http.MethodGet && p == "/open-apis/bot/v3/info":
		return answer{status: http.StatusOK, msg: "ok", extra: map[string]any{
			"bot": map[string]any{"open_id": s.BotOpenID, "app_name": "thatch", "activate_status": 2}}}
	case r.Method == http.MethodPost && p == im+"images":
		return s.uploadImage(r)
	case r.Method == http.MethodPost && p == im+"messages":
		return s.message(r, "create", "")
	case r.Method == http.MethodPost && strings.HasPrefix(p, im+"messages/") && strings.HasSuffix(p, "/reply"):
		return s.message(r, "reply", strings.TrimSuffix(strings.TrimPrefix(p, im+"messages/"), "/reply"))
	case r.Method == http.MethodPatch && strings.HasPrefix(p, im+"messages/"):
		return s.message(r, "patch", strings.TrimPrefix(p, im+"messages/"))
	case r.Method == http.MethodDelete && strings.HasPrefix(p, im+"messages/"):
		return s.message(r, "delete", strings.TrimPrefix(p, im+"messages/"))
	case r.Method == http.MethodGet && strings.HasPrefix(p, im+"chats/"):
		return s.chatInfo(strings.TrimPrefix(p, im+"chats/"))
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/open-apis/contact/v3/users/"):
		return s.userInfo(r, strings.TrimPrefix(p, "/open-apis/contact/v3/users/"))
	}
	return fail(http.StatusNotFound, 404, "not found: %s %s", r.Method, p)
}

func (s *Server) token(r *http.Request) answer {
	var req struct {
		AppID     string `json:"app_id"`
		AppSecret string `json:"app_secret"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.AppID != s.appID || req.AppSecret != s.appSecret {
		return fail(http.StatusBadRequest, 10014, "app secret invalid")
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	tok := "t-" + hex.EncodeToString(b)
	s.mu.Lock()
	s.tokens[tok] = true
	s.issued++
	s.mu.Unlock()
	return answer{status: http.StatusOK, msg: "ok", extra: map[string]any{"tenant_access_token": tok, "expire": 7200}}
}

func (s *Server) authorized(r *http.Request) bool {
	tok, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !found {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens[tok]
}

// message serves create, reply, patch and delete.
func (s *Server) message(r *http.Request, op, target string) answer {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return fail(http.StatusBadRequest, CodeBadRequest, "read body: %v", err)
	}
	var body struct {
		ReceiveID     string `json:"receive_id"`
		MsgType       string `json:"msg_type"`
		Content       string `json:"content"`
		ReplyInThread bool   `json:"reply_in_thread"`
	}
	if op != "delete" {
		if err := json.Unmarshal(raw, &body); err != nil {
			return fail(http.StatusBadRequest, CodeBadRequest, "body is not JSON: %v", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	chatID := body.ReceiveID
	if op == "create" {
		if t := r.URL.Query().Get("receive_id_type"); t != "chat_id" {
			return fail(http.StatusBadRequest, CodeBadRequest, "receive_id_type %q: the fake serves chat_id only", t)
		}
	} else {
		m, found := s.messages[target]
		if !found || m.deleted {
			return fail(http.StatusBadRequest, CodeNotFound, "message %s not found", target)
		}
		chatID = m.chatID
		if op == "patch" {
			body.MsgType = "interactive"
			if m.msgType != "interactive" {
				return fail(http.StatusBadRequest, CodeNotCard, "message %s is not a card", target)
			}
		}
	}
	if _, known := s.chats[chatID]; !known || s.gone[chatID] {
		s.goneHits[chatID]++
		return fail(http.StatusBadRequest, CodeChatGone, "Bot is not in the chat")
	}
	if a, limited := s.limited(chatID); limited {
		return a
	}
	if op != "delete" {
		if a, bad := checkContent(body.MsgType, body.Content, len(raw)); bad {
			return a
		}
		if a, bad := s.checkImage(body.MsgType, body.Content); bad {
			return a
		}
	}
	rec := Sent{Op: op, ChatID: chatID, MsgType: body.MsgType, Content: body.Content}
	switch op {
	case "create", "reply":
		s.nextID++
		rec.MessageID = fmt.Sprintf("om_%d", s.nextID)
		if op == "reply" {
			rec.ReplyTo, rec.InThread = target, body.ReplyInThread
		}
		s.messages[rec.MessageID] = &message{chatID: chatID, msgType: body.MsgType}
	case "patch":
		rec.MessageID = target
	case "delete":
		rec.MessageID = target
		s.messages[target].deleted = true
	}
	s.sent = append(s.sent, rec)
	if op == "create" || op == "reply" {
		return ok(map[string]any{"message_id": rec.MessageID, "chat_id": chatID, "msg_type": rec.MsgType,
			"body": map[string]any{"content": rec.Content}})
	}
	return ok(map[string]any{})
}

// limited answers a queued or still running rate limit. The caller holds
// s.mu.
func (s *Server) limited(chatID string) (answer, bool) {
	now := time.Now()
	if u, found := s.until[chatID]; found && now.Before(u.at) {
		s.early++
		return limitAnswer(u.code, u.at.Sub(now)), true
	}
	if len(s.limits) == 0 {
		return answer{}, false
	}
	l := s.limits[0]
	s.limits = s.limits[1:]
	s.until[chatID] = limitUntil{code: l.code, at: now.Add(l.reset)}
	return limitAnswer(l.code, l.reset), true
}

func limitAnswer(code int, wait time.Duration) answer {
	if code == CodeChatLimit {
		return fail(http.StatusBadRequest, CodeChatLimit, "The message sending frequency of the chat exceeds the limit")
	}
	secs := int((wait + time.Second - 1) / time.Second)
	a := fail(http.StatusTooManyRequests, CodeRateLimit, "request trigger frequency limit")
	a.header = http.Header{"X-Ogw-Ratelimit-Limit": {"50"}, "X-Ogw-Ratelimit-Reset": {strconv.Itoa(secs)}}
	return a
}

// checkContent checks a message's content as Feishu does, for the types
// the fake serves.
func checkContent(msgType, content string, bodyLen int) (answer, bool) {
	var obj map[string]any
	if err := json.Unmarshal([]byte(content), &obj); err != nil {
		return fail(http.StatusBadRequest, CodeBadRequest, "content is not a JSON object: %v", err), true
	}
	switch msgType {
	case "text":
		if _, isText := obj["text"].(string); !isText {
			return fail(http.StatusBadRequest, CodeBadRequest, "text content has no text"), true
		}
		if bodyLen > MaxTextBody {
			return fail(http.StatusBadRequest, CodeTooLarge, "message content is %d bytes, over %d", bodyLen, MaxTextBody), true
		}
	case "post":
		if bodyLen > MaxTextBody {
			return fail(http.StatusBadRequest, CodeTooLarge, "message content is %d bytes, over %d", bodyLen, MaxTextBody), true
		}
	case "image":
		if _, isKey := obj["image_key"].(string); !isKey {
			return fail(http.StatusBadRequest, CodeBadRequest, "image content has no image_key"), true
		}
	case "interactive":
		if bodyLen > MaxCardBody {
			return fail(http.StatusBadRequest, CodeTooLarge, "card content is %d bytes, over %d", bodyLen, MaxCardBody), true
		}
		if err := checkCard(obj); err != nil {
			return fail(http.StatusBadRequest, CodeBadRequest, "card: %v", err), true
		}
	default:
		return fail(http.StatusBadRequest, CodeBadRequest, "msg_type %q: the fake serves text, post, image and interactive", msgType), true
	}
	return answer{}, false
}

// checkCard checks that every button's value is a JSON object.
func checkCard(card map[string]any) error {
	elems, _ := card["elements"].([]any)
	for _, e := range elems {
		el, _ := e.(map[string]any)
		if el["tag"] != "action" {
			continue
		}
		acts, _ := el["actions"].([]any)
		for _, a := range acts {
			b, _ := a.(map[string]any)
			if b["tag"] != "button" {
				continue
			}
			if _, isObj := b["value"].(map[string]any); !isObj {
				return fmt.Errorf("button value %v is not a JSON object", b["value"])
			}
		}
	}
	return nil
}

func (s *Server) chatInfo(chatID string) answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, known := s.chats[chatID]
	if !known || s.gone[chatID] {
		return fail(http.StatusBadRequest, CodeUnknownChat, "bot is not in the chat")
	}
	data := map[string]any{"chat_mode": c.Mode, "name": c.Name}
	if c.Mode == "p2p" {
		data["name"] = ""
	}
	return ok(data)
}

func (s *Server) userInfo(r *http.Request, openID string) answer {
	if t := r.URL.Query().Get("user_id_type"); t != "" && t != "open_id" {
		return fail(http.StatusBadRequest, 40001, "user_id_type %q: the fake serves open_id only", t)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	name, known := s.users[openID]
	if !known {
		return fail(http.StatusBadRequest, 41050, "no user authority or no such user")
	}
	return ok(map[string]any{"user": map[string]any{"open_id": openID, "name": name}})
}

// MaxImage is Feishu's limit on an uploaded image.
const MaxImage = 10 << 20

// uploadImage serves POST im/v1/images: a multipart form with image_type
// "message" and the image file; the answer names its image_key.
func (s *Server) uploadImage(r *http.Request) answer {
	if err := r.ParseMultipartForm(MaxImage + 1<<20); err != nil {
		return fail(http.StatusBadRequest, CodeBadRequest, "not a multipart form: %v", err)
	}
	if t := r.FormValue("image_type"); t != "message" {
		return fail(http.StatusBadRequest, CodeBadRequest, "image_type %q, want message", t)
	}
	f, _, err := r.FormFile("image")
	if err != nil {
		return fail(http.StatusBadRequest, CodeBadRequest, "no image file: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxImage+1))
	if err != nil || len(data) == 0 || len(data) > MaxImage {
		return fail(http.StatusBadRequest, CodeBadRequest, "image empty, unreadable or over 10 MB (%d bytes)", len(data))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	key := fmt.Sprintf("img_v2_%d", s.nextID)
	s.images[key] = data
	return answer{status: http.StatusOK, data: map[string]any{"image_key": key}}
}

// checkImage refuses an image message whose image_key was not uploaded.
// The caller holds s.mu.
func (s *Server) checkImage(msgType, content string) (answer, bool) {
	if msgType != "image" {
		return answer{}, false
	}
	var c struct {
		ImageKey string `json:"image_key"`
	}
	_ = json.Unmarshal([]byte(content), &c)
	if _, known := s.images[c.ImageKey]; !known {
		return fail(http.StatusBadRequest, CodeBadRequest, "image_key %q was not uploaded", c.ImageKey), true
	}
	return answer{}, false
}

// Image returns the bytes uploaded under key (nil when none were).
func (s *Server) Image(key string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.images[key]
}
