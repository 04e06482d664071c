package cluster

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/thatch-run/thatch/internal/retry"
)

// The chats' boards in a cluster. Each chat has one board, written by one
// node (BoardLease's holder); the others only report. The boards bucket
// holds, per chat, every thread's row as its own node last reported it,
// and the board itself (where it was asked for, and its message once
// sent), so that the next writer edits the same pinned message.

// BoardLease is the lease whose holder writes every chat's board.
const BoardLease = "boards"

// Board is a chat's board as the cluster keeps it.
type Board struct {
	// Thread is where the board was asked for (the chat's General topic).
	Thread string `json:"thread"`
	// MessageID is the board's message, once sent ("" until then).
	MessageID string `json:"messageID,omitempty"`
}

// BoardEntry is one entry of the boards bucket, as WatchBoards hands it
// over: a thread's row (Row, the reporter's JSON) or the chat's board.
type BoardEntry struct {
	Chat  string
	Row   []byte
	Board *Board
}

func boardKey(chat string) string { return "b." + hex.EncodeToString([]byte(chat)) }

func rowKey(chat, thread string) string {
	return "r." + hex.EncodeToString([]byte(chat)) + "." + hex.EncodeToString([]byte(thread))
}

// PutBoardRow stores thread's row of chat's board (row: the reporter's
// JSON of it).
func (n *Node) PutBoardRow(ctx context.Context, chat, thread string, row []byte) error {
	if !n.isReady() {
		return errNotReady
	}
	c, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if _, err := n.boards.Put(c, rowKey(chat, thread), row); err != nil {
		return fmt.Errorf("cluster: the board row of %s: %w", thread, err)
	}
	return nil
}

// AskBoard stores that chat's board was asked for in thread. The board's
// message is kept when it was asked for there before.
func (n *Node) AskBoard(ctx context.Context, chat, thread string) error {
	return n.updateBoard(ctx, chat, func(b Board) (Board, bool) {
		if b.Thread == thread {
			return b, false
		}
		return Board{Thread: thread}, true
	})
}

// BoardShown stores the message that shows chat's board in thread.
func (n *Node) BoardShown(ctx context.Context, chat, thread, messageID string) error {
	return n.updateBoard(ctx, chat, func(b Board) (Board, bool) {
		next := Board{Thread: thread, MessageID: messageID}
		return next, next != b
	})
}

// updateBoard changes chat's board entry by change, compare-and-set,
// reading it again after a conflict.
func (n *Node) updateBoard(ctx context.Context, chat string, change func(Board) (Board, bool)) error {
	if !n.isReady() {
		return errNotReady
	}
	c, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	for {
		var b Board
		var rev uint64
		e, err := n.boards.Get(c, boardKey(chat))
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return fmt.Errorf("cluster: the board of %s: %w", chat, err)
		default:
			rev = e.Revision()
			if err := json.Unmarshal(e.Value(), &b); err != nil {
				b = Board{} // unreadable: written again whole
			}
		}
		next, changed := change(b)
		if !changed {
			return nil
		}
		body, err := json.Marshal(next)
		if err != nil {
			return err
		}
		if rev == 0 {
			_, err = n.boards.Create(c, boardKey(chat), body)
		} else {
			_, err = n.boards.Update(c, boardKey(chat), body, rev)
		}
		if !isConflict(err) {
			if err != nil {
				return fmt.Errorf("cluster: the board of %s: %w", chat, err)
			}
			return nil
		}
	}
}

// WatchBoards hands every entry of the boards bucket to take, and every
// change after, until ctx ends (watching again after a failure, from the
// start). Of the entries there when a watch begins, the boards come
// before the rows: a writer knows each board's message before it has
// anything to edit into it.
func (n *Node) WatchBoards(ctx context.Context, take func(BoardEntry)) {
	if !n.Wait(ctx) {
		return
	}
	for ctx.Err() == nil && n.ctx.Err() == nil {
		w, err := n.boards.WatchAll(ctx, jetstream.IgnoreDeletes())
		if err != nil {
			n.log.Debug("cannot watch the boards", "error", err)
			if !retry.Sleep(ctx, setupInterval) {
				return
			}
			continue
		}
		var rows []BoardEntry
		initial := true
		for e := range w.Updates() {
			if e == nil { // the entries there are all in
				initial = false
				for _, r := range rows {
					take(r)
				}
				rows = nil
				continue
			}
			be, ok := boardEntry(e)
			switch {
			case !ok:
			case initial && be.Board == nil:
				rows = append(rows, be)
			default:
				take(be)
			}
		}
		_ = w.Stop()
		retry.Sleep(ctx, setupInterval)
	}
}

// boardEntry reads an entry of the boards bucket.
func boardEntry(e jetstream.KeyValueEntry) (BoardEntry, bool) {
	parts := strings.Split(e.Key(), ".")
	if len(parts) < 2 {
		return BoardEntry{}, false
	}
	chat, err := hex.DecodeString(parts[1])
	if err != nil {
		return BoardEntry{}, false
	}
	switch {
	case parts[0] == "b" && len(parts) == 2:
		var b Board
		if json.Unmarshal(e.Value(), &b) != nil {
			return BoardEntry{}, false
		}
		return BoardEntry{Chat: string(chat), Board: &b}, true
	case parts[0] == "r" && len(parts) == 3:
		return BoardEntry{Chat: string(chat), Row: e.Value()}, true
	}
	return BoardEntry{}, false
}
