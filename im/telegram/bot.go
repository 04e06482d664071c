package telegram

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tgbot "github.com/go-telegram/bot"
	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/messages"
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrOptions: New was given options it cannot work with.
	ErrOptions = errors.New("telegram: invalid options")
	// ErrButtonData: a button's callback data is empty or longer than the
	// 64 bytes Telegram accepts; Send refuses the message before sending
	// any part of it.
	ErrButtonData = errors.New("telegram: button data must be 1-64 bytes")
	// ErrEmptyText: there is nothing to show; Telegram refuses empty messages.
	ErrEmptyText = errors.New("telegram: empty text")
	// ErrTooLong: an edit's text is over MaxMessageLen (an edit cannot be split).
	ErrTooLong = errors.New("telegram: text over 4096 characters")
	// ErrRefused: Telegram answered the token or the method with 401 or 404.
	// A send refused so fails for good; Run keeps polling, at the slow
	// refusal backoff, and Health says Refused until Telegram accepts the
	// token again.
	ErrRefused = errors.New("telegram: request refused")
	// ErrRunning: Run was called while another Run of the same Bot polls.
	ErrRunning = errors.New("telegram: already running")
	// ErrTimeout: a request to a chat got no answer within SendTimeout.
	// It is not tried again at once (Telegram may have acted on it), and
	// it is not Permanent: the caller sends again later.
	ErrTimeout = errors.New("telegram: no answer in time")
	// ErrRateLimited: the chat's next turn (its spacing, or the wait a 429
	// asked for) is further off than SendTimeout; nothing was sent. It is
	// not Permanent: the caller sends again later.
	ErrRateLimited = errors.New("telegram: the chat must wait longer than a send may")
)

// Defaults for Options.
const (
	DefaultAPIURL         = "https://api.telegram.org"
	DefaultPollTimeout    = 30 * time.Second
	DefaultRequestTimeout = 15 * time.Second
	DefaultSendTimeout    = 10 * time.Second
	DefaultChatInterval   = time.Second
	DefaultGroupPerMinute = 20
)

// IDReset is how long the bot may go without any update before Telegram
// may number the next ones at random: the bindings' window, whose owner is
// messages.IMUpdateIDReset.
const IDReset = messages.IMUpdateIDReset

// Options configure a Bot. Zero values take the documented defaults.
type Options struct {
	// Token is the bot token. It is a secret: it is never logged, and it is
	// replaced by "<token>" in every error this package returns or logs
	// (Telegram's API carries it in the URL path).
	Token string
	// APIURL is the Bot API server. Default: DefaultAPIURL; tests point it
	// at e2e/faketelegram.
	APIURL string
	// Offset is the first update id Run asks for: the caller persists the
	// last update it handled + 1 and passes it here after a restart.
	Offset int64
	// OffsetSaved is when Offset was stored (zero: now). After IDReset
	// without any update, Telegram may number the next ones anew, below
	// Offset, and an Offset past them would drop them: Run then asks
	// from the earliest unconfirmed update instead (everything before was
	// confirmed by the polls that found nothing).
	OffsetSaved time.Time
	// PollTimeout is the long-poll timeout of getUpdates, rounded to whole
	// seconds (at least 1). Default: DefaultPollTimeout.
	PollTimeout time.Duration
	// RequestTimeout bounds Run's requests but the long poll (which gets
	// PollTimeout + RequestTimeout). Default: DefaultRequestTimeout.
	RequestTimeout time.Duration
	// SendTimeout bounds each request that acts in a chat (a part of a
	// Send, an edit, a delete, a press's answer: one without an answer by
	// then fails with ErrTimeout) and each wait for the chat's turn (its
	// spacing and a 429's retry_after: a longer one fails with
	// ErrRateLimited at once). No request holds a lock while it runs, so a
	// request that hangs holds up the other threads of its chat for no
	// time at all, and its own caller for at most about this long.
	// Default: DefaultSendTimeout.
	SendTimeout time.Duration
	// ChatInterval is the least time between two requests to one chat
	// (Telegram allows about one message a second per chat). Default:
	// DefaultChatInterval; negative means no spacing (tests).
	ChatInterval time.Duration
	// GroupPerMinute is how many requests one group chat (a negative chat
	// id) takes in any minute: Telegram lets a bot send about 20 messages
	// a minute in a group, and counts edits with them. Default:
	// DefaultGroupPerMinute; negative means no limit (tests).
	GroupPerMinute int
	// Parking, when set, keeps the updates of a conversation whose handler
	// runs ParkAfter or longer, so that Run confirms them to Telegram and
	// goes on with the others; Run hands them over again at its next
	// start. Nil: a slow conversation holds Telegram's offset until it is
	// handled, and Run asks for the others' updates only every second
	// meanwhile.
	Parking Parking
	// ParkAfter: see Parking. Default: DefaultParkAfter.
	ParkAfter time.Duration
	// Logger receives retries and failures. Default: a null logger.
	Logger hclog.Logger
}

