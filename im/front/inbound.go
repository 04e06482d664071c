package front

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/thatch-run/thatch/actors/imbinding"
	"github.com/thatch-run/thatch/im/telegram"
	"github.com/thatch-run/thatch/im/tmux"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/supervisor"
)

// Edge limits: what a binding journals stays small and replayable.
const (
	// maxText is the longest message text taken (Telegram's own limit is
	// 4,096 characters; a longer text is cut, and says so).
	maxText = 16 << 10
	// maxName is the longest topic name kept (Telegram allows 128).
	maxName = 256
	// maxData is the longest callback data (Telegram allows 64 bytes).
	maxData = 64
)

// handle takes one update from the bot. It returns only after the
// update's binding journaled it (or decided to drop it), so that the bot
// confirms nothing that a crash could lose; an error makes the bot offer
// the same update again.
func (f *FrontEnd) handle(ctx context.Context, in telegram.Inbound) error {
	if f.opts.Trace != nil {
		f.opts.Trace("received", in.UpdateID)
	}
	if err := f.route(ctx, in); err != nil {
		if !refused(err) {
			return err // a timeout, a stop: the bot offers the update again
		}
		// The thread's binding refuses every message (it is quarantined,
		// or stopped after failing again and again): holding the update
		// would stop every other thread's too. It is dropped, said so.
		f.log.Error("a thread's binding refused an update; it is dropped (see thatch status and thatch repair)",
			"thread", imbinding.Key(in.ChatID, in.ThreadID), "update", in.UpdateID, "error", err)
		f.notice(ctx, in, "thatch cannot handle this thread now: its state needs repair (thatch status, thatch repair). Your message was not delivered.")
	}
	f.noteOffset(in.UpdateID + 1)
	return nil
}

// offsetEvery is how often the update offset row is written while updates
// stream in. The row is a hint for the next start (what to ask Telegram
// for); the bindings' own update ids are what keeps an update from being
// handled twice, so a row a second old costs nothing but a few updates
// offered again, and not writing it per update keeps a synced write out
// of every update's path.
const offsetEvery = time.Second

// noteOffset records the next update to ask for, writing the row at most
// every offsetEvery; one skipped is written offsetEvery after the last
// write (a trailing write), so the row never stays behind the last update
// of a burst. Stop writes it too.
func (f *FrontEnd) noteOffset(next int64) {
	f.offMu.Lock()
	defer f.offMu.Unlock()
	f.offNext = next
	if wait := offsetEvery - time.Since(f.offWritten); wait > 0 {
		if f.offTimer == nil && !f.offStopped {
			f.offTimer = time.AfterFunc(wait, func() {
				f.offMu.Lock()
				defer f.offMu.Unlock()
				f.offTimer = nil
				if !f.offStopped {
					f.writeOffsetLocked()
				}
			})
		}
		return
	}
	f.writeOffsetLocked()
}

// stopOffsetLocked writes the offset a last time and stops the trailing
// write.
func (f *FrontEnd) stopOffsetLocked() {
	f.offStopped = true
	if f.offTimer != nil {
		f.offTimer.Stop()
		f.offTimer = nil
	}
	f.writeOffsetLocked()
}

func (f *FrontEnd) writeOffsetLocked() {
	if f.offNext == 0 || f.offNext == f.offSaved {
		return
	}
	if err := f.rows.Put(offsetTable, offsetKey, []byte(strconv.FormatInt(f.offNext, 10))); err != nil {
		f.log.Warn("cannot store the update offset", "error", err)
		return
	}
	f.offWritten, f.offSaved = time.Now(), f.offNext
}

// route checks an update at the edge and delivers it to its binding.
func (f *FrontEnd) route(ctx context.Context, in telegram.Inbound) error {
	if in.ChatID == 0 || in.ThreadID == 0 {
		return nil // no thread to bind (a channel post, an inline query)
	}
	allowed := f.cfg.IM.Open || f.allowed[in.UserID]
	key := imbinding.Key(in.ChatID, in.ThreadID)
	f.log.Trace("update", "id", in.UpdateID, "thread", key, "user", in.UserID, "press", in.Callback != nil)
	if !allowed {
		// Nothing from a stranger reaches a binding: not a message, not a
		// press, not a topic they made or renamed (each would make a
		// binding entity, journaled, for anyone who can post).
		f.log.Debug("ignored an update from a user not on the allow-list", "user", in.UserID)
		if in.Callback != nil {
			f.answer(ctx, in.Callback.ID)
		}
		return nil
	}
	if c := in.Callback; c != nil {
		if len(c.Data) > maxData || !utf8.ValidString(c.Data) {
			f.answer(ctx, c.ID)
			return nil
		}
		return f.tree.DeliverContext(ctx, bindingID(key), &messages.IMPress{
			UpdateID: in.UpdateID, UserID: in.UserID, ChatID: in.ChatID, ThreadID: in.ThreadID,
			MessageID: c.MessageID, CallbackID: c.ID, Data: c.Data,
		}, deliverTimeout)
	}
	if in.Media != "" {
		in.Text = mediaCaption(in.Media, in.Caption) // the binding says the rest was not passed on
	}
	up := &messages.IMUpdate{UpdateID: in.UpdateID, UserID: in.UserID, ChatID: in.ChatID, ThreadID: in.ThreadID,
		Topic: in.Topic, Text: cleanText(in.Text, maxText), TopicName: cleanText(in.TopicName, maxName),
		NameSource: nameSource(in.NameSrc), Media: cleanText(in.Media, maxName)}
	if isStart(up.Text) {
		up.Start, up.Text = true, ""
	}
	if up.Text == "" && up.TopicName == "" && !up.Start && up.Media == "" {
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

// notice tells a thread something without its binding (best effort).
func (f *FrontEnd) notice(ctx context.Context, in telegram.Inbound, text string) {
	nctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	if _, err := f.bot.Send(nctx, telegram.Outbound{ChatID: in.ChatID, ThreadID: in.ThreadID, Topic: in.Topic, Text: text}); err != nil {
		f.log.Debug("cannot send a notice", "error", err)
	}
	if in.Callback != nil {
		f.answer(ctx, in.Callback.ID)
	}
}

// answer answers a press that is not acted on, so the user's spinner stops.
func (f *FrontEnd) answer(ctx context.Context, id string) {
	actx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	if err := f.bot.AnswerCallback(actx, id, ""); err != nil {
		f.log.Debug("cannot answer a button press", "error", err)
	}
}

func nameSource(s telegram.NameSource) string {
	switch s {
	case telegram.NameCreated:
		return messages.NameCreated
	case telegram.NameEdited:
		return messages.NameEdited
	case telegram.NameSeed:
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
