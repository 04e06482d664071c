package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	bin, err := exec.LookPath("true")
	if err != nil {
		bin = os.Args[0] // the test binary, which runs no test with -test.run=^$
	}
	cmd := exec.Command(bin, "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// writeState writes a state file holding fields (so that a test can leave
// out pid, as files written before it was recorded do) and a token file.
func writeState(t *testing.T, fields map[string]any) (stateFile, tokenFile string) {
	t.Helper()
	dir := t.TempDir()
	stateFile, tokenFile = filepath.Join(dir, "control.json"), filepath.Join(dir, "control.token")
	b, _ := json.Marshal(fields)
	if err := os.WriteFile(stateFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte(strings.Repeat("a", 64)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return stateFile, tokenFile
}

// TestDialSeesStaleState: a daemon that crashed leaves its state file
// behind. Dial must then report ErrNoDaemon, the answer that makes the CLI
// open the store itself, not hand back a client that gets "connection
// refused" or talks to whatever took the port over.
func TestDialSeesStaleState(t *testing.T) {
	stranger := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n")) // answers every path, but is no thatch
	}))
	defer stranger.Close()
	strangerAddr := strings.TrimPrefix(stranger.URL, "http://")

	live, _ := newServer(t, "127.0.0.1:0")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = live.Stop(context.Background()) }()

	cases := map[string]map[string]any{
		"dead pid, closed port":       {"addr": closedAddr(t), "pid": deadPID(t)},
		"dead pid, live thatch":       {"addr": live.Addr(), "pid": deadPID(t)},
		"live pid, closed port":       {"addr": closedAddr(t), "pid": os.Getpid()},
		"live pid, port not thatch":   {"addr": strangerAddr, "pid": os.Getpid()},
		"live pid, other thatch":      {"addr": live.Addr(), "pid": os.Getppid()},
		"no pid, closed port":         {"addr": closedAddr(t)},
		"no pid, port not thatch":     {"addr": strangerAddr},
		"no pid, other state ignored": {"addr": closedAddr(t), "version": "0.1"},
	}
	for name, fields := range cases {
		t.Run(name, func(t *testing.T) {
			stateFile, tokenFile := writeState(t, fields)
			start := time.Now()
			c, _, err := Dial(stateFile, tokenFile, 30*time.Second)
			if !errors.Is(err, ErrStaleState) || !errors.Is(err, ErrNoDaemon) {
				t.Fatalf("Dial = %v, %v; want ErrStaleState and ErrNoDaemon", c, err)
			}
			if !strings.Contains(err.Error(), stateFile) {
				t.Errorf("error does not name the state file: %v", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Dial took %s to see a stale state file", d)
			}
		})
	}

	for name, fields := range map[string]map[string]any{
		"the daemon itself":       {"addr": live.Addr(), "pid": os.Getpid()},
		"old file without a pid":  {"addr": live.Addr()},
		"old file with pid zero":  {"addr": live.Addr(), "pid": 0},
		"localhost name for addr": {"addr": strings.Replace(live.Addr(), "127.0.0.1", "localhost", 1), "pid": os.Getpid()},
	} {
		t.Run(name, func(t *testing.T) {
			stateFile, tokenFile := writeState(t, fields)
			c, st, err := Dial(stateFile, tokenFile, 5*time.Second)
			if err != nil {
				t.Fatalf("Dial to a live daemon: %v", err)
			}
			c.http.CloseIdleConnections()
			if st.Addr != fields["addr"] {
				t.Errorf("state %+v", st)
			}
		})
	}
}

// TestDialRefusesRemoteAddr: the token goes where the state file says, so
// a state file naming another machine is refused outright.
func TestDialRefusesRemoteAddr(t *testing.T) {
	for _, addr := range []string{"192.0.2.1:80", "example.com:443", "garbage", ""} {
		stateFile, tokenFile := writeState(t, map[string]any{"addr": addr, "pid": os.Getpid()})
		_, _, err := Dial(stateFile, tokenFile, time.Second)
		if err == nil || errors.Is(err, ErrNoDaemon) || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("addr %q: Dial = %v, want a refusal naming loopback", addr, err)
		}
	}
}

func TestHealthzNamesThePID(t *testing.T) {
	s, _ := newServer(t, "127.0.0.1:0")
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop(context.Background()) }()
	c := &http.Client{Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Get("http://" + s.Addr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.Header.Get(PIDHeader), fmt.Sprint(os.Getpid()); got != want {
		t.Fatalf("%s = %q, want %q", PIDHeader, got, want)
	}
}