// Bot is a Telegram bot: Run receives its updates, Send and the edit
// methods act in chats. Send and the edits may be called concurrently with
// each other and with Run.
type Bot struct {
	api       *tgbot.Bot
	transport *http.Transport
	client    *http.Client
	url       string
	token     string
	log       hclog.Logger
	poll      time.Duration
	reqTO     time.Duration
	sendTO    time.Duration
	interval  time.Duration
	perMinute int
	parking   Parking
	parkAfter time.Duration
	running   atomic.Bool

	// next is the first update id not yet handled; confirmed is the offset
	// Telegram last saw; lastAt is when the last update came (or the
	// offset was saved). They belong to Run's own goroutine (one Run at a
	// time).
	next, confirmed int64
	lastAt          time.Time
	now             func() time.Time

	mu    sync.Mutex
	chats map[int64]*chatGate

	hmu    sync.Mutex
	health Health
}

// Health is how polling goes, for status.
type Health struct {
	// Polling: the last getUpdates succeeded.
	Polling bool
	// Refused: Telegram refuses the token (401) or the method (404); Run
	// keeps asking, slowly, until it is accepted again (a token revoked
	// for good stays refused, and says so here).
	Refused bool
	// LastError is the last getUpdates failure ("" after a success).
	LastError string
	// Since is when the state (polling or failing) began.
	Since time.Time
}

// Health reports how polling goes.
func (b *Bot) Health() Health {
	b.hmu.Lock()
	defer b.hmu.Unlock()
	return b.health
}

// setHealth records a getUpdates outcome, and reports whether the state
// changed (polling, failing, refused), for a log line per change.
func (b *Bot) setHealth(err error) bool {
	b.hmu.Lock()
	defer b.hmu.Unlock()
	h := Health{Polling: err == nil, Refused: errors.Is(err, ErrRefused)}
	if err != nil {
		h.LastError = b.redact(err).Error()
	}
	changed := h.Polling != b.health.Polling || h.Refused != b.health.Refused || b.health.Since.IsZero()
	h.Since = b.health.Since
	if changed {
		h.Since = b.now()
	}
	b.health = h
	return changed
}

// New checks o and builds a Bot. It makes no request: a wrong token shows
// up at the first Run or Send.
func New(o Options) (*Bot, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Bot{
		url:       strings.TrimRight(o.APIURL, "/"),
		token:     o.Token,
		log:       o.Logger,
		poll:      o.PollTimeout,
		reqTO:     o.RequestTimeout,
		sendTO:    o.SendTimeout,
		interval:  o.ChatInterval,
		perMinute: o.GroupPerMinute,
		parking:   o.Parking,
		parkAfter: o.ParkAfter,
		next:      o.Offset,
		lastAt:    o.OffsetSaved,
		now:       time.Now,
		chats:     map[int64]*chatGate{},
	}
	// A transport of its own, so that Close can drop its idle connections.
	b.transport = http.DefaultTransport.(*http.Transport).Clone()
	// The client's own timeout is a backstop behind the per-request ones.
	b.client = &http.Client{Transport: b.transport, Timeout: o.PollTimeout + 2*max(o.RequestTimeout, o.SendTimeout)}
	api, err := tgbot.New(o.Token,
		tgbot.WithSkipGetMe(),
		tgbot.WithServerURL(b.url),
		tgbot.WithHTTPClient(o.PollTimeout, b.client),
		tgbot.WithErrorsHandler(func(err error) { b.log.Warn("bot library", "error", b.redact(err)) }),
		tgbot.WithDebugHandler(func(string, ...any) {}),
	)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, b.redact(err))
	}
	b.api = api
	return b, nil
}

func (o Options) withDefaults() (Options, error) {
	if strings.TrimSpace(o.Token) == "" {
		return o, fmt.Errorf("%w: empty token", ErrOptions)
	}
	if o.APIURL == "" {
		o.APIURL = DefaultAPIURL
	}
	u, err := url.Parse(o.APIURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return o, fmt.Errorf("%w: APIURL %q is not an http(s) URL", ErrOptions, o.APIURL)
	}
	if o.Offset < 0 {
		return o, fmt.Errorf("%w: negative Offset %d", ErrOptions, o.Offset)
	}
	if o.PollTimeout <= 0 {
		o.PollTimeout = DefaultPollTimeout
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = DefaultSendTimeout
	}
	if o.ChatInterval == 0 {
		o.ChatInterval = DefaultChatInterval
	}
	if o.GroupPerMinute == 0 {
		o.GroupPerMinute = DefaultGroupPerMinute
	}
	if o.ParkAfter <= 0 {
		o.ParkAfter = DefaultParkAfter
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return o, nil
}

// Close drops the Bot's idle connections. Call it after Run has returned
// and the last Send is done; the Bot must not be used afterwards.
func (b *Bot) Close() {
	b.transport.CloseIdleConnections()
}

// redactedError shows its cause's text with the token replaced, and keeps
// the cause for errors.Is and errors.As.
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }

// redact hides the token in err's text. Causes reached by Unwrap keep their
// own text: the library already blanks the token in the *url.Error it
// returns, and this package's own errors never hold a URL.
func (b *Bot) redact(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if !strings.Contains(msg, b.token) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(msg, b.token, "<token>"), cause: err}
}
