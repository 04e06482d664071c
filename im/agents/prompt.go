package agents

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/thatch-run/thatch/config"
)

// ErrBadPrompt is returned by CompilePrompt and NewRegistry when an
// agent's prompt patterns do not compile or lack what FindPrompt needs.
var ErrBadPrompt = errors.New("agents: bad prompt pattern")

// PromptOff is the PromptPatterns.Option value that turns prompt
// detection off for an agent: the config's value.
const PromptOff = config.PromptOff

// PromptPatterns say how an agent draws an interactive prompt: a question
// and numbered options, one selected, that wait for a key (claude's
// permission dialog, its numbered questions and plan approval; codex's
// command approval). The fields mirror the config keys im.agents.<name>.
// prompt_option, prompt_question, prompt_top, prompt_ignore and
// prompt_keys, which document them.
type PromptPatterns struct {
	// Option matches one option line. Named groups: n (the number),
	// label (the option as shown, number included), cursor (non-empty on
	// the selected option) and optionally key (a key the option names).
	// PromptOff (or "") turns detection off.
	Option string
	// Question matches the question line, searched upwards from the first
	// option; its one group, or the whole match, is the question.
	Question string
	// Top matches the line that opens the prompt; "" means the question
	// line does. The lines between it and the options are the context.
	Top string
	// Ignore matches context lines to leave out (tips, rules); "": none.
	Ignore string
	// Keys is the template of the keys that choose an option: tmux key
	// names separated by spaces; {n} is the option's number, {key} the key
	// it names.
	Keys string
}

// DefaultPrompt returns an agent's built-in prompt patterns: the config's
// defaults (written once there), checked against the real screens in
// testdata/prompts. copilot and mimo have none: their Option is PromptOff.
func DefaultPrompt(name string) PromptPatterns {
	switch name {
	case Claude:
		return PromptPatterns{
			Option: config.DefaultClaudePromptOption, Question: config.DefaultClaudePromptQuestion,
			Top: config.DefaultClaudePromptTop, Ignore: config.DefaultClaudePromptIgnore, Keys: config.DefaultClaudePromptKeys,
		}
	case Codex:
		return PromptPatterns{
			Option: config.DefaultCodexPromptOption, Question: config.DefaultCodexPromptQuestion,
			Keys: config.DefaultCodexPromptKeys,
		}
	}
	return PromptPatterns{Option: PromptOff}
}

// Prompt is an interactive prompt found on an agent's screen.
type Prompt struct {
	// Question is the question line, trimmed ("Do you want to proceed?").
	Question string
	// Context is what the prompt shows besides its question and options,
	// top to bottom, trimmed, blank and ignored lines left out, at most
	// maxContext lines: the tool and the command ("Bash command", "npm
	// test"), codex's reason and command.
	Context []string
	// Options are the options in the order shown (numbered from 1).
	Options []PromptOption
	// Selected is the index in Options of the option the cursor marks.
	Selected int
	// Fingerprint identifies the prompt by its question, context and
	// option labels, not by which option is selected: it is unchanged
	// while the same prompt stays open and the selection moves, and
	// differs for another prompt (another command). A prompt redrawn at
	// another width may wrap differently and get another fingerprint.
	Fingerprint string
}

// PromptOption is one option of a Prompt.
type PromptOption struct {
	// Number is the number shown before the option.
	Number int
	// Label is the option as shown, number included, without the cursor:
	// "2. Yes, and don’t ask again for: npm test *".
	Label string
	// Key is the key the option names ("y" in codex's "(y)"), or "".
	Key string
	// Detail holds the lines drawn under the option (claude's option
	// descriptions), trimmed and joined by newlines; "" when there are
	// none. The rest of a wrapped label is part of Label instead when the
	// pattern names a key and the wrapped lines end with it; otherwise it
	// is Detail too.
	Detail string
	// Keys are the tmux key names that choose the option, from the
	// agent's Keys template. Send them one send-keys call each, with a
	// pause between them: claude 2.1.328 reads a digit and Enter that
	// arrive together as no choice. Nil when the template names {key} and
	// the option names none.
	Keys []string
}

// Limits of what FindPrompt reads.
const (
	// maxTrailing is how many non-blank lines may follow a prompt's last
	// option (its hints: "Esc to cancel · Tab to amend"); more, and the
	// options are part of the conversation, with the input box below.
	maxTrailing = 3
	// maxQuestionAbove is how many non-blank lines above the first option
	// the question may be (codex draws its reason and command between).
	maxQuestionAbove = 15
	// maxTopAbove is how many lines above the question the line that opens
	// the prompt may be.
	maxTopAbove = 60
	// maxContext is how many context lines a Prompt keeps.
	maxContext = 20
)

