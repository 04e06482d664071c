package agents

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/config"
)

// Sentinel errors of the package, checked with errors.Is.
var (
	// ErrUnknownAgent is returned by NewRegistry for a spec naming an agent
	// thatch does not know: a typo in the config must not pass silently.
	ErrUnknownAgent = errors.New("agents: unknown agent")
	// ErrBadDetect is returned by NewRegistry when an agent's Detect is not
	// a valid regular expression.
	ErrBadDetect = errors.New("agents: bad detect regexp")
	// ErrBadInput is returned by NewRegistry when an agent's Input is not
	// a valid regular expression with at most one group.
	ErrBadInput = errors.New("agents: bad input regexp")
	// ErrNoResume is returned by ResumeCommand for an agent whose resume
	// command is configured empty.
	ErrNoResume = errors.New("agents: no resume command configured")
	// ErrUnsafeID is returned by ResumeCommand for a session id that could
	// change the meaning of the shell line it is typed into.
	ErrUnsafeID = errors.New("agents: unsafe session id")
	// ErrNoTranscripts is returned by Sessions for an agent whose sessions
	// thatch cannot list. All four built-in agents' can be listed.
	ErrNoTranscripts = errors.New("agents: agent keeps no transcript files")
)

// SessionIDPlaceholder is replaced by the session id in a Resume template.
const SessionIDPlaceholder = "{session_id}"

// The agents thatch knows, in the order Names returns them.
const (
	Claude  = "claude"
	Codex   = "codex"
	Copilot = "copilot"
	Mimo    = "mimo"
)

// Spec is one agent's configuration. Empty fields take the built-in
// defaults, so a config names only what it changes.
type Spec struct {
	// Launch is the shell command that starts a new session.
	// Default: the agent's name ("claude").
	Launch string
	// Resume is the shell command that resumes a session; every
	// "{session_id}" in it is replaced by the id. A template without the
	// placeholder is used as is. Default: "claude -r {session_id}",
	// "codex resume {session_id}", "copilot --resume {session_id}",
	// "mimo --resume {session_id}".
	Resume string
	// Detect is a regular expression matched against the name and the
	// command line of each process in a pane. Default: the agent's name as
	// the command, directly or as the script of node, bun or deno.
	Detect string
	// Input is a regular expression matched against each line of the
	// agent's screen: a match is its input line, drawn when the agent is
	// ready for input, and the expression's first group (if it has one)
	// is what the line holds. thatch types only once it is drawn, and
	// checks after Enter that the line let go of what was typed. "off"
	// types at once, unchecked. Default: DefaultInput(name).
	Input string
	// Prompt says how the agent draws an interactive prompt (see
	// FindPrompt). The zero value takes DefaultPrompt(name); any other
	// value is used as it is, so that a config, which fills every key
	// from its defaults, can also empty one. Option PromptOff turns
	// detection off.
	Prompt PromptPatterns
}

// InputOff is the Input value that turns the input-line checks off: the
// config's value, so that a config saying "off" means off here.
const InputOff = config.InputOff

// DefaultInput returns the built-in input-line expression of an agent. The
// expressions are the config's defaults (config.DefaultClaudeInput,
// config.DefaultCodexInput), written once there so that the documented
// default and the registry's cannot drift apart; this package's screen
// tests (testdata/screens) check them against what the agents draw.
// copilot and mimo have none built in.
func DefaultInput(name string) string {
	switch name {
	case Claude:
		return config.DefaultClaudeInput
	case Codex:
		return config.DefaultCodexInput
	}
	return ""
}

// format says how an agent keeps its sessions on disk.
type format int

const (
	formatNone format = iota
	formatClaude
	formatCodex
	formatCopilot
	formatMimo // SQLite database, no transcript file
)

