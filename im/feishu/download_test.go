package feishu_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/thatch-run/thatch/e2e/fakefeishu"
	"github.com/thatch-run/thatch/im/chat"
)

// postFile sends one event and waits until the adapter handed it over.
func postFile(t *testing.T, r *running, body []byte) chat.Update {
	t.Helper()
	n := len(r.got())
	a, err := r.poster.Post(context.Background(), body)
	if err != nil || a.Status != http.StatusOK {
		t.Fatalf("post: %v %+v", err, a)
	}
	got := r.got()
	if len(got) != n+1 {
		t.Fatalf("updates %+v, want one more", got)
	}
	return got[n]
}

// An image and a file message come as files; Download fetches them with
// the message resource API (type image, type file), and one over the
// caller's bound or Feishu's is refused with ErrTooLarge.
func TestImagesAndFilesAreDownloaded(t *testing.T) {
	s := newFake(t)
	r := startAdapter(t, s, newMemStore())
	img, doc := []byte("png bytes"), bytes.Repeat([]byte("log line\n"), 500)
	s.AddResource("om_img", "img_v2_1", "image", img)
	s.AddResource("om_file", "file_v2_1", "file", doc)
	s.AddBigResource("om_big", "file_v2_2", "file", fakefeishu.MaxResource+1)

	u := postFile(t, r, r.poster.Envelope("ev-1", "im.message.receive_v1",
		fakefeishu.FileMessage("om_img", "oc_1", "group", "", "ou_alice", "image", map[string]any{"image_key": "img_v2_1"})))
	if u.File == nil || u.File.Kind != chat.FilePhoto || u.Media != "image" {
		t.Fatalf("the image came as %+v (file %+v)", u, u.File)
	}
	var got bytes.Buffer
	if n, err := r.a.Download(context.Background(), u.Thread, *u.File, &got, 0); err != nil || n != int64(len(img)) || !bytes.Equal(got.Bytes(), img) {
		t.Fatalf("Download of the image: %d %q %v", n, got.Bytes(), err)
	}

	u = postFile(t, r, r.poster.Envelope("ev-2", "im.message.receive_v1",
		fakefeishu.FileMessage("om_file", "oc_1", "group", "", "ou_alice", "file", map[string]any{"file_key": "file_v2_1", "file_name": "../build.log"})))
	if u.File == nil || u.File.Kind != chat.FileDocument || u.File.Name != "../build.log" {
		t.Fatalf("the file came as %+v", u.File)
	}
	got.Reset()
	if _, err := r.a.Download(context.Background(), u.Thread, *u.File, &got, 0); err != nil || !bytes.Equal(got.Bytes(), doc) {
		t.Fatalf("Download of the file: %d bytes, %v", got.Len(), err)
	}
	if _, err := r.a.Download(context.Background(), u.Thread, *u.File, &got, 100); !errors.Is(err, chat.ErrTooLarge) {
		t.Fatalf("Download bounded to 100 bytes: %v, want ErrTooLarge", err)
	}

	u = postFile(t, r, r.poster.Envelope("ev-3", "im.message.receive_v1",
		fakefeishu.FileMessage("om_big", "oc_1", "group", "", "ou_alice", "file", map[string]any{"file_key": "file_v2_2", "file_name": "huge.iso"})))
	got.Reset()
	if _, err := r.a.Download(context.Background(), u.Thread, *u.File, &got, 0); !errors.Is(err, chat.ErrTooLarge) || got.Len() != 0 {
		t.Fatalf("Download of a file over Feishu's limit: %v, %d bytes", err, got.Len())
	}
	if _, err := r.a.Download(context.Background(), u.Thread, chat.File{Ref: "file|om_none|file_v2_9"}, &got, 0); !errors.Is(err, chat.ErrRefused) {
		t.Fatalf("Download of an unknown resource: %v, want ErrRefused", err)
	}
}
