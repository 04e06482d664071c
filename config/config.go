package config

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"
)

// Config is the daemon's effective configuration. Build it with Load (or
// Defaults plus ResolvePaths for embedding) and check it with Validate before
// use. Every field has a koanf key, named by the koanf tags of the field and
// its section: Control.TokenFile is "control.token_file".
type Config struct {
	Data       Data       `koanf:"data"`
	Log        Log        `koanf:"log"`
	Control    Control    `koanf:"control"`
	Journal    Journal    `koanf:"journal"`
	Actors     Actors     `koanf:"actors"`
	Supervisor Supervisor `koanf:"supervisor"`
	OpenCode   OpenCode   `koanf:"opencode"`
	Memory     Memory     `koanf:"memory"`
	Sweep      Sweep      `koanf:"sweep"`
	IM         IM         `koanf:"im"`
	Cluster    Cluster    `koanf:"cluster"`

	// source is the file Load read, "" if none.
	source string
	// problems are what Load found before Validate could look at values:
	// unknown keys and variables, values of the wrong type. Validate reports
	// them first.
	problems []*FieldError
	// serverKeys holds, for each of OpenCode.Servers, the key of its place
	// in the file ("opencode.servers[2]"): an item Load could not decode is
	// left out, and the problems of the others must still name where they
	// are. nil when Servers was not loaded from a file, or was changed
	// since (its length differs); then the index in Servers is the key.
	serverKeys []string
}

// Data says where thatch keeps its durable state.
type Data struct {
	// Dir holds the journal, snapshots, memory store and control files.
	// Default: "", which Load resolves to $XDG_DATA_HOME/thatch
	// (XDG_DATA_HOME defaulting to ~/.local/share).
	Dir string `koanf:"dir" usage:"directory for the journal, snapshots, memory store and control files (default $XDG_DATA_HOME/thatch)"`
}

// Log configures the root logger that cmd creates.
type Log struct {
	// Level is the minimum level logged: trace, debug, info, warn or error.
	// Default: "info".
	Level string `koanf:"level" usage:"minimum log level: trace, debug, info, warn or error"`
	// Format is "text" for people or "json" for log collectors.
	// Default: "text".
	Format string `koanf:"format" usage:"log format: text or json"`
}

// Control configures the loopback control API used by the opencode plugin
// and by `thatch status`.
type Control struct {
	// Listen is the host:port to bind. The host must be loopback because the
	// API hands out session payloads; port 0 picks a free port, which is
	// published in StateFile. Default: "127.0.0.1:0".
	Listen string `koanf:"listen" usage:"loopback host:port of the control API; port 0 picks a free port"`
	// TokenFile holds the bearer token every control client must present.
	// Default: "", resolved to <data.dir>/control.token.
	TokenFile string `koanf:"token_file" usage:"file holding the control API bearer token (default <data.dir>/control.token)"`
	// StateFile is where the running daemon publishes its actual address
	// so that clients can find a random port. Default: "", resolved to
	// <data.dir>/control.json.
	StateFile string `koanf:"state_file" usage:"file where the daemon publishes its control address (default <data.dir>/control.json)"`
}

// Journal tunes the Pebble-backed event journal.
type Journal struct {
	// SnapshotEvery is how many events an entity journals between snapshots;
	// lower means faster restarts, higher means fewer writes. Must be >= 1.
	// Default: 100.
	SnapshotEvery int `koanf:"snapshot_every" usage:"events journaled between snapshots of an entity (>= 1)"`
	// CacheSizeMB is Pebble's block cache in MiB. Must be >= 1. Default: 32.
	// Memtables come on top: they start at 256 KiB and grow with the write
	// load up to 64 MiB each, two to four of them under a heavy load.
	CacheSizeMB int `koanf:"cache_size_mb" usage:"Pebble block cache size in MiB (>= 1)"`
}

// Actors tunes the entity runtime.
type Actors struct {
	// PassivateAfter is how long an entity may sit idle before it is stopped
	// to free memory; its next message rehydrates it from the journal.
	// Must be > 0. Default: 5m.
	PassivateAfter time.Duration `koanf:"passivate_after" usage:"idle time after which an entity is stopped and later rehydrated on demand"`
}

// Supervisor sets the restart policy of the supervision tree.
type Supervisor struct {
	// MaxRestarts is how often a failing actor is restarted within
	// RestartWindow before the failure escalates to its parent. 0 means
	// never restart. Must be >= 0. Default: 5.
	MaxRestarts int `koanf:"max_restarts" usage:"restarts allowed within restart-window before a failure escalates (>= 0)"`
	// RestartWindow is the sliding window MaxRestarts counts in. Must be > 0.
	// Default: 1m.
	RestartWindow time.Duration `koanf:"restart_window" usage:"window in which supervisor-max-restarts is counted"`
	// BackoffBase is the first restart delay; each further restart doubles
	// it. Must be > 0. Default: 50ms.
	BackoffBase time.Duration `koanf:"backoff_base" usage:"first restart delay, doubled on each further restart"`
	// BackoffMax caps the restart delay. Must be >= BackoffBase.
	// Default: 30s.
	BackoffMax time.Duration `koanf:"backoff_max" usage:"upper bound of the restart delay (>= backoff-base)"`
}

