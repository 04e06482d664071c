package feishu

import (
	"context"
	"encoding/json"
	"fmt"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkcontact "github.com/larksuite/oapi-sdk-go/v3/service/contact/v3"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
)

// ChatInfo is what the chat API tells of a chat.
type ChatInfo struct {
	// Name is a group's name; empty for a P2P chat (its display name is
	// the peer's, UserName).
	Name string
	// Mode is "group", "topic" (a group in topic mode, whose topics are
	// threads of their own) or "p2p".
	Mode string
}

// Chat asks the chat API for a chat's name and mode. A chat the bot is no
// longer in answers an *APIError (Feishu answers chat info with codes of
// its own, not 230002).
func (c *Client) Chat(ctx context.Context, chatID string) (ChatInfo, error) {
	var info ChatInfo
	err := c.call(ctx, chatID, "chat info", func(ctx context.Context) (result, error) {
		resp, err := c.lark.Im.Chat.Get(ctx, larkim.NewGetChatReqBuilder().ChatId(chatID).Build())
		if err != nil {
			return result{}, err
		}
		if resp.Success() && resp.Data != nil {
			info = ChatInfo{Name: deref(resp.Data.Name), Mode: deref(resp.Data.ChatMode)}
		}
		return answered(resp.ApiResp, resp.CodeError), nil
	})
	return info, err
}

// UserName asks the contact API for a user's name by open id (a P2P
// chat's display name). The app needs the contact permission to read it.
func (c *Client) UserName(ctx context.Context, openID string) (string, error) {
	var name string
	err := c.call(ctx, "user:"+openID, "user info", func(ctx context.Context) (result, error) {
		req := larkcontact.NewGetUserReqBuilder().UserId(openID).UserIdType(larkcontact.UserIdTypeGetUserOpenId).Build()
		resp, err := c.lark.Contact.User.Get(ctx, req)
		if err != nil {
			return result{}, err
		}
		if resp.Success() && resp.Data != nil && resp.Data.User != nil {
			name = deref(resp.Data.User.Name)
		}
		return answered(resp.ApiResp, resp.CodeError), nil
	})
	return name, err
}

// BotOpenID asks bot info for the bot's own open id, which the webhook
// needs to cut @-mentions of the bot from messages.
func (c *Client) BotOpenID(ctx context.Context) (string, error) {
	var id string
	err := c.call(ctx, "bot", "bot info", func(ctx context.Context) (result, error) {
		resp, err := c.lark.Get(ctx, "/open-apis/bot/v3/info", nil, larkcore.AccessTokenTypeTenant)
		if err != nil {
			return result{}, err
		}
		var body struct {
			larkcore.CodeError
			Bot struct {
				OpenID string `json:"open_id"`
			} `json:"bot"`
		}
		if err := json.Unmarshal(resp.RawBody, &body); err != nil {
			return result{}, fmt.Errorf("decode bot info: %w", err)
		}
		id = body.Bot.OpenID
		return answered(resp, body.CodeError), nil
	})
	return id, err
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
