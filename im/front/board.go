package front

import (
	"context"
	"strings"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/imboard"
	"github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/im/cluster"
	"github.com/thatch-run/thatch/messages"
)

// A chat's board (actors/imboard) is one entity per chat: the bindings'
// rows reach it through these handlers, and it sends, pins and edits its
// message through the others. It lives in the chat's General topic (a
// forum group's), or the chat itself.

// boardOf is the board entity of the chat of thread.
func boardOf(thread string) actors.Identity {
	return actors.Identity{Kind: imboard.KindName, ID: chatKeyOf(thread)}
}

// generalThread is the thread key of the chat of thread itself: for
// Telegram the General topic ("tg:<chat>:<chat>"), for Feishu the chat.
func generalThread(thread string) string {
	parts := strings.SplitN(thread, ":", 3)
	if len(parts) < 2 {
		return thread
	}
	if parts[0] == "tg" {
		return "tg:" + parts[1] + ":" + parts[1]
	}
	return parts[0] + ":" + parts[1]
}

// boardRow hands a binding's row to its chat's board (and asks for the
// board when im.board says every chat has one). In a cluster the row
// names this machine and goes to the boards' writer (clusterboard.go).
func (f *FrontEnd) boardRow(_ context.Context, from actors.Identity, e *messages.IMBoardRow) any {
	if f.boardsOut != nil {
		r := *e
		if r.State != "" {
			r.Machine = f.cfg.Cluster.Node // the thread's binding runs here
		}
		f.boardsOut.row(r)
		return nil
	}
	if f.cfg.IM.Board {
		f.tree.Send(boardOf(from.ID), &imboard.Show{Thread: generalThread(from.ID)})
	}
	f.tree.Send(boardOf(from.ID), e)
	return nil
}

// boardShow asks for the board of the binding's chat (/board).
func (f *FrontEnd) boardShow(_ context.Context, from actors.Identity, _ *messages.IMBoardShow) any {
	if f.boardsOut != nil {
		f.boardsOut.board(chatKeyOf(from.ID), cluster.Board{Thread: generalThread(from.ID)})
		return nil
	}
	f.tree.Send(boardOf(from.ID), &imboard.Show{Thread: generalThread(from.ID)})
	return nil
}

// boardSend sends a board, silently, and pins it where the platform can.
func (f *FrontEnd) boardSend(_ context.Context, _ actors.Identity, e *messages.IMBoardSend) any {
	a, err := f.adapterOf(e.Thread)
	if err != nil {
		return &messages.IMBoardSent{Rev: e.Rev, Err: err.Error()}
	}
	ctx, cancel := context.WithTimeout(f.runCtx, sendTimeout)
	defer cancel()
	ids, err := a.Send(ctx, chat.Message{Thread: e.Thread, Text: f.mask.text(e.Text), Silent: true, Editable: true})
	if f.runCtx.Err() != nil {
		return nil
	}
	if err != nil || len(ids) == 0 {
		f.log.Warn("cannot send a chat's board", "thread", e.Thread, "error", err)
		return &messages.IMBoardSent{Rev: e.Rev, Err: "the chat took no board"}
	}
	id := ids[len(ids)-1]
	if p, ok := a.(chat.Pinner); ok {
		if err := p.Pin(ctx, e.Thread, id); err != nil {
			f.log.Warn("cannot pin a chat's board; it is sent", "thread", e.Thread, "error", err)
		}
	}
	if f.boardsOut != nil {
		// The next writer goes on in this message.
		f.boardsOut.board(chatKeyOf(e.Thread), cluster.Board{Thread: e.Thread, MessageID: id})
	}
	return &messages.IMBoardSent{Rev: e.Rev, MessageID: id}
}

// boardEdit edits a board.
func (f *FrontEnd) boardEdit(_ context.Context, _ actors.Identity, e *messages.IMBoardEdit) any {
	a, err := f.adapterOf(e.Thread)
	if err != nil {
		return &messages.IMBoardSent{Rev: e.Rev, Err: err.Error()}
	}
	ed, ok := a.(chat.Editor)
	if !ok {
		return &messages.IMBoardSent{Rev: e.Rev, Err: errNoEdit.Error()}
	}
	ctx, cancel := context.WithTimeout(f.runCtx, sendTimeout)
	defer cancel()
	if err := ed.EditText(ctx, e.Thread, e.MessageID, f.mask.text(e.Text)); err != nil {
		if f.runCtx.Err() != nil {
			return nil
		}
		f.log.Warn("cannot edit a chat's board", "thread", e.Thread, "error", err)
		return &messages.IMBoardSent{Rev: e.Rev, Err: err.Error()}
	}
	return &messages.IMBoardSent{Rev: e.Rev, MessageID: e.MessageID}
}