// OpenCode configures the opencode front end.
type OpenCode struct {
	// BufferLimit is how many tool interactions are buffered per session
	// for extraction; the oldest are dropped beyond it. Must be 1..1000.
	// Default: 20.
	BufferLimit int `koanf:"buffer_limit" usage:"tool interactions buffered per session for extraction (1..1000)"`
	// StaleAfter is how long an accepted interaction may wait for its
	// completion before it returns to pending, and how long thatch waits
	// for a host's answer (a child create, a wrap-up check) or for an
	// extraction child holding nothing newer before giving up on it.
	// Must be > 0. Default: 15m.
	StaleAfter time.Duration `koanf:"stale_after" usage:"time after which an accepted but never completed interaction returns to pending, and a hung extraction is given up"`
	// FinishGrace is how long a session must stay idle before thatch treats
	// its turn as finished, so that a quick follow-up prompt does not start
	// an extraction. Must be >= 0. Default: 10s.
	FinishGrace time.Duration `koanf:"finish_grace" usage:"time a session must stay idle before its turn counts as finished (>= 0)"`
	// ExitRetryWindow is how long after a greenlit /thatch/exit thatch
	// still closes the session when the close could not go out (thatch
	// restarted, or the host was unreachable): it tries again when the
	// host reconnects. Later the session is left open and the user told.
	// Must be > 0. Default: 2m.
	ExitRetryWindow time.Duration `koanf:"exit_retry_window" usage:"how long after a greenlit /thatch/exit thatch still closes the session once its host is back"`
	// RequestTimeout bounds each REST request to an opencode server.
	// Must be > 0. Default: 10s.
	RequestTimeout time.Duration `koanf:"request_timeout" usage:"timeout of each REST request to an opencode server"`
	// Servers are the opencode servers to watch, one host actor each. They
	// can only be set in a config file. Default: none.
	Servers []Server `koanf:"servers"`
}

// Server is one opencode server to watch.
type Server struct {
	// Name identifies the server in logs and status. Required and unique.
	Name string `koanf:"name"`
	// URL is the server's base URL, such as http://127.0.0.1:4096.
	// Required; scheme http or https.
	URL string `koanf:"url"`
	// API picks the client: "auto" detects it, "v1" or "v2" forces one.
	// Default: "auto".
	API string `koanf:"api"`
	// Username for HTTP basic auth. Default: "opencode".
	Username string `koanf:"username"`
	// Password for HTTP basic auth. Default: "", which Load fills from
	// $OPENCODE_SERVER_PASSWORD when that is set.
	Password Secret `koanf:"password"`
}

// Memory configures the durable memory store that extraction writes to.
type Memory struct {
	// Embedder computes the vectors used for recall and deduplication:
	// "local" runs in process, "openai" calls an OpenAI-compatible
	// embeddings endpoint. Default: "local".
	Embedder string `koanf:"embedder" usage:"embedder for memories: local or openai"`
	// EmbeddingsURL is the embeddings endpoint, required when Embedder is
	// "openai". Default: "".
	EmbeddingsURL string `koanf:"embeddings_url" usage:"http(s) URL of the OpenAI-compatible embeddings endpoint (required for openai)"`
	// EmbeddingsModel is the model name sent to that endpoint, required when
	// Embedder is "openai". Default: "".
	EmbeddingsModel string `koanf:"embeddings_model" usage:"embeddings model name (required for openai)"`
	// EmbeddingsAPIKey authenticates to the endpoint. Default: "".
	EmbeddingsAPIKey Secret `koanf:"embeddings_api_key" usage:"API key of the embeddings endpoint; prefer THATCH_MEMORY_EMBEDDINGS_API_KEY, command lines are visible to other users"`
	// DedupThreshold is the cosine similarity above which a new memory is
	// treated as a duplicate of an existing one. Must be in (0, 1].
	// Default: 0.85.
	DedupThreshold float64 `koanf:"dedup_threshold" usage:"similarity above which a new memory duplicates an existing one (0 < x <= 1)"`
	// StaleAfter is how long a memory may go unused before it is flagged
	// stale in the hygiene report. Must be > 0. Default: 2160h (90 days).
	StaleAfter time.Duration `koanf:"stale_after" usage:"time unused after which a memory is reported stale"`
	// DailyBudgetTokens caps the estimated tokens (payload bytes/4) that
	// extraction may send per memory store and UTC day; past it,
	// extraction for the store pauses until the next day or `thatch
	// extraction resume`. Must be >= 0; 0 turns the budget off. Default: 0.
	DailyBudgetTokens int `koanf:"daily_budget_tokens" usage:"estimated tokens extraction may use per store and day (0: no budget)"`
	// IdleAfter is how long a claude or codex session thatch follows for
	// a chat must be quiet after its turn ended before its tool calls are
	// extracted into memories. Must be > 0. Default: 2m.
	IdleAfter time.Duration `koanf:"idle_after" usage:"quiet time after a claude or codex turn before its tool calls are extracted"`
	// Extractor is the CLI that extracts a claude or codex session's
	// memories, run headless: "" (the session's own agent), "claude",
	// "codex", or "off" (no extraction for them). Default: "".
	Extractor string `koanf:"extractor" usage:"CLI that extracts claude and codex sessions' memories: \"\" (the same agent), claude, codex or off"`
	// Redact says which secrets are cut from the agent's tool calls at
	// the edge, before anything is journaled, and refused in memories.
	Redact Redact `koanf:"redact"`
}

// Redact configures the secret redactor ([memory.redact]).
type Redact struct {
	// Enabled runs the redactor. false journals tool calls as they come
	// (<private> spans are still dropped). Default: true.
	Enabled bool `koanf:"enabled" usage:"cut secrets from tool calls before they are journaled, and refuse memories holding one"`
	// Disable lists built-in kinds to switch off (aws_access_key, jwt,
	// password, env_secret, ...; see thatch.example.toml). Default: [].
	Disable []string `koanf:"disable" usage:"built-in secret kinds not to redact"`
	// Patterns adds rules, each "kind=regexp" (RE2 syntax; a group named
	// secret limits what is replaced). Default: [].
	Patterns []string `koanf:"patterns" usage:"extra secret patterns, each kind=regexp"`
}

