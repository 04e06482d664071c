package front

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/im/telegram"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
)

// lockedBuffer is a log sink read while the front end writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A chat message whose request hangs (thread A) fails after
// im.telegram.send_timeout and comes back to its binding as a failed send
// that is not permanent (so it stays in the outbox and is sent again), and
// it is logged; a message to another thread of the same chat (B), sent
// while A's request hangs, goes out.
func TestAChatSendThatHangsIsReportedAsFailed(t *testing.T) {
	const chat, threadA, threadB = -1001, 11, 12
	hung := make(chan struct{}, 8)
	// release lets the hung handler go at the end: the client gave up on
	// it, but its connection may stay open, and the server's Close waits
	// for every handler.
	release := make(chan struct{})
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/sendMessage") {
			http.NotFound(w, r)
			return
		}
		if r.FormValue("message_thread_id") == fmt.Sprint(threadA) {
			hung <- struct{}{}
			select { // never answered
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ok":true,"result":{"message_id":7,"date":0,"chat":{"id":%d,"type":"supergroup"}}}`, chat)
	}))
	defer api.Close()
	defer close(release)
	st, err := persistence.Open(t.TempDir(), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := config.Defaults()
	cfg.IM.Telegram.Token = "42:token"
	cfg.IM.Telegram.APIURL = api.URL
	cfg.IM.Telegram.SendTimeout = 200 * time.Millisecond
	cfg.IM.Open = true
	logs := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &FrontEnd{cfg: cfg, opts: Options{ChatInterval: -1}, rows: st.Rows(), runCtx: ctx, runCancel: cancel,
		log: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Warn})}
	if err = f.openChats(); err != nil {
		t.Fatal(err)
	}
	defer f.closeChats()

	sentA := make(chan *messages.IMChatSent, 1)
	go func() {
		sentA <- f.sendNow(bindingID(telegram.ThreadKey(chat, threadA)), &messages.IMSendChat{Seq: 3, Text: "from A"})
	}()
	<-hung
	b := f.sendNow(bindingID(telegram.ThreadKey(chat, threadB)), &messages.IMSendChat{Seq: 4, Text: "from B"})
	if b.Err != "" || b.MessageID != "7" || b.Seq != 4 {
		t.Fatalf("thread B's send while thread A's hangs: %+v; want it sent", b)
	}
	a := <-sentA
	if a.Seq != 3 || a.Err == "" || a.Permanent || a.MessageID != "" || !strings.Contains(a.Err, "no answer") {
		t.Fatalf("thread A's send without an answer came back as %+v; want a failed send to try again, saying why", a)
	}
	if !strings.Contains(logs.String(), "cannot send a chat message; it stays in the outbox") {
		t.Errorf("the failed send was not logged:\n%s", logs.String())
	}
}
