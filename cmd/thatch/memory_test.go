package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thatch-run/thatch/config"
)

// TestStaleStateFileOpensTheStore: a daemon killed with SIGKILL leaves
// control.json behind. The memory commands must then open the store
// themselves, as they do when no daemon ever ran, instead of failing with
// "connection refused".
func TestStaleStateFileOpensTheStore(t *testing.T) {
	cfg := config.Defaults()
	cfg.Data.Dir = t.TempDir()
	cfg.ResolvePaths(nil, t.TempDir())
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}

	// The pid of a process that has exited, and a port nobody listens on.
	bin, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1) to get a dead pid from")
	}
	dead := exec.Command(bin)
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	for name, fields := range map[string]map[string]any{
		"dead pid":          {"addr": addr, "pid": dead.Process.Pid},
		"old file, no pid":  {"addr": addr},
		"live pid, no port": {"addr": addr, "pid": os.Getpid()},
	} {
		t.Run(name, func(t *testing.T) {
			b, _ := json.Marshal(fields)
			if err := os.WriteFile(cfg.Control.StateFile, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cfg.Control.TokenFile, []byte(strings.Repeat("t", 64)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			mb, err := openMemoryBackend(cfg)
			if err != nil {
				t.Fatalf("openMemoryBackend with a stale %s: %v", filepath.Base(cfg.Control.StateFile), err)
			}
			defer mb.close()
			if mb.client != nil || mb.mem == nil {
				t.Fatalf("backend goes through the dead daemon (client %v, store %v)", mb.client, mb.mem)
			}
			if _, err := mb.list("", ""); err != nil {
				t.Fatalf("list on the store opened directly: %v", err)
			}
		})
	}
}
