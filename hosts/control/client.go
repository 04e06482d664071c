package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// Client talks to a running daemon found through its state and token files.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// Dial reads the state file and the token file and returns a client. It
// returns ErrNoDaemon when the state file does not exist.
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
