// Package ocenv holds the plain helpers that the e2e suite and the opencode
// benchmark share to run a real opencode server: copying the prepared npm
// dependency template into a config folder, and calling the server's REST
// API. It has no Ginkgo or Gomega in it, so the benchmark can import it.
package ocenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/thatch-run/thatch/hosts/opencode"
)

// CopyTree copies src into dst, hard-linking regular files (the template is
// never written to) and copying the two npm manifests, which npm rewrites.
func CopyTree(src, dst string) error {
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		t := filepath.Join(dst, rel)
		switch {
		case fi.IsDir():
			return os.MkdirAll(t, 0o755)
		case fi.Mode()&os.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, t)
		case rel == "package.json" || rel == "package-lock.json":
			return copyFile(p, t, fi.Mode().Perm())
		default:
			if os.Link(p, t) == nil {
				return nil
			}
			return copyFile(p, t, fi.Mode().Perm())
		}
	})
}

func copyFile(src, dst string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, mode|0o200)
}

// CallJSON sends a JSON request (in may be nil) and decodes a JSON answer
// into out (which may be nil). A non-2xx answer is an error that quotes the
// start of the body.
func CallJSON(hc *http.Client, method, url string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: HTTP %d: %.500s", method, url, resp.StatusCode, b)
	}
	if out != nil && len(b) > 0 {
		return json.Unmarshal(b, out)
	}
	return nil
}

// Follow reads the server-sent events at url until ctx ends, reconnecting
// (after a short pause) whenever the stream breaks, and hands the data of
// every frame to onFrame, on Follow's own goroutine, in stream order.
func Follow(ctx context.Context, transport http.RoundTripper, url string, onFrame func(data []byte)) {
	// No client timeout: the stream stays open until ctx ends.
	hc := &http.Client{Transport: transport}
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := hc.Do(req)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		r := opencode.NewSSEReader(resp.Body, 16<<20)
		for {
			data, err := r.Next()
			if err != nil {
				break
			}
			onFrame(data)
		}
		resp.Body.Close()
	}
}

// WriteProjectConfig writes project/opencode.json: a provider "fake" (the
// openai-compatible package built into opencode) at baseURL serving
// modelID, used as the default and small model, with every tool allowed.
func WriteProjectConfig(project, baseURL, modelID string) error {
	cfg := map[string]any{
		"$schema":     "https://opencode.ai/config.json",
		"autoupdate":  false,
		"share":       "disabled",
		"model":       "fake/" + modelID,
		"small_model": "fake/" + modelID,
		"permission":  map[string]any{"edit": "allow", "bash": "allow", "webfetch": "allow", "external_directory": "allow"},
		"provider": map[string]any{"fake": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "Fake",
			"options": map[string]any{"baseURL": baseURL, "apiKey": "fake"},
			"models":  map[string]any{modelID: map[string]any{"name": "Fake One", "tool_call": true}},
		}},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(project, "opencode.json"), b, 0o644)
}
