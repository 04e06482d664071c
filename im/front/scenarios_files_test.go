package front_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/e2e/fakefeishu"
	"github.com/thatch-run/thatch/e2e/faketelegram"
	"github.com/thatch-run/thatch/internal/testwait"
)

// Files, photos and voice notes sent in a thread are saved in the inbox
// of the binding's directory (<dir>/.thatch/inbox), and their path typed
// to the agent, the caption after it.

// inbox is the inbox of a project of the scenario's.
func (w *world) inbox(project string) string {
	return filepath.Join(w.projects, project, ".thatch", "inbox")
}

// saved is the path a file sent now is saved under: the fake clock's
// time stamp, then name.
func (w *world) saved(project, name string) string {
	return filepath.Join(w.inbox(project), w.clock.Now().Format("20060102-150405")+"-"+name)
}

// inboxFiles lists the inbox's files but its .gitignore.
func (w *world) inboxFiles(project string) []string {
	entries, _ := os.ReadDir(w.inbox(project))
	var out []string
	for _, e := range entries {
		if e.Name() != ".gitignore" {
			out = append(out, e.Name())
		}
	}
	return out
}

// checkFile fails the test unless path holds data.
func checkFile(t *testing.T, path string, data []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("%s holds %q (%v), want %q", path, got, err, data)
	}
}

func TestScenarioAPhotoIsSavedInTheInboxAndItsPathTypedWithItsCaption(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("pics", "api", "m0")
	w.waitSaid(thread, "echo: m0")
	photo := []byte("\xff\xd8 the largest size \xff\xd9")
	w.tg.PhotoFile(chat, thread, user, photo, "the failing screen")
	path := w.saved("api", "photo.jpg")
	w.waitTyped("m0", "[file: "+path+"] the failing screen")
	checkFile(t, path, photo)
	ignore, err := os.ReadFile(filepath.Join(w.inbox("api"), ".gitignore"))
	if err != nil || !strings.Contains(string(ignore), "\n*\n") {
		t.Fatalf("the inbox's .gitignore: %q, %v", ignore, err)
	}
	if st, err := os.Stat(w.inbox("api")); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("the inbox: %v, %v; want mode 0700", st, err)
	}
	w.quiesce()
	for _, s := range w.said(thread) {
		if strings.Contains(s, "text only") || strings.Contains(s, "Could not") {
			t.Fatalf("the bot said %q", s)
		}
	}
}

// A document keeps its own name, but only its last element: a name that
// climbs out ("../../etc/passwd") is saved inside the inbox.
func TestScenarioADocumentNamedToClimbOutIsSavedInsideTheInbox(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("docs", "web", "m0")
	w.waitSaid(thread, "echo: m0")
	data := []byte("root:x:0:0\n")
	w.tg.Document(chat, thread, user, "../../etc/passwd", data, "")
	path := w.saved("web", "passwd")
	w.waitTyped("m0", "[file: "+path+"]")
	checkFile(t, path, data)
	if got := w.inboxFiles("web"); !slices.Equal(got, []string{filepath.Base(path)}) {
		t.Fatalf("the inbox holds %q", got)
	}
	if _, err := os.Stat(filepath.Join(w.projects, "etc")); !os.IsNotExist(err) {
		t.Fatalf("a folder etc beside the project: %v; want none", err)
	}
}

// A file over the 20 MB a bot may download is refused with a clear
// answer; nothing is typed and nothing is left in the inbox.
func TestScenarioAnOversizedFileIsRefusedAndNothingTyped(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("big", "docs", "m0")
	w.waitSaid(thread, "echo: m0")
	w.tg.BigDocument(chat, thread, user, "huge.iso", faketelegram.MaxDownload+1, "look at this")
	testwait.UntilReason(t, "the bot to refuse the file", func() (bool, string) {
		said := w.said(thread)
		return slices.ContainsFunc(said, func(s string) bool {
			return strings.HasPrefix(s, "The document huge.iso is too large to take") && strings.Contains(s, "nothing was given to the agent")
		}), strings.Join(said, " | ")
	})
	w.send(thread, "m1")
	w.waitTyped("m0", "m1")
	w.quiesce()
	if got := w.typed(); !slices.Equal(got, []string{"m0", "m1"}) {
		t.Fatalf("the agent took %q", got)
	}
	if got := w.inboxFiles("docs"); len(got) != 0 {
		t.Fatalf("the inbox holds %q", got)
	}
}

// A message sent after a file waits for it: while the file downloads,
// the text behind it is not typed, and then both go in the order sent.
func TestScenarioTextFileTextAreTypedInTheOrderSent(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("order", "api", "m0")
	w.waitSaid(thread, "echo: m0")
	release := w.tg.HoldDownloads()
	t.Cleanup(release)
	w.send(thread, "before")
	w.tg.Document(chat, thread, user, "notes.md", []byte("# notes\n"), "read this")
	testwait.Until(t, "the file's download to start", func() bool { return w.tg.HeldDownloads() == 1 })
	w.send(thread, "after")
	w.waitTyped("m0", "before")
	testwait.Until(t, "the file and the text behind it to wait", func() bool { return w.binding(thread).Queued == 2 })
	if got := w.typed(); !slices.Equal(got, []string{"m0", "before"}) {
		t.Fatalf("the agent took %q while the file downloaded", got)
	}
	release()
	w.waitTyped("m0", "before", "[file: "+w.saved("api", "notes.md")+"] read this", "after")
}

