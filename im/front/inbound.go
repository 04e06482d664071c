package front

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/thatch-run/thatch/actors/imbinding"
	"github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/im/tmux"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/supervisor"
)

// Edge limits: what a binding journals stays small and replayable.
const (
	// maxText is the longest message text taken (Telegram's own limit is
	// 4,096 characters; a longer text is cut, and says so).
	maxText = 16 << 10
	// maxName is the longest thread name kept (Telegram allows 128).
	maxName = 256
	// maxID is the longest user id taken (Telegram's are at most 20
	// digits, Feishu's open ids some 40 characters).
	maxID = 256
)

// handler takes the updates of one adapter (see handle).
func (f *FrontEnd) handler(p *chatPort) chat.Handler {
	return func(ctx context.Context, u chat.Update) error { return f.handle(ctx, p, u) }
}

// handle takes one update from an adapter. It returns only after the
// update's binding journaled it (or decided to drop it), so that the
// adapter confirms nothing that a crash could lose; an error makes the
// adapter offer the same update again.
func (f *FrontEnd) handle(ctx context.Context, p *chatPort, u chat.Update) error {
	if f.opts.Trace != nil {
		f.opts.Trace("received", u.ID)
	}
	if err := f.deliver(ctx, p, u, ""); err != nil {
		return err
	}
	p.cursor.note(u.Cursor)
	return nil
}

// deliver routes one update to its binding (route), dropping with a
// notice one the binding refuses; an error (a timeout, a stop) means
// the update must be offered again. forgotten names the machine that
// lost the thread's binding ("" none; see IMUpdate.Forgotten).
func (f *FrontEnd) deliver(ctx context.Context, p *chatPort, u chat.Update, forgotten string) error {
	if err := f.route(ctx, p.a, u, forgotten); err != nil {
		if !refused(err) {
			return err // a timeout, a stop: the adapter offers the update again
		}
		// The thread's binding refuses every message (it is quarantined,
		// or stopped after failing again and again): holding the update
		// would stop every other thread's too. It is dropped, said so.
		f.log.Error("a thread's binding refused an update; it is dropped (see thatch status and thatch repair)",
			"thread", u.Thread, "update", u.ID, "error", err)
		f.notice(ctx, p.a, u, "thatch cannot handle this thread now: its state needs repair (thatch status, thatch repair). Your message was not delivered.")
	}
	return nil
}

// route checks an update at the edge and delivers it to its binding, the
// entity named by the thread's key (the adapter's: the front end makes
// no key of its own).
//
// Users go to the binding as the adapter gives them (text: decimal on
// Telegram, open ids on Feishu), and so does the update's id, which the
// binding takes each of once (the adapter makes it increase along the
// thread). Every chat effect is addressed by the key.
func (f *FrontEnd) route(ctx context.Context, a chat.Adapter, u chat.Update, forgotten string) error {
	if u.Thread == "" {
		return nil // no thread to bind (a channel post, an inline query)
	}
	key := u.Thread
	if chat.SchemeOf(key) != a.Scheme() {
		f.log.Warn("an update names a thread of another platform; dropped", "platform", a.Name(), "thread", key)
		return nil
	}
	if len(u.User) > maxID || !utf8.ValidString(u.User) {
		// A binding journals the user: it must be short, valid text.
		f.log.Warn("an update names a user that is not a valid id; dropped", "platform", a.Name(), "thread", key)
		if u.Press != nil {
			f.answer(ctx, a, key, u.Press.ID)
		}
		return nil
	}
	if u.Ended != nil || u.Reopened {
		// Whoever ended (or reopened) the chat (its owner need not be on
		// the allow-list), it is so; only bindings that exist are told.
		return f.chatEnded(ctx, a, u)
	}
	allowed := f.cfg.IM.Open || a.Allows(u.User)
	f.log.Trace("update", "id", u.ID, "thread", key, "user", u.User, "press", u.Press != nil)
	if !allowed {
		// Nothing from a stranger reaches a binding: not a message, not a
		// press, not a topic they made or renamed (each would make a
		// binding entity, journaled, for anyone who can post).
		f.log.Debug("ignored an update from a user not on the allow-list", "platform", a.Name(), "user", u.User)
		if u.Press != nil {
			f.answer(ctx, a, key, u.Press.ID)
		}
		return nil
	}
	if c := u.Press; c != nil {
		if len(c.Data) > a.Limits().MaxButtonData || !utf8.ValidString(c.Data) {
			f.answer(ctx, a, key, c.ID)
			return nil
		}
		return f.tree.DeliverContext(ctx, bindingID(key), &messages.IMPress{
			UpdateID: u.ID, User: u.User, CallbackID: c.ID, Data: c.Data, MessageID: c.Message,
		}, deliverTimeout)
	}
	switch c, act := command(a, u.Text); {
	case u.Media != "" || act == cmdNone:
	case act == cmdIgnore:
		f.log.Debug("a command for another bot; ignored", "thread", key, "command", c.Name)
		return nil
	case act == cmdRun:
		return f.tree.DeliverContext(ctx, bindingID(key), &messages.IMCommand{UpdateID: u.ID, User: u.User,
			Name: c.Name, Args: cleanText(c.Args, maxName)}, deliverTimeout)
	}
	file := fileOf(u)
	if u.Media != "" && file == nil {
		u.Text = mediaCaption(u.Media, u.Caption) // the binding says the rest was not passed on
	}
	up := &messages.IMUpdate{UpdateID: u.ID, User: u.User,
		Text: cleanText(u.Text, maxText), TopicName: cleanText(u.Name, maxName),
		NameSource: nameSource(u.NameSrc), Media: cleanText(u.Media, maxName), Forgotten: forgotten}
	if file != nil {
		up.File, up.Caption, up.Text = file, cleanText(u.Caption, maxText), ""
	}
	if isStart(up.Text) {
		up.Start, up.Text = true, ""
	}
	if up.Text == "" && up.TopicName == "" && !up.Start && up.Media == "" && up.File == nil {
		return nil
	}
	return f.tree.DeliverContext(ctx, bindingID(key), up, deliverTimeout)
}

