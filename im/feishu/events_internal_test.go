package feishu

import (
	"encoding/json"
	"testing"
)

// A rich-text message ("post", what Feishu sends once the user formats
// anything) is typed as plain text: its title, its lines, links with
// their address, the bot's @-mention cut, another's shown by name, an
// image marked as not passed on.
func TestARichTextMessageIsTypedAsPlainText(t *testing.T) {
	content, _ := json.Marshal(map[string]any{
		"title": "Deploy",
		"content": [][]map[string]any{
			{{"tag": "at", "user_id": "@_user_1", "user_name": "thatch"}, {"tag": "text", "text": " please "},
				{"tag": "text", "text": "ship it", "style": []string{"bold"}}},
			{{"tag": "text", "text": "see "}, {"tag": "a", "text": "the runbook", "href": "https://example.invalid/rb"},
				{"tag": "text", "text": " and "}, {"tag": "a", "text": "https://example.invalid/x", "href": "https://example.invalid/x"}},
			{{"tag": "at", "user_id": "@_user_2", "user_name": "Bob"}, {"tag": "text", "text": " knows "},
				{"tag": "emotion", "emoji_type": "SMILE"}, {"tag": "img", "image_key": "img_1"}},
		},
	})
	raw, _ := json.Marshal(map[string]any{
		"sender": map[string]any{"sender_id": map[string]any{"open_id": "ou_alice"}},
		"message": map[string]any{"message_id": "om_1", "chat_id": "oc_1", "chat_type": "group", "message_type": "post",
			"content": string(content), "mentions": []any{
				map[string]any{"key": "@_user_1", "name": "thatch", "id": map[string]any{"open_id": "ou_bot"}},
				map[string]any{"key": "@_user_2", "name": "Bob", "id": map[string]any{"open_id": "ou_bob"}},
			}},
	})
	ev, err := decodeEvent(typeMessage, raw, "ou_bot")
	if err != nil {
		t.Fatal(err)
	}
	m := ev.(*MessageReceived)
	want := "Deploy\n please ship it\nsee the runbook (https://example.invalid/rb) and https://example.invalid/x\n@Bob knows [image]"
	if m.MessageType != "post" || m.Text != want {
		t.Fatalf("type %q text %q, want post %q", m.MessageType, m.Text, want)
	}
}

// A post that is not the JSON Feishu documents is an error (the event is
// logged as undecodable), not an empty message.
func TestAMalformedRichTextMessageIsAnError(t *testing.T) {
	raw, _ := json.Marshal(map[string]any{
		"sender":  map[string]any{"sender_id": map[string]any{"open_id": "ou_alice"}},
		"message": map[string]any{"chat_id": "oc_1", "message_type": "post", "content": "{not json"},
	})
	if _, err := decodeEvent(typeMessage, raw, ""); err == nil {
		t.Fatal("a malformed post decoded")
	}
}
