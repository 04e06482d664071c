package feishu

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
)

// EventHeader is what the adapter reads of an event's header.
type EventHeader struct {
	// ID is the event id, what deduplication goes by.
	ID string
	// Type is the event type (im.message.receive_v1, ...).
	Type string
	// Created is when Feishu made the event (header.create_time, Feishu's
	// clock, the same for every receiver); zero when the header has none.
	Created time.Time
}

// header reads env's header (notEvent accepted it).
func (env *envelope) header() EventHeader {
	h := EventHeader{ID: env.Header.EventID, Type: env.Header.EventType}
	if ms, err := strconv.ParseInt(env.Header.CreateTime, 10, 64); err == nil && ms > 0 {
		h.Created = time.UnixMilli(ms)
	}
	return h
}

// HandlerFunc takes one decoded event with its header. It returns only
// once the event is durable (journaled): the webhook answers 200 after it
// returned nil, and 500 (so that Feishu delivers the event again) after an
// error. Feishu delivers an event again after a 500 or a timeout, and may
// deliver it twice anyway: the handler deduplicates by event id, durably.
type HandlerFunc func(ctx context.Context, h EventHeader, ev Event) error

// Webhook is the receiver of mode "webhook": one http.Handler for events
// and card callbacks alike.
type Webhook struct {
	token      string
	encryptKey string
	botOpenID  string
	handle     HandlerFunc
	logger     hclog.Logger
	now        func() time.Time
}

// maxBody bounds what the webhook reads of a request.
const maxBody = 1 << 20

// maxSkew is how far X-Lark-Request-Timestamp may be from now.
const maxSkew = time.Hour

// NewWebhook builds the receiver. botOpenID is the bot's open id
// (Client.BotOpenID), whose @-mentions are cut from message text; now is
// the clock the signature's timestamp is checked against (nil: time.Now).
func NewWebhook(opts Options, botOpenID string, handle HandlerFunc, logger hclog.Logger, now func() time.Time) (*Webhook, error) {
	if opts.VerificationToken == "" {
		return nil, errors.New("feishu: the webhook needs a verification_token")
	}
	if handle == nil {
		return nil, errors.New("feishu: the webhook needs a handler")
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if now == nil {
		now = time.Now
	}
	return &Webhook{token: opts.VerificationToken, encryptKey: opts.EncryptKey, botOpenID: botOpenID,
		handle: handle, logger: logger, now: now}, nil
}

// envelope is a plain request: an event (schema 2.0) or the
// url_verification challenge (type, token and challenge at the top).
type envelope struct {
	Schema    string `json:"schema"`
	Type      string `json:"type"`
	Token     string `json:"token"`
	Challenge string `json:"challenge"`
	Encrypt   string `json:"encrypt"`
	Header    *struct {
		EventID    string `json:"event_id"`
		EventType  string `json:"event_type"`
		Token      string `json:"token"`
		CreateTime string `json:"create_time"`
	} `json:"header"`
	Event json.RawMessage `json:"event"`
}

// notEvent says why env is not a schema 2.0 event with an event id; ""
// when it is one.
func (env *envelope) notEvent() string {
	switch {
	case env.Header == nil || env.Schema != "2.0":
		return "not a schema 2.0 event"
	case env.Header.EventID == "":
		return "event without an event id"
	}
	return ""
}

// decode decodes the event of env, which notEvent accepted: the one
// decoder of the webhook and the long connection. It answers nil, nil for
// an event the adapter does not take (decodeEvent).
func (env *envelope) decode(botOpenID string) (Event, error) {
	return decodeEvent(env.Header.EventType, env.Event, botOpenID)
}

// readEvent reads a plain body that must be a schema 2.0 event (the long
// connection's payloads: no challenge, no encryption, no token) and
// decodes it. ev is nil for an event the adapter does not take; an error
// says the payload is not an event or cannot be decoded.
func readEvent(plain []byte, botOpenID string) (env envelope, ev Event, err error) {
	if err := json.Unmarshal(plain, &env); err != nil {
		return env, nil, fmt.Errorf("payload is not JSON: %w", err)
	}
	if why := env.notEvent(); why != "" {
		return env, nil, errors.New(why)
	}
	ev, err = env.decode(botOpenID)
	return env, ev, err
}

func (w *Webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(rw, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		w.refuse(rw, "body unreadable or over 1 MiB")
		return
	}
	plain, signed, why := w.open(r.Header, body)
	if why != "" {
		w.refuse(rw, why)
		return
	}
	var env envelope
	if err := json.Unmarshal(plain, &env); err != nil {
		w.refuse(rw, "body is not JSON")
		return
	}
	if env.Type == "url_verification" {
		if !w.tokenOK(env.Token) {
			w.refuse(rw, "challenge with a wrong verification token")
			return
		}
		writeJSON(rw, http.StatusOK, map[string]string{"challenge": env.Challenge})
		return
	}
	if w.encryptKey != "" && !signed {
		w.refuse(rw, "event without a valid signature")
		return
	}
	if why := env.notEvent(); why != "" {
		w.refuse(rw, why)
		return
	}
	if !w.tokenOK(env.Header.Token) {
		w.refuse(rw, "event with a wrong verification token")
		return
	}
	h := env.Header
	ev, err := env.decode(w.botOpenID)
	if err != nil {
		// Authentic but unreadable: a 400 that Feishu does not redeliver
		// forever would lose it silently, so it is logged loudly.
		w.logger.Error("undecodable event", "event_id", h.EventID, "type", h.EventType, "error", err)
		http.Error(rw, "undecodable event", http.StatusBadRequest)
		return
	}
	if ev == nil {
		w.logger.Debug("event not taken", "event_id", h.EventID, "type", h.EventType)
		writeJSON(rw, http.StatusOK, map[string]string{"msg": "success"})
		return
	}
	if err := w.handle(r.Context(), env.header(), ev); err != nil {
		w.logger.Warn("event not handled; Feishu will deliver it again", "event_id", h.EventID, "type", h.EventType, "error", err)
		http.Error(rw, "not handled", http.StatusInternalServerError)
		return
	}
	if _, isCard := ev.(*CardPressed); isCard {
		// A card callback's answer is a (possibly empty) object with an
		// optional toast or card.
		writeJSON(rw, http.StatusOK, map[string]any{})
		return
	}
	writeJSON(rw, http.StatusOK, map[string]string{"msg": "success"})
}

// open returns the plain body and whether its signature checked out; why
// says what was refused. Without an encrypt key the body must be plain;
// with one it must be encrypted, and (except for the challenge, which
// Feishu does not sign) signed within the hour.
func (w *Webhook) open(h http.Header, body []byte) (plain []byte, signed bool, why string) {
	var outer struct {
		Encrypt string `json:"encrypt"`
	}
	if err := json.Unmarshal(body, &outer); err != nil {
		return nil, false, "body is not JSON"
	}
	if w.encryptKey == "" {
		if outer.Encrypt != "" {
			return nil, false, "encrypted body but no encrypt_key configured"
		}
		return body, false, ""
	}
	if outer.Encrypt == "" {
		return nil, false, "plain body while an encrypt_key is configured"
	}
	plain, err := decrypt(w.encryptKey, outer.Encrypt)
	if err != nil {
		return nil, false, err.Error()
	}
	ts, nonce, sig := h.Get("X-Lark-Request-Timestamp"), h.Get("X-Lark-Request-Nonce"), h.Get("X-Lark-Signature")
	if sig == "" {
		return plain, false, ""
	}
	if !signatureOK(ts, nonce, w.encryptKey, body, sig) {
		return nil, false, "bad signature"
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return nil, false, "bad timestamp"
	}
	if d := w.now().Sub(time.Unix(secs, 0)); d > maxSkew || d < -maxSkew {
		return nil, false, fmt.Sprintf("timestamp %s is more than an hour off", ts)
	}
	return plain, true, ""
}

func (w *Webhook) tokenOK(got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(w.token)) == 1
}

