package faketelegram

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/thatch-run/thatch/internal/testwait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "77:fake-token"

type answer struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// call posts params as JSON and decodes the answer.
func call(t *testing.T, s *Server, tok, method string, params map[string]any) answer {
	t.Helper()
	body, _ := json.Marshal(params)
	resp, err := http.Post(s.URL()+"/bot"+tok+"/"+method, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer func() { _ = resp.Body.Close() }()
	var a answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatalf("%s: decoding: %v", method, err)
	}
	if !a.OK && a.ErrorCode != resp.StatusCode {
		t.Fatalf("%s: error_code %d in an HTTP %d answer", method, a.ErrorCode, resp.StatusCode)
	}
	return a
}

func newServer(t *testing.T) *Server {
	s := New(token)
	t.Cleanup(func() {
		s.Close()
		http.DefaultClient.CloseIdleConnections()
	})
	return s
}

func updateIDs(t *testing.T, a answer) []int64 {
	t.Helper()
	var ups []struct {
		ID int64 `json:"update_id"`
	}
	if err := json.Unmarshal(a.Result, &ups); err != nil {
		t.Fatalf("result: %v", err)
	}
	var ids []int64
	for _, u := range ups {
		ids = append(ids, u.ID)
	}
	return ids
}

func TestAWrongTokenIsUnauthorizedAndAnUnknownMethodNotFound(t *testing.T) {
	s := newServer(t)
	if a := call(t, s, "77:other", "getMe", nil); a.OK || a.ErrorCode != 401 {
		t.Fatalf("wrong token answered %+v, want 401", a)
	}
	if a := call(t, s, token, "sendVoice", nil); a.OK || a.ErrorCode != 404 || a.Description != "Not Found" {
		t.Fatalf("unknown method answered %+v, want 404 Not Found", a)
	}
	if a := call(t, s, token, "getMe", nil); !a.OK || !strings.Contains(string(a.Result), `"is_bot":true`) {
		t.Fatalf("getMe answered %+v", a)
	}
}

func TestGetUpdatesDropsWhatAnOffsetPassesForGood(t *testing.T) {
	s := newServer(t)
	for range 3 {
		s.Message(5, 0, 5, "x")
	}
	if ids := updateIDs(t, call(t, s, token, "getUpdates", map[string]any{"limit": 2})); len(ids) != 2 || ids[0] != 1 || ids[1] != 2 {
		t.Fatalf("limit 2 gave %v", ids)
	}
	if s.Confirmed() != 0 {
		t.Fatalf("Confirmed = %d before any offset", s.Confirmed())
	}
	if ids := updateIDs(t, call(t, s, token, "getUpdates", map[string]any{"offset": 3})); len(ids) != 1 || ids[0] != 3 {
		t.Fatalf("offset 3 gave %v", ids)
	}
	if ids := updateIDs(t, call(t, s, token, "getUpdates", map[string]any{"offset": 1})); len(ids) != 1 || ids[0] != 3 {
		t.Fatalf("offset 1 after offset 3 gave %v: dropped updates came back", ids)
	}
	if s.Confirmed() != 2 {
		t.Fatalf("Confirmed = %d, want 2", s.Confirmed())
	}
}

func TestALongPollAnswersThePushThatEndsIt(t *testing.T) {
	s := newServer(t)
	got := make(chan []int64, 1)
	go func() { got <- updateIDs(t, call(t, s, token, "getUpdates", map[string]any{"timeout": 30})) }()
	s.Message(5, 0, 5, "wake up")
	select {
	case ids := <-got:
		if len(ids) != 1 || ids[0] != 1 {
			t.Fatalf("long poll gave %v", ids)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the long poll did not answer the push")
	}
}

func TestCloseEndsAPendingLongPoll(t *testing.T) {
	s := New(token)
	defer http.DefaultClient.CloseIdleConnections()
	done := make(chan answer, 1)
	go func() { done <- call(t, s, token, "getUpdates", map[string]any{"timeout": 600}) }()
	// Close must not wait for the 600 s poll; the poll ends empty.
	deadline := time.Now().Add(20 * time.Second)
	for s.polling() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the long poll never started")
		}
		time.Sleep(time.Millisecond)
	}
	s.Close()
	if a := <-done; !a.OK || string(a.Result) != "[]" {
		t.Fatalf("the poll ended with %+v", a)
	}
}