// RedactRule splits one of Redact.Patterns, "kind=regexp", at its first
// "=" (ok is false when it has none).
func RedactRule(p string) (kind, pattern string, ok bool) {
	kind, pattern, ok = strings.Cut(p, "=")
	return strings.TrimSpace(kind), pattern, ok
}

// Sweep configures the housekeeping sweepers.
type Sweep struct {
	// Interval is how often the runtime-state sweep (and the stale
	// reaper) runs. Must be > 0. Default: 1m.
	Interval time.Duration `koanf:"interval" usage:"how often the runtime-state sweep and the stale reaper run"`
	// RuntimeStateTTL is how long a session's runtime state (its family's
	// journal: buffers, accepted sets, children, wrap-ups) and other
	// runtime-state rows live without being written: a live session
	// writes on every tool call, so a week of silence means nobody is
	// coming back. Also $THATCH_RUNTIME_STATE_TTL_MS (milliseconds).
	// Must be > 0. Default: 168h (7 days).
	RuntimeStateTTL time.Duration `koanf:"runtime_state_ttl" usage:"lifetime of runtime state that is not written (also THATCH_RUNTIME_STATE_TTL_MS, in ms)"`
	// DeletedSessionTTL is how long a deleted session's family is kept,
	// to ignore the session's late events, before its journal is
	// forgotten. Must be > 0. Default: 24h.
	DeletedSessionTTL time.Duration `koanf:"deleted_session_ttl" usage:"how long a deleted session's journal is kept before it is forgotten"`
	// Strand arms the stranded-session self-heal. false (also
	// $THATCH_STRAND_SWEEP=off) disarms it completely; tests set it
	// wherever a sweep could act on a real opencode database by mistake.
	// Default: true.
	Strand bool `koanf:"strand" usage:"heal sessions stranded in deleted worktrees (also THATCH_STRAND_SWEEP=off)"`
	// StrandInterval is how often the strand sweep runs after the one at
	// start. Also $THATCH_STRAND_SWEEP_MS (milliseconds). Must be > 0.
	// Default: 5m.
	StrandInterval time.Duration `koanf:"strand_interval" usage:"how often the strand sweep runs (also THATCH_STRAND_SWEEP_MS, in ms)"`
	// OpenCodeDB is opencode's database, which the strand sweep reads
	// (read-only) to enumerate the sessions of a host that speaks only the
	// v2 API. Default: "", which means $XDG_DATA_HOME/opencode/opencode.db
	// (~/.local/share/opencode/opencode.db).
	OpenCodeDB string `koanf:"opencode_db" usage:"opencode's database, read-only, for the strand sweep of v2 hosts"`
}

// IM configures the IM front end: chat threads bound to agent sessions in
// tmux windows. The front end runs when a chat platform's token is set.
type IM struct {
	// AllowedUsers are the chat user ids (decimal) whose messages and
	// button presses are handled; everyone else is ignored without a
	// reply. Required when a token is set, unless Open. Default: none.
	AllowedUsers []string `koanf:"allowed_users" usage:"chat user ids allowed to talk to the agents (required unless im.open)"`
	// Open lets every user in, for a bot in a private group. Default: false.
	Open bool `koanf:"open" usage:"let every chat user in (no allow-list)"`
	// Roots bound the setup flow's directory browser: it never shows a
	// directory outside them, whatever a button press says. "~/" is the
	// home directory. Default: ["~"].
	Roots []string `koanf:"roots" usage:"directories the setup flow's browser stays inside"`
	// RenameTimeout is how long a rename prompt waits for an answer before
	// the rename is accepted. Must be > 0. Default: 60s.
	RenameTimeout time.Duration `koanf:"rename_timeout" usage:"how long a rename prompt waits before the rename is accepted"`
	// OnClose says what happens to the window of a binding whose chat
	// ended (a Feishu chat disbanded, the bot removed, sends answered
	// "chat gone"): "keep" leaves the window and its agent running,
	// "kill" kills the window. For every platform. Default: "keep".
	OnClose string `koanf:"on_close" usage:"what happens to the window of a binding whose chat ended: keep or kill"`
	// ShowTools shows each tool call the agent's transcript records as one
	// short line in the chat ("▸ Bash: npm test"). Default: false.
	ShowTools bool `koanf:"show_tools" usage:"show the agent's tool calls in the chat, one line each"`
	// Live shows each turn of the agent as one message edited in place
	// while it works (its tool calls with their outcomes, its text so
	// far, the time), silently, and sends the final answer as its own
	// message: "turn"; "off" sends each reply as a message. Default:
	// "turn".
	Live string `koanf:"live" usage:"how the chat shows a turn of the agent: turn (one live message, then the answer) or off (each reply a message)"`
	// LiveEvery is the least time between two edits of a thread's live
	// message (a chat's edits count against the platform's rate limits).
	// Default: 3s.
	LiveEvery time.Duration `koanf:"live_every" usage:"least time between two edits of a thread's live message"`
	// AlertAfter: a final answer after more work than this says how long
	// the turn took. 0 never does. Default: 60s.
	AlertAfter time.Duration `koanf:"alert_after" usage:"a final answer after more work than this says how long it took (0: never)"`
	// Board pins a board of every thread in each chat with a bound
	// thread, as /board does in one chat. Default: false.
	Board bool `koanf:"board" usage:"pin a board of every thread and its state in each chat, as /board does"`
	// BoardInterval is the least time between two edits of a chat's
	// board. Default: 10s.
	BoardInterval time.Duration `koanf:"board_interval" usage:"least time between two edits of a chat's board"`
	// Prices are /usage's prices per model, added to the built-in list
	// prices (and overriding them): "MODEL=IN/OUT[/CACHE_READ[/CACHE_WRITE]]"
	// in US dollars per million tokens, MODEL the start of the model's
	// name. Default: none.
	Prices []string `koanf:"prices" usage:"/usage prices: MODEL=IN/OUT[/CACHE_READ[/CACHE_WRITE]] dollars per million tokens"`
	// InboxDir is where files, photos and voice notes sent in a thread are
	// saved: relative to the binding's working directory (inside the
	// project, which agents read without asking), or absolute. thatch
	// writes a .gitignore of "*" in it. Default: ".thatch/inbox".
	InboxDir string `koanf:"inbox_dir" usage:"where files sent in a thread are saved (relative to the binding's directory, or absolute)"`
	// Transcribe is a local speech-to-text command for voice notes: its
	// words (split at spaces, no shell), with the saved file's path as
	// its last argument; what it prints is typed after the file's line.
	// "" types only the file's line. Default: "".
	Transcribe string `koanf:"transcribe" usage:"local speech-to-text command for voice notes; gets the file's path, prints text"`
	// MaxFileMB caps the size of a file taken from the chat, in MB, below
	// the platform's own limit (a Telegram bot downloads up to 20 MB).
	// Must be >= 0; 0 is the platform's limit. Default: 0.
	MaxFileMB int `koanf:"max_file_mb" usage:"largest file taken from the chat, in MB (0: the platform's limit)"`
	// Telegram is the Telegram Bot API connection.
	Telegram Telegram `koanf:"telegram"`
	// Feishu is the Feishu (Lark) app's connection.
	Feishu Feishu `koanf:"feishu"`
	// Tmux is where the agents' windows live.
	Tmux Tmux `koanf:"tmux"`
	// Agents are the agent CLIs a binding can run.
	Agents Agents `koanf:"agents"`
}

