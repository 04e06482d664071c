package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/internal/testwait"
)

// openAdapter opens an Adapter on w's fake Telegram, letting user 7 in.
func openAdapter(t *testing.T, w *world, r chat.Resume) *Adapter {
	t.Helper()
	a, err := Open(Options{Token: testToken, APIURL: w.srv.URL(), PollTimeout: 1e9, ChatInterval: -1,
		Logger: hclog.New(&hclog.LoggerOptions{Output: w.log})}, []string{"7"}, r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// The adapter speaks thread keys: an update names its thread
// "tg:<chat>:<thread>", its user and message ids as text, and the cursor
// to store; a send to a key reaches that topic, or the private chat a key
// of one chat names, and ids come back as text.
func TestTheAdapterSpeaksThreadKeys(t *testing.T) {
	w := newWorld(t, nil)
	a := openAdapter(t, w, chat.Resume{})
	const forum, private = -1001, 5
	topic := w.srv.CreateTopic(forum, "build")
	id := w.srv.Message(forum, topic, 7, "hello")
	w.srv.Press(forum, topic, 8, 42, "1:a:0")

	got := make(chan chat.Update, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, func(_ context.Context, u chat.Update) error { got <- u; return nil })
	}()
	defer func() { cancel(); <-done }()
	created, msg, press := <-got, <-got, <-got
	key := fmt.Sprintf("tg:%d:%d", forum, topic)
	if created.Thread != key || !created.Topic || created.Name != "build" || created.NameSrc != chat.NameCreated {
		t.Errorf("the topic's creation came as %+v", created)
	}
	if msg.Thread != key || msg.User != "7" || msg.Text != "hello" || msg.ID != id || msg.Cursor != fmt.Sprint(id+1) || msg.NameSrc != chat.NameSeed {
		t.Errorf("the message came as %+v", msg)
	}
	if press.Press == nil || press.Press.Data != "1:a:0" || press.Press.Message != "42" || press.User != "8" || press.Thread != key {
		t.Errorf("the press came as %+v (press %+v)", press, press.Press)
	}
	if !a.Allows("7") || a.Allows("8") || a.Allows("") || a.Allows("seven") {
		t.Error("the allow-list lets in others than user 7")
	}

	ids, err := a.Send(context.Background(), chat.Message{Thread: key, Text: "to the topic",
		Buttons: [][]chat.Button{{{Text: "New", Data: "1:new"}}}})
	if err != nil || len(ids) != 1 {
		t.Fatalf("send to the topic: %v %v", ids, err)
	}
	if _, err := a.Send(context.Background(), chat.Message{Thread: chatKey(private), Text: "to the chat"}); err != nil {
		t.Fatal(err)
	}
	if err := a.EditButtons(context.Background(), key, ids[0], nil); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the sends recorded", func() bool { return len(w.srv.Sent()) >= 3 })
	var sent []string
	for _, s := range w.srv.Sent() {
		sent = append(sent, fmt.Sprintf("%s %d/%d %d %q", s.Method, s.ChatID, s.ThreadID, s.MessageID, s.Text))
	}
	want := []string{
		fmt.Sprintf("sendMessage %d/%d %s %q", forum, topic, ids[0], "to the topic"),
		fmt.Sprintf("sendMessage %d/0", private),
		fmt.Sprintf("editMessageReplyMarkup %d/%d %s", forum, topic, ids[0]),
	}
	for i, s := range want {
		if i >= len(sent) || !strings.HasPrefix(sent[i], s) {
			t.Errorf("request %d: %v; want it to start with %q", i, sent, s)
		}
	}
}

func chatKey(id int64) string { return ThreadKey(id, id) }

// Errors say what the caller may do: a refusal is chat.ErrRefused, and a
// key of another platform or a message id that is not Telegram's is never
// sent.
func TestTheAdapterSaysWhatAnErrorMeans(t *testing.T) {
	w := newWorld(t, nil)
	a := openAdapter(t, w, chat.Resume{})
	ctx := context.Background()
	if _, err := a.Send(ctx, chat.Message{Thread: "fs:oc_1", Text: "x"}); !errors.Is(err, chat.ErrNoThread) {
		t.Errorf("a Feishu key: %v; want chat.ErrNoThread", err)
	}
	if _, err := a.Send(ctx, chat.Message{Thread: chatKey(5), Text: "  "}); !errors.Is(err, chat.ErrRefused) || !errors.Is(err, ErrEmptyText) {
		t.Errorf("an empty text: %v; want chat.ErrRefused, keeping ErrEmptyText", err)
	}
	if err := a.EditButtons(ctx, chatKey(5), "om_1", nil); !errors.Is(err, chat.ErrRefused) {
		t.Errorf("a message id that is not a number: %v; want chat.ErrRefused", err)
	}
	// A topic Telegram does not know (the fake's answer for a deleted
	// one): the thread is over, and its binding ends.
	if _, err := a.Send(ctx, chat.Message{Thread: ThreadKey(-999, 77), Text: "x"}); !errors.Is(err, chat.ErrGone) || !errors.Is(err, chat.ErrRefused) {
		t.Errorf("a topic that is gone: %v; want chat.ErrGone and chat.ErrRefused", err)
	}
	if _, err := a.Send(ctx, chat.Message{Thread: chatKey(5), Text: "  "}); errors.Is(err, chat.ErrGone) {
		t.Errorf("an empty text ends the thread: %v", err)
	}
	if !errors.Is(chatErr(fmt.Errorf("x: %w", ErrTimeout)), chat.ErrTimeout) || !errors.Is(chatErr(ErrRateLimited), chat.ErrRateLimited) {
		t.Error("a timeout or a rate limit is not told as such")
	}
	if len(w.srv.Sent()) != 0 {
		t.Errorf("messages sent: %+v", w.srv.Sent())
	}
}

// A stored cursor is where the next Run starts; one that is not a number
// starts from Telegram's oldest update.
func TestTheAdapterResumesFromTheCursor(t *testing.T) {
	w := newWorld(t, nil)
	if a := openAdapter(t, w, chat.Resume{Cursor: "12"}); a.bot.next != 12 {
		t.Errorf("resumed at %d, want 12", a.bot.next)
	}
	if a := openAdapter(t, w, chat.Resume{Cursor: "x"}); a.bot.next != 0 {
		t.Errorf("resumed at %d, want 0", a.bot.next)
	}
	if _, err := Open(Options{Token: testToken}, []string{"@someone"}, chat.Resume{}); !errors.Is(err, ErrOptions) {
		t.Errorf("an allow-list entry that is not a user id: %v; want ErrOptions", err)
	}
}

// SendPhoto uploads the image into the key's topic.
func TestSendPhotoUploadsIntoTheTopic(t *testing.T) {
	type upload struct{ chat, thread, caption, name, data string }
	got := make(chan upload, 1)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/sendPhoto") {
			http.NotFound(w, r)
			return
		}
		f, h, err := r.FormFile("photo")
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		data, _ := io.ReadAll(f)
		got <- upload{r.FormValue("chat_id"), r.FormValue("message_thread_id"), r.FormValue("caption"), h.Filename, string(data)}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true,"result":{"message_id":9,"date":0,"chat":{"id":-1001,"type":"supergroup"}}}`)
	}))
	defer api.Close()
	a, err := Open(Options{Token: testToken, APIURL: api.URL, ChatInterval: -1}, nil, chat.Resume{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	id, err := a.SendPhoto(context.Background(), chat.Photo{Thread: ThreadKey(-1001, 11), Name: "pane.png", Data: []byte("PNG"), Caption: "the pane"})
	if err != nil || id != "9" {
		t.Fatalf("SendPhoto: %q %v", id, err)
	}
	if u := <-got; u != (upload{"-1001", "11", "the pane", "pane.png", "PNG"}) {
		t.Fatalf("uploaded %+v", u)
	}
}

// SetCommands registers thatch's commands with Telegram (so that clients
// offer them) and learns the bot's name, which tells "/kill@thisbot" from
// "/kill@otherbot"; Typing shows the typing sign in the topic.
func TestSetCommandsRegistersThemAndLearnsTheBotsName(t *testing.T) {
	w := newWorld(t, nil)
	a := openAdapter(t, w, chat.Resume{})
	if a.BotName() != "" {
		t.Fatalf("the name is known before getMe: %q", a.BotName())
	}
	if err := a.SetCommands(context.Background(), chat.Commands); err != nil {
		t.Fatal(err)
	}
	if a.BotName() != "thatch_fake_bot" {
		t.Fatalf("BotName %q", a.BotName())
	}
	got := w.srv.Commands()
	if len(got) != len(chat.Commands) || got[0].Command != chat.Commands[0].Name || got[0].Description != chat.Commands[0].Description {
		t.Fatalf("commands registered: %+v", got)
	}
	if err := a.Typing(context.Background(), chatKey(5)); err != nil {
		t.Fatal(err)
	}
	if acts := w.srv.Actions(); len(acts) != 1 || acts[0].Text != "typing" {
		t.Fatalf("chat actions: %+v", acts)
	}
}
