package front

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/messages"
)

// Files sent in a thread are saved in the inbox of the binding's working
// directory (im.inbox_dir, ".thatch/inbox" by default: inside the project,
// which agents read without asking), and their path typed to the agent.
// The binding asks for the save (IMSaveFile) once the update is
// journaled, so the adapter's confirm never waits for a download.

// laneFiles runs the saves: a download may take minutes, and typing and
// the flows must not wait behind it.
const laneFiles = "files"

// Bounds of a save.
const (
	// maxFileName is the most bytes of a saved file's name after its
	// time stamp.
	maxFileName = 100
	// maxRef is the longest adapter reference taken (Telegram's file ids
	// are under 100 bytes).
	maxRef = 1024
	// transcribeTimeout bounds the speech-to-text command.
	transcribeTimeout = 2 * time.Minute
	// maxTranscript is the most bytes of a transcript typed.
	maxTranscript = 8 << 10
	// saveTimeout bounds a download, behind the adapter's own bound.
	saveTimeout = 10 * time.Minute
)

// fileOf is the file of an update as the binding journals it; nil for
// none (and for one whose reference is too long to journal).
func fileOf(u chat.Update) *messages.IMFile {
	f := u.File
	if f == nil || f.Ref == "" || len(f.Ref) > maxRef || !utf8.ValidString(f.Ref) {
		return nil
	}
	return &messages.IMFile{Kind: cleanText(f.Kind, maxName), Name: cleanText(f.Name, maxName), Size: max(f.Size, 0),
		Mime: cleanText(f.Mime, maxName), Ref: f.Ref}
}

// saveFile downloads a file of the binding's thread into the inbox of
// e.Dir and, for a voice note when im.transcribe is set, transcribes it.
func (f *FrontEnd) saveFile(parent context.Context, from actors.Identity, e *messages.IMSaveFile) any {
	res := &messages.IMFileSaved{UpdateID: e.UpdateID}
	path, err := f.download(parent, from.ID, e)
	if f.runCtx.Err() != nil {
		return nil // stopping: the binding asks again after the restart
	}
	if err != nil {
		f.log.Warn("cannot save a file sent in a thread", "thread", from.ID, "kind", e.File.Kind, "error", err)
		res.Err, res.TooLarge = err.Error(), errors.Is(err, chat.ErrTooLarge)
		return res
	}
	f.log.Debug("saved a file sent in a thread", "thread", from.ID, "path", path)
	res.Path = path
	if e.File.Kind == chat.FileVoice && strings.TrimSpace(f.cfg.IM.Transcribe) != "" {
		text, err := f.transcribe(parent, e.Dir, path)
		res.Transcript, res.TranscribeErr = text, errText(err)
		if err != nil {
			f.log.Warn("cannot transcribe a voice note", "thread", from.ID, "path", path, "error", err)
		}
	}
	return res
}

// download writes the file into the inbox and returns its absolute path.
func (f *FrontEnd) download(parent context.Context, thread string, e *messages.IMSaveFile) (string, error) {
	a, err := f.adapterOf(thread)
	if err != nil {
		return "", err
	}
	inbox, err := makeInbox(e.Dir, f.cfg.IM.InboxDir)
	if err != nil {
		return "", err
	}
	path, err := inboxPath(inbox, time.UnixMilli(e.At), e.File.Name, e.File.Kind, e.File.Mime)
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(inbox, ".partial-*")
	if err != nil {
		return "", fmt.Errorf("im: create a file in the inbox: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	ctx, cancel := context.WithTimeout(parent, saveTimeout)
	defer cancel()
	limit := int64(f.cfg.IM.MaxFileMB) << 20
	ref := chat.File{Kind: e.File.Kind, Name: e.File.Name, Size: e.File.Size, Mime: e.File.Mime, Ref: e.File.Ref}
	if _, err := a.Download(ctx, thread, ref, tmp, limit); err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("im: write a file in the inbox: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("im: name a file in the inbox: %w", err)
	}
	done = true
	return path, nil
}

// makeInbox makes the inbox of directory dir (0700), with a .gitignore of
// "*" that keeps it out of git status, and returns its absolute path.
// inboxDir is im.inbox_dir: relative to dir, or absolute.
func makeInbox(dir, inboxDir string) (string, error) {
	inbox := filepath.Clean(inboxDir)
	if !filepath.IsAbs(inbox) {
		if !filepath.IsAbs(dir) {
			return "", fmt.Errorf("im: the binding's directory %q is not absolute", dir)
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			// A project that is gone is not made again for an inbox.
			return "", fmt.Errorf("im: the binding's directory %s is not there", dir)
		}
		inbox = filepath.Join(dir, inbox)
	}
	if err := os.MkdirAll(inbox, 0o700); err != nil {
		return "", fmt.Errorf("im: make the inbox: %w", err)
	}
	if st, err := os.Lstat(inbox); err != nil || !st.IsDir() {
		return "", fmt.Errorf("im: the inbox %s is not a directory", inbox)
	}
	ignore := filepath.Join(inbox, ".gitignore")
	g, err := os.OpenFile(ignore, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, os.ErrExist):
	case err != nil:
		return "", fmt.Errorf("im: write the inbox's .gitignore: %w", err)
	default:
		_, werr := g.WriteString("# thatch's inbox: files sent from the chat.\n*\n")
		if cerr := g.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return "", fmt.Errorf("im: write the inbox's .gitignore: %w", werr)
		}
	}
	return inbox, nil
}

