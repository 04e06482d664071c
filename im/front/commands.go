package front

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/imbinding"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/im/agents"
	"github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/im/screenshot"
	"github.com/thatch-run/thatch/im/tmux"
	"github.com/thatch-run/thatch/internal/retry"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// The effects of the chat commands (/esc, /screenshot, /history, ...; the
// binding decides them, imbinding/commands.go).

// commandKeys are the tmux keys a key command ("esc", "interrupt",
// "enter") sends to agent, from its config (im.agents.<name>.keys_*).
func (f *FrontEnd) commandKeys(agent, key string) []string {
	keys := map[string]string{"esc": config.DefaultKeysEsc, "interrupt": config.DefaultKeysInterrupt, "enter": config.DefaultKeysEnter}[key]
	for _, a := range f.cfg.IM.Agents.ByName() {
		if a.Name != agent {
			continue
		}
		switch key {
		case "esc":
			keys = a.KeysEsc
		case "interrupt":
			keys = a.KeysInterrupt
		case "enter":
			keys = a.KeysEnter
		}
	}
	return strings.Fields(keys)
}

// What a message that starts with a command is.
const (
	cmdNone   = iota // no command of thatch: a message (/start, or the agent's own /compact, typed to it)
	cmdRun           // one of thatch's commands
	cmdIgnore        // a command for another bot ("/kill@otherbot")
)

// command reads a command at the start of a message's text.
func command(a chat.Adapter, text string) (chat.Command, int) {
	c, mine, ok := chat.ParseCommand(strings.TrimSpace(text), chat.BotName(a))
	switch {
	case !ok:
		return c, cmdNone
	case !mine:
		return c, cmdIgnore
	case c.Name == "start" || !chat.IsCommand(c.Name):
		return c, cmdNone
	}
	return c, cmdRun
}

// sendKeys sends a key command's keys to the window, when it is still
// the binding's (its tag).
func (f *FrontEnd) sendKeys(ctx context.Context, _ actors.Identity, e *messages.IMSendKeys) any {
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	keys := f.commandKeys(e.Agent, e.Key)
	if len(keys) == 0 {
		return &messages.IMKeysSent{Key: e.Key, Err: "no keys for " + e.Key}
	}
	if err := f.ownWindow(ctx, e.WindowID, e.Tag); err != nil {
		return &messages.IMKeysSent{Key: e.Key, Err: err.Error()}
	}
	for i, k := range keys {
		if i > 0 && !retry.Sleep(ctx, keyPause) {
			return nil
		}
		if err := f.wins.SendKeys(ctx, e.WindowID, k); err != nil {
			if f.runCtx.Err() != nil {
				return nil
			}
			return &messages.IMKeysSent{Key: e.Key, Err: err.Error()}
		}
	}
	return &messages.IMKeysSent{Key: e.Key}
}

// errNotOurs says a window id now names a window the binding did not make.
var errNotOurs = errors.New("the window is gone")

// ownWindow checks that the window is there and carries tag.
func (f *FrontEnd) ownWindow(ctx context.Context, id, tag string) error {
	w, err := f.wins.Window(ctx, id)
	switch {
	case errors.Is(err, tmux.ErrNoWindow):
		return errNotOurs
	case err != nil:
		return err
	case tag != "" && w.Tag != tag:
		return errNotOurs
	}
	return nil
}

// screenshot sends the pane as a picture with its buttons; a pane that
// cannot be drawn goes back as text, for the binding to send.
func (f *FrontEnd) screenshot(ctx context.Context, from actors.Identity, e *messages.IMScreenshot) any {
	cctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	if err := f.ownWindow(cctx, e.WindowID, e.Tag); err != nil {
		return &messages.IMScreenshotSent{Err: err.Error()}
	}
	pane, err := f.capture(cctx, e.WindowID, e.Agent, e.Open)
	if err != nil {
		return &messages.IMScreenshotSent{Err: err.Error()}
	}
	pane.Text = f.mask.pane(pane.Text) // drawn from the text as masked
	png, err := f.renderPane(pane)
	if err != nil {
		f.log.Warn("cannot draw a pane; sending its text", "window", e.WindowID, "error", err)
		return &messages.IMScreenshotSent{Err: err.Error(), Text: plainPane(pane.Text)}
	}
	a, err := f.adapterOf(from.ID)
	if err != nil {
		return &messages.IMScreenshotSent{Err: err.Error()}
	}
	sctx, cancel := context.WithTimeout(f.runCtx, sendTimeout)
	defer cancel()
	p := chat.Photo{Thread: from.ID, Name: "window.png", Data: png, Caption: f.mask.text(e.Name + " at " + time.Now().Format("15:04:05"))}
	p.Buttons = f.mask.buttons(e.Buttons)
	if _, err := a.SendPhoto(sctx, p); err != nil {
		if f.runCtx.Err() != nil {
			return nil
		}
		return &messages.IMScreenshotSent{Err: err.Error()}
	}
	return &messages.IMScreenshotSent{}
}