// PromptFinder finds an agent's prompt on its screen with compiled
// patterns. It is immutable and safe for concurrent use.
type PromptFinder struct {
	option, question, top, ignore, input *regexp.Regexp
	keys                                 []string
	gN, gLabel, gCursor, gKey            int
}

// CompilePrompt compiles p. input is the agent's input-line expression
// (Spec.Input; "" or InputOff for none): an options block with the input
// line drawn below it is the conversation, not a prompt. It returns nil
// and no error when p.Option is "" or PromptOff.
func CompilePrompt(p PromptPatterns, input string) (*PromptFinder, error) {
	if p.Option == "" || p.Option == PromptOff {
		return nil, nil
	}
	var errs []error
	bad := func(key string, err error) {
		errs = append(errs, fmt.Errorf("%w: prompt_%s: %w", ErrBadPrompt, key, err))
	}
	f := &PromptFinder{}
	var err error
	if err = config.CheckPromptOption(p.Option); err != nil {
		bad("option", err)
	} else {
		f.option = regexp.MustCompile(p.Option)
		f.gN, f.gLabel, f.gCursor, f.gKey = f.option.SubexpIndex("n"), f.option.SubexpIndex("label"), f.option.SubexpIndex("cursor"), f.option.SubexpIndex("key")
	}
	if f.question, err = regexp.Compile(p.Question); err == nil && (p.Question == "" || f.question.NumSubexp() > 1) {
		err = errors.New("want a regexp with at most one group")
	}
	if err != nil {
		bad("question", err)
	}
	if p.Top != "" {
		if f.top, err = regexp.Compile(p.Top); err != nil {
			bad("top", err)
		}
	}
	if p.Ignore != "" {
		if f.ignore, err = regexp.Compile(p.Ignore); err != nil {
			bad("ignore", err)
		}
	}
	if err = config.CheckPromptKeys(p.Keys); err != nil {
		bad("keys", err)
	}
	f.keys = strings.Fields(p.Keys)
	if input != "" && input != InputOff {
		if f.input, err = regexp.Compile(input); err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", ErrBadInput, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return f, nil
}

// FindPrompt finds the prompt of agent on pane (tmux capture-pane text,
// with or without -e) with pat; the zero PromptPatterns means the agent's
// defaults (DefaultPrompt), any other value is used as it is. The
// agent's default input line (DefaultInput) tells the conversation from a
// prompt. Patterns that do not compile find nothing. A caller that looks
// often should compile once (CompilePrompt, or the registry's
// Agent.FindPrompt, which uses the configured patterns and input line).
func FindPrompt(agent, pane string, pat PromptPatterns) (Prompt, bool) {
	if pat == (PromptPatterns{}) {
		pat = DefaultPrompt(agent)
	}
	f, err := CompilePrompt(pat, DefaultInput(agent))
	if err != nil || f == nil {
		return Prompt{}, false
	}
	return f.Find(pane)
}

// FindPrompt finds the agent's prompt on screen with its configured
// patterns; ok is false when none is open or detection is off.
func (a *Agent) FindPrompt(screen string) (Prompt, bool) {
	if a.prompt == nil {
		return Prompt{}, false
	}
	return a.prompt.Find(screen)
}

// optionLine is a line that matched the option pattern.
type optionLine struct {
	col      int // runes before the number
	labelCol int // runes before the label's text after the number
	opt      PromptOption
	selected bool
}

// Find returns the prompt drawn at the bottom of screen. A prompt is a run
// of option lines numbered 1, 2, ... (blank lines, rules and lines
// indented under an option's label may come between), all numbers in one
// column, exactly one marked by the cursor, at least two of them; at most
// maxTrailing non-blank lines below, none of them the agent's input line;
// and a question line at most maxQuestionAbove non-blank lines above.
// Lines under an option are its Detail, unless, joined to it with spaces,
// they end with the key it names: then they are the rest of a label that
// wrapped (codex's long "don't ask again" option at 80 columns).
func (f *PromptFinder) Find(screen string) (Prompt, bool) {
	if f == nil {
		return Prompt{}, false
	}
	lines := strings.Split(stripANSI(screen), "\n")
	for i, l := range lines {
		lines[i] = unbox(strings.TrimRight(l, " \t\r"))
	}
	last, lastOpt, ok := f.lastOption(lines)
	if !ok {
		return Prompt{}, false
	}
	first, byLine, ok := f.optionsAbove(lines, last, lastOpt)
	if !ok {
		return Prompt{}, false
	}
	p, ok := f.readOptions(lines, first, last, lastOpt, byLine)
	if !ok || !f.readQuestion(lines, first, &p) {
		return Prompt{}, false
	}
	p.Fingerprint = fingerprint(p)
	return p, true
}

// lastOption finds the prompt's last option: the bottom option line of
// the screen with at most maxTrailing hint lines below it, none of them
// the agent's input line.
func (f *PromptFinder) lastOption(lines []string) (int, optionLine, bool) {
	trailing := 0
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) == "" {
			continue
		}
		if f.input != nil && f.input.MatchString(lines[i]) {
			return -1, optionLine{}, false
		}
		if o, ok := f.parseOption(lines[i]); ok {
			return i, o, true
		}
		if trailing++; trailing > maxTrailing {
			return -1, optionLine{}, false
		}
	}
	return -1, optionLine{}, false
}

