package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
)

// Target says where a message goes: a chat, or a reply to one of its
// messages. Feishu has no call that posts into a topic by its thread id;
// a message goes into a topic as a reply, in the thread, to a message of
// that topic (ReplyTo with InThread).
type Target struct {
	// ChatID is the chat (oc_...). Required: calls for one chat are made
	// one at a time, in order.
	ChatID string
	// ReplyTo, when set, makes the message a reply to this message.
	ReplyTo string
	// InThread puts the reply in ReplyTo's thread (a topic's, in a topic
	// group). Default: false.
	InThread bool
}

// Send sends text as text messages, split under Feishu's limit (Split),
// the parts one after the other. It returns the ids of the parts sent;
// on an error, those sent before it, so that a caller that records parts
// goes on from the next one.
func (c *Client) Send(ctx context.Context, to Target, text string) ([]string, error) {
	var ids []string
	for _, part := range Split(text) {
		content, err := json.Marshal(map[string]string{"text": part})
		if err != nil {
			return ids, fmt.Errorf("feishu: encode text: %w", err)
		}
		id, err := c.post(ctx, to, "text", string(content))
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// MaxImageBytes is Feishu's limit on an uploaded image.
const MaxImageBytes = 10 << 20

// SendImage uploads an image (PNG, JPEG, ...; at most MaxImageBytes) and
// sends it as an image message; it returns the message's id. The upload
// takes the chat's turn like a send, so that the picture lands after what
// was sent to the chat before it.
func (c *Client) SendImage(ctx context.Context, to Target, name string, data []byte) (string, error) {
	if len(data) == 0 || len(data) > MaxImageBytes {
		return "", &APIError{Op: "upload image " + name, Code: codeTooLarge,
			Msg: fmt.Sprintf("%d bytes: an image must have 1 to %d", len(data), MaxImageBytes)}
	}
	var key string
	err := c.call(ctx, to.ChatID, "upload image "+name, func(ctx context.Context) (result, error) {
		req := larkim.NewCreateImageReqBuilder().Body(larkim.NewCreateImageReqBodyBuilder().
			ImageType(larkim.ImageTypeMessage).Image(bytes.NewReader(data)).Build()).Build()
		resp, err := c.lark.Im.Image.Create(ctx, req)
		if err != nil {
			return result{}, err
		}
		if resp.Success() && resp.Data != nil && resp.Data.ImageKey != nil {
			key = *resp.Data.ImageKey
		}
		return answered(resp.ApiResp, resp.CodeError), nil
	})
	if err != nil {
		return "", err
	}
	if key == "" {
		return "", fmt.Errorf("feishu: upload image %s: Feishu answered no image_key", name)
	}
	content, err := json.Marshal(map[string]string{"image_key": key})
	if err != nil {
		return "", err
	}
	return c.post(ctx, to, "image", string(content))
}

// SendCard sends an interactive card and returns its message id.
func (c *Client) SendCard(ctx context.Context, to Target, card Card) (string, error) {
	content, err := card.JSON()
	if err != nil {
		return "", err
	}
	return c.post(ctx, to, "interactive", content)
}

// PatchCard replaces a card's content (its text and buttons); chatID is
// the chat the card is in. Only cards the adapter sent can be patched
// (they are sent with update_multi).
func (c *Client) PatchCard(ctx context.Context, chatID, messageID string, card Card) error {
	content, err := card.JSON()
	if err != nil {
		return err
	}
	return c.call(ctx, chatID, "patch card "+messageID, func(ctx context.Context) (result, error) {
		req := larkim.NewPatchMessageReqBuilder().MessageId(messageID).
			Body(larkim.NewPatchMessageReqBodyBuilder().Content(content).Build()).Build()
		resp, err := c.lark.Im.Message.Patch(ctx, req)
		if err != nil {
			return result{}, err
		}
		return answered(resp.ApiResp, resp.CodeError), nil
	})
}

// Delete deletes (recalls) a message the bot sent; chatID is its chat.
func (c *Client) Delete(ctx context.Context, chatID, messageID string) error {
	return c.call(ctx, chatID, "delete "+messageID, func(ctx context.Context) (result, error) {
		resp, err := c.lark.Im.Message.Delete(ctx, larkim.NewDeleteMessageReqBuilder().MessageId(messageID).Build())
		if err != nil {
			return result{}, err
		}
		return answered(resp.ApiResp, resp.CodeError), nil
	})
}

// post sends one message of any type, as a new message or a reply.
func (c *Client) post(ctx context.Context, to Target, msgType, content string) (string, error) {
	var id string
	op := "send " + msgType
	err := c.call(ctx, to.ChatID, op, func(ctx context.Context) (result, error) {
		if to.ReplyTo != "" {
			req := larkim.NewReplyMessageReqBuilder().MessageId(to.ReplyTo).
				Body(larkim.NewReplyMessageReqBodyBuilder().MsgType(msgType).Content(content).ReplyInThread(to.InThread).Build()).Build()
			resp, err := c.lark.Im.Message.Reply(ctx, req)
			if err != nil {
				return result{}, err
			}
			if resp.Success() && resp.Data != nil && resp.Data.MessageId != nil {
				id = *resp.Data.MessageId
			}
			return answered(resp.ApiResp, resp.CodeError), nil
		}
		req := larkim.NewCreateMessageReqBuilder().ReceiveIdType(larkim.ReceiveIdTypeChatId).
			Body(larkim.NewCreateMessageReqBodyBuilder().ReceiveId(to.ChatID).MsgType(msgType).Content(content).Build()).Build()
		resp, err := c.lark.Im.Message.Create(ctx, req)
		if err != nil {
			return result{}, err
		}
		if resp.Success() && resp.Data != nil && resp.Data.MessageId != nil {
			id = *resp.Data.MessageId
		}
		return answered(resp.ApiResp, resp.CodeError), nil
	})
	return id, err
}

func answered(resp *larkcore.ApiResp, ce larkcore.CodeError) result {
	r := result{code: ce.Code, msg: ce.Msg}
	if resp != nil {
		r.header = resp.Header
	}
	return r
}

// MaxTextBytes is the most bytes of text Split puts in one message: the
// JSON-escaped text, its envelope and the request's other fields stay
// well under Feishu's 150 KB limit on a text message's request body even
// when every byte needs escaping (a control character grows sixfold).
const MaxTextBytes = 24 * 1024

// Split cuts text into parts of at most MaxTextBytes bytes each, at the
// last line break of a part when there is one in its second half, and
// never inside a UTF-8 sequence. Split("") returns no parts.
func Split(text string) []string {
	var parts []string
	for len(text) > MaxTextBytes {
		cut := MaxTextBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		if nl := lastNewline(text[:cut]); nl >= cut/2 {
			cut = nl + 1
		}
		parts = append(parts, text[:cut])
		text = text[cut:]
	}
	if text != "" {
		parts = append(parts, text)
	}
	return parts
}

func lastNewline(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return i
		}
	}
	return -1
}