func TestASecondPollerIsAnsweredConflictUntilTheFirstHangsUp(t *testing.T) {
	s := newServer(t)
	s.Message(5, 0, 5, "kept")
	if ids := updateIDs(t, call(t, s, token, "getUpdates", map[string]any{"offset": 2})); len(ids) != 0 {
		t.Fatalf("offset 2 gave %v", ids)
	}

	// The first poller's long poll waits; its client can hang up.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body, _ := json.Marshal(map[string]any{"offset": 2, "timeout": 600})
	req, _ := http.NewRequestWithContext(ctx, "POST", s.URL()+"/bot"+token+"/getUpdates", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	first := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		first <- err
	}()
	testwait.Within(t, 20*time.Second, "the first long poll to wait", func() bool { return s.polling() == 1 })

	a := call(t, s, token, "getUpdates", map[string]any{"offset": 5, "timeout": 0})
	if a.OK || a.ErrorCode != 409 || a.Description != "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running" {
		t.Fatalf("a second getUpdates answered %+v, want 409 Conflict", a)
	}
	if s.Conflicts() != 1 || s.Confirmed() != 1 {
		t.Fatalf("Conflicts = %d, Confirmed = %d; want 1 and 1 (a refused poll confirms nothing)", s.Conflicts(), s.Confirmed())
	}
	if s.Pending() != 0 {
		t.Fatalf("Pending = %d", s.Pending())
	}

	// The first poller hangs up (a bot killed): its poll ends with the
	// connection, and the next poller is served.
	cancel()
	if err := <-first; err == nil {
		t.Fatalf("the cancelled long poll answered")
	}
	testwait.Within(t, 20*time.Second, "the first long poll to end", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.serving == 0
	})
	s.Message(5, 0, 5, "after")
	if ids := updateIDs(t, call(t, s, token, "getUpdates", map[string]any{"offset": 2, "timeout": 0})); len(ids) != 1 || ids[0] != 2 {
		t.Fatalf("the next poller got %v, want [2]", ids)
	}
	if s.Conflicts() != 1 {
		t.Fatalf("Conflicts = %d after the first poller hung up, want 1", s.Conflicts())
	}
}

func TestTopicMessagesCarryTheOriginalNameAfterARename(t *testing.T) {
	s := newServer(t)
	thread := s.CreateTopic(-100, "first name")
	s.EditTopic(-100, thread, "second name")
	s.Message(-100, thread, 9, "hi")
	a := call(t, s, token, "getUpdates", nil)
	var ups []struct {
		Message struct {
			ThreadID int64 `json:"message_thread_id"`
			IsTopic  bool  `json:"is_topic_message"`
			Created  *struct {
				Name string `json:"name"`
			} `json:"forum_topic_created"`
			Edited *struct {
				Name string `json:"name"`
			} `json:"forum_topic_edited"`
			Reply *struct {
				Created struct {
					Name string `json:"name"`
				} `json:"forum_topic_created"`
			} `json:"reply_to_message"`
			Text string `json:"text"`
		} `json:"message"`
	}
	if err := json.Unmarshal(a.Result, &ups); err != nil || len(ups) != 3 {
		t.Fatalf("updates %s: %v", a.Result, err)
	}
	for i, u := range ups {
		if u.Message.ThreadID != thread || !u.Message.IsTopic {
			t.Errorf("update %d is not in topic %d: %+v", i, thread, u.Message)
		}
	}
	if ups[0].Message.Created == nil || ups[0].Message.Created.Name != "first name" {
		t.Errorf("creation: %+v", ups[0].Message)
	}
	if ups[1].Message.Edited == nil || ups[1].Message.Edited.Name != "second name" {
		t.Errorf("edit: %+v", ups[1].Message)
	}
	if ups[2].Message.Reply == nil || ups[2].Message.Reply.Created.Name != "first name" || ups[2].Message.Text != "hi" {
		t.Errorf("message: %+v", ups[2].Message)
	}
}

func TestSendMessageAcceptsMultipartJSONAndURLEncodedBodies(t *testing.T) {
	s := newServer(t)
	markup := `{"inline_keyboard":[[{"text":"Yes","callback_data":"y"}]]}`
	var mp bytes.Buffer
	w := multipart.NewWriter(&mp)
	for k, v := range map[string]string{"chat_id": "5", "text": "multipart", "reply_markup": markup} {
		_ = w.WriteField(k, v)
	}
	_ = w.Close()
	post := func(ct string, body []byte) {
		resp, err := http.Post(s.URL()+"/bot"+token+"/sendMessage", ct, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: HTTP %d", ct, resp.StatusCode)
		}
	}
	post(w.FormDataContentType(), mp.Bytes())
	js, _ := json.Marshal(map[string]any{"chat_id": 5, "text": "json", "reply_markup": json.RawMessage(markup)})
	post("application/json", js)
	post("application/x-www-form-urlencoded", []byte(url.Values{"chat_id": {"5"}, "text": {"form"}, "reply_markup": {markup}}.Encode()))

	got := s.Messages(5, 0)
	if len(got) != 3 {
		t.Fatalf("recorded %d messages", len(got))
	}
	for i, text := range []string{"multipart", "json", "form"} {
		if got[i].Text != text || len(got[i].Buttons) != 1 || got[i].Buttons[0][0] != (Button{Text: "Yes", Data: "y"}) || got[i].MessageID != i+1 {
			t.Errorf("message %d = %+v", i, got[i])
		}
	}
}

