package telegram

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/thatch-run/thatch/e2e/faketelegram"
	"github.com/thatch-run/thatch/im/chat"
)

// receive runs the adapter until it got n updates, and returns them.
func receive(t *testing.T, a *Adapter, n int) []chat.Update {
	t.Helper()
	got := make(chan chat.Update, n)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, func(_ context.Context, u chat.Update) error { got <- u; return nil })
	}()
	defer func() { cancel(); <-done }()
	var out []chat.Update
	for range n {
		out = append(out, <-got)
	}
	return out
}

// A photo comes as a file at its largest size, a document with its own
// name; Download fetches their bytes with getFile and the file endpoint,
// and the token shows in no error.
func TestAPhotoAndADocumentAreDownloaded(t *testing.T) {
	w := newWorld(t, nil)
	a := openAdapter(t, w, chat.Resume{})
	const forum = -1001
	topic := w.srv.CreateTopic(forum, "files")
	photo := []byte("the largest photo's bytes")
	_, bigID := w.srv.PhotoFile(forum, topic, 7, photo, "the screen")
	doc := bytes.Repeat([]byte("report "), 1000)
	w.srv.Document(forum, topic, 7, "../../etc/passwd", doc, "")
	ups := receive(t, a, 3)[1:]

	p := ups[0].File
	if p == nil || p.Kind != chat.FilePhoto || p.Ref != bigID || ups[0].Caption != "the screen" {
		t.Fatalf("the photo came as %+v (file %+v), want its largest size %s", ups[0], p, bigID)
	}
	var got bytes.Buffer
	n, err := a.Download(context.Background(), ups[0].Thread, *p, &got, 0)
	if err != nil || n != int64(len(photo)) || !bytes.Equal(got.Bytes(), photo) {
		t.Fatalf("Download of the photo: %d bytes %q, %v", n, got.Bytes(), err)
	}
	d := ups[1].File
	if d == nil || d.Kind != chat.FileDocument || d.Name != "../../etc/passwd" || d.Size != int64(len(doc)) {
		t.Fatalf("the document came as %+v", d)
	}
	got.Reset()
	if _, err := a.Download(context.Background(), ups[1].Thread, *d, &got, 0); err != nil || !bytes.Equal(got.Bytes(), doc) {
		t.Fatalf("Download of the document: %d bytes, %v", got.Len(), err)
	}

	_, err = a.Download(context.Background(), ups[1].Thread, chat.File{Kind: chat.FileDocument, Ref: "no-such-file"}, &got, 0)
	if err == nil || !errors.Is(err, chat.ErrRefused) || strings.Contains(err.Error(), testToken) {
		t.Fatalf("Download of an unknown file: %v, want a refusal without the token", err)
	}
}

// A file over the 20 MB a bot may download is refused with ErrTooLarge
// and writes nothing: at once when the message told its size, by getFile
// otherwise; a smaller bound of the caller's is kept too.
func TestAFileOverTheLimitIsRefused(t *testing.T) {
	w := newWorld(t, nil)
	a := openAdapter(t, w, chat.Resume{})
	w.srv.BigDocument(5, 0, 7, "huge.iso", faketelegram.MaxDownload+1, "")
	w.srv.Document(5, 0, 7, "small.txt", []byte("0123456789"), "")
	ups := receive(t, a, 2)
	big := *ups[0].File
	var got bytes.Buffer
	if _, err := a.Download(context.Background(), ups[0].Thread, big, &got, 0); !errors.Is(err, chat.ErrTooLarge) || got.Len() != 0 {
		t.Fatalf("Download of a file whose size is over the limit: %v, %d bytes written", err, got.Len())
	}
	big.Size = 0 // getFile must say so
	if _, err := a.Download(context.Background(), ups[0].Thread, big, &got, 0); !errors.Is(err, chat.ErrTooLarge) ||
		strings.Contains(err.Error(), testToken) || got.Len() != 0 {
		t.Fatalf("Download of a file getFile calls too big: %v, %d bytes written", err, got.Len())
	}
	small := *ups[1].File
	small.Size = 0
	if _, err := a.Download(context.Background(), ups[1].Thread, small, &got, 5); !errors.Is(err, chat.ErrTooLarge) {
		t.Fatalf("Download of 10 bytes bounded to 5: %v", err)
	}
}
