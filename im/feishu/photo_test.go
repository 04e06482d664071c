package feishu_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/thatch-run/thatch/e2e/fakefeishu"
	"github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/im/feishu"
)

// A photo is uploaded, sent as an image message of that upload, and its
// caption follows as text: what the chat shows is the picture, then the
// words.
func TestAPhotoIsUploadedAndSentWithItsCaptionAfter(t *testing.T) {
	s := newFake(t)
	r := startAdapter(t, s, newMemStore())
	png := []byte("\x89PNG\r\n\x1a\nnot really a png, but bytes")
	id, err := r.a.SendPhoto(ctxFor(t, 10*time.Second), chat.Photo{Thread: feishu.ThreadKey("oc_1", ""), Name: "pane.png",
		Data: png, Caption: "the pane of build box"})
	if err != nil {
		t.Fatal(err)
	}
	var sent []fakefeishu.Sent
	for _, m := range s.Sent() {
		if m.Op == "create" {
			sent = append(sent, m)
		}
	}
	if len(sent) != 2 || sent[0].MsgType != "image" || sent[0].MessageID != id || sent[1].Text() != "the pane of build box" {
		t.Fatalf("sent %+v, want the image (id %s) then its caption", sent, id)
	}
	var c struct {
		ImageKey string `json:"image_key"`
	}
	if err := json.Unmarshal([]byte(sent[0].Content), &c); err != nil || !bytes.Equal(s.Image(c.ImageKey), png) {
		t.Fatalf("the image message names %q, whose upload is %q", c.ImageKey, s.Image(c.ImageKey))
	}
}

// An empty picture, or one over Feishu's 10 MB, is refused before any
// call: nothing reaches the chat.
func TestAPhotoFeishuWouldRefuseIsNotSent(t *testing.T) {
	s := newFake(t)
	r := startAdapter(t, s, newMemStore())
	for _, data := range [][]byte{nil, make([]byte, feishu.MaxImageBytes+1)} {
		_, err := r.a.SendPhoto(ctxFor(t, 10*time.Second), chat.Photo{Thread: feishu.ThreadKey("oc_1", ""), Data: data})
		if !errors.Is(err, chat.ErrRefused) {
			t.Errorf("a %d-byte photo: %v, want chat.ErrRefused", len(data), err)
		}
	}
	if n := len(s.Sent()); n != 0 {
		t.Fatalf("%d messages sent", n)
	}
}
