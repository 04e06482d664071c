package front

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/im/agents"
	"github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/im/tmux"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/supervisor"
)

// effectTimeout bounds one tmux command or chat request an effect makes
// (a send that waits out a rate limit has its own, longer bound).
const effectTimeout = 15 * time.Second

// sendTimeout bounds one chat message, every part of it, behind the
// adapter's own bound on each request and each wait for the chat's turn
// (Telegram's im.telegram.send_timeout); it ends a send only if
// something goes on failing briefly for this long.
const sendTimeout = 5 * time.Minute

// handlers are the IM effects the front end carries out; each returns the
// result message its binding waits for (nil for none).
func (f *FrontEnd) handlers() []supervisor.Handler {
	return []supervisor.Handler{
		supervisor.Handle(f.checkWindow),
		supervisor.Handle(f.sendToWindow),
		// A send may wait out a rate limit and its request may hang for up
		// to the adapter's bound (im.telegram.send_timeout): its own
		// lane, so that typing and the flows never wait behind it (the
		// adapter holds no other thread of the chat behind it either).
		supervisor.Handle(f.sendChat, supervisor.Lane(laneChat)),
		supervisor.Handle(f.liveSend, supervisor.Lane(laneChat)),
		supervisor.Handle(f.readUsage),
		supervisor.Handle(f.recallMemory),
		supervisor.Handle(f.rememberMemory),
		supervisor.Handle(f.showMemory),
		supervisor.Handle(f.setMode),
		supervisor.Handle(f.boardRow, supervisor.Lane(laneBoard)),
		supervisor.Handle(f.boardShow, supervisor.Lane(laneBoard)),
		supervisor.Handle(f.boardSend),
		supervisor.Handle(f.boardEdit),
		supervisor.Handle(f.liveEdit, supervisor.Lane(laneChat)),
		// A press is answered at once (its spinner stops), not after the
		// typing in the main lane, which may wait for the agent.
		supervisor.Handle(f.answerPress, supervisor.Lane(laneButtons)),
		supervisor.Handle(f.clearButtons, supervisor.Lane(laneButtons)),
		supervisor.Handle(f.listDirectory),
		supervisor.Handle(f.createWindow),
		supervisor.Handle(f.listAgentSessions),
		supervisor.Handle(f.launchAgent),
		// A search polls for up to FindTimeout: typing must not wait.
		supervisor.Handle(f.findAgentSession, supervisor.Lane(laneFind)),
		supervisor.Handle(f.renameWindow),
		supervisor.Handle(f.followTranscript),
		supervisor.Handle(f.stopFollowing),
		supervisor.Handle(f.closeWindow),
		supervisor.Handle(f.sendKeys),
		supervisor.Handle(f.screenshot, supervisor.Lane(laneChat)),
		supervisor.Handle(f.readHistory),
		supervisor.Handle(f.listBindings),
		supervisor.Handle(f.answerAgentPrompt),
		// A download may take minutes (inbox.go).
		supervisor.Handle(f.saveFile, supervisor.Lane(laneFiles)),
		supervisor.Handle(f.listFreeWindows),
		supervisor.Handle(f.adoptWindow),
		supervisor.Handle(f.watchPane, supervisor.Lane(laneWatch)),
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkWindow reads the window and tells which agent runs in it.
func (f *FrontEnd) checkWindow(parent context.Context, from actors.Identity, e *messages.IMCheckWindow) any {
	ctx, cancel := context.WithTimeout(parent, effectTimeout)
	defer cancel()
	w, err := f.wins.Window(ctx, e.WindowID)
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
		var err error
		res.TypeNotTaken, err = f.typeText(parent, e.WindowID, agent, t.UpdateID, t.Text)
		res.TypeErr = errText(err)
		res.TypeNotReady = errors.Is(err, errNotReady)
	}
	return res
}

// detect names the agent running in a window's pane ("" for none, and
// for a dead pane, whose agent has exited).
func (f *FrontEnd) detect(w tmux.Window) string {
	if w.Dead {
		return ""
	}
	tree, err := agents.ProcTree(w.PanePID)
	if err != nil {
		return ""
	}
	name, _ := f.agents.Detect(tree)
	return name
}

func (f *FrontEnd) sendToWindow(ctx context.Context, from actors.Identity, e *messages.IMSendToWindow) any {
	wctx, cancel := context.WithTimeout(ctx, effectTimeout)
	w, err := f.wins.Window(wctx, e.WindowID)
	cancel()
	if err != nil {
		// Not knowing what runs there, nothing is typed: the binding
		// checks the window again.
		return &messages.IMSentToWindow{UpdateID: e.UpdateID, Err: err.Error()}
	}
	agent := f.detect(w)
	notTaken, err := f.typeText(ctx, e.WindowID, agent, e.UpdateID, e.Text)
	return &messages.IMSentToWindow{UpdateID: e.UpdateID, Err: errText(err), NotTaken: notTaken, NotReady: errors.Is(err, errNotReady)}
}

// The lanes of the binding's effects besides its main one.
const (
	laneChat    = "chat"
	laneFind    = "find"
	laneButtons = "buttons"
	laneWatch   = "watch"
	laneBoard   = "board"
)

// sendChat sends one outbox entry, in the binding's chat lane: a send may
// wait out a rate limit or a slow answer, and the binding's other effects
// (typing a message, answering a press) must not wait behind it. A send
// over the adapter's bound fails (chat.ErrTimeout, chat.ErrRateLimited)
// and is reported as such: the entry stays in the outbox and is sent
// again. The binding has one
// entry in flight at a time, so order is kept; the result comes back
// through the dispatcher, so a quiescence check waits for it.
func (f *FrontEnd) sendChat(_ context.Context, from actors.Identity, e *messages.IMSendChat) any {
	res := f.sendNow(from, e)
	if f.runCtx.Err() != nil {
		return nil // stopping: the entry is sent again after the restart
	}
	return res
}

// sendNow sends e to the thread of the binding from (its key) and says
// how it went; the binding is told of each part of a long text as it is
// sent. The binding's key names the thread, for every platform.
func (f *FrontEnd) sendNow(from actors.Identity, e *messages.IMSendChat) *messages.IMChatSent {
	a, err := f.adapterOf(from.ID)
	if err != nil {
		f.log.Error("a chat message has no chat to go to; it is dropped", "thread", from.ID, "error", err)
		return &messages.IMChatSent{Seq: e.Seq, Err: err.Error(), Permanent: true}
	}
	ctx, cancel := context.WithTimeout(f.runCtx, sendTimeout)
	defer cancel()
	m := chat.Message{Thread: from.ID, Text: f.mask.text(e.Text), Markdown: e.Markdown, Silent: e.Silent,
		FromPart: e.FromPart, OnPart: func(sent int) {
			if f.runCtx.Err() == nil {
				f.tree.Send(from, &messages.IMChatPartSent{Seq: e.Seq, Parts: sent})
			}
		}}
	m.Buttons = f.mask.buttons(e.Buttons)
	ids, err := a.Send(ctx, m)
	if err != nil {
		if errors.Is(err, chat.ErrGone) {
			f.log.Warn("the chat is gone or the bot is not in it; the binding ends", "platform", a.Name(), "thread", from.ID, "error", err)
			return &messages.IMChatSent{Seq: e.Seq, Err: err.Error(), Permanent: true, Gone: true}
		}
		if errors.Is(err, chat.ErrRefused) {
			f.log.Error("the chat refused a message for good; it is dropped", "platform", a.Name(), "thread", from.ID, "error", err)
			return &messages.IMChatSent{Seq: e.Seq, Err: err.Error(), Permanent: true}
		}
		f.log.Warn("cannot send a chat message; it stays in the outbox", "platform", a.Name(), "thread", from.ID, "error", err)
		return &messages.IMChatSent{Seq: e.Seq, Err: err.Error()}
	}
	last := ""
	if len(ids) > 0 {
		last = ids[len(ids)-1]
	}
	return &messages.IMChatSent{Seq: e.Seq, MessageID: last}
}

func (f *FrontEnd) answerPress(ctx context.Context, from actors.Identity, e *messages.IMAnswerPress) any {
	if e.Text != "" {
		f.log.Debug("a button press was not acted on", "thread", from.ID, "answer", e.Text)
	}
	a, err := f.adapterOf(from.ID)
	if err != nil {
		f.log.Debug("cannot answer a button press", "error", err)
		return nil
	}
	f.answerWith(ctx, a, from.ID, e.CallbackID, e.Text)
	return nil
}

func (f *FrontEnd) clearButtons(ctx context.Context, from actors.Identity, e *messages.IMClearButtons) any {
	a, err := f.adapterOf(from.ID)
	if err != nil || e.MessageID == "" {
		f.log.Debug("cannot remove a prompt's buttons", "thread", from.ID, "error", err)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	if err := a.EditButtons(ctx, from.ID, e.MessageID, nil); err != nil {
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
	if w, err = f.tmux.NewWindowEnv(ctx, e.Name, e.Dir, e.Tag, f.windowEnv(e.Tag), placeholder); err != nil {
		// No window left at all: the server stopped (tmux 3.3a can crash
		// while a window is made), and a new one is worth a try.
		ws, lerr := f.tmux.Windows(ctx)
		gone := lerr == nil && len(ws) == 0
		f.log.Warn("cannot make a window", "tag", e.Tag, "dir", e.Dir, "server_gone", gone, "error", err)
		return &messages.IMWindowCreated{Tag: e.Tag, Err: err.Error(), Gone: gone}
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
func (f *FrontEnd) listAgentSessions(ctx context.Context, from actors.Identity, e *messages.IMListAgentSessions) any {
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
	paths := make([]string, len(list))
	for i, s := range list {
		paths[i] = s.Path
	}
	held := f.heldByOthers(ctx, from.ID, paths)
	for _, s := range list {
		if len(out.Sessions) == pickerSessions {
			break
		}
		if by := held[s.Path]; by != "" {
			f.log.Debug("not offering a session another thread is bound to", "session", s.ID, "thread", by)
			continue
		}
		out.Sessions = append(out.Sessions, messages.IMAgentSession{
			ID: s.ID, When: s.Modified.Local().Format("2006-01-02 15:04"), FirstPrompt: cleanText(s.FirstPrompt, 80)})
	}
	return out
}

// placeholder is what a window runs until its agent is launched: it
// reads nothing (a shell would wait for input), and says what comes.
var placeholder = []string{"sh", "-c", "printf 'thatch: the agent starts here once its session is chosen\\n'; exec sleep 2147483647"}

// launchTimeout bounds the wait for a launched agent to run in its window.
const launchTimeout = 30 * time.Second

// launchAgent starts the agent's launch (or resume) command line as the
// window's own program (tmux respawn-pane), through the user's shell
// ($SHELL -ic LINE, so that aliases, functions and "source .venv/...
// && codex" work) with no shell left waiting for input: when the agent
// exits, the pane stays dead and the next check sees it gone. It reports
// success only once the agent runs there; an agent that runs already is
// not launched again (a repeat after a crash).
func (f *FrontEnd) launchAgent(ctx context.Context, _ actors.Identity, e *messages.IMLaunchAgent) any {
	out := &messages.IMAgentLaunched{WindowID: e.WindowID}
	a, ok := f.agents.Get(e.Agent)
	if !ok {
		out.Err = "unknown agent " + e.Agent
		return out
	}
	fail := func(err error) any {
		out.Err = err.Error()
		cctx, cancel := context.WithTimeout(ctx, effectTimeout)
		defer cancel()
		_, werr := f.wins.Window(cctx, e.WindowID)
		out.Gone = errors.Is(werr, tmux.ErrNoWindow)
		f.log.Warn("cannot launch an agent", "window", e.WindowID, "agent", e.Agent, "window_gone", out.Gone, "error", err)
		return out
	}
	cctx, cancel := context.WithTimeout(ctx, effectTimeout)
	w, err := f.wins.Window(cctx, e.WindowID)
	cancel()
	if err != nil {
		return fail(err)
	}
	if f.detect(w) == e.Agent {
		return out
	}
	line, err := a.LaunchLine(e.SessionID, f.launch)
	if err != nil {
		out.Err = err.Error()
		return out
	}
	cctx, cancel = context.WithTimeout(ctx, effectTimeout)
	dir := e.Dir
	if dir == "" {
		dir = w.Dir
	}
	err = f.wins.Respawn(cctx, e.WindowID, dir, f.windowEnv(e.Tag), []string{f.shell(), "-ic", line})
	cancel()
	if err != nil {
		return fail(err)
	}
	f.log.Debug("launched an agent", "window", e.WindowID, "agent", e.Agent, "line", line)
	lctx, cancel := context.WithTimeout(ctx, launchTimeout)
	defer cancel()
	if why := f.waitRunning(lctx, e.WindowID, e.Agent); why != "" {
		out.Err = why
	}
	return out
}

// shell is the user's shell, which runs an agent's launch line.
func (f *FrontEnd) shell() string {
	if sh := os.Getenv("SHELL"); sh != "" && filepath.IsAbs(sh) {
		return sh
	}
	return "/bin/sh"
}

// waitRunning waits until agent runs in the window; it says why not
// when it does not (the pane died: its last lines tell the user why).
func (f *FrontEnd) waitRunning(ctx context.Context, window, agent string) string {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		w, err := f.wins.Window(ctx, window)
		switch {
		case err != nil && ctx.Err() == nil:
			return err.Error()
		case err == nil && w.Dead:
			return agent + " exited at once" + f.paneTail(window)
		case err == nil && f.detect(w) == agent:
			return ""
		}
		select {
		case <-ctx.Done():
			return agent + " did not start in its window" + f.paneTail(window)
		case <-tick.C:
		}
	}
}

// paneTail is the last lines of a window's pane, for an error message.
func (f *FrontEnd) paneTail(window string) string {
	ctx, cancel := context.WithTimeout(f.runCtx, effectTimeout)
	defer cancel()
	text, err := f.wins.Capture(ctx, window, 5)
	text = strings.TrimSpace(text)
	if err != nil || text == "" {
		return ""
	}
	return "; its window shows:\n" + cleanText(text, 1000)
}

// findAgentSession looks for the session id of the agent in the window,
// trying for a while: a starting agent opens its transcript after a
// moment. Not finding one is not an error; the binding asks again later.
func (f *FrontEnd) findAgentSession(ctx context.Context, from actors.Identity, e *messages.IMFindAgentSession) any {
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
	started := time.Now()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if !a.HasTranscript() {
		// No transcript to find: the session's replies are read from the
		// agent's database once the session is in there, else the pane
		// is followed, once the agent runs (what it prints at start is
		// not a reply).
		f.waitForAgent(ctx, e.WindowID, e.Agent)
		if found, ok := f.findOnce(ctx, from.ID, a, e, started); ok {
			out.SessionID, out.How = found.ID, found.How
		} else if e.Known != "" {
			// Resumed: mimo updates its session only at the next prompt.
			out.SessionID = e.Known
		}
		out.Transcript = panePrefix + e.WindowID
		if out.SessionID != "" {
			// Fresh: looked for right after the user's message was typed
			// (mimo makes its session at the first prompt), so the reply
			// to it is new even if finished already. Not bounded by the
			// search's time, which waiting for the agent may have used up:
			// the read has its own (agents.MimoQueryTimeout).
			cursor, ok, err := a.RepliesCursor(context.WithoutCancel(ctx), out.SessionID, e.Fresh)
			if err != nil {
				f.log.Warn("cannot read the agent's database; following its pane", "window", e.WindowID, "agent", e.Agent, "session", out.SessionID, "error", err)
			}
			if ok && err == nil {
				out.Transcript, out.Offset = dbPrefix+out.SessionID, cursor
			}
		}
		f.log.Debug("following the agent's session", "window", e.WindowID, "agent", e.Agent, "session", out.SessionID, "how", out.How, "transcript", out.Transcript)
		return out
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if found, ok := f.findOnce(ctx, from.ID, a, e, started); ok {
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
		if w, err := f.wins.Window(ctx, window); err == nil && f.detect(w) == agent {
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

// hookGrace is how long a search for a just-launched agent's session
// leaves to its hook (claude's fires within a second of the start) before
// it takes a new transcript for the directory as the agent's.
const hookGrace = 3 * time.Second

func (f *FrontEnd) findOnce(ctx context.Context, from string, a *agents.Agent, e *messages.IMFindAgentSession, started time.Time) (agents.Found, bool) {
	w, err := f.wins.Window(ctx, e.WindowID)
	if err != nil {
		return agents.Found{}, false
	}
	text, _ := f.wins.Capture(ctx, e.WindowID, 200)
	key := e.Tag
	if key == "" {
		key = e.WindowID
	}
	q := agents.FindQuery{PanePID: w.PanePID, PaneText: text, HookFile: f.hookFile, WindowKey: key, Dir: e.Dir,
		Taken: func(path string) bool {
			return f.heldByOthers(ctx, from, []string{path})[path] != ""
		}}
	if e.Since > 0 && (e.Brief || time.Since(started) >= hookGrace) {
		// A second early: the file system's clock may round down.
		q.Since = time.UnixMilli(e.Since).Add(-time.Second)
	}
	found, ok := f.agents.FindSession(ctx, a, q)
	if ok && found.How == agents.HowNewest && !f.claimTranscript(ctx, from, found.Path) {
		// Another thread's search took it first: this one looks on.
		return agents.Found{}, false
	}
	return found, ok
}

func (f *FrontEnd) renameWindow(ctx context.Context, _ actors.Identity, e *messages.IMRenameWindow) any {
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	if err := f.wins.Rename(ctx, e.WindowID, e.Name); err != nil {
		return &messages.IMWindowRenamed{Name: e.Name, Err: err.Error()}
	}
	// tmux keeps some characters escaped: the name it answers with is the
	// one later checks see.
	name := e.Name
	if w, err := f.wins.Window(ctx, e.WindowID); err == nil {
		name = w.Name
	}
	return &messages.IMWindowRenamed{Name: name}
}

func (f *FrontEnd) followTranscript(ctx context.Context, from actors.Identity, e *messages.IMFollowTranscript) any {
	if !strings.HasPrefix(e.Path, panePrefix) {
		f.holdTranscript(ctx, from.ID, e.Path) // a window's pane is its own
	}
	if session, ok := strings.CutPrefix(e.Path, dbPrefix); ok {
		a, ok := f.agents.Get(e.Agent)
		if !ok {
			f.log.Warn("cannot follow a session of an agent not configured", "thread", from.ID, "agent", e.Agent, "path", e.Path)
			return nil
		}
		f.follow.followDB(from.ID, e.Path, e.Offset, mimoReader(a, session))
		return nil
	}
	f.follow.Follow(from.ID, e.Path, e.Agent, e.Offset, e.Tag, e.SessionID)
	if strings.HasPrefix(e.Path, panePrefix) {
		// Before the binding types anything: the effects after this one wait.
		f.follow.baseline(ctx, e.Path)
	}
	return nil
}

func (f *FrontEnd) stopFollowing(ctx context.Context, from actors.Identity, e *messages.IMStopFollowing) any {
	f.follow.Stop(e.Path)
	if !strings.HasPrefix(e.Path, panePrefix) {
		f.releaseTranscript(ctx, from.ID, e.Path)
	}
	return nil
}

// parseLine reads what one transcript line of agent's says of its turn:
// its texts and the context window in use always; its tool calls when
// they are shown (im.live = "turn", or im.show_tools), with their
// outcomes and the turn's end when the turn is shown live.
func (f *FrontEnd) parseLine(agent string, line []byte) []messages.IMTurnItem {
	a, ok := f.agents.Get(agent)
	if !ok {
		return nil
	}
	live := f.cfg.IM.Live == config.LiveTurn
	var out []messages.IMTurnItem
	for _, it := range a.TurnItems(line) {
		switch {
		case it.Kind == agents.ItemText:
			if t := strings.TrimSpace(cleanText(it.Text, 256<<10)); t != "" {
				out = append(out, messages.IMTurnItem{Kind: messages.TurnText, Text: t})
			}
		case it.Kind == agents.ItemTool && (live || f.cfg.IM.ShowTools):
			out = append(out, messages.IMTurnItem{Kind: messages.TurnTool, Text: cleanText(it.Text, 1024), ID: it.ID})
		case it.Kind == agents.ItemResult && live:
			out = append(out, messages.IMTurnItem{Kind: messages.TurnResult, ID: it.ID, Outcome: it.Outcome()})
		case it.Kind == agents.ItemEnd && live:
			out = append(out, messages.IMTurnItem{Kind: messages.TurnEnd})
		case it.Kind == agents.ItemUser && live:
			out = append(out, messages.IMTurnItem{Kind: messages.TurnUser})
		case it.Kind == agents.ItemContext && it.Window > 0:
			out = append(out, messages.IMTurnItem{Kind: messages.TurnContext, Share: int(min(it.Context*100/it.Window, 100))})
		}
	}
	return out
}

// deliverReplies hands replies read from a transcript (or a session
// switch) to their binding, and returns its answer: a binding answers a
// read with the offset it journaled (messages.IMTranscriptAt). A binding
// that refuses them (quarantined) gets none: the follower moves on rather
// than retrying forever.
func (f *FrontEnd) deliverReplies(ctx context.Context, binding string, m any) (any, error) {
	var ans any
	var err error
	if _, read := m.(*messages.IMTranscriptRead); read {
		ans, err = f.tree.RequestContext(ctx, bindingID(binding), m, deliverTimeout)
	} else {
		err = f.tree.DeliverContext(ctx, bindingID(binding), m, deliverTimeout)
	}
	if err != nil && refused(err) {
		f.log.Error("a binding refused what its agent's transcript or hook told; it is not relayed", "thread", binding, "error", err)
		return nil, nil
	}
	return ans, err
}

// closeWindow kills a binding's window (its chat ended with im.on_close =
// "kill", /kill, a New Session replacing it), when it still is the window
// the binding made (its tag): tmux
// numbers windows anew after its server restarts, and a window it now
// calls by the same id is not the binding's to kill.
func (f *FrontEnd) closeWindow(ctx context.Context, from actors.Identity, e *messages.IMCloseWindow) any {
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	w, err := f.wins.Window(ctx, e.WindowID)
	switch {
	case errors.Is(err, tmux.ErrNoWindow):
		return nil // gone already
	case err != nil:
		f.log.Warn("cannot close a binding's window", "thread", from.ID, "window", e.WindowID, "error", err)
		return nil
	case e.Tag == "" || w.Tag != e.Tag:
		f.log.Info("a binding's window is not the one it made; kept", "thread", from.ID, "window", e.WindowID)
		return nil
	}
	if err := f.wins.Kill(ctx, e.WindowID); err != nil && !errors.Is(err, tmux.ErrNoWindow) {
		f.log.Warn("cannot close a binding's window", "thread", from.ID, "window", e.WindowID, "error", err)
		return nil
	}
	f.log.Info("closed a binding's window", "thread", from.ID, "window", e.WindowID)
	return nil
}
