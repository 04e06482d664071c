package feishu_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/e2e/fakefeishu"
	"github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/im/feishu"
)

// memStore is an EventStore in memory; a test that "restarts" opens a
// second adapter on the same one, as the front end does on its rows.
type memStore struct {
	mu   sync.Mutex
	recs map[string]feishu.EventRecord
	at   map[string]time.Time
}

func newMemStore() *memStore {
	return &memStore{recs: map[string]feishu.EventRecord{}, at: map[string]time.Time{}}
}

func (m *memStore) Get(id string) (feishu.EventRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[id]
	return r, ok, nil
}

func (m *memStore) Put(id string, r feishu.EventRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs[id], m.at[id] = r, time.Now()
	return nil
}

func (m *memStore) Prune(cutoff time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, at := range m.at {
		if at.Before(cutoff) {
			delete(m.recs, id)
			delete(m.at, id)
		}
	}
	return nil
}

func (m *memStore) MaxUpdate() (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var most int64
	for _, r := range m.recs {
		most = max(most, r.Update)
	}
	return most, nil
}

func (m *memStore) has(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.recs[id]
	return ok
}

// running is an adapter whose Run goes on until the test ends (or stop).
type running struct {
	a      *feishu.Adapter
	poster *fakefeishu.Poster
	stop   func()

	mu      sync.Mutex
	updates []chat.Update
	handle  func(chat.Update) error // nil: take it
}

func (r *running) setHandle(h func(chat.Update) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handle = h
}

func (r *running) got() []chat.Update {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]chat.Update(nil), r.updates...)
}

func startAdapter(t *testing.T, s *fakefeishu.Server, store feishu.EventStore, set ...func(*feishu.Options)) *running {
	t.Helper()
	o := feishu.Options{AppID: appID, AppSecret: appSecret, VerificationToken: vtoken, EncryptKey: ekey,
		BaseURL: s.URL, Mode: feishu.ModeWebhook, Listen: "127.0.0.1:0", AllowedUsers: []string{"ou_alice"}}
	for _, f := range set {
		f(&o)
	}
	a, err := feishu.Open(o, store, hclog.New(&hclog.LoggerOptions{Output: testWriter{t}, Level: hclog.Debug}))
	if err != nil {
		t.Fatal(err)
	}
	r := runAdapter(t, a, &fakefeishu.Poster{URL: a.URL(), Token: vtoken, EncryptKey: ekey, AppID: appID})
	deadline := time.Now().Add(10 * time.Second)
	for !a.Health().Up {
		if time.Now().After(deadline) {
			t.Fatal("the adapter's webhook never came up")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return r
}

// runAdapter runs a's Run until the test ends (or r.stop), recording the
// updates it hands over; r.handle, when set, sees each first.
func runAdapter(t *testing.T, a *feishu.Adapter, poster *fakefeishu.Poster) *running {
	t.Helper()
	r := &running{a: a, poster: poster}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, func(_ context.Context, u chat.Update) error {
			r.mu.Lock()
			h := r.handle
			r.mu.Unlock()
			if h != nil {
				if err := h(u); err != nil {
					return err
				}
			}
			r.mu.Lock()
			r.updates = append(r.updates, u)
			r.mu.Unlock()
			return nil
		})
	}()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
			a.Close()
		})
	}
	t.Cleanup(r.stop)
	return r
}

func newFake(t *testing.T) *fakefeishu.Server {
	s := newServer(t)
	s.AddChat(fakefeishu.Chat{ID: "oc_1", Name: "build box"})
	return s
}

func message(p *fakefeishu.Poster, eventID, messageID, text string) []byte {
	return p.Envelope(eventID, "im.message.receive_v1",
		fakefeishu.TextMessage(messageID, "oc_1", "group", "", "ou_alice", "@_user_1 "+text,
			fakefeishu.Mention{Key: "@_user_1", OpenID: "ou_bot", Name: "thatch"}))
}