// Telegram configures the Telegram bot.
type Telegram struct {
	// Token is the bot token; the Telegram front end runs when it is set.
	// Default: "".
	Token Secret `koanf:"token" usage:"Telegram bot token; prefer THATCH_IM_TELEGRAM_TOKEN (the IM front end runs when it is set)"`
	// APIURL is the Bot API server. Default: https://api.telegram.org.
	APIURL string `koanf:"api_url" usage:"Telegram Bot API server URL"`
	// SendTimeout bounds each Bot API request that acts in a chat (a
	// message or a part of one, an edit, a delete) and each wait for the
	// chat's turn (its pacing, a 429's retry_after): a send that gets no
	// answer in time fails, stays in its thread's outbox and is sent
	// again, and a send that hangs in one thread never holds up another
	// thread of the same chat. Default: 10s.
	SendTimeout time.Duration `koanf:"send_timeout" usage:"bound on each Telegram send (and on its wait for the chat's turn); a send over it is tried again later"`
	// ChatInterval is the least time between two requests to one chat:
	// Telegram allows a bot about one message a second in a chat (20 a
	// minute in a group) and answers 429 past that. Lower it only for a
	// Bot API server without those limits (a local one, a test's fake).
	// Default: 1s.
	ChatInterval time.Duration `koanf:"chat_interval" usage:"least time between two Telegram requests to one chat (Telegram's limit is about one a second)"`
	// GroupPerMinute is how many requests one group chat takes in any
	// minute (sends and edits alike; a forum group's topics share it):
	// Telegram lets a bot send about 20 messages a minute in a group. 0:
	// no limit, only for a Bot API server without it. Default: 20.
	GroupPerMinute int `koanf:"group_per_minute" usage:"requests to one Telegram group in any minute (Telegram allows about 20); 0: no limit"`
}

// Modes of receiving Feishu's events (Feishu.Mode).
const (
	FeishuModeWS      = "ws"
	FeishuModeWebhook = "webhook"
)

// FeishuDefaults is [im.feishu] with nothing set: the one place its
// defaults are written (im/feishu's Options take theirs from here).
func FeishuDefaults() Feishu {
	return Feishu{BaseURL: "https://open.feishu.cn", Mode: FeishuModeWS, Listen: "127.0.0.1:0", Path: "/feishu/events"}
}

// Problems are [im.feishu]'s problems as Validate reports them (none when
// app_id is empty: the adapter does not run); open is im.open, which lets
// an empty allow-list pass. im/feishu's Options.Validate uses it too, so
// the rules are written once.
func (f Feishu) Problems(open bool) error {
	v := &validator{}
	v.feishu(&f, open)
	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems}
}