func (w *Webhook) refuse(rw http.ResponseWriter, why string) {
	w.logger.Warn("webhook request refused", "reason", why)
	http.Error(rw, "unauthorized", http.StatusUnauthorized)
}

func writeJSON(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json; charset=utf-8")
	rw.WriteHeader(status)
	_ = json.NewEncoder(rw).Encode(v)
}

// signatureOK checks X-Lark-Signature: hex SHA-256 of timestamp, nonce,
// encrypt key and the raw body.
func signatureOK(ts, nonce, key string, body []byte, sig string) bool {
	h := sha256.New()
	h.Write([]byte(ts + nonce + key))
	h.Write(body)
	want := hex.EncodeToString(h.Sum(nil))
	return subtle.ConstantTimeCompare([]byte(want), []byte(sig)) == 1
}

// decrypt opens an encrypted body: base64 of a 16-byte IV and AES-256-CBC
// ciphertext under SHA-256(key), PKCS#7 padded.
func decrypt(key, encrypted string) ([]byte, error) {
	buf, err := base64.StdEncoding.DecodeString(encrypted)
	if err != nil {
		return nil, errors.New("encrypt is not base64")
	}
	if len(buf) < 2*aes.BlockSize || len(buf)%aes.BlockSize != 0 {
		return nil, errors.New("encrypt is not whole AES blocks")
	}
	k := sha256.Sum256([]byte(key))
	block, err := aes.NewCipher(k[:])
	if err != nil {
		return nil, fmt.Errorf("aes: %w", err)
	}
	iv, data := buf[:aes.BlockSize], buf[aes.BlockSize:]
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(data, data)
	pad := int(data[len(data)-1])
	if pad < 1 || pad > aes.BlockSize {
		return nil, errors.New("encrypt does not decrypt (bad padding)")
	}
	for _, b := range data[len(data)-pad:] {
		if int(b) != pad {
			return nil, errors.New("encrypt does not decrypt (bad padding)")
		}
	}
	data = data[:len(data)-pad]
	if !json.Valid(data) {
		return nil, errors.New("encrypt does not decrypt to JSON")
	}
	return data, nil
}
