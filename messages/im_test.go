package messages

import (
	"errors"
	"reflect"
	"testing"
)

// Events an older thatch journaled with Telegram's numeric users and
// message ids (and the chat and thread ids, the topic flag) decode with
// the numbers as their decimal text; a 0 was no id, and stays none.
func TestOlderIMEventsDecodeWithTextIDs(t *testing.T) {
	cases := []struct {
		name, body string
		want       any
	}{
		{"im.update_seen", `{"updateID":7,"userID":42,"chatID":-100,"threadID":5,"topic":true,"topicName":"api","text":"hi","at":3,"actor":true}`,
			&IMUpdateSeen{UpdateID: 7, User: "42", TopicName: "api", Text: "hi", At: 3, Actor: true}},
		{"im.update_seen", `{"updateID":8,"userID":0,"chatID":0,"threadID":0,"at":4}`,
			&IMUpdateSeen{UpdateID: 8, At: 4}},
		{"im.outbox_sent", `{"seq":3,"messageID":9007199254740993}`,
			&IMOutboxSent{Seq: 3, MessageID: "9007199254740993"}},
		{"im.outbox_sent", `{"seq":4,"messageID":0,"refused":"gone"}`,
			&IMOutboxSent{Seq: 4, Refused: "gone"}},
		{"im.prompt_opened", `{"kind":"dead","nonce":2,"userID":-7,"choices":["a"]}`,
			&IMPromptOpened{Kind: "dead", Nonce: 2, User: "-7", Choices: []string{"a"}}},
	}
	for _, c := range cases {
		got, err := Decode(envelope(c.name, 1, c.body))
		if err != nil {
			t.Fatalf("%s %s: %v", c.name, c.body, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %s decodes to %+v, want %+v", c.name, c.body, got, c.want)
		}
	}
	if _, err := Decode(envelope("im.update_seen", 1, `{"updateID":1,"userID":1.5}`)); err == nil || errors.Is(err, ErrUnknownVersion) {
		t.Errorf("a user id that is no integer: %v, want an upgrade error", err)
	}
}
