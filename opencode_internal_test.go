package thatch

import (
	"context"
	"testing"

	"github.com/thatch-run/thatch/config"
)

func TestConnectReusesAServerWatchedUnderAnotherName(t *testing.T) {
	work := &hostConn{name: "work", url: "http://127.0.0.1:4096"}
	o := &openCode{hosts: map[string]*hostConn{"work": work}}
	// The plugin of the configured server registers it under its own name.
	h, err := o.connect(context.Background(), config.Server{Name: "opencode@127.0.0.1:4096", URL: "http://127.0.0.1:4096/"}, 4242, "/src/project")
	if err != nil {
		t.Fatal(err)
	}
	if h != work || len(o.hosts) != 1 {
		t.Fatalf("got host %q, %d hosts watched; want the configured one, once", h.name, len(o.hosts))
	}
}

func TestSameServer(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"http://127.0.0.1:4096", "http://127.0.0.1:4096/", true},
		{"HTTP://127.0.0.1:4096/", "http://127.0.0.1:4096", true},
		{"http://127.0.0.1:4096", "http://127.0.0.1:4097", false},
		{"http://127.0.0.1:4096", "https://127.0.0.1:4096", false},
		{"http://127.0.0.1:4096/a", "http://127.0.0.1:4096/b", false},
		{"http://127.0.0.1:4096", "://bad", false},
	} {
		if got := sameServer(c.a, c.b); got != c.want {
			t.Errorf("sameServer(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