// Feishu configures the Feishu (Lark) app. The Feishu adapter runs when
// AppID is set.
type Feishu struct {
	// AppID is the app's id (cli_...). Default: "".
	AppID string `koanf:"app_id" usage:"Feishu app id (the Feishu adapter runs when it is set)"`
	// AppSecret is the app's secret. Required with AppID. Default: "".
	AppSecret Secret `koanf:"app_secret" usage:"Feishu app secret; prefer THATCH_IM_FEISHU_APP_SECRET"`
	// VerificationToken is compared with every event's header.token.
	// Required in webhook mode. Default: "".
	VerificationToken Secret `koanf:"verification_token" usage:"Feishu event verification token; prefer THATCH_IM_FEISHU_VERIFICATION_TOKEN"`
	// EncryptKey, when set, makes the webhook take only encrypted, signed
	// events. Default: "" (plain events).
	EncryptKey Secret `koanf:"encrypt_key" usage:"Feishu event encrypt key (optional); prefer THATCH_IM_FEISHU_ENCRYPT_KEY"`
	// BaseURL is the Open API's base. Default: https://open.feishu.cn
	// (https://open.larksuite.com for Lark).
	BaseURL string `koanf:"base_url" usage:"Feishu Open API base URL (https://open.larksuite.com for Lark)"`
	// Mode is how events arrive: "ws" (the long connection) or "webhook".
	// Default: "ws".
	Mode string `koanf:"mode" usage:"how Feishu events arrive: ws or webhook"`
	// Listen is the webhook's address (webhook mode). A host beyond
	// loopback needs EncryptKey, so that every event taken is signed.
	// Default: "127.0.0.1:0".
	Listen string `koanf:"listen" usage:"address of the Feishu webhook (webhook mode)"`
	// Path is the webhook's path (webhook mode). Default: "/feishu/events".
	Path string `koanf:"path" usage:"path of the Feishu webhook (webhook mode)"`
	// AllowedUsers are the open ids (ou_...) whose messages and button
	// presses are handled. Required with AppID, unless im.open. Default: none.
	AllowedUsers []string `koanf:"allowed_users" usage:"Feishu open ids (ou_...) allowed to talk to the agents (required unless im.open)"`
}

// How the chat shows a turn of the agent (IM.Live).
const (
	LiveTurn = "turn"
	LiveOff  = "off"
)

// Ways a binding's window is treated when its chat ends (IM.OnClose).
const (
	OnCloseKeep = "keep"
	OnCloseKill = "kill"
)

// Tmux configures the tmux server that holds the agents' windows.
type Tmux struct {
	// Socket is the tmux socket name (tmux -L), kept apart from the user's
	// own tmux server. Default: "thatch".
	Socket string `koanf:"socket" usage:"tmux socket name (tmux -L)"`
	// Session is the tmux session that holds the windows. Default: "thatch".
	Session string `koanf:"session" usage:"tmux session that holds the agents' windows"`
	// AdoptSockets are other tmux servers whose windows a setup may
	// adopt (Existing window): a socket name (tmux -L; "default" is the
	// user's usual server) or an absolute socket path (tmux -S). thatch
	// never makes a window there nor attaches to them. Default: none.
	AdoptSockets []string `koanf:"adopt_sockets" usage:"other tmux sockets whose windows may be adopted (names or absolute paths)"`
}

// Agents configures each agent CLI.
type Agents struct {
	Claude  Agent `koanf:"claude"`
	Codex   Agent `koanf:"codex"`
	Copilot Agent `koanf:"copilot"`
	Mimo    Agent `koanf:"mimo"`
}

// Agent is how one agent CLI is started and recognized.
type Agent struct {
	// Launch is the command line typed into a new window's shell.
	Launch string `koanf:"launch" usage:"command line that starts the agent"`
	// Resume resumes a session; {session_id} is replaced by its id. Empty:
	// the agent's sessions cannot be resumed (the picker is skipped).
	Resume string `koanf:"resume" usage:"command line that resumes a session ({session_id} is replaced)"`
	// Detect is a regexp matched against the pane's processes (name and
	// command line) to tell which agent runs in a window.
	Detect string `koanf:"detect" usage:"regexp over process names and command lines that recognizes the agent"`
	// Input is a regexp matched against the lines of the agent's screen:
	// a match is its input line (drawn when it is ready for input), and
	// its one group is what the line holds. thatch types only once the
	// line shows and checks after Enter that the agent took the text.
	// "off": type at once, unchecked.
	Input string `koanf:"input" usage:"regexp for the agent's input line on its screen (one group: its text), or off"`
	// PromptOption is a regexp matched against the lines of the agent's
	// screen: a match is an option of an interactive prompt (a permission
	// dialog, a numbered choice). Its named groups: n (the option's
	// number), label (the option as shown, number included), cursor
	// (non-empty on the selected option) and, optionally, key (a key the
	// option names, such as "y" in "(y)"). "off": thatch looks for no
	// prompt. Default: DefaultClaudePromptOption, DefaultCodexPromptOption;
	// "off" for copilot and mimo.
	PromptOption string `koanf:"prompt_option" usage:"regexp for an option of the agent's prompt (named groups n, label, cursor; optional key), or off"`
	// PromptQuestion is a regexp for the prompt's question line, searched
	// upwards from the first option; its one group (or the whole match)
	// is the question. A numbered list without it is not a prompt.
	PromptQuestion string `koanf:"prompt_question" usage:"regexp for the question line above a prompt's options (at most one group: the question)"`
	// PromptTop is a regexp for the line that opens the prompt (claude
	// draws a rule above its dialogs): the lines between it and the
	// options are the prompt's context (the tool, the command). Empty:
	// the question opens the prompt, and what lies between it and the
	// options is the context.
	PromptTop string `koanf:"prompt_top" usage:"regexp for the line that opens a prompt; empty: the question line does"`
	// PromptIgnore is a regexp for lines of the prompt left out of its
	// context (tips, dashed rules). Empty: none.
	PromptIgnore string `koanf:"prompt_ignore" usage:"regexp for lines of a prompt left out of its context"`
	// PromptKeys is the tmux keys that choose an option, separated by
	// spaces and sent one at a time: {n} is replaced by the option's
	// number and {key} by the key it names. claude 2.1.328 only moves its
	// selection on a digit and needs Enter; codex 0.169.0 chooses on the
	// digit alone.
	PromptKeys string `koanf:"prompt_keys" usage:"tmux keys that choose a prompt's option ({n}: its number, {key}: the key it names)"`
	// KeysEsc, KeysInterrupt and KeysEnter are the tmux keys (names
	// separated by spaces, sent one at a time) that the chat's /esc,
	// /interrupt and /enter send. Default: "Escape", "C-c", "Enter".
	// Mode is how the chat's /mode switches the agent's permission mode:
	// "cycle" presses Shift+Tab until the agent's footer shows the mode
	// asked for (claude only: its footer is read); a slash command
	// ("/approvals") is typed into the agent, whose dialog then comes to
	// the chat as a prompt with buttons; "off": /mode says it cannot.
	// Default: cycle for claude, /approvals for codex, off for the others.
	Mode          string `koanf:"mode" usage:"how /mode switches the agent's permission mode: cycle (claude), a slash command typed into it, or off"`
	KeysEsc       string `koanf:"keys_esc" usage:"tmux keys /esc sends to the agent"`
	KeysInterrupt string `koanf:"keys_interrupt" usage:"tmux keys /interrupt sends to the agent"`
	KeysEnter     string `koanf:"keys_enter" usage:"tmux keys /enter sends to the agent"`
}

