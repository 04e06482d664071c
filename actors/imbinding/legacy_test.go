package imbinding

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/thatch-run/thatch/messages"
)

// An older thatch kept Telegram's shape: users and message ids were
// numbers (IMUpdateSeen.userID, IMPromptOpened.userID,
// IMOutboxSent.messageID; the state's actor, prompt.userID and
// prompt.messageIDs), and it journaled the chat and thread ids and the
// topic flag with every update (and snapshotted them), which nothing reads
// now. Such a journal and such a snapshot must still read, and give the
// state the same story gives today: the numbers become their decimal text,
// so the prompt still answers its user and clears its messages' buttons.
func TestReplayOfAnOlderJournalTakesNumericIDsAsText(t *testing.T) {
	h := newHarness(t)
	h.bind()
	h.message("hi")
	// The window is gone: the Recover prompt opens, asked of user 42 and
	// sent as message 10x.
	h.deliverChat(h.send(&messages.IMWindowChecked{WindowID: "@1"}))
	if h.s.Prompt == nil || h.s.Prompt.Kind != PromptDead || len(h.s.Prompt.MessageIDs) != 1 || h.s.Actor != "42" {
		t.Fatalf("the story did not end at an open prompt of user 42: %+v", h.s.Prompt)
	}
	promptMsg := h.s.Prompt.MessageIDs[0]

	// The older journal: the same events, as version 1 wrote them.
	var older [][]byte
	converted := 0
	for _, b := range h.journal {
		if old, ok := olderEvent(t, b); ok {
			b, converted = old, converted+1
		}
		older = append(older, b)
	}
	if converted < 5 {
		t.Fatalf("only %d events of the story have an older form", converted)
	}
	want := encodeState(t, h.s)
	replayed := h.k.Initial(testKey)
	for _, b := range older {
		ev, err := messages.Decode(b)
		if err != nil {
			t.Fatalf("an older event does not decode: %v", err)
		}
		replayed = h.k.Apply(replayed, ev)
	}
	if got := encodeState(t, replayed); !bytes.Equal(got, want) {
		t.Fatalf("the older journal replays to\n%s\nwant\n%s", got, want)
	}

	// The older snapshot: today's state as version 1 wrote it.
	var body map[string]any
	if err := json.Unmarshal(jsonOf(t, want), &body); err != nil {
		t.Fatal(err)
	}
	body["actor"] = json.Number(body["actor"].(string))
	body["topic"] = true
	body["chat"].(map[string]any)["chatID"] = -100
	body["chat"].(map[string]any)["threadID"] = 5
	pr := body["prompt"].(map[string]any)
	pr["userID"] = json.Number(pr["user"].(string))
	delete(pr, "user")
	var ids []json.Number
	for _, id := range pr["messageIDs"].([]any) {
		ids = append(ids, json.Number(id.(string)))
	}
	pr["messageIDs"] = ids
	oldBody, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := messages.DecodeAs[State](messages.Envelope("im.binding.state", 1, oldBody))
	if err != nil {
		t.Fatalf("the older snapshot does not decode: %v", err)
	}
	if got := encodeState(t, snap); !bytes.Equal(got, want) {
		t.Fatalf("the older snapshot decodes to\n%s\nwant\n%s", got, want)
	}

	// Both answer as today's state does: user 42's press is taken, and the
	// prompt's buttons are cleared from its message.
	for name, s := range map[string]*State{"replayed journal": replayed, "older snapshot": snap} {
		d := h.k.Decide(s, &messages.IMPress{UpdateID: h.nextUpd + 1, User: "42", CallbackID: "cb", Data: h.buttonData("New Session")}, h.now)
		var cleared []string
		for _, e := range d.Effects {
			if cb, ok := e.(*messages.IMClearButtons); ok {
				cleared = append(cleared, cb.MessageID)
			}
		}
		if len(cleared) != 1 || cleared[0] != promptMsg {
			t.Errorf("%s: a press of user 42 cleared %v, want the buttons of %s", name, cleared, promptMsg)
		}
	}
}

// A thread no update named takes its name from its key, whatever the
// adapter: a Telegram topic's is the one the thread id an older state
// kept gave.
func TestFallbackNamesComeFromTheKey(t *testing.T) {
	for key, want := range map[string]string{
		"tg:-100:5":        "topic-5",
		"tg:42:42":         "topic-42",
		"fs:oc_abc":        "chat-oc_abc",
		"fs:oc_abc:omt_77": "topic-omt_77",
	} {
		if got := New(Config{}).Initial(key).Name(); got != want {
			t.Errorf("the name of %s is %q, want %q", key, got, want)
		}
	}
}

// olderEvent rewrites b as version 1 wrote it, if its type had another
// form then.
func olderEvent(t *testing.T, b []byte) ([]byte, bool) {
	t.Helper()
	ev, err := messages.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	num := func(s string) int64 {
		if s == "" {
			return 0
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("the story's id %q is not a number", s)
		}
		return n
	}
	var name string
	var body any
	switch e := ev.(type) {
	case *messages.IMUpdateSeen:
		name = "im.update_seen"
		body = map[string]any{"updateID": e.UpdateID, "userID": num(e.User), "chatID": -100, "threadID": 5, "topic": true,
			"topicName": e.TopicName, "text": e.Text, "at": e.At, "check": e.Check, "actor": e.Actor}
	case *messages.IMOutboxSent:
		name = "im.outbox_sent"
		body = map[string]any{"seq": e.Seq, "messageID": num(e.MessageID), "refused": e.Refused}
	case *messages.IMPromptOpened:
		name = "im.prompt_opened"
		body = map[string]any{"kind": e.Kind, "nonce": e.Nonce, "userID": num(e.User), "choices": e.Choices,
			"detected": e.Detected, "window": e.Window, "text": e.Text, "rows": e.Rows}
	default:
		return nil, false
	}
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return messages.Envelope(name, 1, raw), true
}

func encodeState(t *testing.T, s *State) []byte {
	t.Helper()
	b, err := messages.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonOf is the JSON body of an envelope Encode wrote.
func jsonOf(t *testing.T, b []byte) []byte {
	t.Helper()
	_, _, body, err := messages.Body(b)
	if err != nil || !json.Valid(body) {
		t.Fatalf("no JSON body in %q: %v", b, err)
	}
	return body
}