// mediaCaption is what is typed for a message that carried media: its
// caption, saying what it was attached to ("" without a caption).
func mediaCaption(media, caption string) string {
	if strings.TrimSpace(caption) == "" || media == "" {
		return ""
	}
	article := "a "
	if strings.ContainsRune("aeiou", rune(media[0])) {
		article = "an "
	}
	return "(sent with " + article + media + " that could not be passed on) " + caption
}

// isStart reports the bot's /start command ("/start", "/start@bot",
// either with a payload after a space).
func isStart(text string) bool {
	cmd, _, _ := strings.Cut(text, " ")
	cmd, _, _ = strings.Cut(cmd, "@")
	return cmd == "/start"
}

// refused reports whether a delivery was refused by the binding itself,
// as opposed to not answered in time.
func refused(err error) bool {
	var rej *supervisor.Rejected
	return errors.As(err, &rej) || errors.Is(err, supervisor.ErrQuarantined)
}

// notice tells a thread something without its binding: the thread's
// notice entity journals it and sends it through its outbox
// (actors/imnotice), and u's press, if any, is answered.
func (f *FrontEnd) notice(ctx context.Context, a chat.Adapter, u chat.Update, text string) {
	f.tell(ctx, u.Thread, &messages.IMNotice{Text: text})
	if u.Press != nil {
		f.answer(ctx, a, u.Thread, u.Press.ID)
	}
}

// tell hands m to thread's notices (actors/imnotice).
func (f *FrontEnd) tell(ctx context.Context, thread string, m any) {
	if err := f.tree.DeliverContext(ctx, noticeID(thread), m, deliverTimeout); err != nil {
		f.log.Warn("cannot tell a thread", "thread", thread, "notice", fmt.Sprintf("%+v", m), "error", err)
	}
}

// answer answers a press that is not acted on, so the user's spinner stops.
func (f *FrontEnd) answer(ctx context.Context, a chat.Adapter, thread, id string) {
	f.answerWith(ctx, a, thread, id, "")
}

// answerWith answers a press with text shown to the user, on a platform
// that waits for presses to be answered (chat.PressAnswerer).
func (f *FrontEnd) answerWith(ctx context.Context, a chat.Adapter, thread, id, text string) {
	pa, ok := a.(chat.PressAnswerer)
	if !ok {
		return
	}
	actx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	if err := pa.AnswerPress(actx, thread, id, f.mask.text(text)); err != nil {
		f.log.Debug("cannot answer a button press", "error", err)
	}
}

func nameSource(s chat.NameSource) string {
	switch s {
	case chat.NameCreated:
		return messages.NameCreated
	case chat.NameEdited:
		return messages.NameEdited
	case chat.NameSeed:
		return messages.NameSeed
	}
	return ""
}

// cleanText makes text safe to journal and to type: valid UTF-8, no
// control characters but tab and newline (tmux.Printable: a ^D or ^C
// typed into an agent would end or stop it, and the rest of the line
// reach what reads the terminal next), at most limit bytes (cut at a
// rune boundary, with a note that it was cut).
func cleanText(s string, limit int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = tmux.Printable(s)
	if len(s) <= limit {
		return s
	}
	const note = "\n[cut by thatch: the message was too long]"
	cut := limit - len(note)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + note
}

// chatEnded tells every binding of a chat that ended (the chat's own, and
// those of its topics: "<key>:<topic>") that it is over, or that it is
// back (reopened). A chat nobody bound gets no binding entity.
func (f *FrontEnd) chatEnded(ctx context.Context, a chat.Adapter, u chat.Update) error {
	keys, err := f.bindingsUnder(u.Thread)
	if err != nil {
		return err
	}
	var m func() any
	if u.Reopened {
		f.log.Info("a thread reopened; its binding is bound again", "platform", a.Name(), "thread", u.Thread, "bindings", len(keys))
		m = func() any { return &messages.IMChatReopened{UpdateID: u.ID, User: u.User} }
	} else {
		f.log.Info("a chat ended; its bindings end", "platform", a.Name(), "thread", u.Thread, "reason", u.Ended.Reason,
			"bindings", len(keys), "windows", f.cfg.IM.OnClose)
		m = func() any {
			return &messages.IMChatEnded{UpdateID: u.ID, User: u.User, Reason: cleanText(u.Ended.Reason, maxName),
				Reopenable: u.Ended.Reopenable}
		}
	}
	for _, key := range keys {
		err := f.tree.DeliverContext(ctx, bindingID(key), m(), deliverTimeout)
		if err != nil {
			return err
		}
	}
	return nil
}

// bindingsUnder lists the bindings known (live or journaled) for thread
// key and for the threads under it ("<key>:...").
func (f *FrontEnd) bindingsUnder(key string) ([]string, error) {
	found := map[string]bool{}
	match := func(id string) {
		if id == key || strings.HasPrefix(id, key+":") {
			found[id] = true
		}
	}
	live, err := f.tree.LiveIDs(imbinding.KindName, deliverTimeout)
	if err != nil {
		return nil, fmt.Errorf("im: list the bindings of an ended chat: %w", err)
	}
	for _, id := range live {
		match(id)
	}
	err = f.jr.EntityIDs(imbinding.KindName, func(id persistence.Identity) error {
		match(id.ID)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("im: list the bindings of an ended chat: %w", err)
	}
	return slices.Sorted(maps.Keys(found)), nil
}
