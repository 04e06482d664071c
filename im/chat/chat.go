package chat

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"
)

// Sentinel errors, checked with errors.Is. An adapter wraps its own
// errors in them, so that the front end needs no platform's errors.
var (
	// ErrRefused: the platform refused the request for good (the thread
	// or chat is gone, the bot was removed, the text cannot be sent).
	// Sending again cannot mend it: the message is dropped.
	ErrRefused = errors.New("chat: refused by the platform")
	// ErrTimeout: a request got no answer in time. The platform may have
	// acted on it; it is not ErrRefused, and the caller sends again later.
	ErrTimeout = errors.New("chat: no answer in time")
	// ErrRateLimited: the platform asks the chat to wait longer than a
	// send may; nothing more was sent. The caller sends again later.
	ErrRateLimited = errors.New("chat: rate limited")
	// ErrGone marks a send to a thread whose chat is over for the bot
	// (deleted, disbanded, the bot removed): it also carries ErrRefused,
	// and the thread's binding ends.
	ErrGone = errors.New("chat: the chat is gone or the bot is not in it")
	// ErrUnsupported: the adapter cannot do this on its platform.
	ErrUnsupported = errors.New("chat: not supported by the platform")
	// ErrNoThread: a thread key no adapter of the front end owns, or one
	// its adapter cannot read.
	ErrNoThread = errors.New("chat: unknown thread")
	// ErrTooLarge: a file is larger than the platform lets a bot download,
	// or than the caller's bound (Download).
	ErrTooLarge = errors.New("chat: file too large")
)

// Kinds of File.
const (
	FilePhoto    = "photo"
	FileDocument = "document"
	FileVoice    = "voice"
	FileAudio    = "audio"
	FileVideo    = "video"
)

// File is a file a message carries, as Download fetches it.
type File struct {
	// Kind is one of the File kinds above.
	Kind string
	// Name is the file's name as the sender gave it ("" when it has none:
	// photos, voice notes); it is the sender's text, never a path to
	// trust.
	Name string
	// Size is its size in bytes, 0 when unknown.
	Size int64
	// Mime is its MIME type, "" when unknown.
	Mime string
	// Ref is the adapter's own reference (Telegram's file_id; Feishu's
	// message id, file key and type), opaque to everyone else.
	Ref string
}

// Adapter is one platform: what receives from it and what sends to its
// threads. What only some platforms can do is an ability of its own
// (Commander, Typer, PressAnswerer), which an adapter states by
// implementing it, rather than by a method that does nothing.
type Adapter interface {
	Receiver
	Sender
}

// Receiver is the receiving side of an adapter.
type Receiver interface {
	// Name names the platform in logs, status and the front end's rows
	// ("telegram"); it never changes.
	Name() string
	// Scheme is the prefix of the adapter's thread keys, before the first
	// colon ("tg"); it never changes.
	Scheme() string
	// Run receives updates until ctx ends, calling handle for each: one
	// at a time within a thread, threads at once, so handle must be safe
	// to call concurrently. It confirms an update only once handle
	// returned nil for it (and, for a platform that confirms a prefix,
	// for every one before it; see the package doc). It returns nil when
	// ctx ends, once no handle call runs.
	Run(ctx context.Context, handle Handler) error
	// Allows reports whether user may talk to the agents: the platform's
	// allow-list (the front end lets everyone in with im.open).
	Allows(user string) bool
	// Health says how receiving goes, for status.
	Health() Health
	// Close releases the adapter's connections, once Run has returned and
	// the last call is done.
	Close()
}

// Sender is the sending side of an adapter.
type Sender interface {
	// Send delivers m to m.Thread, split under Limits, from part
	// m.FromPart on, and returns the ids of the messages it sent (the last
	// carries the buttons).
	Send(ctx context.Context, m Message) ([]string, error)
	// EditButtons replaces the buttons of a message the adapter sent in
	// thread; nil rows remove them. Setting the buttons a message has
	// already succeeds.
	EditButtons(ctx context.Context, thread, messageID string, rows [][]Button) error
	// Delete deletes a message the adapter sent in thread; one that is gone
	// already counts as deleted.
	Delete(ctx context.Context, thread, messageID string) error
	// SendPhoto sends an image to p.Thread, with p.Buttons under it
	// (beside it where the platform cannot put buttons on a picture), and
	// returns the id of the message that carries the buttons.
	SendPhoto(ctx context.Context, p Photo) (string, error)
	// Limits are the platform's limits, for what the front end makes.
	Limits() Limits
	// Download writes the file f of thread to w, at most max bytes (and
	// never more than the platform lets a bot download): a larger file
	// fails with ErrTooLarge, possibly after some bytes were written. It
	// returns how many bytes it wrote; ctx bounds it.
	Download(ctx context.Context, thread string, f File, w io.Writer, max int64) (int64, error)
}