// Agent.Mode's values besides a slash command.
const (
	ModeCycle = "cycle"
	ModeOff   = "off"
)

// The keys the chat's key commands send by default (Agent.KeysEsc, ...).
const (
	DefaultKeysEsc       = "Escape"
	DefaultKeysInterrupt = "C-c"
	DefaultKeysEnter     = "Enter"
)

// The agents' prompt patterns by default (see Agent.PromptOption), taken
// from the real screens of claude 2.1.328 and codex 0.169.0
// (im/agents/testdata/prompts). claude marks the selected option " ❯ 1.
// Yes" and draws a rule ("────") above its dialog, which opens with the
// tool ("Bash command") and ends with the question ("Do you want to
// proceed?"); a digit only moves its selection, Enter chooses. codex
// marks it "› 1. Yes, proceed (y)", opens its dialog with the question
// ("Would you like to run the following command?"; its questions, as
// the 0.169.0 binary holds them, start "Would you like", "Do you want" or
// "Allow", and the model's "Reason: ...?" below must not pass for one)
// and chooses on the digit. These are the one copy: im/agents takes its built-in defaults
// from here.
const (
	DefaultClaudePromptOption   = `^\s*(?P<cursor>❯)?\s*(?P<label>(?P<n>[0-9]{1,2})\.\s+\S.*?)\s*$`
	DefaultClaudePromptQuestion = `^\s*(\S.*\?)\s*$`
	DefaultClaudePromptTop      = `^\s*─{8,}\s*$`
	DefaultClaudePromptIgnore   = `^\s*(?:Tip: .*|╌+)\s*$`
	DefaultClaudePromptKeys     = "{n} Enter"
	DefaultCodexPromptOption    = `^\s*(?P<cursor>›)?\s*(?P<label>(?P<n>[0-9]{1,2})\.\s+\S.*?(?:\s\((?P<key>[a-z]{1,5})\))?)\s*$`
	DefaultCodexPromptQuestion  = `^\s*((?:Would you like|Do you want|Allow) .*\?)\s*$`
	DefaultCodexPromptKeys      = "{n}"
	PromptOff                   = "off"
)

// The agents' input lines by default (see Agent.Input): claude draws its
// input line as "❯" and a no-break space (the conversation above shows the
// user's earlier messages after "❯" and a plain space, a dialog its
// options as " ❯ 1. Yes"); codex as "› " (its dialogs' options, "› 1.
// Yes", are not one). InputOff turns the checks off. These are the one
// copy: im/agents takes its built-in defaults (agents.DefaultInput) from
// here, and its screen tests check them.
const (
	DefaultClaudeInput = `^❯\x{00a0}(.*)$`
	DefaultCodexInput  = `^\s*›\s?((?:[^0-9\s].*|[0-9]+[^.0-9].*|[0-9]*)?)$`
	InputOff           = "off"
)

// ByName returns the configured agents by name, in a stable order.
func (a Agents) ByName() []NamedAgent {
	return []NamedAgent{{"claude", a.Claude}, {"codex", a.Codex}, {"copilot", a.Copilot}, {"mimo", a.Mimo}}
}

// NamedAgent is an agent's config with its name.
type NamedAgent struct {
	Name string
	Agent
}

// Values accepted by the enumerated keys.
const (
	// APIAuto makes the opencode client detect the server's API version.
	APIAuto = "auto"
	// APIV1 forces the opencode v1 client.
	APIV1 = "v1"
	// APIV2 forces the opencode v2 client.
	APIV2 = "v2"
	// EmbedderLocal computes embeddings in process.
	EmbedderLocal = "local"
	// EmbedderOpenAI calls an OpenAI-compatible embeddings endpoint.
	EmbedderOpenAI = "openai"
	// DefaultServerUsername is the basic-auth user of a server that names none.
	DefaultServerUsername = "opencode"
)

// RedactedValue replaces a non-empty secret wherever the config is shown.
const RedactedValue = "<redacted>"