// A file that starts a thread is saved once the setup made its window
// and knows its directory, and typed first.
func TestScenarioAFileThatStartsAThreadIsSavedOnceItIsBound(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.topic("fresh")
	w.tg.Document(chat, thread, user, "spec.txt", []byte("the spec"), "implement this")
	w.press(thread, w.prompt(thread, "Which agent should run for fresh?"), "claude")
	w.press(thread, w.prompt(thread, "Working directory: "+w.projects), "web")
	w.press(thread, w.prompt(thread, "Working directory: "+filepath.Join(w.projects, "web")), "Use this directory")
	w.waitSaid(thread, "Session ready!")
	path := w.saved("web", "spec.txt")
	w.waitTyped("[file: " + path + "] implement this")
	checkFile(t, path, []byte("the spec"))
}

// On Feishu, an image and a file message are saved the same way, from
// the message resource API.
func TestScenarioFeishuImagesAndFilesAreSavedAndTyped(t *testing.T) {
	w := newFeishuWorld(t)
	w.setup("m0")
	w.waitSaid("echo: m0")
	img := []byte("\x89PNG a picture")
	w.fs.AddResource("om_img_1", "img_v2_1", "image", img)
	w.fs.Received(fsChat, "om_img_1")
	w.post("im.message.receive_v1", fakefeishu.FileMessage("om_img_1", fsChat, "group", "", fsUser, "image",
		map[string]any{"image_key": "img_v2_1"}))
	photo := w.saved("api", "photo.jpg")
	w.waitTyped("m0", "[file: "+photo+"]")
	checkFile(t, photo, img)

	doc := []byte("a log")
	w.fs.AddResource("om_file_1", "file_v2_1", "file", doc)
	w.fs.Received(fsChat, "om_file_1")
	w.post("im.message.receive_v1", fakefeishu.FileMessage("om_file_1", fsChat, "group", "", fsUser, "file",
		map[string]any{"file_key": "file_v2_1", "file_name": "../../etc/passwd"}))
	passwd := w.saved("api", "passwd")
	w.waitTyped("m0", "[file: "+photo+"]", "[file: "+passwd+"]")
	checkFile(t, passwd, doc)

	w.fs.AddBigResource("om_file_2", "file_v2_2", "file", fakefeishu.MaxResource+1)
	w.fs.Received(fsChat, "om_file_2")
	w.post("im.message.receive_v1", fakefeishu.FileMessage("om_file_2", fsChat, "group", "", fsUser, "file",
		map[string]any{"file_key": "file_v2_2", "file_name": "huge.iso"}))
	testwait.UntilReason(t, "the bot to refuse the file", func() (bool, string) {
		said := w.said()
		return slices.ContainsFunc(said, func(s string) bool { return strings.HasPrefix(s, "The document huge.iso is too large to take") }),
			strings.Join(said, " | ")
	})
	w.quiesce()
	if got := w.typed(); len(got) != 3 {
		t.Fatalf("the agent took %q", got)
	}
	if got := w.inboxFiles("api"); len(got) != 2 {
		t.Fatalf("the inbox holds %q; want the image and the file, not the refused one", got)
	}
}

// A voice note is saved as .ogg; with im.transcribe set, the command gets
// the file's path and what it prints is typed after the file's line.
func TestScenarioAVoiceNoteIsSavedAndTranscribedLocally(t *testing.T) {
	script := filepath.Join(t.TempDir(), "transcribe")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf 'heard: '\ncat \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, func(c *config.Config) { c.IM.Transcribe = script })
	thread := w.setup("voice", "api", "m0")
	w.waitSaid(thread, "echo: m0")
	w.tg.Voice(chat, thread, user, []byte("fix the login page"))
	path := w.saved("api", "voice.ogg")
	w.waitTyped("m0", "[file: "+path+"]\nheard: fix the login page")
	checkFile(t, path, []byte("fix the login page"))
}

// im.max_file_mb refuses a file below the platform's limit.
func TestScenarioAFileOverMaxFileMBIsRefused(t *testing.T) {
	w := newWorld(t, func(c *config.Config) { c.IM.MaxFileMB = 1 })
	thread := w.setup("capped", "web", "m0")
	w.waitSaid(thread, "echo: m0")
	w.tg.Document(chat, thread, user, "big.bin", bytes.Repeat([]byte{7}, 1<<20+1), "")
	w.waitSaid(thread, "The document big.bin is too large to take (telegram: the file (1.0 MB) is over the limit of 1 MB): nothing was given to the agent.")
	w.quiesce()
	if got := w.typed(); !slices.Equal(got, []string{"m0"}) {
		t.Fatalf("the agent took %q", got)
	}
	if got := w.inboxFiles("web"); len(got) != 0 {
		t.Fatalf("the inbox holds %q", got)
	}
}
