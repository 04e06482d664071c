package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	tgbot "github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/thatch-run/thatch/im/chat"
)

// MaxDownload is the largest file the Bot API lets a bot download
// (getFile answers "file is too big" above it).
const MaxDownload = 20 << 20

// DownloadTimeout bounds one download, getFile and the file's bytes,
// behind the caller's context.
const DownloadTimeout = 5 * time.Minute

// fileOf is the file a message carries that a binding may save: a photo
// at its largest size, a document with its name, a voice note, an audio
// file, a video; nil for none.
func fileOf(m *models.Message) *chat.File {
	switch {
	case len(m.Photo) > 0:
		best := m.Photo[0]
		for _, p := range m.Photo[1:] {
			if p.FileSize > best.FileSize || (p.FileSize == best.FileSize && p.Width*p.Height > best.Width*best.Height) {
				best = p
			}
		}
		return &chat.File{Kind: chat.FilePhoto, Size: int64(best.FileSize), Mime: "image/jpeg", Ref: best.FileID}
	case m.Document != nil:
		d := m.Document
		return &chat.File{Kind: chat.FileDocument, Name: d.FileName, Size: d.FileSize, Mime: d.MimeType, Ref: d.FileID}
	case m.Voice != nil:
		v := m.Voice
		return &chat.File{Kind: chat.FileVoice, Size: v.FileSize, Mime: v.MimeType, Ref: v.FileID}
	case m.Audio != nil:
		a := m.Audio
		return &chat.File{Kind: chat.FileAudio, Name: a.FileName, Size: a.FileSize, Mime: a.MimeType, Ref: a.FileID}
	case m.Video != nil:
		v := m.Video
		return &chat.File{Kind: chat.FileVideo, Name: v.FileName, Size: v.FileSize, Mime: v.MimeType, Ref: v.FileID}
	}
	return nil
}

// Download fetches a file a message carried: getFile names its path, and
// the file is read from <api_url>/file/bot<token>/<path>. It fails with
// chat.ErrTooLarge for a file over max or over MaxDownload, before any
// byte is written when its size is known. The token never shows in an
// error.
func (a *Adapter) Download(ctx context.Context, _ string, f chat.File, w io.Writer, limit int64) (int64, error) {
	if limit <= 0 || limit > MaxDownload {
		limit = MaxDownload
	}
	if f.Ref == "" {
		return 0, &chatError{errors.New("telegram: download: the file has no file_id"), chat.ErrRefused}
	}
	if f.Size > limit {
		return 0, tooLarge(f.Size, limit)
	}
	ctx, cancel := context.WithTimeout(ctx, DownloadTimeout)
	defer cancel()
	b := a.bot
	var file *models.File
	err := b.attempt(ctx, nil, "getFile", func(ctx context.Context) (err error) {
		file, err = b.api.GetFile(ctx, &tgbot.GetFileParams{FileID: f.Ref})
		return err
	})
	switch {
	case err != nil && errors.Is(err, tgbot.ErrorBadRequest) && strings.Contains(err.Error(), "file is too big"):
		return 0, tooLarge(0, MaxDownload)
	case err != nil:
		return 0, chatErr(b.redact(fmt.Errorf("telegram: getFile: %w", err)))
	case file.FileSize > limit:
		return 0, tooLarge(file.FileSize, limit)
	case file.FilePath == "":
		return 0, &chatError{errors.New("telegram: getFile named no file_path"), chat.ErrRefused}
	}
	segs := strings.Split(file.FilePath, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/file/bot"+b.token+"/"+strings.Join(segs, "/"), nil)
	if err != nil {
		return 0, b.redact(fmt.Errorf("telegram: download: %w", err))
	}
	// The client's own timeout is for API calls; the download is bounded
	// by ctx.
	resp, err := (&http.Client{Transport: b.transport}).Do(req)
	if err != nil {
		return 0, chatErr(b.redact(fmt.Errorf("telegram: download: %w", err)))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("telegram: download: %s", resp.Status)
		if resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotFound {
			return 0, &chatError{err, chat.ErrRefused}
		}
		return 0, err
	}
	if resp.ContentLength > limit {
		return 0, tooLarge(resp.ContentLength, limit)
	}
	n, err := io.Copy(w, io.LimitReader(resp.Body, limit+1))
	switch {
	case n > limit:
		return n, tooLarge(n, limit)
	case err != nil:
		return n, b.redact(fmt.Errorf("telegram: download: %w", err))
	}
	return n, nil
}

// tooLarge is the error of a file of size bytes (0: unknown) over limit.
func tooLarge(size, limit int64) error {
	what := "the file"
	if size > 0 {
		what += " (" + mb(size) + ")"
	}
	over := "the " + mb(limit) + " a Telegram bot may download"
	if limit < MaxDownload {
		over = "the limit of " + mb(limit)
	}
	return &chatError{fmt.Errorf("telegram: %s is over %s", what, over), chat.ErrTooLarge}
}

// mb shows a size in MB.
func mb(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}
