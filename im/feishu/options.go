package feishu

import (
	"errors"
	"fmt"
	"time"

	"github.com/thatch-run/thatch/config"
)

// Modes of receiving events (config's: the [im.feishu] section owns
// them).
const (
	ModeWS      = config.FeishuModeWS
	ModeWebhook = config.FeishuModeWebhook
)

// Options mirrors the [im.feishu] section of the config (the config
// package fills it; this package only reads it).
type Options struct {
	// AppID is the app's id (cli_...). The adapter runs when it is set.
	// Required in both modes (the long connection's endpoint call
	// carries it).
	AppID string
	// AppSecret is the app's secret. Secret: never logged. Required in
	// both modes.
	AppSecret string
	// VerificationToken is compared with header.token of every event
	// the webhook takes. Secret. Required in webhook mode; not used in
	// mode "ws" (the connection is authenticated by the app secret).
	VerificationToken string
	// EncryptKey, when set, makes the webhook refuse plain bodies and
	// check X-Lark-Signature. Secret. Default: "" (plain events). Not
	// used in mode "ws".
	EncryptKey string
	// BaseURL is the Open API's base. Default: "https://open.feishu.cn"
	// (https://open.larksuite.com for Lark).
	BaseURL string
	// Mode is "ws" (the long connection: thatch connects out, nothing
	// listens) or "webhook". Default: "ws".
	Mode string
	// Listen is the webhook's address (webhook mode only). Default:
	// "127.0.0.1:0".
	Listen string
	// Path is the webhook's path (webhook mode only). Default:
	// "/feishu/events".
	Path string
	// AllowedUsers are the open ids (ou_...) whose messages are taken.
	// The front end applies it; the adapter passes every event on.
	AllowedUsers []string
	// SendTimeout bounds each request to the Open API (and the token
	// fetch inside it), and the long connection's endpoint call.
	// Default: 10 s.
	SendTimeout time.Duration
	// ChatLimitWait is how long a call answered 230020 (the per-chat
	// limit, which names no wait) waits before it is made again.
	// Default: 1 s.
	ChatLimitWait time.Duration
	// Clock is the time an event whose header carries no creation time
	// gets its update id from (tests set it). Default: time.Now.
	Clock func() time.Time
}

// WithDefaults returns o with every unset field at its default: those of
// the config's section from config.FeishuDefaults, the one place they are
// written.
func (o Options) WithDefaults() Options {
	d := config.FeishuDefaults()
	if o.BaseURL == "" {
		o.BaseURL = d.BaseURL
	}
	if o.Mode == "" {
		o.Mode = d.Mode
	}
	if o.Listen == "" {
		o.Listen = d.Listen
	}
	if o.Path == "" {
		o.Path = d.Path
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = 10 * time.Second
	}
	if o.ChatLimitWait <= 0 {
		o.ChatLimitWait = time.Second
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return o
}

// Validate reports every problem of o (with defaults applied) at once:
// the adapter needs an app id, and the rest are the config's rules for
// [im.feishu] (config.Feishu.Problems; the allow-list is the front
// end's), written once there.
func (o Options) Validate() error {
	o = o.WithDefaults()
	var errs []error
	if o.AppID == "" {
		errs = append(errs, errors.New("feishu: app_id is empty"))
		o.AppID = "(unset)" // the section's rules apply to a configured app
	}
	c := config.Feishu{AppID: o.AppID, AppSecret: config.Secret(o.AppSecret), VerificationToken: config.Secret(o.VerificationToken),
		EncryptKey: config.Secret(o.EncryptKey), BaseURL: o.BaseURL, Mode: o.Mode, Listen: o.Listen, Path: o.Path,
		AllowedUsers: o.AllowedUsers}
	if err := c.Problems(true); err != nil {
		errs = append(errs, fmt.Errorf("feishu: %w", err))
	}
	return errors.Join(errs...)
}

// String shows o with its secrets redacted, for logs and check-config.
func (o Options) String() string {
	red := func(s string) string {
		if s == "" {
			return `""`
		}
		return "<redacted>"
	}
	return fmt.Sprintf("{app_id=%q app_secret=%s verification_token=%s encrypt_key=%s base_url=%q mode=%q listen=%q path=%q allowed_users=%d}",
		o.AppID, red(o.AppSecret), red(o.VerificationToken), red(o.EncryptKey), o.BaseURL, o.Mode, o.Listen, o.Path, len(o.AllowedUsers))
}
