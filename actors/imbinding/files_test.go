package imbinding

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// file sends a message carrying a document named name with caption.
func (h *harness) file(name, caption string) []any {
	h.nextUpd++
	return h.send(&messages.IMUpdate{UpdateID: h.nextUpd, User: "42", Media: "document", Caption: caption,
		File: &messages.IMFile{Kind: "document", Name: name, Ref: "ref-" + name}})
}

// A file of a bound thread is saved at once, in the binding's
// directory; a message sent after it waits until it is saved, and the
// file's line is typed before it.
func TestAFileIsSavedAndTypedInItsTurn(t *testing.T) {
	h := newHarness(t)
	h.bind()
	save := only[messages.IMSaveFile](t, h.file("notes.md", "read this"))
	if save.Dir != "/home/u/proj" || save.File.Name != "notes.md" || save.At != h.now.UnixMilli() {
		t.Fatalf("save %+v", save)
	}
	none[messages.IMCheckWindow](t, h.message("after"))
	if len(h.s.Queue) != 0 || len(h.s.Waiting) != 2 {
		t.Fatalf("queue %v waiting %v: the text must wait behind the file", h.s.Queue, h.s.Waiting)
	}
	eff := h.send(&messages.IMFileSaved{UpdateID: save.UpdateID, Path: "/home/u/proj/.thatch/inbox/x-notes.md"})
	only[messages.IMCheckWindow](t, eff)
	if got, want := h.typeAll(), []string{"[file: /home/u/proj/.thatch/inbox/x-notes.md] read this", "after"}; !slices.Equal(got, want) {
		t.Fatalf("typed %q, want %q", got, want)
	}
	// A second result of the same save counts for nothing.
	if eff := h.send(&messages.IMFileSaved{UpdateID: save.UpdateID, Path: "/elsewhere"}); len(eff) != 0 {
		t.Fatalf("a repeated result did %s", describe(eff))
	}
}

// A file that could not be saved is dropped with a note; the messages
// behind it go on.
func TestAFileNotSavedIsDroppedWithANote(t *testing.T) {
	h := newHarness(t)
	h.bind()
	save := only[messages.IMSaveFile](t, h.file("huge.iso", ""))
	h.message("after")
	eff := h.send(&messages.IMFileSaved{UpdateID: save.UpdateID, Err: "over 20 MB", TooLarge: true})
	sc := only[messages.IMSendChat](t, eff)
	if !strings.Contains(sc.Text, "document huge.iso is too large") || !strings.Contains(sc.Text, "over 20 MB") {
		t.Fatalf("said %q", sc.Text)
	}
	if got := h.typeAll(); !slices.Equal(got, []string{"after"}) {
		t.Fatalf("typed %q", got)
	}
}

// A file that starts a thread waits for the setup: it is saved once the
// binding knows its directory, and again after a restart if its save was
// cut short.
func TestAFileWaitsForTheSetupAndIsSavedAgainAfterARestart(t *testing.T) {
	h := newHarness(t)
	eff := h.deliverChat(h.file("spec.txt", "implement this"))
	none[messages.IMSaveFile](t, eff)
	if h.s.Phase != PhaseSetup {
		t.Fatalf("phase %s: a file starts the setup", h.s.Phase)
	}
	h.deliverChat(h.press("claude"))
	h.deliverChat(h.send(&messages.IMDirectoryListed{Path: "/home/u/proj", AtRoot: true}))
	cw := only[messages.IMCreateWindow](t, h.deliverChat(h.press("Use this directory")))
	h.send(&messages.IMWindowCreated{Tag: cw.Tag, WindowID: "@1"})
	h.send(&messages.IMAgentSessionsListed{})
	h.send(&messages.IMAgentLaunched{WindowID: "@1"})
	eff = h.deliverChat(h.send(&messages.IMAgentSessionFound{WindowID: "@1", SessionID: "s-1", Transcript: "/t/s-1.jsonl"}))
	save := only[messages.IMSaveFile](t, eff)
	if save.Dir != "/home/u/proj" {
		t.Fatalf("saved in %q", save.Dir)
	}
	if again := only[messages.IMSaveFile](t, h.send(&actors.Recovered{})); again.UpdateID != save.UpdateID {
		t.Fatalf("after a restart, saved %+v", again)
	}
	h.send(&messages.IMFileSaved{UpdateID: save.UpdateID, Path: "/home/u/proj/.thatch/inbox/spec.txt"})
	if got := h.typeAll(); !slices.Equal(got, []string{"[file: /home/u/proj/.thatch/inbox/spec.txt] implement this"}) {
		t.Fatalf("typed %q", got)
	}
}

// A state journaled before files came decodes with nothing waiting.
func TestAStateWithoutWaitingFilesDecodes(t *testing.T) {
	var s State
	if err := json.Unmarshal([]byte(`{"key":"tg:1:2","phase":"bound","queue":[{"updateID":3,"text":"hi"}]}`), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Queue) != 1 || s.Waiting != nil || s.Queue[0].File != nil {
		t.Fatalf("state %+v", s)
	}
}