func TestHTMLTelegramCannotParseIsRefused(t *testing.T) {
	s := newServer(t)
	bad := []string{"<b>open", "a < b", "a & b", "a > b", "<script>x</script>", "<b><i>x</b></i>", "<code><b>x</b></code>", "&nbsp;"}
	for _, text := range bad {
		a := call(t, s, token, "sendMessage", map[string]any{"chat_id": 5, "text": text, "parse_mode": "HTML"})
		if a.OK || a.ErrorCode != 400 || !strings.Contains(a.Description, "can't parse entities") {
			t.Errorf("%q answered %+v, want 400 can't parse entities", text, a)
		}
	}
	good := `<b>x</b> &lt;&amp;&gt; <pre><code class="language-go">a</code></pre> <a href="https://e.com">l</a>`
	if a := call(t, s, token, "sendMessage", map[string]any{"chat_id": 5, "text": good, "parse_mode": "HTML"}); !a.OK {
		t.Fatalf("good HTML refused: %+v", a)
	}
	if a := call(t, s, token, "sendMessage", map[string]any{"chat_id": 5, "text": strings.Repeat("😀", 2049)}); a.OK || !strings.Contains(a.Description, "too long") {
		t.Fatalf("4098 UTF-16 units answered %+v", a)
	}
	if n := len(s.Sent()); n != 1 {
		t.Fatalf("recorded %d requests, want only the good one", n)
	}
}

// With Telegram's rates enforced, a second request to a chat within a
// second is answered 429, an edit as a send, and counted; another chat is
// not held up, nor is anything without them enforced.
func TestEnforceRatesAnswers429WithinASecondOfAChatsLastRequest(t *testing.T) {
	s := newServer(t)
	if a := call(t, s, token, "sendMessage", map[string]any{"chat_id": 5, "text": "x"}); !a.OK {
		t.Fatalf("a first send: %+v", a)
	}
	if a := call(t, s, token, "sendMessage", map[string]any{"chat_id": 5, "text": "y"}); !a.OK {
		t.Fatalf("without rates enforced, a second send at once: %+v", a)
	}
	s.EnforceRates()
	if a := call(t, s, token, "sendMessage", map[string]any{"chat_id": 6, "text": "x"}); !a.OK {
		t.Fatalf("a first send with rates enforced: %+v", a)
	}
	a := call(t, s, token, "editMessageText", map[string]any{"chat_id": 6, "message_id": 1, "text": "edited"})
	if a.OK || a.ErrorCode != 429 || a.Parameters.RetryAfter != 1 {
		t.Fatalf("an edit at once answered %+v, want 429 retry_after 1", a)
	}
	if a := call(t, s, token, "sendMessage", map[string]any{"chat_id": 7, "text": "x"}); !a.OK {
		t.Fatalf("another chat: %+v", a)
	}
	if n := s.RateLimited(); n != 1 {
		t.Fatalf("RateLimited = %d, want 1", n)
	}
}

func TestFail429AnswersRetryAfterAndCountsEarlyRetries(t *testing.T) {
	s := newServer(t)
	s.Fail429(1, 30)
	for i, want := range []int{30, 30} {
		a := call(t, s, token, "sendMessage", map[string]any{"chat_id": 5, "text": "x"})
		if a.OK || a.ErrorCode != 429 || a.Parameters.RetryAfter < want-1 {
			t.Fatalf("try %d answered %+v, want 429 retry_after ~%d", i, a, want)
		}
	}
	if s.Early() != 1 {
		t.Fatalf("Early = %d, want 1 (the second try came at once)", s.Early())
	}
	if a := call(t, s, token, "sendMessage", map[string]any{"chat_id": 6, "text": "x"}); !a.OK {
		t.Fatalf("another chat is not throttled: %+v", a)
	}
	s.RefuseEntities(1)
	if a := call(t, s, token, "sendMessage", map[string]any{"chat_id": 6, "text": "<b>x</b>", "parse_mode": "HTML"}); a.OK || !strings.Contains(a.Description, "can't parse entities") {
		t.Fatalf("RefuseEntities did not refuse: %+v", a)
	}
}
