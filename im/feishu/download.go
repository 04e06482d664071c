package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

	"github.com/thatch-run/thatch/im/chat"
)

// MaxDownload is the largest message resource the Open API lets a bot
// download (100 MB).
const MaxDownload = 100 << 20

// DownloadTimeout bounds one download behind the caller's context.
const DownloadTimeout = 5 * time.Minute

// codeResourceTooLarge is Feishu's answer for a resource over its limit.
const codeResourceTooLarge = 234037

// messageFile is the file a message of type msgType carries (an image, a
// file, an audio or a media message), read from its content; nil for
// none. Its Ref is "<resource type>|<message id>|<key>", what the
// message resource API takes.
func messageFile(msgType, messageID, content string) *chat.File {
	var c struct {
		ImageKey string `json:"image_key"`
		FileKey  string `json:"file_key"`
		FileName string `json:"file_name"`
	}
	if messageID == "" || json.Unmarshal([]byte(content), &c) != nil {
		return nil
	}
	ref := func(typ, key string) string { return typ + "|" + messageID + "|" + key }
	switch {
	case msgType == "image" && c.ImageKey != "":
		return &chat.File{Kind: chat.FilePhoto, Ref: ref("image", c.ImageKey)}
	case msgType == "file" && c.FileKey != "":
		return &chat.File{Kind: chat.FileDocument, Name: c.FileName, Ref: ref("file", c.FileKey)}
	case msgType == "audio" && c.FileKey != "":
		return &chat.File{Kind: chat.FileVoice, Mime: "audio/opus", Ref: ref("file", c.FileKey)}
	case msgType == "media" && c.FileKey != "":
		return &chat.File{Kind: chat.FileVideo, Name: c.FileName, Ref: ref("file", c.FileKey)}
	}
	return nil
}

// Download fetches a message's file with the message resource API
// (GET im/v1/messages/:message_id/resources/:file_key?type=image|file).
// A file over limit (or over MaxDownload) fails with chat.ErrTooLarge.
func (a *Adapter) Download(ctx context.Context, _ string, f chat.File, w io.Writer, limit int64) (int64, error) {
	if limit <= 0 || limit > MaxDownload {
		limit = MaxDownload
	}
	parts := strings.Split(f.Ref, "|")
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return 0, &chatError{fmt.Errorf("feishu: download: %q is not a message resource", f.Ref), chat.ErrRefused}
	}
	if f.Size > limit {
		return 0, tooLarge(f.Size, limit)
	}
	return a.client.Download(ctx, parts[0], parts[1], parts[2], w, limit)
}

// Download writes the resource key of message messageID (typ "image" or
// "file") to w, at most limit bytes.
func (c *Client) Download(ctx context.Context, typ, messageID, key string, w io.Writer, limit int64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, DownloadTimeout)
	defer cancel()
	req := larkim.NewGetMessageResourceReqBuilder().MessageId(messageID).FileKey(key).Type(typ).Build()
	resp, err := c.lark.Im.MessageResource.Get(ctx, req)
	op := "download " + typ + " of message " + messageID
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		return 0, &chatError{fmt.Errorf("feishu: %s: %w", op, err), chat.ErrTimeout}
	case err != nil:
		return 0, fmt.Errorf("feishu: %s: %w", op, err)
	case resp.Code == codeResourceTooLarge:
		return 0, tooLarge(0, MaxDownload)
	case resp.StatusCode != http.StatusOK || resp.Code != 0 || resp.File == nil:
		return 0, &chatError{&APIError{Op: op, Code: resp.Code, Msg: resp.Msg}, chat.ErrRefused}
	}
	n, err := io.Copy(w, io.LimitReader(resp.File, limit+1))
	switch {
	case n > limit:
		return n, tooLarge(n, limit)
	case err != nil:
		return n, fmt.Errorf("feishu: %s: %w", op, err)
	}
	return n, nil
}

// tooLarge is the error of a file of size bytes (0: unknown) over limit.
func tooLarge(size, limit int64) error {
	what := "the file"
	if size > 0 {
		what += fmt.Sprintf(" (%.1f MB)", float64(size)/(1<<20))
	}
	over := fmt.Sprintf("the %d MB a Feishu bot may download", MaxDownload>>20)
	if limit < MaxDownload {
		over = fmt.Sprintf("the limit of %.1f MB", float64(limit)/(1<<20))
	}
	return &chatError{fmt.Errorf("feishu: %s is over %s", what, over), chat.ErrTooLarge}
}