// Cluster joins this daemon to others over embedded NATS JetStream, so
// that several machines share one bot (see im/cluster). With no Node it
// is off: a single node, and no NATS server starts.
type Cluster struct {
	// Node is this machine's name in the cluster, unique. Default: "" (off).
	Node string `koanf:"node" usage:"this machine's unique name in the cluster; empty: a single node, no NATS server"`
	// Listen is the host:port of this node's NATS route listener.
	// Default: "127.0.0.1:6250".
	Listen string `koanf:"listen" usage:"host:port of this node's NATS route listener (off loopback: TLS and a token are required)"`
	// Routes are the other nodes' route URLs. Default: none.
	Routes []string `koanf:"routes" usage:"the other nodes' route URLs (nats-route://host:port)"`
	// Replicas is how many nodes keep a copy of the shared state; 0 picks
	// min(3, the number of nodes). Default: 0.
	Replicas int `koanf:"replicas" usage:"copies of the shared state (0: min(3, nodes)); 1 survives no node's loss"`
	// LeaseTTL bounds how long the bot goes unpolled when its poller's
	// machine dies. Default: 15s.
	LeaseTTL time.Duration `koanf:"lease_ttl" usage:"how long a poller's lease outlives its last renewal (failover takes up to this)"`
	// TLSCert, TLSKey and TLSCA secure the routes. Default: "".
	TLSCert string `koanf:"tls_cert" usage:"PEM certificate of this node's routes"`
	TLSKey  string `koanf:"tls_key" usage:"PEM key of tls_cert"`
	TLSCA   string `koanf:"tls_ca" usage:"PEM CA that signed every node's route certificate"`
	// Token is the routes' shared password. Default: "".
	Token Secret `koanf:"token" usage:"password every node's routes share; prefer THATCH_CLUSTER_TOKEN"`
}

// Enabled reports whether this daemon joins a cluster.
func (c Cluster) Enabled() bool { return c.Node != "" }

// Secret is a string that must not be logged. Formatting it with fmt (%v,
// %s, %+v, %#v) or marshaling it as text or JSON yields RedactedValue (or ""
// if it is empty), so a Config printed by accident does not leak it. Call
// Reveal where the real value is needed.
type Secret string

// Reveal returns the secret itself, for the one place that sends it.
func (s Secret) Reveal() string { return string(s) }

// String returns RedactedValue, or "" for an empty secret so that readers
// can still tell whether one is set.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return RedactedValue
}

// GoString keeps %#v from printing the secret.
func (s Secret) GoString() string { return fmt.Sprintf("%q", s.String()) }

// MarshalText keeps encoders (JSON logs included) from writing the secret.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Defaults returns the built-in configuration, the first layer Load builds
// on. Paths are left empty; Load (or ResolvePaths) derives them.
func Defaults() *Config {
	return &Config{
		Log:     Log{Level: "info", Format: "text"},
		Control: Control{Listen: "127.0.0.1:0"},
		Journal: Journal{SnapshotEvery: 100, CacheSizeMB: 32},
		Actors:  Actors{PassivateAfter: 5 * time.Minute},
		Supervisor: Supervisor{
			MaxRestarts:   5,
			RestartWindow: time.Minute,
			BackoffBase:   50 * time.Millisecond,
			BackoffMax:    30 * time.Second,
		},
		OpenCode: OpenCode{
			BufferLimit:     20,
			StaleAfter:      15 * time.Minute,
			FinishGrace:     10 * time.Second,
			ExitRetryWindow: 2 * time.Minute,
			RequestTimeout:  10 * time.Second,
		},
		Memory: Memory{
			Embedder:       EmbedderLocal,
			DedupThreshold: 0.85,
			StaleAfter:     2160 * time.Hour,
			IdleAfter:      2 * time.Minute,
			Redact:         Redact{Enabled: true},
		},
		Sweep: Sweep{
			Interval:          time.Minute,
			RuntimeStateTTL:   7 * 24 * time.Hour,
			DeletedSessionTTL: 24 * time.Hour,
			Strand:            true,
			StrandInterval:    5 * time.Minute,
		},
		Cluster: Cluster{Listen: "127.0.0.1:6250", LeaseTTL: 15 * time.Second},
		IM: IM{
			Roots:         []string{"~"},
			RenameTimeout: time.Minute,
			OnClose:       OnCloseKeep,
			Live:          LiveTurn,
			LiveEvery:     3 * time.Second,
			AlertAfter:    time.Minute,
			BoardInterval: 10 * time.Second,
			InboxDir:      ".thatch/inbox",
			Telegram:      Telegram{APIURL: "https://api.telegram.org", SendTimeout: 10 * time.Second, ChatInterval: time.Second, GroupPerMinute: 20},
			Feishu:        FeishuDefaults(),
			Tmux:          Tmux{Socket: "thatch", Session: "thatch"},
			Agents: Agents{
				Claude: Agent{Launch: "claude", Resume: "claude -r {session_id}", Detect: `(^|/)claude(\s|$)`, Input: DefaultClaudeInput,
					PromptOption: DefaultClaudePromptOption, PromptQuestion: DefaultClaudePromptQuestion, PromptTop: DefaultClaudePromptTop,
					PromptIgnore: DefaultClaudePromptIgnore, PromptKeys: DefaultClaudePromptKeys, Mode: ModeCycle, KeysEsc: DefaultKeysEsc,
					KeysInterrupt: DefaultKeysInterrupt, KeysEnter: DefaultKeysEnter},
				Codex: Agent{Launch: "codex", Resume: "codex resume {session_id}", Detect: `(^|/)codex(\s|$)`, Input: DefaultCodexInput,
					PromptOption: DefaultCodexPromptOption, PromptQuestion: DefaultCodexPromptQuestion, PromptKeys: DefaultCodexPromptKeys,
					Mode: "/approvals", KeysEsc: DefaultKeysEsc, KeysInterrupt: DefaultKeysInterrupt, KeysEnter: DefaultKeysEnter},
				Copilot: Agent{Launch: "copilot", Resume: "copilot --resume {session_id}", Detect: `(^|/)copilot(\s|$)`, Input: InputOff, PromptOption: PromptOff,
					Mode: ModeOff, KeysEsc: DefaultKeysEsc, KeysInterrupt: DefaultKeysInterrupt, KeysEnter: DefaultKeysEnter},
				Mimo: Agent{Launch: "mimo", Resume: "mimo --resume {session_id}", Detect: `(^|/)mimo(code)?(\s|$)`, Input: InputOff, PromptOption: PromptOff,
					Mode: ModeOff, KeysEsc: DefaultKeysEsc, KeysInterrupt: DefaultKeysInterrupt, KeysEnter: DefaultKeysEnter},
			},
		},
	}
}

