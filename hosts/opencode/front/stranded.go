package front

import (
	"context"
	"errors"
	"os"
	"syscall"

	"github.com/thatch-run/thatch/hosts/opencode"
)

// healStranded moves sessions whose directory was deleted (a removed git
// worktree) back to the project's worktree, on every connected host, and
// stops watching plugin-registered servers whose process exited. Each host
// call has its own request timeout, so one slow host does not use up the
// others' time.
func (o *FrontEnd) healStranded(ctx context.Context) {
	o.reapGone()
	o.mu.Lock()
	hosts := make([]*hostConn, 0, len(o.hosts))
	for _, h := range o.hosts {
		if h.client != nil {
			hosts = append(hosts, h)
		}
	}
	o.mu.Unlock()
	for _, h := range hosts {
		o.healHost(ctx, h)
	}
}

// healHost heals the stranded sessions of one host.
func (o *FrontEnd) healHost(ctx context.Context, h *hostConn) {
	lctx, cancel := o.call(ctx)
	sessions, err := h.client.ListSessions(lctx)
	cancel()
	if err != nil {
		o.log.Debug("stranded sweep: cannot list sessions", "host", h.name, "error", err)
		return
	}
	var project *opencode.Project
	for _, s := range sessions {
		if s.Directory == "" || s.ParentID != "" {
			continue
		}
		if _, err := os.Stat(s.Directory); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if project == nil {
			pctx, cancel := o.call(ctx)
			p, err := h.client.CurrentProject(pctx)
			cancel()
			if err != nil || p.Worktree == "" || p.Worktree == "/" {
				break
			}
			project = &p
		}
		if s.Directory == project.Worktree {
			continue
		}
		mctx, cancel := o.call(ctx)
		err := h.client.MoveSession(mctx, s.ID, project.Worktree)
		cancel()
		if err != nil {
			o.log.Warn("cannot move stranded session", "host", h.name, "session", s.ID, "from", s.Directory, "error", err)
			continue
		}
		o.log.Info("moved stranded session to the project worktree", "host", h.name, "session", s.ID, "from", s.Directory, "to", project.Worktree)
	}
}

// reapGone disconnects plugin-registered hosts whose process is gone.
func (o *FrontEnd) reapGone() {
	o.mu.Lock()
	var gone []string
	for n, h := range o.hosts {
		if h.pid > 0 && syscall.Kill(h.pid, 0) == syscall.ESRCH {
			gone = append(gone, n)
		}
	}
	o.mu.Unlock()
	for _, n := range gone {
		o.disconnect(n, "its process exited")
	}
}
