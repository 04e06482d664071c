package front

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/imbinding"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// listFreeWindows lists the windows that no binding owns, on thatch's
// tmux server and on those im.tmux.adopt_sockets names, with the agent
// running in each, for a setup that adopts one. A server that cannot be
// read is left out (and logged); only when none can is the listing an
// error.
func (f *FrontEnd) listFreeWindows(ctx context.Context, _ actors.Identity, _ *messages.IMListFreeWindows) any {
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	ws, errs := f.wins.Adoptable(ctx)
	var failed []string
	for sock, err := range errs { // a server not running lists no window, and no error
		if sock == "" {
			sock = "thatch's"
		}
		f.log.Warn("cannot list a tmux server's windows", "socket", sock, "error", err)
		failed = append(failed, sock+": "+err.Error())
	}
	if len(ws) == 0 && len(failed) > 0 {
		sort.Strings(failed)
		return &messages.IMFreeWindowsListed{Err: strings.Join(failed, "; ")}
	}
	views, _ := frontend.Entities(f.tree, f.jr, imbinding.KindName, "thread", 0, 5*time.Second)
	out := &messages.IMFreeWindowsListed{}
	for _, w := range freeWindows(ws, views) {
		sock, _ := splitRef(w.ID)
		out.Windows = append(out.Windows, messages.IMFreeWindow{ID: w.ID, Name: w.Name, Dir: w.Dir, Agent: f.detect(w), Socket: sock})
	}
	return out
}

// adoptWindow makes a free window the binding's: tagged, renamed after the
// thread, kept when its agent exits; it says which agent runs there.
func (f *FrontEnd) adoptWindow(ctx context.Context, from actors.Identity, e *messages.IMAdoptWindow) any {
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	w, err := f.wins.Adopt(ctx, e.WindowID, e.Name, e.Tag)
	if err != nil {
		if f.runCtx.Err() != nil {
			return nil
		}
		return &messages.IMWindowAdopted{WindowID: e.WindowID, Tag: e.Tag, Err: err.Error()}
	}
	f.log.Info("adopted a window", "thread", from.ID, "window", w.ID, "dir", w.Dir)
	return &messages.IMWindowAdopted{WindowID: w.ID, Tag: e.Tag, Name: w.Name, Dir: w.Dir, Agent: f.detect(w)}
}