// dialogSettle bounds the wait for a dialog a slash command opened to be
// drawn, and for it to close again; dialogPoll is how often the screen is
// read meanwhile, dialogStill how many reads alike make it drawn (a
// second), dialogCloses how often Escape is pressed at most.
const (
	dialogSettle = 5 * time.Second
	dialogPoll   = 200 * time.Millisecond
	dialogStill  = 5
	dialogCloses = 3
)

// capture captures the window's pane; with open, after typing that slash
// command and waiting until the screen it draws stops changing (a second
// of reads alike, after it changed), and then Escape closes what it
// opened: pressed again until the agent's input line shows.
func (f *FrontEnd) capture(ctx context.Context, window, agent, open string) (tmux.Pane, error) {
	if open == "" {
		return f.wins.CapturePane(ctx, window)
	}
	before, err := f.wins.Capture(ctx, window, 0)
	if err != nil {
		return tmux.Pane{}, err
	}
	if err := f.wins.SendText(ctx, window, open); err != nil {
		return tmux.Pane{}, err
	}
	// Closed even when the capture failed or ctx ended: the agent must
	// not be left in its dialog, where what is typed next would go.
	defer f.closeDialog(context.WithoutCancel(ctx), window, agent, open)
	last, alike, deadline := before, 0, time.Now().Add(dialogSettle)
	for time.Now().Before(deadline) && alike < dialogStill && retry.Sleep(ctx, dialogPoll) {
		screen, err := f.wins.Capture(ctx, window, 0)
		if err != nil {
			return tmux.Pane{}, err
		}
		if screen != before && screen == last {
			alike++
		} else {
			alike = 0
		}
		last = screen
	}
	return f.wins.CapturePane(ctx, window)
}

// closeDialog presses Escape until the agent shows its input line again
// (an agent thatch cannot read the line of: once).
func (f *FrontEnd) closeDialog(ctx context.Context, window, agent, open string) {
	a, _ := f.agents.Get(agent)
	for range dialogCloses {
		kctx, cancel := context.WithTimeout(ctx, effectTimeout)
		err := f.wins.SendKeys(kctx, window, "Escape")
		cancel()
		if err != nil {
			f.log.Warn("cannot close the agent's dialog", "window", window, "command", open, "error", err)
			return
		}
		if a == nil || !a.ChecksInput() {
			return
		}
		if _, ok := f.waitLine(ctx, a, window, dialogSettle, func(_ string, drawn bool) bool { return drawn }); ok {
			return
		}
	}
	f.log.Warn("the agent's dialog did not close", "window", window, "command", open, "escapes", dialogCloses)
}

// plainPane is a capture without its escape sequences, blank lines at the
// bottom cut.
func plainPane(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return strings.TrimRight(b.String(), " \n")
}

