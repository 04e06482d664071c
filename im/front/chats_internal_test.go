package front

import (
	"context"
	"net/http"
	"reflect"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/e2e/fakefeishu"
	"github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/im/feishu"
	"github.com/thatch-run/thatch/im/telegram"
	"github.com/thatch-run/thatch/internal/testwait"
	"github.com/thatch-run/thatch/persistence"
)

// TestFeishuEventIDsOutliveARestartOfTheStore posts one event, closes the
// adapter and the store, opens both again on the same directory, and
// posts the event again: it is answered 200 and not handed over, while a
// new event is, with a higher update id.
func TestFeishuEventIDsOutliveARestartOfTheStore(t *testing.T) {
	s := fakefeishu.New("cli_t", "secret")
	defer s.Close()
	s.AddChat(fakefeishu.Chat{ID: "oc_1", Name: "build box"})
	dir := t.TempDir()
	var mu sync.Mutex
	var got []chat.Update
	run := func(eventIDs ...string) {
		st, err := persistence.Open(dir, persistence.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		a, err := feishu.Open(feishu.Options{AppID: "cli_t", AppSecret: "secret", VerificationToken: "vt", EncryptKey: "ek",
			BaseURL: s.URL, Mode: feishu.ModeWebhook, Listen: "127.0.0.1:0"},
			&eventRows{rows: st.Rows()}, hclog.New(&hclog.LoggerOptions{Output: testLogWriter{t}}))
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- a.Run(ctx, func(_ context.Context, u chat.Update) error {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, u)
				return nil
			})
		}()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()
		testwait.Until(t, "the webhook receiver to be up", func() bool { return a.Health().Up })
		p := &fakefeishu.Poster{URL: a.URL(), Token: "vt", EncryptKey: "ek", AppID: "cli_t"}
		for _, id := range eventIDs {
			ans, err := p.Post(context.Background(), p.Envelope(id, "im.message.receive_v1",
				fakefeishu.TextMessage("om_"+id, "oc_1", "group", "", "ou_alice", "text of "+id)))
			if err != nil || ans.Status != http.StatusOK {
				t.Fatalf("event %s answered %d (%v)", id, ans.Status, err)
			}
		}
	}
	run("ev-1")
	run("ev-1", "ev-2")
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Text != "text of ev-1" || got[1].Text != "text of ev-2" {
		t.Fatalf("handled %+v, want ev-1 once and ev-2", got)
	}
	if got[1].ID <= got[0].ID {
		t.Fatalf("update ids %d then %d do not increase", got[0].ID, got[1].ID)
	}
}

type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// TestParkedTelegramUpdatesOutliveARestartOfTheStore: what the Telegram
// adapter parks is read back whole after the store is opened again, an
// unparked one is gone, and a row that cannot be read is skipped while
// the others still come back.
func TestParkedTelegramUpdatesOutliveARestartOfTheStore(t *testing.T) {
	dir := t.TempDir()
	open := func() (*persistence.Store, *parkRows) {
		st, err := persistence.Open(dir, persistence.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return st, &parkRows{rows: st.Rows(), log: hclog.New(&hclog.LoggerOptions{Output: testLogWriter{t}})}
	}
	st, p := open()
	ins := []telegram.Inbound{
		{UpdateID: 41, ChatID: -100, ThreadID: 7, Topic: true, UserID: 9, Text: "first", Cursor: 41},
		{UpdateID: 42, ChatID: -100, ThreadID: 7, Topic: true, UserID: 9, Media: "document", Caption: "the log",
			File: &chat.File{Kind: chat.FileDocument, Ref: "file-ref", Name: "build.log", Size: 120}},
		{UpdateID: 43, ChatID: -100, ThreadID: 7, Topic: true, UserID: 9, Callback: &telegram.Callback{ID: "cb", Data: "p:1", MessageID: 5}},
	}
	for _, in := range ins {
		if err := p.Park(in); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Unpark(43); err != nil {
		t.Fatal(err)
	}
	if err := st.Rows().Put(parkTable, "garbage", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, p = open()
	defer st.Close()
	got, err := p.Parked()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ins[:2]) {
		t.Fatalf("parked after the restart:\n got %+v\nwant %+v", got, ins[:2])
	}
}
