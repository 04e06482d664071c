package front

import (
	"context"
	"errors"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/imbinding"
	"github.com/thatch-run/thatch/im/tmux"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// listFreeWindows lists the windows of thatch's tmux server that no
// binding owns, with the agent running in each, for a setup that adopts
// one.
func (f *FrontEnd) listFreeWindows(ctx context.Context, _ actors.Identity, _ *messages.IMListFreeWindows) any {
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	ws, err := f.tmux.Windows(ctx)
	if errors.Is(err, tmux.ErrNoWindow) {
		return &messages.IMFreeWindowsListed{} // no server: nothing to adopt
	}
	if err != nil {
		return &messages.IMFreeWindowsListed{Err: err.Error()}
	}
	views, _ := frontend.Entities(f.tree, f.jr, imbinding.KindName, "thread", 0, 5*time.Second)
	out := &messages.IMFreeWindowsListed{}
	for _, w := range freeWindows(ws, views) {
		out.Windows = append(out.Windows, messages.IMFreeWindow{ID: w.ID, Name: w.Name, Dir: w.Dir, Agent: f.detect(w)})
	}
	return out
}

// adoptWindow makes a free window the binding's: tagged, renamed after the
// thread, kept when its agent exits; it says which agent runs there.
func (f *FrontEnd) adoptWindow(ctx context.Context, from actors.Identity, e *messages.IMAdoptWindow) any {
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	w, err := f.tmux.Adopt(ctx, e.WindowID, e.Name, e.Tag)
	if err != nil {
		if f.runCtx.Err() != nil {
			return nil
		}
		return &messages.IMWindowAdopted{WindowID: e.WindowID, Tag: e.Tag, Err: err.Error()}
	}
	f.log.Info("adopted a window", "thread", from.ID, "window", w.ID, "dir", w.Dir)
	return &messages.IMWindowAdopted{WindowID: w.ID, Tag: e.Tag, Name: w.Name, Dir: w.Dir, Agent: f.detect(w)}
}
