package faketelegram

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Button is an inline keyboard button as the bot sent it.
type Button struct {
	Text string
	Data string
}

// Sent is one successful request of the bot's, as recorded.
type Sent struct {
	// Method is the Bot API method (sendMessage, editMessageText, ...).
	Method string
	// ChatID and ThreadID name the conversation; ThreadID is 0 outside a topic.
	ChatID, ThreadID int64
	// MessageID is the message sent, edited or deleted (0 for answerCallbackQuery).
	MessageID int
	// Text is the text as sent (HTML when ParseMode is "HTML"); for
	// answerCallbackQuery, the toast.
	Text, ParseMode string
	// Buttons is the inline keyboard sent with the request, nil for none.
	Buttons [][]Button
	// Photo is the picture a sendPhoto uploaded (Text is its caption).
	Photo []byte
	// Silent: sent with disable_notification (the phone does not buzz).
	Silent bool
	// At is when the server accepted the request.
	At time.Time
}

// message is one message the server knows: the bot's (editable) or a
// service message a topic message replies to.
type message struct {
	obj     map[string]any // the JSON Message object as Telegram would send it
	thread  int64
	text    string
	mode    string
	buttons [][]Button
}

type chat struct {
	forum   bool
	nextMsg int
	topics  map[int64]map[string]any // thread id -> its forum_topic_created message
	msgs    map[int]*message         // the bot's messages
	blocked time.Time                // a 429 asked the bot to wait until then
	closed  map[int64]bool           // topics closed (CloseTopic)
	pinned  int                      // the message pinned (0: none)
	// starts are the requests of the last minute EnforceRates counts.
	starts []time.Time
}

// Server is the fake Bot API. Its methods are safe for concurrent use.
type Server struct {
	token string
	// revoked makes every call answer 401 (see Revoke).
	revoked atomic.Bool
	// service is the sender of topic service messages (see ServiceFrom).
	service atomic.Int64
	srv     *httptest.Server
	done    chan struct{}
	// files are the files users sent (files.go), with their own lock.
	files files

	mu        sync.Mutex
	updates   []update // pending, ascending update_id
	nextID    int64
	confirmed int64
	pushed    chan struct{} // closed and replaced on every push
	chats     map[int64]*chat
	callbacks map[string]callback
	sent      []Sent
	fail429   int
	retry     int
	rates     bool // EnforceRates
	limited   int  // requests EnforceRates answered 429
	refuse    int
	failOK    int // sendMessage calls to accept before the scripted failures
	fail      int // sendMessage calls to answer 500 after them
	failed    int // sendMessage calls answered 500
	early     int
	polls     int // long polls waiting now
	serving   int // getUpdates requests being served now (at most 1)
	conflicts int // getUpdates requests answered 409 (see Conflicts)
	commands  []BotCommand
	actions   []Sent // sendChatAction calls
	// requests is every request's method and parameters, as received
	// (see Requests).
	requests []string
}

// callback is a query Press made that is not answered yet.
type callback struct{ chat, thread int64 }

type update struct {
	id  int64
	obj json.RawMessage // encoded at push: later edits do not change it
}

// ServiceFrom makes userID the sender of the service messages that
// CreateTopic and EditTopic push (the one who makes or renames a topic).
// Default: user 1.
func (s *Server) ServiceFrom(userID int64) { s.service.Store(userID) }

func (s *Server) serviceFrom() int64 {
	if id := s.service.Load(); id != 0 {
		return id
	}
	return 1
}

// Revoke makes the server refuse the token (401 to every call) while on
// is true, as Telegram does for a token revoked with @BotFather.
func (s *Server) Revoke(on bool) { s.revoked.Store(on) }