// optionsAbove walks upwards from the last option to option 1: every line
// between options is blank, a rule, or indented at least as deep as the
// numbers (a description, a wrapped label). It returns option 1's line and the
// options by line.
func (f *PromptFinder) optionsAbove(lines []string, last int, lastOpt optionLine) (int, map[int]optionLine, bool) {
	byLine := map[int]optionLine{last: lastOpt}
	first, lowest := last, lastOpt
	for i := last - 1; i >= 0 && lowest.opt.Number > 1; i-- {
		l := lines[i]
		if strings.TrimSpace(l) == "" || isRule(l) {
			continue
		}
		if o, ok := f.parseOption(l); ok {
			// claude 2.0 draws the option after a wrapped one a column to
			// the left.
			if o.opt.Number != lowest.opt.Number-1 || o.col < lowest.col-1 || o.col > lowest.col+1 {
				return 0, nil, false
			}
			byLine[i] = o
			first, lowest = i, o
			continue
		}
		// claude 1.0 and 2.0 wrap a long option at the numbers' column.
		if (f.input != nil && f.input.MatchString(l)) || leadingSpaces(l) < min(lowest.col, lastOpt.col) {
			return 0, nil, false
		}
	}
	if lowest.opt.Number != 1 || len(byLine) < 2 {
		return 0, nil, false
	}
	return first, byLine, true
}

// readOptions reads the options downwards, each with the lines under it
// (under the last one, only lines indented to its label: the hints below
// are not); exactly one must be selected.
func (f *PromptFinder) readOptions(lines []string, first, last int, lastOpt optionLine, byLine map[int]optionLine) (Prompt, bool) {
	p := Prompt{Selected: -1}
	var detail []string
	var optText string // the line of the option being read
	flush := func() {
		if len(p.Options) == 0 {
			return
		}
		o := &p.Options[len(p.Options)-1]
		o.Detail = strings.Join(detail, "\n")
		// A label that wrapped: its lines, joined, end with the key the
		// option names (codex's "... `npm test --` / '--coverage'` (p)").
		if f.gKey >= 0 && o.Key == "" && len(detail) > 0 {
			if w, ok := f.parseOption(optText + " " + strings.Join(detail, " ")); ok && w.opt.Key != "" {
				o.Label, o.Key, o.Detail = w.opt.Label, w.opt.Key, ""
				o.Keys = f.keysFor(*o)
			}
		}
		detail = nil
	}
	for i := first; i < len(lines); i++ {
		l := lines[i]
		if o, ok := byLine[i]; ok {
			flush()
			optText = l
			o.opt.Keys = f.keysFor(o.opt)
			if o.selected {
				if p.Selected >= 0 {
					return Prompt{}, false
				}
				p.Selected = len(p.Options)
			}
			p.Options = append(p.Options, o.opt)
			continue
		}
		if strings.TrimSpace(l) == "" || isRule(l) {
			continue
		}
		if i > last && leadingSpaces(l) < lastOpt.labelCol {
			break
		}
		detail = append(detail, strings.TrimSpace(l))
	}
	flush()
	return p, p.Selected >= 0
}

// readQuestion finds the question above the options, then the line that
// opens the prompt, and keeps the lines between as the context.
func (f *PromptFinder) readQuestion(lines []string, first int, p *Prompt) bool {
	q, seen := -1, 0
	for i := first - 1; i >= 0 && seen < maxQuestionAbove; i-- {
		if strings.TrimSpace(lines[i]) == "" {
			continue
		}
		seen++
		if m := f.question.FindStringSubmatch(lines[i]); m != nil {
			q = i
			p.Question = strings.TrimSpace(m[len(m)-1])
			break
		}
	}
	if q < 0 || p.Question == "" {
		return false
	}
	top := q
	if f.top != nil {
		for i := q - 1; i >= 0 && i >= q-maxTopAbove; i-- {
			if f.top.MatchString(lines[i]) {
				top = i
				break
			}
		}
	}
	for i := top; i < first && len(p.Context) < maxContext; i++ {
		l := strings.TrimSpace(lines[i])
		if i == q || l == "" || isRule(l) || (f.ignore != nil && f.ignore.MatchString(lines[i])) {
			continue
		}
		p.Context = append(p.Context, l)
	}
	return true
}

