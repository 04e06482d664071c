package fakefeishu

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxResource is the largest message resource the Open API lets a bot
// download; a larger one is answered CodeResourceTooLarge.
const MaxResource = 100 << 20

// CodeResourceTooLarge answers the download of a resource over
// MaxResource.
const CodeResourceTooLarge = 234037

// resource is a file a user's message carries, as the message resource
// API serves it.
type resource struct {
	typ  string // "image" or "file": the type the download must ask for
	data []byte
	size int64
}

// AddResource registers the bytes of resource key (an image_key, or a
// file_key for typ "file") of message messageID, which the message
// resource API then serves.
func (s *Server) AddResource(messageID, key, typ string, data []byte) {
	s.addResource(messageID, key, resource{typ: typ, data: data, size: int64(len(data))})
}

// AddBigResource registers a resource of size bytes, which the API
// refuses when it is over MaxResource (its bytes are never served).
func (s *Server) AddBigResource(messageID, key, typ string, size int64) {
	s.addResource(messageID, key, resource{typ: typ, size: size})
}

func (s *Server) addResource(messageID, key string, r resource) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if s.resources == nil {
		s.resources = map[string]resource{}
	}
	s.resources[messageID+"/"+key] = r
}

// serveResource serves GET im/v1/messages/:message_id/resources/:key
// ?type=image|file: the bytes, or a JSON error as Feishu answers one. It
// reports whether r was such a request.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/open-apis/im/v1/messages/")
	messageID, key, ok2 := strings.Cut(rest, "/resources/")
	if !ok || !ok2 || r.Method != http.MethodGet {
		return false
	}
	fail := func(status, code int, msg string) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "msg": msg})
	}
	if !s.authorized(r) {
		fail(http.StatusUnauthorized, CodeBadToken, "Invalid access token for authorization")
		return true
	}
	s.fmu.Lock()
	res, found := s.resources[messageID+"/"+key]
	s.fmu.Unlock()
	switch {
	case !found:
		fail(http.StatusBadRequest, CodeBadRequest, "no resource "+key+" in message "+messageID)
	case r.URL.Query().Get("type") != res.typ:
		fail(http.StatusBadRequest, CodeBadRequest, "type "+strconv.Quote(r.URL.Query().Get("type"))+" does not match the resource")
	case res.size > MaxResource:
		fail(http.StatusBadRequest, CodeResourceTooLarge, "file size exceeds the limit")
	default:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(res.data)))
		_, _ = w.Write(res.data)
	}
	return true
}

// FileMessage is the event of im.message.receive_v1 for a message of
// type msgType ("image", "file", "audio", "media") whose content is
// content (image_key, file_key, file_name, as Feishu sends them).
func FileMessage(messageID, chatID, chatType, threadID, senderOpenID, msgType string, content map[string]any) map[string]any {
	raw, _ := json.Marshal(content)
	msg := map[string]any{
		"message_id": messageID, "chat_id": chatID, "chat_type": chatType,
		"message_type": msgType, "content": string(raw),
		"create_time": strconv.FormatInt(time.Now().UnixMilli(), 10),
	}
	if threadID != "" {
		msg["thread_id"] = threadID
	}
	return map[string]any{
		"sender":  map[string]any{"sender_id": map[string]any{"open_id": senderOpenID}, "sender_type": "user"},
		"message": msg,
	}
}
