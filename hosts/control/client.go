package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Client talks to a running daemon found through its state and token files.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// probeTimeout bounds the /healthz probe of Dial. /healthz does no work, so
// a daemon that cannot answer it in this time is not one to rely on.
const probeTimeout = 2 * time.Second

// Dial reads the state file and the token file and returns a client whose
// requests time out after timeout. It returns an error matching ErrNoDaemon
// when the state file does not exist, and ErrStaleState (which matches
// ErrNoDaemon too) when it is stale, as a
// daemon that crashed leaves it: the recorded pid is not running, or the
// recorded address does not answer /healthz as that daemon (PIDHeader).
// Callers that can do without a daemon fall back on ErrNoDaemon.
//
// The address must be loopback; Dial refuses to send the token anywhere
// else.
func Dial(stateFile, tokenFile string, timeout time.Duration) (*Client, *State, error) {
	b, err := os.ReadFile(stateFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w (no %s; is `thatch serve` running with this config?)", ErrNoDaemon, stateFile)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("control: read state: %w", err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, nil, fmt.Errorf("control: state file %s is corrupt: %w", stateFile, err)
	}
	if !loopbackAddr(st.Addr) {
		return nil, nil, fmt.Errorf("control: state file %s names %q, not a loopback host:port; refusing to send the token there", stateFile, st.Addr)
	}
	if why := stale(&st, min(timeout, probeTimeout)); why != "" {
		return nil, nil, fmt.Errorf("%w: %s: %s; a daemon that did not stop cleanly left it", ErrStaleState, stateFile, why)
	}
	tb, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, nil, fmt.Errorf("control: read token: %w", err)
	}
	return &Client{base: "http://" + st.Addr, token: strings.TrimSpace(string(tb)), http: &http.Client{Timeout: timeout}}, &st, nil
}

// Do sends a request with the bearer token and decodes a JSON answer into
// out (which may be nil). Non-2xx answers become errors carrying the
// daemon's message.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("control: %s %s: %w (is the daemon still running?)", method, path, err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("control: %s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return ErrUnauthorized
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(rb, &e) == nil && e.Error != "" {
			return fmt.Errorf("control: %s %s: %s (HTTP %d)", method, path, e.Error, resp.StatusCode)
		}
		return fmt.Errorf("control: %s %s: HTTP %d", method, path, resp.StatusCode)
	}
	if out != nil {
		if err := json.Unmarshal(rb, out); err != nil {
			return fmt.Errorf("control: %s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// loopbackAddr reports whether addr is a host:port on a loopback host.
func loopbackAddr(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return false
	}
	return isLoopback(host)
}

// stale says why st does not describe a running daemon, or "" when it does:
// its pid is alive (when recorded) and its address answers /healthz with
// that pid. Only the probe touches the network, and only st.Addr, which
// the caller has checked is loopback.
func stale(st *State, timeout time.Duration) string {
	if st.PID > 0 && !processAlive(st.PID) {
		return fmt.Sprintf("pid %d is not running", st.PID)
	}
	c := &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	resp, err := c.Get("http://" + st.Addr + "/healthz")
	if err != nil {
		return fmt.Sprintf("nothing answers at %s", st.Addr)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	got := resp.Header.Get(PIDHeader)
	if resp.StatusCode != http.StatusOK || got == "" {
		return fmt.Sprintf("%s answers, but not as thatch", st.Addr)
	}
	if st.PID > 0 && got != strconv.Itoa(st.PID) {
		return fmt.Sprintf("%s is served by pid %s, not by pid %d", st.Addr, got, st.PID)
	}
	return ""
}