// Agent is one agent CLI as configured. Its methods only read files under
// the home directory the registry was made with; they are safe for
// concurrent use.
type Agent struct {
	// Name is the agent's name: claude, codex, copilot or mimo.
	Name string
	// Launch is the shell command that starts a new session.
	Launch string
	// Resume is the resume template (see Spec.Resume); "" cannot resume.
	Resume string

	detect *regexp.Regexp
	input  *regexp.Regexp // nil: no input-line checks
	prompt *PromptFinder  // nil: no prompt detection
	home   string
	format format
}

// Registry holds the four agents. It is immutable once built and safe for
// concurrent use.
type Registry struct {
	agents   map[string]*Agent
	logger   hclog.Logger
	openMode OpenFiles
	lsof     string
}

// OpenFiles says how FindSession looks for a running agent's open
// transcript file.
type OpenFiles int

const (
	// OpenFilesAuto runs lsof, and reads /proc/<pid>/fd when lsof is
	// missing or fails. The default.
	OpenFilesAuto OpenFiles = iota
	// OpenFilesLsof uses lsof only.
	OpenFilesLsof
	// OpenFilesProc reads /proc/<pid>/fd only.
	OpenFilesProc
	// OpenFilesOff skips open-file discovery: FindSession goes straight to
	// the pane text and the hook map.
	OpenFilesOff
)

// Option changes how a Registry works; the defaults suit the daemon.
type Option func(*Registry)

// WithLogger makes the registry log through l (debug lines on discovery
// steps that failed). Default: hclog.NewNullLogger().
func WithLogger(l hclog.Logger) Option {
	return func(r *Registry) { r.logger = l }
}

// WithOpenFiles chooses how FindSession discovers open transcripts.
// Default: OpenFilesAuto.
func WithOpenFiles(m OpenFiles) Option {
	return func(r *Registry) { r.openMode = m }
}

// WithLsof names the lsof binary. Default: "lsof", looked up in PATH.
func WithLsof(path string) Option {
	return func(r *Registry) { r.lsof = path }
}

var builtin = []struct {
	name   string
	resume string
	format format
}{
	{Claude, "claude -r " + SessionIDPlaceholder, formatClaude},
	{Codex, "codex resume " + SessionIDPlaceholder, formatCodex},
	{Copilot, "copilot --resume " + SessionIDPlaceholder, formatCopilot},
	{Mimo, "mimo --resume " + SessionIDPlaceholder, formatMimo},
}

// DefaultDetect returns the built-in detect expression for name: name is
// the command (argv[0], any directory) or the first non-flag argument of
// node, nodejs, bun or deno, because tmux reports node-based agents as
// "node". Matching only the command, not any argument, keeps `grep claude`
// from looking like claude.
func DefaultDetect(name string) string {
	q := regexp.QuoteMeta(name)
	return `^(?:\S*/)?(?:(?:node|nodejs|bun|deno)(?:\s+-\S+)*\s+(?:\S*/)?)?` + q + `(?:\s|$)`
}

