package front

import (
	"context"
	"errors"

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

// errNoEdit is a live edit on a platform that cannot edit messages.
var errNoEdit = errors.New("the chat cannot edit messages")

// liveSend sends a turn's live message.
func (f *FrontEnd) liveSend(_ context.Context, from actors.Identity, e *messages.IMLiveSend) any {
	a, err := f.adapterOf(from.ID)
	if err != nil {
		return &messages.IMLiveSent{Rev: e.Rev, Err: err.Error(), Permanent: true}
	}
	if _, ok := a.(chat.Editor); !ok {
		return &messages.IMLiveSent{Rev: e.Rev, Err: errNoEdit.Error(), Permanent: true}
	}
	ctx, cancel := context.WithTimeout(f.runCtx, sendTimeout)
	defer cancel()
	ids, err := a.Send(ctx, chat.Message{Thread: from.ID, Text: f.mask.text(e.Text), Silent: true, Editable: true})
	if f.runCtx.Err() != nil {
		return nil
	}
	if err != nil || len(ids) == 0 {
		return f.liveFailed(from, e.Rev, err)
	}
	return &messages.IMLiveSent{Rev: e.Rev, MessageID: ids[len(ids)-1]}
}

// liveEdit edits a turn's live message.
func (f *FrontEnd) liveEdit(_ context.Context, from actors.Identity, e *messages.IMLiveEdit) any {
	a, err := f.adapterOf(from.ID)
	if err != nil {
		return &messages.IMLiveSent{Rev: e.Rev, Err: err.Error(), Permanent: true}
	}
	ed, ok := a.(chat.Editor)
	if !ok {
		return &messages.IMLiveSent{Rev: e.Rev, Err: errNoEdit.Error(), Permanent: true}
	}
	ctx, cancel := context.WithTimeout(f.runCtx, sendTimeout)
	defer cancel()
	err = ed.EditText(ctx, from.ID, e.MessageID, f.mask.text(e.Text))
	if f.runCtx.Err() != nil {
		return nil
	}
	if err != nil {
		return f.liveFailed(from, e.Rev, err)
	}
	return &messages.IMLiveSent{Rev: e.Rev, MessageID: e.MessageID}
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