// Commander is an adapter whose platform offers a bot a command menu and
// addresses commands to a bot by name (Telegram).
type Commander interface {
	// SetCommands tells the platform thatch's commands, where its clients
	// offer them (Telegram's setMyCommands), and learns the bot's own name
	// (BotName).
	SetCommands(ctx context.Context, cmds []CommandHelp) error
	// BotName is the bot's user name as commands address it
	// ("/history@name"); "" while it is not known.
	BotName() string
}

// Typer is an adapter whose platform can show that the bot is writing.
type Typer interface {
	// Typing shows, for a few seconds, that the agent is working on an
	// answer in thread (Telegram's "typing" chat action).
	Typing(ctx context.Context, thread string) error
}

// PressAnswerer is an adapter whose platform waits for a button press to
// be answered (Telegram shows a spinner until it is); on the others a
// press needs no answer.
type PressAnswerer interface {
	// AnswerPress answers a button press of thread (Press.ID), showing
	// text where the platform can ("" only ends the press's spinner).
	AnswerPress(ctx context.Context, thread, pressID, text string) error
}

// Editor is an adapter whose platform lets a bot change the text of a
// message it sent (Telegram's editMessageText): the turn shown live is
// one message edited in place. Without it, a turn is told as messages.
type Editor interface {
	// EditText replaces the text of messageID, which the adapter sent in
	// thread, with text (plain), silently; its buttons go.
	EditText(ctx context.Context, thread, messageID, text string) error
}

// Pinner is an adapter whose platform pins a message in its chat
// (Telegram's pinChatMessage): a chat's board is pinned.
type Pinner interface {
	// Pin pins messageID, which the adapter sent in thread, silently.
	Pin(ctx context.Context, thread, messageID string) error
}

// BotName is a's bot name as commands address it: "" for a platform that
// does not address commands to a bot by name.
func BotName(a Adapter) string {
	if c, ok := a.(Commander); ok {
		return c.BotName()
	}
	return ""
}

// Resumer is an Adapter whose next Run can be told where to start, past
// where it stands: a node of a cluster taking the receiving over starts
// from the cursor the one before it stored.
type Resumer interface {
	Resume(r Resume) error
}

// Handler takes one update; see Adapter.Run.
type Handler func(ctx context.Context, u Update) error

// Resume is where an adapter starts receiving: the Cursor of the last
// update handled before (stored by the front end), and when it was
// stored (zero: unknown).
type Resume struct {
	Cursor string
	Saved  time.Time
}

// NameSource says where an Update's Name comes from, so that names can be
// ranked: an edit is newer than the name a thread was made with, and a
// seed only fills a name not known yet.
type NameSource int

const (
	// NameNone: the update teaches no name.
	NameNone NameSource = iota
	// NameCreated: the thread was made with this name.
	NameCreated
	// NameEdited: the thread was renamed to this name; the newest is its name.
	NameEdited
	// NameSeed: a name that may be old (Telegram's original topic name on
	// every message of the topic).
	NameSeed
)

// String names the source for logs.
func (s NameSource) String() string {
	switch s {
	case NameNone:
		return "none"
	case NameCreated:
		return "created"
	case NameEdited:
		return "edited"
	case NameSeed:
		return "seed"
	}
	return "unknown"
}