// inboxPath is where a file goes in inbox: "YYYYMMDD-HHMMSS-<name>"
// (safeName), with a number after the time stamp when that is taken, and
// always a file right inside inbox.
func inboxPath(inbox string, at time.Time, name, kind, mime string) (string, error) {
	stamp := at.Format("20060102-150405")
	base := safeName(name, kind, mime)
	for i := 1; i < 1000; i++ {
		file := stamp + "-" + base
		if i > 1 {
			file = fmt.Sprintf("%s-%d-%s", stamp, i, base)
		}
		path := filepath.Join(inbox, file)
		if !inside(inbox, path) {
			return "", fmt.Errorf("im: the file name %q leaves the inbox", name)
		}
		if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
			return path, nil
		}
	}
	return "", fmt.Errorf("im: no free name in the inbox for %q", base)
}

// inside reports whether path is a file right inside dir.
func inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && rel != ".." && !strings.ContainsRune(rel, filepath.Separator) &&
		!strings.HasPrefix(rel, "..")
}

// safeName is a file name made of the sender's: its last path element,
// without separators or control characters, at most maxFileName bytes
// (the extension kept), never "", "." or ".."; a file with no name of its
// own gets one after its kind ("photo.jpg", "voice.ogg").
func safeName(name, kind, mime string) string {
	name = strings.ToValidUTF8(name, "_")
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		switch {
		case r == '/' || r == '\\' || r == ':' || r == 0:
			return '_'
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			return '_'
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if strings.Trim(name, ".") == "" {
		name = defaultName(kind, mime)
	}
	if len(name) > maxFileName {
		ext := filepath.Ext(name)
		if len(ext) > 16 {
			ext = ""
		}
		cut := maxFileName - len(ext)
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut] + ext
	}
	return name
}

// defaultName names a file that came without a name.
func defaultName(kind, mime string) string {
	switch kind {
	case chat.FilePhoto:
		if mime == "image/png" {
			return "photo.png"
		}
		return "photo.jpg"
	case chat.FileVoice:
		return "voice.ogg"
	case chat.FileAudio:
		return "audio.mp3"
	case chat.FileVideo:
		return "video.mp4"
	}
	return "file"
}

// transcribe runs im.transcribe on the file at path (its words, no
// shell, the path last) in dir, and returns what it printed, cleaned to
// be typed.
func (f *FrontEnd) transcribe(parent context.Context, dir, path string) (string, error) {
	words := strings.Fields(f.cfg.IM.Transcribe)
	ctx, cancel := context.WithTimeout(parent, transcribeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, words[0], append(words[1:], path)...)
	cmd.Dir = dir
	var out, errOut limitedBuffer
	out.max, errOut.max = maxTranscript, 1024
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(errOut.String()); msg != "" {
			return "", fmt.Errorf("im: %s: %w: %s", words[0], err, cleanText(msg, 200))
		}
		return "", fmt.Errorf("im: %s: %w", words[0], err)
	}
	return cleanText(strings.TrimSpace(out.String()), maxTranscript), nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

var _ io.Writer = (*limitedBuffer)(nil)