func TestAMessageIsAnUpdateAnsweredOnlyOnceHandled(t *testing.T) {
	s := newFake(t)
	r := startAdapter(t, s, newMemStore())
	release := make(chan struct{})
	inHandler := make(chan chat.Update, 1)
	r.setHandle(func(u chat.Update) error {
		inHandler <- u
		<-release
		return nil
	})
	answered := make(chan fakefeishu.Answer, 1)
	go func() {
		a, err := r.poster.Post(context.Background(), message(r.poster, "ev-1", "om_in1", "ls -la"))
		if err != nil {
			t.Error(err)
		}
		answered <- a
	}()
	u := <-inHandler
	select {
	case a := <-answered:
		t.Fatalf("Feishu was answered (%d) before the handler returned", a.Status)
	default:
	}
	close(release)
	if a := <-answered; a.Status != http.StatusOK {
		t.Fatalf("answer %d %s, want 200", a.Status, a.Body)
	}
	if u.Thread != "fs:oc_1" || u.User != "ou_alice" || u.Text != "ls -la" || u.Topic || u.ID <= 0 || u.Cursor != "" ||
		u.Name != "build box" || u.NameSrc != chat.NameSeed {
		t.Fatalf("update %+v", u)
	}
	if !r.a.Allows("ou_alice") || r.a.Allows("ou_mallory") {
		t.Fatal("the allow-list is not the configured open ids")
	}
}

func TestARedeliveredEventIsDroppedAlsoAfterARestart(t *testing.T) {
	s := newFake(t)
	store := newMemStore()
	r := startAdapter(t, s, store)
	r.setHandle(func(chat.Update) error { return errors.New("not journaled") })
	ev := message(r.poster, "ev-1", "om_in1", "first")
	if a := post(t, r.poster, ev); a.Status != http.StatusInternalServerError {
		t.Fatalf("a failed handler answered %d, want 500", a.Status)
	}
	r.setHandle(nil)
	if a := post(t, r.poster, ev); a.Status != http.StatusOK {
		t.Fatalf("answer %d", a.Status)
	}
	if a := post(t, r.poster, ev); a.Status != http.StatusOK {
		t.Fatalf("a redelivery answered %d, want 200", a.Status)
	}
	if n := len(r.got()); n != 1 {
		t.Fatalf("handled %d times, want once", n)
	}
	first := r.got()[0].ID

	r.stop()
	r2 := startAdapter(t, s, store)
	if a := post(t, r2.poster, ev); a.Status != http.StatusOK {
		t.Fatalf("a redelivery after a restart answered %d, want 200", a.Status)
	}
	if a := post(t, r2.poster, message(r2.poster, "ev-2", "om_in2", "second")); a.Status != http.StatusOK {
		t.Fatalf("answer %d", a.Status)
	}
	got := r2.got()
	if len(got) != 1 || got[0].Text != "second" {
		t.Fatalf("after the restart handled %+v, want only the new event", got)
	}
	if got[0].ID <= first {
		t.Fatalf("update ids do not increase across the restart: %d then %d", first, got[0].ID)
	}
}