// Update is one update of a platform, reduced to what a binding needs.
// Fields the update does not carry are zero.
type Update struct {
	// ID is the update's id: the same when the platform delivers the
	// update again, and greater for each later update of the thread (it
	// need not be contiguous, nor ordered across threads). The binding
	// handles each id once: it drops an id at or below the last one its
	// thread handled, unless that one is six days old or more (after
	// which Telegram may number anew). Telegram's update ids are such
	// ids; an adapter whose platform has none (Feishu's event ids are
	// text) makes its own, per thread, and drops a redelivery it cannot
	// give the same id.
	ID int64
	// Cursor is what the front end stores once this update (and every one
	// before it) is handled, and gives back as Resume.Cursor ("": nothing
	// to store).
	Cursor string
	// Thread is the thread's key ("" for an update of no thread, which
	// the front end drops).
	Thread string
	// Topic is true when Thread is a thread inside a chat (a forum topic,
	// a topic of a Feishu topic group) rather than the whole chat.
	Topic bool
	// User is the sender, or the user who pressed a button, in the
	// platform's own ids (decimal on Telegram, open ids on Feishu). The
	// binding keeps it as it is, so it must be valid UTF-8 of at most 256
	// bytes (the front end drops an update whose is not).
	User string
	// Text is the message text; "" for service messages and presses.
	Text string
	// Media names what a message without text carries ("photo",
	// "document", ...); Caption is its caption. Only text and File reach
	// agents: Media alone is said not to.
	Media, Caption string
	// File is the file the message carries (a photo, a document, a voice
	// note) that Download fetches; nil for none. Media names it too.
	File *File
	// Name is a thread name the update teaches, NameSrc saying how.
	Name    string
	NameSrc NameSource
	// Press is set when a user pressed a button.
	Press *Press
	// Ended is set when the thread's chat ended (disbanded, the bot
	// removed): nothing more can be sent there.
	Ended *Ended
	// Reopened is set when a thread that ended Reopenable is back (a
	// Telegram topic reopened).
	Reopened bool
	// Other names an update of no other kind, passed on so that its
	// Cursor is stored ("edited_message", ...).
	Other string
}

// Press is a button press.
type Press struct {
	// ID answers the press (AnswerPress).
	ID string
	// Data is the pressed Button's Data.
	Data string
	// Message is the id of the message that carries the button.
	Message string
}

// Ended says why a thread's chat ended.
type Ended struct {
	// Reopenable: the thread may come back (a Telegram topic closed, which
	// can be reopened); a message in it meanwhile is not typed.
	Reopenable bool
	Reason     string
}

// Button is one button under a message.
type Button struct {
	// Text is the label.
	Text string
	// Data comes back as Press.Data: 1 to Limits.MaxButtonData bytes.
	Data string
}

// Message is one message to send.
type Message struct {
	// Thread is the thread's key.
	Thread string
	// Text is the text; Markdown says it is an agent's Markdown-ish text,
	// which the adapter renders as its platform shows it (plain otherwise).
	Text     string
	Markdown bool
	// Buttons are rows of buttons, on the last part only.
	Buttons [][]Button
	// FromPart skips the first parts of the split text: they were sent
	// before (a send going on after a failure or a restart). The split is
	// the same for the same text.
	FromPart int
	// OnPart, if set, is called after each part but the last is sent,
	// with how many are sent in all (FromPart included).
	OnPart func(sent int)
	// Silent: the message does not notify (where the platform can say
	// so; Telegram's disable_notification).
	Silent bool
	// Editable: the message is to be edited later (Editor.EditText): an
	// adapter sends it in a form it can edit (Feishu: a card).
	Editable bool
}

// Photo is an image to send.
type Photo struct {
	Thread  string
	Name    string // file name, with its extension
	Data    []byte
	Caption string
	Buttons [][]Button
}

// Health is how an adapter's receiving goes.
type Health struct {
	// Up: the last attempt to receive succeeded.
	Up bool
	// Refused: the platform refuses the adapter's credentials; it keeps
	// asking, slowly. Down at once, where a failure to reach the platform
	// is down only once it lasts.
	Refused bool
	// State says what it does, in a few words, for status ("polling
	// Telegram").
	State string
	// LastError is the last failure ("" after a success).
	LastError string
	// Since is when the state (up or failing) began.
	Since time.Time
}

// Limits are a platform's limits.
type Limits struct {
	// MaxMessage is the longest text of one message, in the platform's
	// own units (Telegram: 4,096 UTF-16 units); Send splits longer ones.
	MaxMessage int
	// MaxButtonData is the most bytes of a button's Data (Telegram: 64).
	MaxButtonData int
	// MaxName is the longest thread name the platform allows.
	MaxName int
}

// SchemeOf returns the scheme of a thread key: what comes before its
// first colon ("" when it has none).
func SchemeOf(thread string) string {
	scheme, _, ok := strings.Cut(thread, ":")
	if !ok {
		return ""
	}
	return scheme
}
