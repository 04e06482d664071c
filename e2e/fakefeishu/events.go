package fakefeishu

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Poster posts events to a webhook the way Feishu does. The zero value of
// each optional field means what Feishu would send.
type Poster struct {
	// URL is the webhook's address (it must be on 127.0.0.1).
	URL string
	// Token is put in each event's header.token (the verification token).
	Token string
	// EncryptKey, when set, encrypts the body and signs the request.
	EncryptKey string
	// AppID is put in each event's header.app_id.
	AppID string
	// Now is the clock the signature's timestamp is read from.
	// Default: time.Now.
	Now func() time.Time
	// Client posts. Default: a client with a 10 s timeout.
	Client *http.Client
}

// Answer is the webhook's answer to one post.
type Answer struct {
	Status int
	Body   string
}

// Envelope builds a schema 2.0 event: header (event_id, event_type,
// token, create_time, app_id, tenant_key) and event.
func (p *Poster) Envelope(eventID, eventType string, event any) []byte {
	b, err := json.Marshal(map[string]any{
		"schema": "2.0",
		"header": map[string]any{
			"event_id": eventID, "event_type": eventType, "token": p.Token,
			"create_time": strconv.FormatInt(p.now().UnixMilli(), 10),
			"app_id":      p.AppID, "tenant_key": "tenant",
		},
		"event": event,
	})
	if err != nil {
		panic(fmt.Sprintf("fakefeishu: marshal event: %v", err))
	}
	return b
}

// Challenge builds the url_verification request Feishu sends when the
// webhook's address is saved.
func (p *Poster) Challenge(challenge string) []byte {
	b, _ := json.Marshal(map[string]any{"challenge": challenge, "token": p.Token, "type": "url_verification"})
	return b
}

// Post sends a plain event (Envelope or Challenge) as Feishu would:
// encrypted and signed when the poster has an encrypt key.
func (p *Poster) Post(ctx context.Context, plain []byte) (Answer, error) {
	if p.EncryptKey == "" {
		return p.PostRaw(ctx, plain, nil)
	}
	body, err := json.Marshal(map[string]string{"encrypt": Encrypt(p.EncryptKey, plain)})
	if err != nil {
		return Answer{}, err
	}
	return p.PostRaw(ctx, body, p.SignHeaders(body))
}

// SignHeaders returns the headers Feishu signs a body with, at the
// poster's clock, with a fresh nonce.
func (p *Poster) SignHeaders(body []byte) http.Header {
	ts := strconv.FormatInt(p.now().Unix(), 10)
	n := make([]byte, 8)
	_, _ = rand.Read(n)
	nonce := hex.EncodeToString(n)
	return http.Header{
		"X-Lark-Request-Timestamp": {ts},
		"X-Lark-Request-Nonce":     {nonce},
		"X-Lark-Signature":         {Sign(ts, nonce, p.EncryptKey, body)},
	}
}

// PostRaw posts a body as it is, with the given headers, for tests that
// send what Feishu would not.
func (p *Poster) PostRaw(ctx context.Context, body []byte, header http.Header) (Answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(body))
	if err != nil {
		return Answer{}, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	c := p.Client
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return Answer{Status: resp.StatusCode, Body: string(b)}, err
}

func (p *Poster) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Encrypt encrypts a body as Feishu does: AES-256-CBC with the SHA-256 of
// the key, PKCS#7 padding, a random IV before the ciphertext, base64.
func Encrypt(key string, plain []byte) string {
	k := sha256.Sum256([]byte(key))
	block, err := aes.NewCipher(k[:])
	if err != nil {
		panic(err)
	}
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	buf := make([]byte, aes.BlockSize+len(plain)+pad)
	_, _ = rand.Read(buf[:aes.BlockSize])
	copy(buf[aes.BlockSize:], plain)
	for i := len(buf) - pad; i < len(buf); i++ {
		buf[i] = byte(pad)
	}
	cipher.NewCBCEncrypter(block, buf[:aes.BlockSize]).CryptBlocks(buf[aes.BlockSize:], buf[aes.BlockSize:])
	return base64.StdEncoding.EncodeToString(buf)
}

// Sign is X-Lark-Signature: the hex SHA-256 of timestamp, nonce, encrypt
// key and body, concatenated.
func Sign(timestamp, nonce, key string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(timestamp + nonce + key))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// Mention is an @-mention inside a text message.
type Mention struct {
	Key    string // "@_user_1", as it stands in the text
	OpenID string
	Name   string
}

// TextMessage is the event of im.message.receive_v1 for a text message.
// chatType is "group" or "p2p"; threadID is empty outside a topic.
func TextMessage(messageID, chatID, chatType, threadID, senderOpenID, text string, mentions ...Mention) map[string]any {
	content, _ := json.Marshal(map[string]string{"text": text})
	ms := []any{}
	for _, m := range mentions {
		ms = append(ms, map[string]any{"key": m.Key, "name": m.Name, "id": map[string]any{"open_id": m.OpenID}})
	}
	msg := map[string]any{
		"message_id": messageID, "chat_id": chatID, "chat_type": chatType,
		"message_type": "text", "content": string(content), "mentions": ms,
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

// ChatUpdated is the event of im.chat.updated_v1 for a rename.
func ChatUpdated(chatID, operatorOpenID, before, after string) map[string]any {
	return map[string]any{
		"chat_id":       chatID,
		"operator_id":   map[string]any{"open_id": operatorOpenID},
		"before_change": map[string]any{"name": before},
		"after_change":  map[string]any{"name": after},
	}
}

// ChatEvent is the event of im.chat.disbanded_v1 and
// im.chat.member.bot.deleted_v1.
func ChatEvent(chatID, operatorOpenID string) map[string]any {
	return map[string]any{"chat_id": chatID, "operator_id": map[string]any{"open_id": operatorOpenID}, "name": ""}
}

// CardAction is the event of card.action.trigger for a button press.
func CardAction(chatID, messageID, openID string, value any) map[string]any {
	return map[string]any{
		"operator": map[string]any{"open_id": openID},
		"token":    "c-token",
		"action":   map[string]any{"tag": "button", "value": value},
		"host":     "im_message",
		"context":  map[string]any{"open_message_id": messageID, "open_chat_id": chatID},
	}
}