// withoutCreateTime drops header.create_time from an event, as a
// header that carries none.
func withoutCreateTime(t *testing.T, ev []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(ev, &m); err != nil {
		t.Fatal(err)
	}
	delete(m["header"].(map[string]any), "create_time")
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestUpdateIDsFollowFeishusOrderWhateverThisMachinesClockDoes(t *testing.T) {
	// The binding drops an update id at or below the last one of its
	// thread as a redelivery: an id made from a clock that went back
	// would lose a message with no word.
	s := newFake(t)
	feishuNow := time.Now()
	var mu sync.Mutex
	machine := feishuNow
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return machine
	}
	step := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		machine = machine.Add(d)
	}
	withClock := func(o *feishu.Options) { o.Clock = clock }
	at := func(p *fakefeishu.Poster, d time.Duration) { p.Now = func() time.Time { return feishuNow.Add(d) } }
	idOf := func(r *running, ev []byte) int64 {
		t.Helper()
		if a := post(t, r.poster, ev); a.Status != http.StatusOK {
			t.Fatalf("answer %d %s", a.Status, a.Body)
		}
		got := r.got()
		return got[len(got)-1].ID
	}

	store := newMemStore()
	r := startAdapter(t, s, store, withClock)
	at(r.poster, 0)
	first := idOf(r, message(r.poster, "ev-1", "om_1", "one"))
	r.stop()

	// Restarted after this machine's clock was stepped back an hour.
	step(-time.Hour)
	r = startAdapter(t, s, store, withClock)
	at(r.poster, time.Second)
	second := idOf(r, message(r.poster, "ev-2", "om_2", "two"))
	if second <= first {
		t.Fatalf("after the clock went back the new message got id %d, at or below the last one (%d)", second, first)
	}
	// An event with no creation time takes this machine's clock, which is
	// an hour behind: still above every id given out before.
	third := idOf(r, withoutCreateTime(t, message(r.poster, "ev-3", "om_3", "three")))
	if third <= second {
		t.Fatalf("an event without a creation time got id %d, at or below the last one (%d)", third, second)
	}

	// Another node of a cluster, its clock an hour behind and its store
	// its own, takes the next message of the thread: Feishu's clock
	// orders it after the others.
	other := startAdapter(t, s, newMemStore(), withClock)
	at(other.poster, 2*time.Second)
	if fourth := idOf(other, message(other.poster, "ev-4", "om_4", "four")); fourth <= third {
		t.Fatalf("the other node gave id %d, at or below the thread's last (%d)", fourth, third)
	}
}

func TestAnEventHandedOverAgainKeepsItsUpdateID(t *testing.T) {
	// A crash after the binding journaled an update but before the
	// adapter marked it done: Feishu delivers it again, with the same
	// Update.ID, which the binding drops.
	s := newFake(t)
	r := startAdapter(t, s, newMemStore())
	var mu sync.Mutex
	var ids []int64
	r.setHandle(func(u chat.Update) error {
		mu.Lock()
		defer mu.Unlock()
		ids = append(ids, u.ID)
		if len(ids) == 1 {
			return errors.New("timed out")
		}
		return nil
	})
	ev := message(r.poster, "ev-9", "om_in9", "x")
	post(t, r.poster, ev)
	post(t, r.poster, message(r.poster, "ev-10", "om_in10", "y"))
	post(t, r.poster, ev)
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 3 || ids[0] != ids[2] || ids[1] <= ids[0] {
		t.Fatalf("update ids %v: want the redelivery's equal to its first, the new event's higher", ids)
	}
}

func TestRefusedEventsAreNeitherHandledNorRecorded(t *testing.T) {
	s := newFake(t)
	store := newMemStore()
	r := startAdapter(t, s, store)
	wrong := &fakefeishu.Poster{URL: r.a.URL(), Token: "not-the-token", EncryptKey: ekey}
	if a := post(t, wrong, message(wrong, "ev-w", "om_w", "x")); a.Status != http.StatusUnauthorized {
		t.Fatalf("a wrong token answered %d, want 401", a.Status)
	}
	body, _ := json.Marshal(map[string]string{"encrypt": fakefeishu.Encrypt(ekey, message(r.poster, "ev-s", "om_s", "x"))})
	h := r.poster.SignHeaders(body)
	h.Set("X-Lark-Signature", "00"+h.Get("X-Lark-Signature")[2:])
	a, err := r.poster.PostRaw(ctxFor(t, 10*time.Second), body, h)
	if err != nil || a.Status != http.StatusUnauthorized {
		t.Fatalf("a bad signature answered %d (%v), want 401", a.Status, err)
	}
	if got := r.got(); len(got) != 0 {
		t.Fatalf("refused events were handled: %+v", got)
	}
	if store.has("ev-w") || store.has("ev-s") {
		t.Fatal("a refused event's id was recorded")
	}
}