// parseOption matches one line against the option pattern.
func (f *PromptFinder) parseOption(line string) (optionLine, bool) {
	m := f.option.FindStringSubmatchIndex(line)
	if m == nil || m[2*f.gN] < 0 || m[2*f.gLabel] < 0 {
		return optionLine{}, false
	}
	n, err := strconv.Atoi(line[m[2*f.gN]:m[2*f.gN+1]])
	if err != nil || n < 1 {
		return optionLine{}, false
	}
	label := strings.TrimSpace(line[m[2*f.gLabel]:m[2*f.gLabel+1]])
	if label == "" {
		return optionLine{}, false
	}
	o := optionLine{
		col: utf8.RuneCountInString(line[:m[2*f.gN]]),
		opt: PromptOption{Number: n, Label: label},
	}
	o.labelCol = o.col + len(strconv.Itoa(n)) + 2
	o.selected = m[2*f.gCursor] >= 0 && m[2*f.gCursor+1] > m[2*f.gCursor]
	if f.gKey >= 0 && m[2*f.gKey] >= 0 {
		o.opt.Key = line[m[2*f.gKey]:m[2*f.gKey+1]]
	}
	return o, true
}

// keyNames turns the keys that options name into tmux key names.
var keyNames = map[string]string{"esc": "Escape", "enter": "Enter", "tab": "Tab", "space": "Space"}

// keysFor fills the Keys template for o.
func (f *PromptFinder) keysFor(o PromptOption) []string {
	out := make([]string, 0, len(f.keys))
	for _, k := range f.keys {
		if strings.Contains(k, "{key}") {
			if o.Key == "" {
				return nil
			}
			name := o.Key
			if n, ok := keyNames[strings.ToLower(name)]; ok {
				name = n
			}
			k = strings.ReplaceAll(k, "{key}", name)
		}
		out = append(out, strings.ReplaceAll(k, "{n}", strconv.Itoa(o.Number)))
	}
	return out
}

// fingerprint hashes what identifies a prompt: its question, context and
// option labels, each on a line of its own.
func fingerprint(p Prompt) string {
	h := sha256.New()
	write := func(s string) { h.Write([]byte(s)); h.Write([]byte{'\n'}) }
	write(p.Question)
	for _, c := range p.Context {
		write("c " + c)
	}
	for _, o := range p.Options {
		write("o " + o.Label)
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// isRule reports whether l is a horizontal rule: box-drawing lines only.
func isRule(l string) bool {
	n := 0
	for _, r := range l {
		switch {
		case r == ' ':
		case r >= 0x2500 && r <= 0x257F, r == '▔', r == '▁':
			n++
		default:
			return false
		}
	}
	return n >= 3
}

// leadingSpaces counts the blanks a line starts with.
func leadingSpaces(l string) int {
	return utf8.RuneCountInString(l) - utf8.RuneCountInString(strings.TrimLeft(l, " \u00a0"))
}

// stripANSI removes terminal escape sequences (what capture-pane -e adds):
// CSI (ESC [ ... final byte), OSC (ESC ] ... BEL or ESC \) and two-byte
// escapes.
func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != 0x1b {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(s) {
			break
		}
		switch s[i+1] {
		case '[':
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
		case ']':
			j := i + 2
			for j < len(s) && s[j] != 0x07 && !(s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\') {
				j++
			}
			if j < len(s) && s[j] == 0x1b {
				j++
			}
			i = j
		default:
			i++
		}
	}
	return b.String()
}

// unbox takes a line of a dialog drawn inside a box (claude up to 1.0:
// "╭───╮", "│ Do you want to proceed? │", "╰───╯") out of it: a side's
// line becomes what is between the sides, the top a rule (where claude's
// dialogs open under one since), and the bottom a blank line. Any other
// line is left as it is.
func unbox(l string) string {
	t := strings.TrimLeft(l, " ")
	switch {
	case strings.HasPrefix(t, "│") && strings.HasSuffix(t, "│") && len(t) >= 2*len("│"):
		return strings.TrimRight(t[len("│"):len(t)-len("│")], " ")
	case boxEdge(t, "╭", "╮"):
		return strings.Repeat("─", utf8.RuneCountInString(t))
	case boxEdge(t, "╰", "╯"):
		return ""
	}
	return l
}

// boxEdge reports whether t is a box's plain top or bottom: the corners
// with only "─" between.
func boxEdge(t, left, right string) bool {
	inner, ok := strings.CutPrefix(t, left)
	if !ok {
		return false
	}
	inner, ok = strings.CutSuffix(inner, right)
	return ok && inner != "" && strings.Trim(inner, "─") == ""
}