// New starts a server on 127.0.0.1 that accepts token; it is ready when
// New returns.
func New(token string) *Server {
	s := &Server{
		token:     token,
		done:      make(chan struct{}),
		pushed:    make(chan struct{}),
		nextID:    1,
		chats:     map[int64]*chat{},
		callbacks: map[string]callback{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the API base URL, for the adapter's Options.APIURL.
func (s *Server) URL() string { return s.srv.URL }

// Close ends pending long polls and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.mu.Unlock()
	s.srv.Close()
}

func (s *Server) chat(id int64) *chat {
	c, ok := s.chats[id]
	if !ok {
		c = &chat{nextMsg: 1, topics: map[int64]map[string]any{}, msgs: map[int]*message{}}
		s.chats[id] = c
	}
	return c
}

// push appends an update (under s.mu) and wakes long polls.
func (s *Server) push(body map[string]any) int64 {
	id := s.nextID
	s.nextID++
	body["update_id"] = id
	s.updates = append(s.updates, update{id: id, obj: snapshot(body)})
	close(s.pushed)
	s.pushed = make(chan struct{})
	return id
}

func (s *Server) chatObj(id int64, c *chat) map[string]any {
	if c.forum {
		return map[string]any{"id": id, "type": "supergroup", "title": "chat " + strconv.FormatInt(id, 10), "is_forum": true}
	}
	if id < 0 {
		return map[string]any{"id": id, "type": "group", "title": "chat " + strconv.FormatInt(id, 10)}
	}
	return map[string]any{"id": id, "type": "private", "first_name": "user " + strconv.FormatInt(id, 10)}
}

func user(id int64) map[string]any {
	return map[string]any{"id": id, "is_bot": false, "first_name": "user " + strconv.FormatInt(id, 10)}
}

// newMessage builds a Message object in chatID (thread 0: none) and takes
// the chat's next message id.
func (s *Server) newMessage(chatID, thread int64, from map[string]any) (map[string]any, int) {
	c := s.chat(chatID)
	id := c.nextMsg
	c.nextMsg++
	m := map[string]any{"message_id": id, "date": time.Now().Unix(), "chat": s.chatObj(chatID, c)}
	if from != nil {
		m["from"] = from
	}
	if thread != 0 {
		m["message_thread_id"] = thread
		m["is_topic_message"] = true
	}
	return m, id
}

// Message pushes a user's text message: in topic threadID of forum chatID,
// or (threadID 0) in chatID without topics (a private chat when chatID > 0).
// A message in a topic CreateTopic made replies to its creation, as on
// Telegram. It returns the update id.
func (s *Server) Message(chatID, threadID, userID int64, text string) int64 {
	return s.userMessage(chatID, threadID, userID, func(m map[string]any) { m["text"] = text })
}

// userMessage pushes a message of userID that fill completes, in a topic
// (a reply to its creation, as on Telegram) or a chat without topics.
func (s *Server) userMessage(chatID, threadID, userID int64, fill func(m map[string]any)) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if threadID != 0 {
		s.chat(chatID).forum = true
	}
	m, _ := s.newMessage(chatID, threadID, user(userID))
	fill(m)
	if created, ok := s.chat(chatID).topics[threadID]; ok {
		m["reply_to_message"] = created
	}
	return s.push(map[string]any{"message": m})
}

// Photo pushes a user's photo with a caption, as Message pushes text;
// its bytes are PhotoBytes (PhotoFile sends others).
func (s *Server) Photo(chatID, threadID, userID int64, caption string) int64 {
	id, _ := s.PhotoFile(chatID, threadID, userID, PhotoBytes, caption)
	return id
}

// PhotoBytes are the bytes of the photo Photo sends.
var PhotoBytes = []byte("\xff\xd8\xff\xe0 a photo from the fake Bot API \xff\xd9")

// CreateTopic makes a forum topic in chatID and pushes its
// forum_topic_created service message; the topic's thread id is that
// message's id, as on Telegram.
func (s *Server) CreateTopic(chatID int64, name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chat(chatID)
	c.forum = true
	m, id := s.newMessage(chatID, 0, user(s.serviceFrom()))
	m["message_thread_id"] = id
	m["is_topic_message"] = true
	m["forum_topic_created"] = map[string]any{"name": name, "icon_color": 7322096}
	c.topics[int64(id)] = m
	s.push(map[string]any{"message": m})
	return int64(id)
}

// EditTopic renames a topic and pushes the forum_topic_edited service
// message. Messages keep carrying the original name in reply_to_message.
func (s *Server) EditTopic(chatID, threadID int64, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chat(chatID).forum = true
	m, _ := s.newMessage(chatID, threadID, user(s.serviceFrom()))
	m["forum_topic_edited"] = map[string]any{"name": name}
	if created, ok := s.chat(chatID).topics[threadID]; ok {
		m["reply_to_message"] = created
	}
	s.push(map[string]any{"message": m})
}

// CloseTopic closes a topic, pushing the forum_topic_closed service
// message; ReopenTopic reopens it (forum_topic_reopened). Sends to a
// closed topic are answered 400 TOPIC_CLOSED, as Telegram answers them.
func (s *Server) CloseTopic(chatID, threadID int64) {
	s.topicService(chatID, threadID, "forum_topic_closed", true)
}

// ReopenTopic reopens a topic CloseTopic closed.
func (s *Server) ReopenTopic(chatID, threadID int64) {
	s.topicService(chatID, threadID, "forum_topic_reopened", false)
}

func (s *Server) topicService(chatID, threadID int64, field string, closed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chat(chatID)
	c.forum = true
	if c.closed == nil {
		c.closed = map[int64]bool{}
	}
	c.closed[threadID] = closed
	m, _ := s.newMessage(chatID, threadID, user(s.serviceFrom()))
	m[field] = map[string]any{}
	m["is_topic_message"] = true
	if created, ok := c.topics[threadID]; ok {
		m["reply_to_message"] = created
	}
	s.push(map[string]any{"message": m})
}

// Press pushes a callback_query: userID pressed the button with data on the
// bot's message messageID. It returns the update id.
func (s *Server) Press(chatID, threadID, userID int64, messageID int, data string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chat(chatID)
	var msg map[string]any
	if m, ok := c.msgs[messageID]; ok {
		msg = m.obj
	} else {
		msg, _ = s.newMessage(chatID, threadID, nil)
		msg["message_id"] = messageID
	}
	id := "cb" + strconv.FormatInt(s.nextID, 10)
	s.callbacks[id] = callback{chat: chatID, thread: threadID}
	return s.push(map[string]any{"callback_query": map[string]any{
		"id": id, "from": user(userID), "message": msg, "chat_instance": "ci" + strconv.FormatInt(chatID, 10), "data": data,
	}})
}

// Sent returns every successful sendMessage, edit, delete and
// answerCallbackQuery, in the order the server accepted them.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// Messages returns the sendMessage records of one thread (0: not a topic), in order.
func (s *Server) Messages(chatID, threadID int64) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Sent
	for _, m := range s.sent {
		if m.Method == "sendMessage" && m.ChatID == chatID && m.ThreadID == threadID {
			out = append(out, m)
		}
	}
	return out
}

