package front

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/thatch-run/thatch/actors/imboard"
	"github.com/thatch-run/thatch/im/cluster"
	"github.com/thatch-run/thatch/internal/retry"
	"github.com/thatch-run/thatch/messages"
)

// A chat's board in a cluster has one writer: the node holding
// cluster.BoardLease runs every chat's board entity, fed by a watch of
// the boards bucket. Every node (the writer too) reports its bindings'
// rows, the boards asked for and the boards' messages sent to that
// bucket, through boardOutbox: kept in memory, newest first, and put
// again until the bucket takes them. So a row reaches the board from any
// node, and the next writer edits the pinned message the one before it
// sent.

// boardOutbox holds what this node has yet to put in the boards bucket:
// per thread its newest row, per chat the newest board asked for or
// shown.
type boardOutbox struct {
	mu     sync.Mutex
	rows   map[string]messages.IMBoardRow // by thread
	boards map[string]cluster.Board       // by chat
	kick   chan struct{}
}

func newBoardOutbox() *boardOutbox {
	return &boardOutbox{rows: map[string]messages.IMBoardRow{}, boards: map[string]cluster.Board{},
		kick: make(chan struct{}, 1)}
}

func (o *boardOutbox) wake() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// row queues a thread's row.
func (o *boardOutbox) row(r messages.IMBoardRow) {
	o.mu.Lock()
	o.rows[r.Thread] = r
	o.mu.Unlock()
	o.wake()
}

// board queues a chat's board: asked for (no MessageID) or shown. An ask
// does not undo a queued message of the same thread.
func (o *boardOutbox) board(chat string, b cluster.Board) {
	o.mu.Lock()
	if have, ok := o.boards[chat]; !ok || b.MessageID != "" || have.Thread != b.Thread {
		o.boards[chat] = b
	}
	o.mu.Unlock()
	o.wake()
}

// flush puts what is queued; what the bucket did not take stays queued
// unless something newer took its place. It reports whether all went.
func (o *boardOutbox) flush(ctx context.Context, n *cluster.Node) bool {
	o.mu.Lock()
	rows, boards := maps.Clone(o.rows), maps.Clone(o.boards)
	o.mu.Unlock()
	done := true
	for chat, b := range boards {
		put := n.AskBoard
		if b.MessageID != "" {
			put = func(ctx context.Context, chat, thread string) error {
				return n.BoardShown(ctx, chat, thread, b.MessageID)
			}
		}
		err := put(ctx, chat, b.Thread)
		if err != nil {
			done = false
			continue
		}
		dropSent(&o.mu, o.boards, chat, b)
	}
	for thread, r := range rows {
		body, err := json.Marshal(r)
		if err == nil {
			err = n.PutBoardRow(ctx, chatKeyOf(thread), thread, body)
		}
		if err != nil {
			done = false
			continue
		}
		dropSent(&o.mu, o.rows, thread, r)
	}
	return done
}

// dropSent forgets m's entry k once v, the value put, is still its
// newest.
func dropSent[K, V comparable](mu *sync.Mutex, m map[K]V, k K, v V) {
	mu.Lock()
	defer mu.Unlock()
	if m[k] == v {
		delete(m, k)
	}
}

// runBoardOutbox puts the queued board reports until ctx ends, trying
// again after a failure (the bucket not ready, no quorum).
func (f *FrontEnd) runBoardOutbox(ctx context.Context) {
	o, n := f.boardsOut, f.cl.node
	back := retry.Backoff{Base: 250 * time.Millisecond, Max: 5 * time.Second}
	failed := 0
	for {
		var again <-chan time.Time
		if failed > 0 {
			again = time.After(back.Delay(failed))
		}
		select {
		case <-ctx.Done():
			return
		case <-o.kick:
		case <-again:
		}
		if o.flush(ctx, n) {
			failed = 0
		} else {
			failed++
			f.log.Debug("the cluster took not every board report yet; trying again", "attempt", failed)
		}
	}
}

// writeBoards runs the chats' boards while this node holds the boards'
// lease: every entry of the boards bucket goes to its chat's board, and
// a row whose machine is down says so until the machine is back.
func (f *FrontEnd) writeBoards(ctx context.Context) {
	f.log.Info("this node writes the chats' boards")
	rows := &boardRows{last: map[string]messages.IMBoardRow{}, down: map[string]bool{}}
	n := f.cl.node
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(boardDownEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				for _, r := range rows.check(n.Up) {
					f.tree.Send(boardOf(chatKeyOf(r.Thread)), &r)
				}
			}
		}
	}()
	defer wg.Wait()
	n.WatchBoards(ctx, func(e cluster.BoardEntry) {
		to := boardOf(e.Chat)
		if e.Board != nil {
			f.tree.Send(to, &imboard.Adopt{Thread: e.Board.Thread, MessageID: e.Board.MessageID})
			return
		}
		var r messages.IMBoardRow
		if err := json.Unmarshal(e.Row, &r); err != nil || r.Thread == "" {
			f.log.Warn("a board row in the cluster cannot be read; skipped", "chat", e.Chat, "error", err)
			return
		}
		if f.cfg.IM.Board {
			f.tree.Send(to, &imboard.Show{Thread: generalThread(r.Thread)})
		}
		f.tree.Send(to, rows.put(r))
	})
}

// boardDownEvery is how often the writer looks for rows whose machine
// went down or came back.
const boardDownEvery = 5 * time.Second

// boardRows is the writer's view of the rows: each thread's last row as
// its machine reported it, and which are shown as down.
type boardRows struct {
	mu   sync.Mutex
	last map[string]messages.IMBoardRow // by thread
	down map[string]bool
}

// put takes a row its machine reported (it was up to write it), and
// returns it to show.
func (b *boardRows) put(r messages.IMBoardRow) *messages.IMBoardRow {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.down, r.Thread)
	if r.State == "" {
		delete(b.last, r.Thread)
	} else {
		b.last[r.Thread] = r
	}
	return &r
}

// check returns the rows to show anew: those whose machine went down
// (shown as down) and those whose machine is back (as last reported).
func (b *boardRows) check(up func(string) bool) []messages.IMBoardRow {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []messages.IMBoardRow
	for _, thread := range slices.Sorted(maps.Keys(b.last)) {
		r := b.last[thread]
		isUp := r.Machine == "" || up(r.Machine)
		switch {
		case !isUp && !b.down[thread]:
			b.down[thread] = true
			r.State, r.Since = messages.BoardDown, 0
			out = append(out, r)
		case isUp && b.down[thread]:
			delete(b.down, thread)
			out = append(out, r)
		}
	}
	return out
}
