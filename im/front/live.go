package front

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/messages"
)

// The turn shown live (actors/liveturn, imbinding's live.go): the binding
// decides what its live message shows and when; these handlers send it,
// and edit it, silently, in the binding's chat lane (so that it keeps its
// place among the binding's messages: the final answer goes after it).
// A platform that cannot edit a message (no chat.Editor) answers for
// good, and the binding tells the turn as messages instead.

// Edits of one chat are spaced by im.live_every, whatever thread they are
// of: a platform counts a chat's edits against its rate (Telegram: about
// 20 messages a minute in a group), and a forum group with many busy
// topics must not be answered 429, which holds up every message of the
// chat. An edit waits its chat's turn on its binding's chat lane (the
// binding coalesces what waits: one edit in flight, the newest state).
type editGates struct {
	mu    sync.Mutex
	chats map[string]*editGate
}

type editGate struct {
	mu   sync.Mutex // held while an edit waits for its turn
	next time.Time
}

// editWait bounds how long an edit waits for its chat's turn.
const editWait = time.Minute

// wait waits until the chat of thread may be edited again, and takes the
// turn; false when ctx ended first.
func (g *editGates) wait(ctx context.Context, thread string, every time.Duration) bool {
	key := chatKeyOf(thread)
	g.mu.Lock()
	if g.chats == nil {
		g.chats = map[string]*editGate{}
	}
	c := g.chats[key]
	if c == nil {
		c = &editGate{}
		g.chats[key] = c
	}
	g.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := time.Until(c.next); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	c.next = time.Now().Add(every)
	return true
}

// chatKeyOf is the chat of a thread key: "tg:<chat>" of "tg:<chat>:<topic>".
func chatKeyOf(thread string) string {
	parts := strings.SplitN(thread, ":", 3)
	if len(parts) < 2 {
		return thread
	}
	return parts[0] + ":" + parts[1]
}

// errNoEdit is a live edit on a platform that cannot edit messages.
var errNoEdit = errors.New("the chat cannot edit messages")

// liveSend sends a turn's live message.
func (f *FrontEnd) liveSend(_ context.Context, from actors.Identity, e *messages.IMLiveSend) any {
	a, err := f.adapterOf(from.ID)
	if err != nil {
		return &messages.IMLiveSent{Rev: e.Rev, Turn: e.Turn, Err: err.Error(), Permanent: true}
	}
	if _, ok := a.(chat.Editor); !ok {
		return &messages.IMLiveSent{Rev: e.Rev, Turn: e.Turn, Err: errNoEdit.Error(), Permanent: true}
	}
	ctx, cancel := context.WithTimeout(f.runCtx, sendTimeout)
	defer cancel()
	ids, err := a.Send(ctx, chat.Message{Thread: from.ID, Text: f.mask.text(e.Text), Silent: true, Editable: true})
	if f.runCtx.Err() != nil {
		return nil
	}
	if err != nil || len(ids) == 0 {
		out := f.liveFailed(from, e.Rev, err)
		out.Turn = e.Turn
		return out
	}
	return &messages.IMLiveSent{Rev: e.Rev, Turn: e.Turn, MessageID: ids[len(ids)-1]}
}

// liveEdit edits a turn's live message.
func (f *FrontEnd) liveEdit(_ context.Context, from actors.Identity, e *messages.IMLiveEdit) any {
	a, err := f.adapterOf(from.ID)
	if err != nil {
		return &messages.IMLiveSent{Rev: e.Rev, Turn: e.Turn, MessageID: e.MessageID, Err: err.Error(), Permanent: true}
	}
	ed, ok := a.(chat.Editor)
	if !ok {
		return &messages.IMLiveSent{Rev: e.Rev, Turn: e.Turn, MessageID: e.MessageID, Err: errNoEdit.Error(), Permanent: true}
	}
	wctx, wcancel := context.WithTimeout(f.runCtx, editWait)
	turn := f.edits.wait(wctx, from.ID, f.cfg.IM.LiveEvery)
	wcancel()
	if !turn {
		if f.runCtx.Err() != nil {
			return nil
		}
		return &messages.IMLiveSent{Rev: e.Rev, Turn: e.Turn, MessageID: e.MessageID, Err: "the chat's edits are backed up; trying again"}
	}
	ctx, cancel := context.WithTimeout(f.runCtx, sendTimeout)
	defer cancel()
	err = ed.EditText(ctx, from.ID, e.MessageID, f.mask.text(e.Text))
	if f.runCtx.Err() != nil {
		return nil
	}
	if err != nil {
		out := f.liveFailed(from, e.Rev, err)
		out.MessageID, out.Turn = e.MessageID, e.Turn // a summary's edit is known by its message
		return out
	}
	return &messages.IMLiveSent{Rev: e.Rev, Turn: e.Turn, MessageID: e.MessageID}
}

// liveFailed reports a failed live send or edit: for good when the chat
// refused it (the message is gone, the text is refused), else to be tried
// again.
func (f *FrontEnd) liveFailed(from actors.Identity, rev uint64, err error) *messages.IMLiveSent {
	if err == nil {
		err = errors.New("the chat gave no message id")
	}
	permanent := errors.Is(err, chat.ErrRefused) || errors.Is(err, chat.ErrGone)
	f.log.Warn("cannot show a turn live", "thread", from.ID, "permanent", permanent, "error", err)
	return &messages.IMLiveSent{Rev: rev, Err: err.Error(), Permanent: permanent}
}