// defaultServer holds the values a server table starts from.
func defaultServer() Server {
	return Server{API: APIAuto, Username: DefaultServerUsername}
}

// Source returns the config file Load read, or "" if it read none.
func (c *Config) Source() string { return c.source }

// kind is how a key's value is decoded, flagged and shown.
type kind int

const (
	kindString kind = iota
	kindSecret
	kindInt
	kindFloat
	kindDuration
	kindBool
	kindStrings
	kindServers
)

// leaf is one configuration key, found from the koanf tags of Config.
type leaf struct {
	key   string // "control.token_file"
	index []int  // field index path from the struct walked
	kind  kind
	usage string
}

// field returns the struct field that l addresses inside v.
func (l leaf) field(v reflect.Value) reflect.Value { return v.FieldByIndex(l.index) }

// scalar reports whether l can be set from the environment and flags.
func (l leaf) scalar() bool { return l.kind != kindServers }

// envName is the THATCH_* variable that sets the key.
func envName(key string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// flagName is the command-line flag that sets the key.
func flagName(key string) string {
	return strings.NewReplacer(".", "-", "_", "-").Replace(key)
}

const (
	envPrefix = "THATCH_"
	// envConfig names the config file; it is not a key.
	envConfig = "THATCH_CONFIG"
	// envServerPassword is opencode's own variable for its server password.
	envServerPassword = "OPENCODE_SERVER_PASSWORD"
)

var (
	secretType   = reflect.TypeFor[Secret]()
	durationType = reflect.TypeFor[time.Duration]()
	serversType  = reflect.TypeFor[[]Server]()
	stringsType  = reflect.TypeFor[[]string]()
)

// walk lists the leaves of struct type t under prefix. Sections (nested
// structs) are flattened; an unsupported field type is a programming error.
func walk(t reflect.Type, prefix string, index []int) []leaf {
	var out []leaf
	for i := range t.NumField() {
		f := t.Field(i)
		name, ok := f.Tag.Lookup("koanf")
		if !ok || !f.IsExported() {
			continue
		}
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		idx := append(append([]int(nil), index...), i)
		l := leaf{key: key, index: idx, usage: f.Tag.Get("usage")}
		switch {
		case f.Type == secretType:
			l.kind = kindSecret
		case f.Type == durationType:
			l.kind = kindDuration
		case f.Type == serversType:
			l.kind = kindServers
		case f.Type == stringsType:
			l.kind = kindStrings
		case f.Type.Kind() == reflect.Bool:
			l.kind = kindBool
		case f.Type.Kind() == reflect.String:
			l.kind = kindString
		case f.Type.Kind() == reflect.Int:
			l.kind = kindInt
		case f.Type.Kind() == reflect.Float64:
			l.kind = kindFloat
		case f.Type.Kind() == reflect.Struct:
			out = append(out, walk(f.Type, key, idx)...)
			continue
		default:
			panic(fmt.Sprintf("config: key %s has unsupported type %s", key, f.Type))
		}
		out = append(out, l)
	}
	return out
}

// schema is the key set, derived once from the struct tags so that the
// file, environment, flags and Redacted can never disagree about it.
type schema struct {
	leaves       []leaf
	byKey        map[string]leaf
	sections     map[string]bool   // "control", "opencode", ...
	byEnv        map[string]string // THATCH_CONTROL_TOKEN_FILE -> control.token_file
	byFlag       map[string]string // control-token-file -> control.token_file
	serverFields []leaf
	serverByKey  map[string]leaf
}

var keys = sync.OnceValue(func() *schema {
	s, err := buildSchema()
	if err != nil {
		panic(err)
	}
	return s
})

// buildSchema derives the schema and fails if two keys would share an
// environment variable or flag name.
func buildSchema() (*schema, error) {
	s := &schema{
		leaves:      walk(reflect.TypeFor[Config](), "", nil),
		byKey:       map[string]leaf{},
		sections:    map[string]bool{},
		byEnv:       map[string]string{},
		byFlag:      map[string]string{},
		serverByKey: map[string]leaf{},
	}
	for _, l := range s.leaves {
		s.byKey[l.key] = l
		parts := strings.Split(l.key, ".")
		for i := 1; i < len(parts); i++ {
			s.sections[strings.Join(parts[:i], ".")] = true
		}
		if !l.scalar() {
			continue
		}
		if other, dup := s.byEnv[envName(l.key)]; dup {
			return nil, fmt.Errorf("config: keys %s and %s share variable %s", other, l.key, envName(l.key))
		}
		s.byEnv[envName(l.key)] = l.key
		if other, dup := s.byFlag[flagName(l.key)]; dup {
			return nil, fmt.Errorf("config: keys %s and %s share flag --%s", other, l.key, flagName(l.key))
		}
		s.byFlag[flagName(l.key)] = l.key
	}
	if _, clash := s.byEnv[envConfig]; clash {
		return nil, fmt.Errorf("config: a key maps to %s, which names the config file", envConfig)
	}
	s.serverFields = walk(reflect.TypeFor[Server](), "", nil)
	for _, l := range s.serverFields {
		s.serverByKey[l.key] = l
	}
	return s, nil
}