// readHistory reads the last exchanges of a transcript as text.
func (f *FrontEnd) readHistory(ctx context.Context, _ actors.Identity, e *messages.IMReadHistory) any {
	a, ok := f.agents.Get(e.Agent)
	if !ok {
		return &messages.IMHistoryRead{Err: "unknown agent " + e.Agent}
	}
	var ex []agents.Exchange
	var err error
	if session, ok := strings.CutPrefix(e.Path, dbPrefix); ok {
		if ex, ok, err = a.SessionHistory(ctx, session, e.N); err == nil && !ok {
			err = fmt.Errorf("session %s is no longer in %s's database", session, e.Agent)
		}
	} else {
		ex, err = a.History(e.Path, e.N)
	}
	if err != nil {
		return &messages.IMHistoryRead{Err: err.Error()}
	}
	var b strings.Builder
	for _, x := range ex {
		if x.Prompt != "" {
			fmt.Fprintf(&b, "▶ %s\n", x.Prompt)
		}
		for _, r := range x.Replies {
			b.WriteString(r)
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	return &messages.IMHistoryRead{Text: strings.TrimSpace(b.String())}
}

// listBindings lists the bindings of the asking thread's platform that the
// user set up or last spoke in.
func (f *FrontEnd) listBindings(_ context.Context, from actors.Identity, e *messages.IMListBindings) any {
	views, _ := frontend.Entities(f.tree, f.jr, imbinding.KindName, "thread", 0, 5*time.Second)
	scheme := chat.SchemeOf(from.ID)
	var b strings.Builder
	n := 0
	for _, raw := range views {
		v, ok := raw.(imbinding.View)
		if !ok || v.User != e.User || chat.SchemeOf(v.Thread) != scheme || v.State == imbinding.PhaseUnbound {
			continue
		}
		n++
		here := ""
		if v.Thread == from.ID {
			here = " (this thread)"
		}
		fmt.Fprintf(&b, "• %s%s: %s in %s, %s", v.DisplayName, here, orNone(v.Agent), orNone(v.Cwd), v.State)
		if v.LastMessage != "" {
			fmt.Fprintf(&b, ", last message %s", v.LastMessage)
		}
		b.WriteString("\n")
	}
	if n == 0 {
		return &messages.IMBindingsListed{Text: "You have no bound threads here."}
	}
	return &messages.IMBindingsListed{Text: fmt.Sprintf("Your threads (%d):\n%s", n, strings.TrimRight(b.String(), "\n"))}
}

func orNone(s string) string {
	if s == "" {
		return "(none yet)"
	}
	return s
}

// commandsBackoff spaces the tries to register the commands.
var commandsBackoff = retry.Backoff{Base: 5 * time.Second, Max: 10 * time.Minute}

// setCommands registers thatch's commands with the platform (and so
// learns the bot's name, which tells a command for this bot from one for
// another), trying again with backoff until it succeeds or ctx ends.
func (f *FrontEnd) setCommands(ctx context.Context, a chat.Adapter) {
	c, ok := a.(chat.Commander)
	if !ok {
		return // the platform has no command menu
	}
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, effectTimeout)
		err := c.SetCommands(cctx, chat.Commands)
		cancel()
		if err == nil || ctx.Err() != nil {
			return
		}
		wait := commandsBackoff.Delay(attempt)
		f.log.Warn("cannot register the bot's commands; trying again", "platform", a.Name(), "error", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// maxShotWidth is the widest picture worth sending: Telegram scales a
// photo down to 1280 pixels, so a wider one only loses sharpness.
const maxShotWidth = 1280

// renderPane draws a pane as a PNG, in the largest font (14 at most, 9 at
// least) that keeps it within maxShotWidth.
func (f *FrontEnd) renderPane(p tmux.Pane) ([]byte, error) { return RenderPane(p) }

// RenderPane is the picture /screenshot sends of a pane captured with
// tmux.Client.CapturePane; it is exported so that the benchmark harness
// (bench) times the very code the command runs.
func RenderPane(p tmux.Pane) ([]byte, error) {
	return screenshot.PNG([]byte(p.Text), shotOptions(p.Cols, p.Rows))
}

// shotOptions are the renderer's options for a pane of cols by rows.
func shotOptions(cols, rows int) screenshot.Options {
	o := screenshot.Options{Cols: cols, Rows: rows, FontSize: 14}
	for o.FontSize > 9 {
		if w, _ := screenshot.CellSize(o); w*cols <= maxShotWidth {
			break
		}
		o.FontSize--
	}
	return o
}

// readUsage says what the agent's session used, from its transcript:
// tokens in, out and from the cache, the share of the model's context
// window in use, and an estimated cost at list prices. What the agent
// does not record is said to be unknown.
func (f *FrontEnd) readUsage(_ context.Context, _ actors.Identity, e *messages.IMReadUsage) any {
	a, ok := f.agents.Get(e.Agent)
	if !ok {
		return &messages.IMUsageRead{Err: "unknown agent " + e.Agent}
	}
	if strings.HasPrefix(e.Path, dbPrefix) || strings.HasPrefix(e.Path, panePrefix) {
		return &messages.IMUsageRead{Text: e.Agent + " records no usage thatch can read: tokens and cost are unknown."}
	}
	u, err := a.Usage(e.Path)
	if err != nil {
		return &messages.IMUsageRead{Err: err.Error()}
	}
	return &messages.IMUsageRead{Text: usageText(e.Agent, u, f.prices()), User: e.User}
}

// prices are /usage's prices: the built-in list prices with im.prices
// over them (checked when the config was loaded).
func (f *FrontEnd) prices() agents.Prices {
	table := agents.DefaultPrices()
	for _, s := range f.cfg.IM.Prices {
		if model, p, err := config.ParsePrice(s); err == nil {
			table[model] = p
		}
	}
	return table
}

// usageText is /usage's answer.
func usageText(agent string, u agents.Usage, table agents.Prices) string {
	n := func(v int64) string {
		if v < 0 {
			return "unknown"
		}
		return thousands(v)
	}
	var b strings.Builder
	model := u.Model
	if model == "" {
		model = "model unknown"
	}
	fmt.Fprintf(&b, "%s's session (%s), from its transcript:\n", agent, model)
	fmt.Fprintf(&b, "tokens in %s · out %s · from cache %s", n(u.Input), n(u.Output), n(u.CacheRead))
	if u.CacheWrite > 0 {
		fmt.Fprintf(&b, " (written to it %s)", n(u.CacheWrite))
	}
	b.WriteString("\n")
	switch {
	case u.Context < 0:
		b.WriteString("context in use: unknown\n")
	case u.Window > 0:
		fmt.Fprintf(&b, "context in use: %s of %s (%d%%)\n", n(u.Context), n(u.Window), u.Context*100/u.Window)
	default:
		fmt.Fprintf(&b, "context in use: %s (window unknown)\n", n(u.Context))
	}
	if cost, ok := u.Cost(table); ok {
		fmt.Fprintf(&b, "estimated cost: $%.2f (at list prices or im.prices: an estimate, not a bill)", cost)
	} else {
		b.WriteString("estimated cost: unknown (no price for this model)")
	}
	return b.String()
}

// thousands writes n with a comma between each group of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// claudeFooter finds claude's permission mode in its footer ("⏸ plan
// mode on", "⏵⏵ accept edits on"; claude 2.1.328).
var claudeFooter = regexp.MustCompile(`(manual mode|accept edits|plan mode|auto mode) on\b`)

// claudeModeOf is the mode claude's screen shows, as /mode names it ("":
// none shown).
func claudeModeOf(screen string) string {
	found := claudeFooter.FindAllStringSubmatch(screen, -1)
	if len(found) == 0 {
		return ""
	}
	switch found[len(found)-1][1] {
	case "manual mode":
		return "manual"
	case "accept edits":
		return "accept-edits"
	case "plan mode":
		return "plan"
	}
	return "auto"
}

// modeSettle bounds the wait for claude's footer to show the mode a
// Shift+Tab moved to.
const modeSettle = 3 * time.Second

// setMode switches the agent's permission mode: claude's by Shift+Tab
// (tmux's BTab) until its footer shows the one asked for (once round its
// modes at most); for another agent its slash command (codex's
// /approvals) is typed, and the dialog it opens comes to the chat as a
// prompt with buttons.
func (f *FrontEnd) setMode(ctx context.Context, _ actors.Identity, e *messages.IMSetMode) any {
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	if err := f.ownWindow(ctx, e.WindowID, e.Tag); err != nil {
		return &messages.IMModeSet{Err: err.Error()}
	}
	if e.Command != "" {
		if err := f.wins.SendText(ctx, e.WindowID, e.Command); err != nil {
			return &messages.IMModeSet{Err: err.Error()}
		}
		return &messages.IMModeSet{}
	}
	screen, _ := f.wins.Capture(ctx, e.WindowID, paneLines)
	shown := claudeModeOf(screen)
	for range len(messages.ClaudeModes) {
		if shown == e.Mode {
			return &messages.IMModeSet{Mode: shown}
		}
		if err := f.wins.SendKeys(ctx, e.WindowID, "BTab"); err != nil {
			return &messages.IMModeSet{Err: err.Error()}
		}
		was := shown
		deadline := time.Now().Add(modeSettle)
		for shown == was && time.Now().Before(deadline) && retry.Sleep(ctx, 100*time.Millisecond) {
			screen, _ = f.wins.Capture(ctx, e.WindowID, paneLines)
			shown = claudeModeOf(screen)
		}
	}
	if shown == e.Mode {
		return &messages.IMModeSet{Mode: shown}
	}
	if shown == "" {
		return &messages.IMModeSet{Err: "claude's screen shows no mode (is it at its input line?)"}
	}
	return &messages.IMModeSet{Mode: shown, Err: "claude did not reach " + e.Mode + " mode; it shows " + shown + " mode"}
}
