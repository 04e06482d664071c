package tmux

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
)

// usingControl reports whether the client has a live control-mode client.
func usingControl(c *Client) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn != nil && c.conn.alive()
}

func TestServerGoneThenBack(t *testing.T) {
	for _, how := range []struct {
		name string
		kill func(t *testing.T, c *Client)
	}{
		{"KillServer", func(t *testing.T, c *Client) {
			if err := c.KillServer(testCtx(t)); err != nil {
				t.Fatal(err)
			}
		}},
		{"behind its back", func(t *testing.T, c *Client) {
			tmuxCmd(t, c, "kill-server")
		}},
	} {
		t.Run(how.name, func(t *testing.T) {
			c := newTestClient(t, nil)
			ctx := testCtx(t)
			if err := c.KillServer(ctx); err != nil {
				t.Fatalf("KillServer with no server: %v", err)
			}
			w, err := c.NewWindow(ctx, "before", "", "tag-before", []string{"sleep", "1000"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Window(ctx, w.ID); err != nil || !usingControl(c) {
				t.Fatalf("Window = %v; control mode in use: %v", err, usingControl(c))
			}
			how.kill(t, c)

			if _, err := c.Window(ctx, w.ID); !errors.Is(err, ErrNoWindow) {
				t.Fatalf("Window after the server died: %v, want ErrNoWindow", err)
			}
			if err := c.SendText(ctx, w.ID, "hello"); !errors.Is(err, ErrNoWindow) {
				t.Fatalf("SendText after the server died: %v, want ErrNoWindow", err)
			}
			if ws, err := c.Windows(ctx); err != nil || len(ws) != 0 {
				t.Fatalf("Windows after the server died = %+v, %v; want none", ws, err)
			}
			if _, ok, err := c.FindTagged(ctx, "tag-before"); err != nil || ok {
				t.Fatalf("FindTagged after the server died = %v, %v", ok, err)
			}

			w2, err := c.NewWindow(ctx, "after", "", "tag-after", []string{"sleep", "1000"})
			if err != nil {
				t.Fatalf("NewWindow after the server died: %v", err)
			}
			got, err := c.Window(ctx, w2.ID)
			if err != nil || got.Name != "after" || got.Tag != "tag-after" {
				t.Fatalf("Window on the new server = %+v, %v", got, err)
			}
			if !usingControl(c) {
				t.Fatal("the client did not reconnect in control mode")
			}
		})
	}
}

func TestSessionEndsWithItsLastWindowAndComesBack(t *testing.T) {
	c := newTestClient(t, nil)
	ctx := testCtx(t)
	keep, err := c.NewWindow(ctx, "keep", "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	// A session of another name on the same server keeps the server up.
	tmuxCmd(t, c, "new-session", "-d", "-s", "other")
	if err := c.Kill(ctx, keep.ID); err != nil {
		t.Fatal(err)
	}
	if ws, err := c.Windows(ctx); err != nil || len(ws) != 0 {
		t.Fatalf("Windows with the session gone = %+v, %v", ws, err)
	}
	w, err := c.NewWindow(ctx, "again", "", "", []string{"sleep", "1000"})
	if err != nil {
		t.Fatalf("NewWindow with the session gone: %v", err)
	}
	if ws, err := c.Windows(ctx); err != nil || len(ws) != 1 || ws[0].ID != w.ID {
		t.Fatalf("Windows = %+v, %v; want only %s", ws, err, w.ID)
	}
}

// TestConcurrentCallsGetTheirOwnAnswers runs Window checks and SendText
// from many goroutines at once, two senders per window, and checks that
// every answer is about the window asked for and that every line arrives
// whole, in its sender's order.
func TestConcurrentCallsGetTheirOwnAnswers(t *testing.T) {
	const windows, perSender = 6, 25
	c := newTestClient(t, nil)
	ws := make([]Window, windows)
	files := make([]string, windows)
	for i := range ws {
		ws[i], files[i] = catWindow(t, c, fmt.Sprintf("agent-%d", i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*windows)
	for i := range ws {
		for s := range 2 {
			wg.Go(func() {
				for k := range perSender {
					w := ws[rand.IntN(windows)]
					got, err := c.Window(testCtx(t), w.ID)
					if err != nil || got != w {
						errs <- fmt.Errorf("Window(%s) = %+v, %v; want %+v", w.ID, got, err, w)
						return
					}
					line := fmt.Sprintf("w%d s%d %02d %s", i, s, k, strings.Repeat("x", k))
					if err := c.SendText(testCtx(t), ws[i].ID, line); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range ws {
		if err := c.SendText(testCtx(t), ws[i].ID, "end"); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(waitFile(t, files[i], "end"), "\nend\n"), "\n")
		var want []string
		for s := range 2 {
			for k := range perSender {
				want = append(want, fmt.Sprintf("w%d s%d %02d %s", i, s, k, strings.Repeat("x", k)))
			}
		}
		// Sort keeps each sender's lines in order (their keys sort so).
		if !sort.StringsAreSorted(filter(lines, fmt.Sprintf("w%d s0", i))) || !sort.StringsAreSorted(filter(lines, fmt.Sprintf("w%d s1", i))) {
			t.Errorf("window %d: a sender's lines arrived out of order: %q", i, lines)
		}
		sort.Strings(lines)
		if strings.Join(lines, "\n") != strings.Join(want, "\n") {
			t.Errorf("window %d got lines %q\nwant %q", i, lines, want)
		}
	}
	if !usingControl(c) {
		t.Fatal("the calls did not go over control mode")
	}
	if out, err := exec.Command("tmux", "-L", c.o.Socket, "list-buffers").Output(); err != nil || len(out) != 0 {
		t.Fatalf("buffers left: %q, %v", out, err)
	}
}

func filter(lines []string, prefix string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}
