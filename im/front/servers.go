package front

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/im/tmux"
)

// A binding's window is named by a window reference: the tmux window id
// ("@12") for a window of thatch's own server, or the socket and the id
// ("default:@12", "/tmp/tmux-1000/work:@12") for one adopted from a
// server listed in im.tmux.adopt_sockets. The reference is what the
// binding's state keeps and what every effect on the window carries, so
// that no other record says which server a window is on.

// windowRef names the window id of the server at socket ("" for thatch's).
func windowRef(socket, id string) string {
	if socket == "" {
		return id
	}
	return socket + ":" + id
}

// splitRef reads a window reference: the socket ("" for thatch's own
// server) and the window id. A window id holds no ':', so the last ":@"
// ends the socket, whatever the socket's path holds.
func splitRef(ref string) (socket, id string) {
	i := strings.LastIndex(ref, ":@")
	if i < 0 {
		return "", ref
	}
	return ref[:i], ref[i+1:]
}

// servers are the tmux servers the bindings' windows are on: thatch's own,
// where windows are made, and the borrowed ones adopt_sockets lists,
// where windows are only adopted. Each method takes a window reference
// and reports windows by their references.
type servers struct {
	own    *tmux.Client
	others map[string]*tmux.Client // by the socket as configured
	order  []string                // the sockets in the configured order
}

// newServers opens a borrowed client for each adopt socket: a name is a
// socket name (tmux -L), anything with a '/' a socket path (tmux -S).
func newServers(own *tmux.Client, sockets []string, log hclog.Logger) (*servers, error) {
	s := &servers{own: own, others: map[string]*tmux.Client{}}
	for _, sock := range sockets {
		o := tmux.Options{Socket: sock, Borrowed: true, Logger: log.Named("tmux").With("socket", sock)}
		if strings.ContainsRune(sock, '/') {
			o.Socket, o.SocketPath = "", filepath.Clean(sock)
		}
		c, err := tmux.New(o)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("im.tmux.adopt_sockets: %w", err)
		}
		s.others[sock] = c
		s.order = append(s.order, sock)
	}
	return s, nil
}

// Close closes the borrowed clients; thatch's own is the front end's.
func (s *servers) Close() {
	for _, c := range s.others {
		c.Close()
	}
}

// client is the server a reference names, and the window's id there. A
// socket no longer listed is as good as a gone window (tmux.ErrNoWindow):
// the binding then offers to recover in a window of thatch's own.
func (s *servers) client(ref string) (*tmux.Client, string, error) {
	sock, id := splitRef(ref)
	if sock == "" {
		return s.own, id, nil
	}
	c, ok := s.others[sock]
	if !ok {
		return nil, "", fmt.Errorf("%w: window %s is on tmux socket %q, which im.tmux.adopt_sockets no longer lists", tmux.ErrNoWindow, id, sock)
	}
	return c, id, nil
}

// qualify renames w by its reference on sock.
func qualify(sock string, w tmux.Window) tmux.Window {
	w.ID = windowRef(sock, w.ID)
	return w
}

func (s *servers) Window(ctx context.Context, ref string) (tmux.Window, error) {
	c, id, err := s.client(ref)
	if err != nil {
		return tmux.Window{}, err
	}
	w, err := c.Window(ctx, id)
	if err != nil {
		return tmux.Window{}, err
	}
	sock, _ := splitRef(ref)
	return qualify(sock, w), nil
}

// Adopt adopts the window (see tmux.Client.Adopt).
func (s *servers) Adopt(ctx context.Context, ref, name, tag string) (tmux.Window, error) {
	c, id, err := s.client(ref)
	if err != nil {
		return tmux.Window{}, err
	}
	w, err := c.Adopt(ctx, id, name, tag)
	if err != nil {
		return tmux.Window{}, err
	}
	sock, _ := splitRef(ref)
	return qualify(sock, w), nil
}

// Adoptable lists the windows of every server, thatch's first: one
// server that cannot be read is skipped, and reported in errs by socket.
func (s *servers) Adoptable(ctx context.Context) (ws []tmux.Window, errs map[string]error) {
	read := func(sock string, c *tmux.Client) {
		got, err := c.Windows(ctx)
		if err != nil {
			if errs == nil {
				errs = map[string]error{}
			}
			errs[sock] = err
			return
		}
		for _, w := range got {
			ws = append(ws, qualify(sock, w))
		}
	}
	read("", s.own)
	for _, sock := range s.order {
		read(sock, s.others[sock])
	}
	return ws, errs
}

func (s *servers) Capture(ctx context.Context, ref string, lines int) (string, error) {
	c, id, err := s.client(ref)
	if err != nil {
		return "", err
	}
	return c.Capture(ctx, id, lines)
}

func (s *servers) CapturePane(ctx context.Context, ref string) (tmux.Pane, error) {
	c, id, err := s.client(ref)
	if err != nil {
		return tmux.Pane{}, err
	}
	return c.CapturePane(ctx, id)
}

func (s *servers) SendKeys(ctx context.Context, ref string, keys ...string) error {
	c, id, err := s.client(ref)
	if err != nil {
		return err
	}
	return c.SendKeys(ctx, id, keys...)
}

func (s *servers) SendText(ctx context.Context, ref, text string) error {
	c, id, err := s.client(ref)
	if err != nil {
		return err
	}
	return c.SendText(ctx, id, text)
}

func (s *servers) Type(ctx context.Context, ref, text string) error {
	c, id, err := s.client(ref)
	if err != nil {
		return err
	}
	return c.Type(ctx, id, text)
}

func (s *servers) Rename(ctx context.Context, ref, name string) error {
	c, id, err := s.client(ref)
	if err != nil {
		return err
	}
	return c.Rename(ctx, id, name)
}

func (s *servers) Respawn(ctx context.Context, ref, dir string, env, cmd []string) error {
	c, id, err := s.client(ref)
	if err != nil {
		return err
	}
	return c.Respawn(ctx, id, dir, env, cmd)
}

func (s *servers) Kill(ctx context.Context, ref string) error {
	c, id, err := s.client(ref)
	if err != nil {
		return err
	}
	return c.Kill(ctx, id)
}
