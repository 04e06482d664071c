package feishu

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Card is an interactive card: a text and rows of buttons.
type Card struct {
	// Text is shown as plain text above the buttons, cut to fit Feishu's
	// 30 KB limit on a card.
	Text string
	// Rows are the buttons, one action block per row. A card with no rows
	// shows the text alone (a patch with no rows clears the buttons).
	Rows [][]Button
}

// Button is one card button. Its Value comes back in the press
// (card.action.trigger) exactly as sent; Feishu needs it to be a JSON
// object (the SDK answers 500 to a plain string), so it is a map.
type Button struct {
	Label string
	Value map[string]string
}

// maxCardText keeps a card's content, escaped, under Feishu's 30 KB.
const maxCardText = 8 * 1024

// JSON renders the card as the content of an interactive message (card
// JSON 1.0, update_multi so that a patch shows to everyone).
func (c Card) JSON() (string, error) {
	text := c.Text
	if len(text) > maxCardText {
		cut := maxCardText
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "…"
	}
	elements := []any{}
	if text != "" {
		elements = append(elements, map[string]any{
			"tag": "div", "text": map[string]any{"tag": "plain_text", "content": text},
		})
	}
	for _, row := range c.Rows {
		actions := []any{}
		for _, b := range row {
			v := b.Value
			if v == nil {
				v = map[string]string{}
			}
			actions = append(actions, map[string]any{
				"tag":   "button",
				"text":  map[string]any{"tag": "plain_text", "content": b.Label},
				"type":  "default",
				"value": v,
			})
		}
		elements = append(elements, map[string]any{"tag": "action", "actions": actions})
	}
	b, err := json.Marshal(map[string]any{
		"config":   map[string]any{"wide_screen_mode": true, "update_multi": true},
		"elements": elements,
	})
	if err != nil {
		return "", fmt.Errorf("feishu: encode card: %w", err)
	}
	return string(b), nil
}