// Renumber makes next the id of the next update, as Telegram does after
// a week without any update (the next id "is chosen randomly instead of
// sequentially"): it may be below the ids before it.
func (s *Server) Renumber(next int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID = next
}

// Confirmed is the highest offset-1 a getUpdates asked with: the updates
// up to it are gone, as Telegram would have dropped them.
func (s *Server) Confirmed() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.confirmed
}

// Fail429 answers the next n sendMessage calls with 429 Too Many Requests
// and parameters.retry_after = retryAfter seconds.
func (s *Server) Fail429(n int, retryAfter int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail429, s.retry = n, retryAfter
}

// EnforceRates makes the server answer 429 as Telegram does past its
// rates: more than one request a second in a chat, or more than 20 in a
// minute in a group (a negative chat id), sends, edits, deletes and pins
// alike (not the typing sign, not a press's answer). A little slack on
// each (100 ms, a second) keeps a client that keeps exactly to them from
// being answered 429 for the network's jitter. RateLimited counts them.
func (s *Server) EnforceRates() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rates = true
}

// RateLimited counts the requests EnforceRates answered 429.
func (s *Server) RateLimited() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limited
}

// FailAfter accepts the next ok sendMessage calls and answers the n after
// them with 500 Internal Server Error (a failure worth trying again).
func (s *Server) FailAfter(ok, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failOK, s.fail = ok, n
}

// Failed counts the sendMessage calls FailAfter answered with 500.
func (s *Server) Failed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// RefuseEntities answers the next n sendMessage calls with parse_mode HTML
// with 400 "Bad Request: can't parse entities".
func (s *Server) RefuseEntities(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = n
}

// Early counts sendMessage calls that came before the retry_after of a 429
// had passed (each is answered 429 again, as Telegram would).
func (s *Server) Early() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.early
}

// polling is the number of long polls waiting now (for tests of Close).
func (s *Server) polling() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.polls
}

// Conflicts counts the getUpdates requests answered 409 Conflict because
// another getUpdates was still being served: two pollers of one bot, as
// two daemons with one token would be.
func (s *Server) Conflicts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conflicts
}

// Pending is the number of updates not yet dropped by an offset.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates)
}

func (s *Server) record(m Sent) {
	m.At = time.Now()
	s.sent = append(s.sent, m)
}

// snapshot encodes v now, under s.mu, so that answers built from maps the
// server keeps changing are encoded without racing.
func snapshot(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic("faketelegram: " + err.Error()) // maps of plain values always encode
	}
	return raw
}

// writeJSON answers with v; errors of a test server's writes are the
// client's problem.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