// NewRegistry builds the registry of the four agents for the user whose
// home directory is home. specs override the defaults per agent (keyed by
// name); every problem is reported at once, each naming its agent.
func NewRegistry(home string, specs map[string]Spec, opts ...Option) (*Registry, error) {
	r := &Registry{agents: map[string]*Agent{}, logger: hclog.NewNullLogger(), lsof: "lsof"}
	for _, o := range opts {
		o(r)
	}
	var errs []error
	var unknown []string
	for name := range specs {
		if _, ok := builtinFormat(name); !ok {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	for _, name := range unknown {
		errs = append(errs, fmt.Errorf("%w %q (known: %s)", ErrUnknownAgent, name, strings.Join(r.namesOrder(), ", ")))
	}
	for _, b := range builtin {
		s := specs[b.name]
		a := &Agent{Name: b.name, Launch: b.name, Resume: b.resume, home: home, format: b.format}
		if s.Launch != "" {
			a.Launch = s.Launch
		}
		if s.Resume != "" {
			a.Resume = s.Resume
		}
		detect := DefaultDetect(b.name)
		if s.Detect != "" {
			detect = s.Detect
		}
		re, err := regexp.Compile(detect)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w for agent %s: %w", ErrBadDetect, b.name, err))
			continue
		}
		a.detect = re
		input := DefaultInput(b.name)
		if s.Input != "" {
			input = s.Input
		}
		if input != "" && input != InputOff {
			re, err := regexp.Compile(input)
			if err == nil && re.NumSubexp() > 1 {
				err = fmt.Errorf("%d groups, want at most one", re.NumSubexp())
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%w for agent %s: %w", ErrBadInput, b.name, err))
				continue
			}
			a.input = re
		}
		pp := DefaultPrompt(b.name)
		if s.Prompt != (PromptPatterns{}) {
			pp = s.Prompt
		}
		f, err := CompilePrompt(pp, input)
		if err != nil {
			errs = append(errs, fmt.Errorf("agent %s: %w", b.name, err))
			continue
		}
		a.prompt = f
		r.agents[b.name] = a
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

func builtinFormat(name string) (format, bool) {
	for _, b := range builtin {
		if b.name == name {
			return b.format, true
		}
	}
	return formatNone, false
}

func (r *Registry) namesOrder() []string {
	out := make([]string, 0, len(builtin))
	for _, b := range builtin {
		out = append(out, b.name)
	}
	return out
}

// Get returns the agent called name.
func (r *Registry) Get(name string) (*Agent, bool) {
	a, ok := r.agents[name]
	return a, ok
}

// Names returns the agents' names in a stable order (claude, codex,
// copilot, mimo), the order Detect tries them in.
func (r *Registry) Names() []string {
	return r.namesOrder()
}

var safeID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// ValidSessionID reports whether id is safe to type into a shell: letters,
// digits, '-' and '_' only, at most 128 of them.
func ValidSessionID(id string) bool {
	return safeID.MatchString(id)
}

// ResumeCommand returns the shell command that resumes sessionID. The id is
// typed into a shell in a tmux window, so anything but [A-Za-z0-9_-] is
// refused rather than quoted.
func (a *Agent) ResumeCommand(sessionID string) (string, error) {
	if a.Resume == "" {
		return "", fmt.Errorf("%w for agent %s", ErrNoResume, a.Name)
	}
	if !ValidSessionID(sessionID) {
		return "", fmt.Errorf("%w %q for agent %s", ErrUnsafeID, sessionID, a.Name)
	}
	return strings.ReplaceAll(a.Resume, SessionIDPlaceholder, sessionID), nil
}

// Matches reports whether p looks like this agent, by its name or its
// command line.
func (a *Agent) Matches(p Proc) bool {
	return (p.Name != "" && a.detect.MatchString(p.Name)) ||
		(p.Cmdline != "" && a.detect.MatchString(p.Cmdline))
}

// HasTranscript reports whether the agent writes a transcript file that
// Replies can read; for one that does not, replies come from its database
// (mimo's, read by SessionReplies) once its session is in there, else
// from the pane.
func (a *Agent) HasTranscript() bool {
	return a.format != formatNone && a.format != formatMimo
}

// ChecksInput reports whether the agent has an input line to check (see
// Spec.Input).
func (a *Agent) ChecksInput() bool { return a.input != nil }

// inputScan is how many non-blank lines at the bottom of a screen
// InputLine looks at: an agent draws its input box at the bottom, with a
// footer of a few lines below it; a line further up that looks alike is
// the conversation (codex shows the user's messages after "› ").
const inputScan = 10

// dialogLine matches a line of an agent's dialog: a numbered option (with
// or without the cursor: "❯ 1. Yes", "  2. No", "› 1. Yes, proceed (y)")
// or a confirmation hint.
var dialogLine = regexp.MustCompile(`^\s*(?:[❯›>]\s*)?[0-9]+\.\s|(?i)press enter to confirm|esc to cancel`)

// codexStatus matches codex's status line below its input line (model,
// reasoning effort and directory, separated by " · "). codex draws its
// input line while it still loads, before it reads keys: what is typed
// then shows later, all at once, and codex takes the burst for a paste,
// so that its Enter becomes a new line of the draft instead of sending
// it. The status line is drawn once codex reads keys.
var codexStatus = regexp.MustCompile(`\S\s·\s\S`)

// InputLine finds the agent's input line on screen (a captured pane) and
// returns what it holds, right-trimmed; ok is false when the screen shows
// none (the agent is starting, busy with a dialog, or gone), or when the
// agent has no input-line expression. The lowest matching line among the
// last inputScan non-blank lines wins; codex's counts only with its
// status line below it (codexStatus).
func (a *Agent) InputLine(screen string) (text string, ok bool) {
	if a.input == nil {
		return "", false
	}
	lines := strings.Split(screen, "\n")
	seen := 0
	for i := len(lines) - 1; i >= 0 && seen < inputScan; i-- {
		line := strings.TrimRight(lines[i], " \t\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		seen++
		if dialogLine.MatchString(line) {
			// A dialog's options are drawn below the conversation: what
			// looks like an input line above them is an earlier message,
			// and a key typed now would answer the dialog.
			return "", false
		}
		m := a.input.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if a.format == formatCodex && !slices.ContainsFunc(lines[i+1:], codexStatus.MatchString) {
			return "", false
		}
		if len(m) > 1 {
			return strings.TrimRight(m[1], " "), true
		}
		return "", true
	}
	return "", false
}

// claudePlaceholders are what claude shows in its empty input line.
var claudePlaceholders = []string{"", "Press up to edit queued messages"}

// HoldsDraft reports whether an input line's text (InputLine's) is a draft
// not sent yet, typed by hand or left by a message the agent did not take,
// rather than the agent's empty line: a message typed now would be joined
// to it. Only claude's empty line is known for sure (it shows no
// suggestions); for the others no text counts as a draft.
func (a *Agent) HoldsDraft(line string) bool {
	if a.format != formatClaude {
		return false
	}
	return !slices.Contains(claudePlaceholders, line)
}

// SettingsPlaceholder in a claude launch or resume line is replaced by
// the path of thatch's settings file; a line without it gets
// "--settings FILE" appended.
const SettingsPlaceholder = "{settings}"

// LaunchLine returns the shell command line that starts the agent, or
// resumes sessionID when it is not "", with what x hands it.
//
// For claude, x.ClaudeSettings names a settings file (Claude Code's
// --settings) that thatch passes to every claude it starts: its
// SessionStart hook tells thatch the session id, whatever the user's own
// settings hold. It goes where the line says {settings} (for a line where
// claude is not last: "claude --settings {settings} | tee log"), else it
// is appended, unless the line passes --settings itself.
//
// x.MCP is given to every agent whose CLI takes an MCP server on its
// command line (claude, codex, copilot): its flags go where the line says
// {mcp}, else they are appended.
func (a *Agent) LaunchLine(sessionID string, x Extras) (string, error) {
	line := a.Launch
	if sessionID != "" {
		var err error
		if line, err = a.ResumeCommand(sessionID); err != nil {
			return "", err
		}
	}
	if flags := a.mcpFlags(x.MCP); strings.Contains(line, MCPPlaceholder) {
		line = strings.ReplaceAll(line, MCPPlaceholder, flags)
	} else if flags != "" {
		line += " " + flags
	}
	settings := x.ClaudeSettings
	if a.format != formatClaude || settings == "" {
		return strings.ReplaceAll(line, SettingsPlaceholder, ""), nil
	}
	switch {
	case strings.Contains(line, SettingsPlaceholder):
		line = strings.ReplaceAll(line, SettingsPlaceholder, shellQuote(settings))
	case !strings.Contains(line, "--settings"):
		line += " --settings " + shellQuote(settings)
	}
	return line, nil
}