func TestACardPressComesBackAsAPressOfItsThread(t *testing.T) {
	s := newFake(t)
	r := startAdapter(t, s, newMemStore())
	ctx := ctxFor(t, 10*time.Second)
	ids, err := r.a.Send(ctx, chat.Message{Thread: "fs:oc_1", Text: "Pick an agent",
		Buttons: [][]chat.Button{{{Text: "claude", Data: "a:claude"}, {Text: "codex", Data: "a:codex"}}}})
	if err != nil || len(ids) != 1 {
		t.Fatalf("Send: %v %v", ids, err)
	}
	sent := s.Sent()
	if len(sent) != 1 || sent[0].MsgType != "interactive" || sent[0].MessageID != ids[0] {
		t.Fatalf("sent %+v, want one card", sent)
	}
	value := buttonValue(t, sent[0].Content, "codex")
	if a := post(t, r.poster, r.poster.Envelope("ev-p", "card.action.trigger",
		fakefeishu.CardAction("oc_1", ids[0], "ou_alice", value))); a.Status != http.StatusOK {
		t.Fatalf("press answered %d", a.Status)
	}
	got := r.got()
	if len(got) != 1 || got[0].Press == nil {
		t.Fatalf("got %+v, want one press", got)
	}
	u := got[0]
	if u.Thread != "fs:oc_1" || u.User != "ou_alice" || u.Press.Data != "a:codex" || u.Press.Message != ids[0] || u.Press.ID != "ev-p" {
		t.Fatalf("press %+v %+v", u, *u.Press)
	}
	var adapter chat.Adapter = r.a
	if _, ok := adapter.(chat.PressAnswerer); ok {
		t.Fatal("the Feishu adapter claims presses need an answer: a card callback is answered by the webhook's response")
	}
	if err := r.a.EditButtons(ctx, u.Thread, ids[0], nil); err != nil {
		t.Fatalf("EditButtons: %v", err)
	}
	patched := s.Sent()[1]
	if patched.Op != "patch" || !jsonHas(patched.Content, "Pick an agent") || jsonHas(patched.Content, "codex") {
		t.Fatalf("patch %+v: want the text kept and the buttons gone", patched)
	}
	if err := r.a.Delete(ctx, u.Thread, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := r.a.Delete(ctx, u.Thread, ids[0]); err != nil {
		t.Fatalf("deleting a deleted message: %v", err)
	}
	s.EndChat("oc_1")
	if _, err := r.a.Send(ctx, chat.Message{Thread: "fs:oc_1", Text: "hi"}); !errors.Is(err, chat.ErrRefused) {
		t.Fatalf("a send to an ended chat: %v, want chat.ErrRefused", err)
	}
}

func TestChatEventsAreRenamesAndEnds(t *testing.T) {
	s := newFake(t)
	r := startAdapter(t, s, newMemStore())
	post(t, r.poster, r.poster.Envelope("ev-r", "im.chat.updated_v1", fakefeishu.ChatUpdated("oc_1", "ou_alice", "build box", "release box")))
	post(t, r.poster, r.poster.Envelope("ev-d", "im.chat.disbanded_v1", fakefeishu.ChatEvent("oc_1", "ou_alice")))
	s.AddChat(fakefeishu.Chat{ID: "oc_topics", Name: "topics", Mode: "topic"})
	post(t, r.poster, r.poster.Envelope("ev-t", "im.message.receive_v1",
		fakefeishu.TextMessage("om_t", "oc_topics", "group", "omt_9", "ou_alice", "in a topic\nmore")))
	s.AddUser("ou_alice", "Alice")
	post(t, r.poster, r.poster.Envelope("ev-p2p", "im.message.receive_v1",
		fakefeishu.TextMessage("om_p", "oc_p2p", "p2p", "", "ou_alice", "hi")))
	post(t, r.poster, r.poster.Envelope("ev-reply", "im.message.receive_v1",
		fakefeishu.TextMessage("om_r", "oc_1", "group", "omt_reply", "ou_alice", "a reply in a thread")))
	got := r.got()
	if len(got) != 5 {
		t.Fatalf("got %+v", got)
	}
	if u := got[4]; u.Thread != "fs:oc_1" || u.Topic {
		t.Fatalf("a reply thread of a group that is not a topic group %+v: want the chat's thread", u)
	}
	if u := got[3]; u.Thread != "fs:oc_p2p" || u.Name != "Alice" || u.NameSrc != chat.NameSeed {
		t.Fatalf("a P2P chat's message %+v: want it named after the peer", u)
	}
	if u := got[0]; u.Thread != "fs:oc_1" || u.Name != "release box" || u.NameSrc != chat.NameEdited {
		t.Fatalf("rename %+v", u)
	}
	if u := got[1]; u.Thread != "fs:oc_1" || u.Ended == nil || u.Ended.Reason != "disbanded" {
		t.Fatalf("end %+v", u)
	}
	if u := got[2]; u.Thread != "fs:oc_topics:omt_9" || !u.Topic || u.Text != "in a topic\nmore" || got[1].ID >= u.ID ||
		u.Name != "topics: in a topic" {
		t.Fatalf("topic message %+v", u)
	}
	s.Received("oc_topics", "om_t")
	ids, err := r.a.Send(ctxFor(t, 10*time.Second), chat.Message{Thread: "fs:oc_topics:omt_9", Text: "answer"})
	if err != nil || len(ids) != 1 {
		t.Fatal(ids, err)
	}
	if last := s.Sent()[0]; last.Op != "reply" || last.ReplyTo != "om_t" || !last.InThread {
		t.Fatalf("a topic's message went out as %+v, want a reply in the thread", last)
	}
}

// buttonValue finds the value of the button labelled label in a card.
func buttonValue(t *testing.T, content, label string) map[string]any {
	t.Helper()
	var card struct {
		Elements []struct {
			Actions []struct {
				Text  struct{ Content string }
				Value map[string]any
			}
		}
	}
	if err := json.Unmarshal([]byte(content), &card); err != nil {
		t.Fatal(err)
	}
	for _, e := range card.Elements {
		for _, a := range e.Actions {
			if a.Text.Content == label {
				return a.Value
			}
		}
	}
	t.Fatalf("no button %q in %s", label, content)
	return nil
}

func jsonHas(content, s string) bool {
	b, _ := json.Marshal(s)
	return strings.Contains(content, string(b[1:len(b)-1]))
}

// A group's thread key depends on its mode (a topic group's topics are
// threads of their own), so a group the chat API cannot describe is not
// handed over: Feishu is answered 500 and delivers the event again.
func TestAGroupTheChatAPICannotDescribeIsOfferedAgain(t *testing.T) {
	s := newFake(t)
	r := startAdapter(t, s, newMemStore())
	ev := r.poster.Envelope("ev-u", "im.message.receive_v1",
		fakefeishu.TextMessage("om_u", "oc_unknown", "group", "", "ou_alice", "hello"))
	if a := post(t, r.poster, ev); a.Status != http.StatusInternalServerError {
		t.Fatalf("answered %d, want 500", a.Status)
	}
	if got := r.got(); len(got) != 0 {
		t.Fatalf("handed over %+v", got)
	}
	s.AddChat(fakefeishu.Chat{ID: "oc_unknown", Name: "late"})
	if a := post(t, r.poster, ev); a.Status != http.StatusOK {
		t.Fatalf("answered %d, want 200", a.Status)
	}
	if got := r.got(); len(got) != 1 || got[0].Thread != "fs:oc_unknown" || got[0].Name != "late" {
		t.Fatalf("handed over %+v", got)
	}
}
