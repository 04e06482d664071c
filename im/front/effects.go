package front

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/im/agents"
	"github.com/thatch-run/thatch/im/telegram"
	"github.com/thatch-run/thatch/im/tmux"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/supervisor"
)

// effectTimeout bounds one tmux command or Bot API call an effect makes
// (a send that waits out a 429 has its own, longer bound).
const effectTimeout = 15 * time.Second

// sendTimeout bounds one chat message, 429 waits included.
const sendTimeout = 5 * time.Minute

// handlers are the IM effects the front end carries out; each returns the
// result message its binding waits for (nil for none).
func (f *FrontEnd) handlers() []supervisor.Handler {
	return []supervisor.Handler{
		supervisor.Handle(f.checkWindow),
		supervisor.Handle(f.sendToWindow),
		supervisor.Handle(f.sendChat),
		supervisor.Handle(f.answerPress),
		supervisor.Handle(f.clearButtons),
		supervisor.Handle(f.listDirectory),
		supervisor.Handle(f.createWindow),
		supervisor.Handle(f.listAgentSessions),
		supervisor.Handle(f.launchAgent),
		supervisor.Handle(f.findAgentSession),
		supervisor.Handle(f.renameWindow),
		supervisor.Handle(f.followTranscript),
		supervisor.Handle(f.stopFollowing),
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkWindow reads the window and tells which agent runs in it.
func (f *FrontEnd) checkWindow(ctx context.Context, _ actors.Identity, e *messages.IMCheckWindow) any {
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	w, err := f.tmux.Window(ctx, e.WindowID)
	if errors.Is(err, tmux.ErrNoWindow) {
		return &messages.IMWindowChecked{WindowID: e.WindowID}
	}
	if errors.Is(err, tmux.ErrClosed) || f.runCtx.Err() != nil {
		return nil // shutting down: the check is made again after the restart
	}
	if err != nil {
		// tmux did not answer: report the window gone, so that the user
		// is asked (Recover) rather than the message typed blindly.
		f.log.Warn("cannot read a window", "window", e.WindowID, "error", err)
		return &messages.IMWindowChecked{WindowID: e.WindowID, Err: err.Error()}
	}
	if e.Tag != "" && w.Tag != e.Tag {
		return &messages.IMWindowChecked{WindowID: e.WindowID} // the id now names another window
	}
	agent := f.detect(w)
	f.log.Trace("window checked", "window", e.WindowID, "name", w.Name, "agent", agent)
	res := &messages.IMWindowChecked{WindowID: e.WindowID, Alive: true, Name: w.Name, Agent: agent}
	if t := e.Type; t != nil && w.Name == t.Name && agent == t.Agent {
		res.Typed = t.UpdateID
		res.TypeErr = errText(f.typeText(ctx, e.WindowID, t.UpdateID, t.Text))
	}
	return res
}

// detect names the agent running in a window's pane ("" for none).
func (f *FrontEnd) detect(w tmux.Window) string {
	tree, err := agents.ProcTree(w.PanePID)
	if err != nil {
		return ""
	}
	name, _ := f.agents.Detect(tree)
	return name
}

func (f *FrontEnd) sendToWindow(ctx context.Context, _ actors.Identity, e *messages.IMSendToWindow) any {
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	err := f.typeText(ctx, e.WindowID, e.UpdateID, e.Text)
	return &messages.IMSentToWindow{UpdateID: e.UpdateID, Err: errText(err)}
}

// typeText types a message into a window, literally.
func (f *FrontEnd) typeText(ctx context.Context, window string, update int64, text string) error {
	err := f.tmux.SendText(ctx, window, text)
	f.log.Trace("typed into a window", "window", window, "update", update, "error", err)
	if err == nil && f.opts.Trace != nil {
		f.opts.Trace("typed", update)
	}
	return err
}

// sendChat sends one outbox entry on a goroutine of its own and returns at
// once: a send may wait out 429s for minutes, and the binding's other
// effects (typing a message, answering a press) must not wait behind it.
// The binding has one entry in flight at a time, so order is kept; the
// result comes back as a message.
func (f *FrontEnd) sendChat(_ context.Context, from actors.Identity, e *messages.IMSendChat) any {
	f.sends.Add(1)
	go func() {
		defer f.sends.Done()
		res := f.sendNow(from, e)
		if f.runCtx.Err() == nil {
			f.tree.Send(from, res)
		}
	}()
	return nil
}

// sendNow sends e and says how it went; the binding from is told of each
// part of a long text as it is sent.
func (f *FrontEnd) sendNow(from actors.Identity, e *messages.IMSendChat) *messages.IMChatSent {
	ctx, cancel := context.WithTimeout(f.runCtx, sendTimeout)
	defer cancel()
	m := telegram.Outbound{ChatID: e.ChatID, ThreadID: e.ThreadID, Topic: e.Topic, Text: e.Text, Markdown: e.Markdown,
		FromPart: e.FromPart, OnPart: func(sent int) {
			if f.runCtx.Err() == nil {
				f.tree.Send(from, &messages.IMChatPartSent{Seq: e.Seq, Parts: sent})
			}
		}}
	for _, row := range e.Buttons {
		var r []telegram.Button
		for _, b := range row {
			r = append(r, telegram.Button{Text: b.Text, Data: b.Data})
		}
		m.Buttons = append(m.Buttons, r)
	}
	ids, err := f.bot.Send(ctx, m)
	if err != nil {
		if telegram.Permanent(err) {
			f.log.Error("telegram refused a chat message for good; it is dropped", "chat", e.ChatID, "thread", e.ThreadID, "error", err)
			return &messages.IMChatSent{Seq: e.Seq, Err: err.Error(), Permanent: true}
		}
		f.log.Warn("cannot send a chat message; it stays in the outbox", "chat", e.ChatID, "thread", e.ThreadID, "error", err)
		return &messages.IMChatSent{Seq: e.Seq, Err: err.Error()}
	}
	last := 0
	if len(ids) > 0 {
		last = ids[len(ids)-1]
	}
	return &messages.IMChatSent{Seq: e.Seq, MessageID: last}
}

func (f *FrontEnd) answerPress(ctx context.Context, from actors.Identity, e *messages.IMAnswerPress) any {
	if e.Text != "" {
		f.log.Debug("a button press was not acted on", "thread", from.ID, "answer", e.Text)
	}
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	if err := f.bot.AnswerCallback(ctx, e.CallbackID, e.Text); err != nil {
		f.log.Debug("cannot answer a button press", "error", err)
	}
	return nil
}

func (f *FrontEnd) clearButtons(ctx context.Context, _ actors.Identity, e *messages.IMClearButtons) any {
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	if err := f.bot.EditButtons(ctx, e.ChatID, e.MessageID, nil); err != nil {
		f.log.Debug("cannot remove a prompt's buttons", "error", err)
	}
	return nil
}

// windowEnv is the environment of a window the flow tagged tag: the claude
// hook (thatch hook claude) keys what it records by the window's tag (tmux
// numbers windows anew after a restart, a tag is never reused) into the
// daemon's hook file. It is set on the window, not typed before the launch
// command, so that it reaches the agent from any shell, alias or function.
func (f *FrontEnd) windowEnv(tag string) []string {
	if f.hookFile == "" || tag == "" {
		return nil
	}
	return []string{"THATCH_IM_WINDOW=" + tag, "THATCH_IM_HOOK_FILE=" + f.hookFile}
}

// createWindow makes the flow's window, or finds the one a run before a
// crash made (by its tag).
func (f *FrontEnd) createWindow(ctx context.Context, _ actors.Identity, e *messages.IMCreateWindow) any {
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	if !f.inRoots(e.Dir) {
		return &messages.IMWindowCreated{Tag: e.Tag, Err: "the directory is outside im.roots"}
	}
	w, ok, err := f.tmux.FindTagged(ctx, e.Tag)
	switch {
	case err != nil:
		// Not knowing whether the window exists, making one could make two.
		return &messages.IMWindowCreated{Tag: e.Tag, Err: err.Error()}
	case ok:
		return &messages.IMWindowCreated{Tag: e.Tag, WindowID: w.ID, Name: w.Name}
	}
	if w, err = f.tmux.NewWindowEnv(ctx, e.Name, e.Dir, e.Tag, f.windowEnv(e.Tag), nil); err != nil {
		return &messages.IMWindowCreated{Tag: e.Tag, Err: err.Error()}
	}
	f.rememberDir(e.Dir)
	if got, err := f.tmux.Window(ctx, w.ID); err == nil {
		w = got
	}
	return &messages.IMWindowCreated{Tag: e.Tag, WindowID: w.ID, Name: w.Name}
}

// pickerSessions is how many earlier sessions the picker offers at most.
const pickerSessions = 10

// listAgentSessions lists the agent's sessions in a directory for the
// picker, leaving out those another thread is bound to (its transcript is
// followed for that thread): one session is one thread's.
func (f *FrontEnd) listAgentSessions(_ context.Context, from actors.Identity, e *messages.IMListAgentSessions) any {
	a, ok := f.agents.Get(e.Agent)
	if !ok {
		return &messages.IMAgentSessionsListed{Err: "unknown agent " + e.Agent}
	}
	list, err := a.Sessions(e.Dir, 2*pickerSessions)
	if err != nil {
		f.log.Warn("cannot list the agent's sessions; offering a new one", "agent", e.Agent, "dir", e.Dir, "error", err)
		return &messages.IMAgentSessionsListed{}
	}
	out := &messages.IMAgentSessionsListed{}
	for _, s := range list {
		if len(out.Sessions) == pickerSessions {
			break
		}
		if by := f.follow.followedBy(s.Path); by != "" && by != from.ID {
			f.log.Debug("not offering a session another thread is bound to", "session", s.ID, "thread", by)
			continue
		}
		out.Sessions = append(out.Sessions, messages.IMAgentSession{
			ID: s.ID, When: s.Modified.Local().Format("2006-01-02 15:04"), FirstPrompt: cleanText(s.FirstPrompt, 80)})
	}
	return out
}

// launchAgent types the agent's launch (or resume) command into the
// window's shell, unless the agent already runs there (a repeat after a
// crash must not type it into the agent).
func (f *FrontEnd) launchAgent(ctx context.Context, _ actors.Identity, e *messages.IMLaunchAgent) any {
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	a, ok := f.agents.Get(e.Agent)
	if !ok {
		return &messages.IMAgentLaunched{WindowID: e.WindowID, Err: "unknown agent " + e.Agent}
	}
	w, err := f.tmux.Window(ctx, e.WindowID)
	if err != nil {
		return &messages.IMAgentLaunched{WindowID: e.WindowID, Err: err.Error()}
	}
	if f.detect(w) == e.Agent {
		return &messages.IMAgentLaunched{WindowID: e.WindowID}
	}
	cmd := a.Launch
	if e.SessionID != "" {
		if cmd, err = a.ResumeCommand(e.SessionID); err != nil {
			return &messages.IMAgentLaunched{WindowID: e.WindowID, Err: err.Error()}
		}
	}
	err = f.tmux.SendText(ctx, e.WindowID, cmd)
	return &messages.IMAgentLaunched{WindowID: e.WindowID, Err: errText(err)}
}

// findAgentSession looks for the session id of the agent in the window,
// trying for a while: a starting agent opens its transcript after a
// moment. Not finding one is not an error; the binding asks again later.
func (f *FrontEnd) findAgentSession(ctx context.Context, _ actors.Identity, e *messages.IMFindAgentSession) any {
	out := &messages.IMAgentSessionFound{WindowID: e.WindowID}
	a, ok := f.agents.Get(e.Agent)
	if !ok {
		return out
	}
	limit := f.opts.FindTimeout
	if limit <= 0 {
		limit = 15 * time.Second
	}
	if e.Brief {
		limit = min(limit, 2*time.Second)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if !a.HasTranscript() {
		// No transcript to find: the pane is followed instead, once the
		// agent runs (what it prints at start is not a reply); its text
		// may still name the session.
		f.waitForAgent(ctx, e.WindowID, e.Agent)
		if found, ok := f.findOnce(ctx, a, e); ok {
			out.SessionID, out.How = found.ID, found.How
		}
		out.Transcript = panePrefix + e.WindowID
		return out
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if found, ok := f.findOnce(ctx, a, e); ok {
			out.SessionID, out.How = found.ID, found.How
			out.Transcript = found.Path
			if out.Transcript == "" {
				out.Transcript, _ = a.Transcript(e.Dir, found.ID)
			}
			if !e.Fresh {
				out.Offset = fileEnd(out.Transcript) // replies from now on, not the history
			}
			f.log.Debug("found the agent's session", "window", e.WindowID, "agent", e.Agent, "session", out.SessionID, "how", out.How, "transcript", out.Transcript)
			return out
		}
		select {
		case <-ctx.Done():
			f.log.Debug("found no session of the agent", "window", e.WindowID, "agent", e.Agent, "known", e.Known)
			if e.Known != "" {
				out.SessionID = e.Known
				out.Transcript, _ = a.Transcript(e.Dir, e.Known)
				out.Offset = fileEnd(out.Transcript)
			}
			return out
		case <-tick.C:
		}
	}
}

// fileEnd is path's size: where reading it from now on starts (0 when
// there is no such file yet).
func fileEnd(path string) int64 {
	if path == "" {
		return 0
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// waitForAgent waits until agent runs in the window, or ctx ends, and a
// moment more for it to draw its first screen.
func (f *FrontEnd) waitForAgent(ctx context.Context, window, agent string) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if w, err := f.tmux.Window(ctx, window); err == nil && f.detect(w) == agent {
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (f *FrontEnd) findOnce(ctx context.Context, a *agents.Agent, e *messages.IMFindAgentSession) (agents.Found, bool) {
	w, err := f.tmux.Window(ctx, e.WindowID)
	if err != nil {
		return agents.Found{}, false
	}
	text, _ := f.tmux.Capture(ctx, e.WindowID, 200)
	key := e.Tag
	if key == "" {
		key = e.WindowID
	}
	return f.agents.FindSession(ctx, a, w.PanePID, text, f.hookFile, key)
}

func (f *FrontEnd) renameWindow(ctx context.Context, _ actors.Identity, e *messages.IMRenameWindow) any {
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	if err := f.tmux.Rename(ctx, e.WindowID, e.Name); err != nil {
		return &messages.IMWindowRenamed{Name: e.Name, Err: err.Error()}
	}
	// tmux keeps some characters escaped: the name it answers with is the
	// one later checks see.
	name := e.Name
	if w, err := f.tmux.Window(ctx, e.WindowID); err == nil {
		name = w.Name
	}
	return &messages.IMWindowRenamed{Name: name}
}

func (f *FrontEnd) followTranscript(ctx context.Context, from actors.Identity, e *messages.IMFollowTranscript) any {
	f.follow.Follow(from.ID, e.Path, e.Agent, e.Offset)
	if strings.HasPrefix(e.Path, panePrefix) {
		// Before the binding types anything: the effects after this one wait.
		f.follow.baseline(ctx, e.Path)
	}
	return nil
}

func (f *FrontEnd) stopFollowing(_ context.Context, _ actors.Identity, e *messages.IMStopFollowing) any {
	f.follow.Stop(e.Path)
	return nil
}

// parseLine reads one transcript line of agent's.
func (f *FrontEnd) parseLine(agent string, line []byte) []string {
	a, ok := f.agents.Get(agent)
	if !ok {
		return nil
	}
	var out []string
	for _, r := range a.Replies(line) {
		if r = strings.TrimSpace(cleanText(r, 256<<10)); r != "" {
			out = append(out, r)
		}
	}
	return out
}

// deliverReplies hands replies read from a transcript to their binding.
// A binding that refuses them (quarantined) gets none: the follower
// moves on rather than retrying forever.
func (f *FrontEnd) deliverReplies(ctx context.Context, binding string, m *messages.IMTranscriptRead) error {
	err := f.tree.DeliverContext(ctx, bindingID(binding), m, deliverTimeout)
	if err != nil && refused(err) {
		f.log.Error("a binding refused its agent's replies; they are not relayed", "thread", binding, "path", m.Path, "error", err)
		return nil
	}
	return err
}
