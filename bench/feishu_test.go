package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tiny run of the Feishu benchmark measures every path it names (each
// event answered, recorded handled and typed: a failure there is an
// error of the run), compares with the Telegram round of the same run,
// and leaves no tmux server behind.
func TestFeishuMeasuresEachPathAgainstTelegram(t *testing.T) {
	recs, _, _ := runTiny(t, "-only", "feishu")
	byName := map[string]Record{}
	for _, r := range recs {
		byName[r.Name] = r
	}
	tg, ok := byName["feishu.telegram_update_to_keys"]
	if !ok || tg.Value <= 0 {
		t.Fatalf("no Telegram baseline measured: %+v in %v", tg, names(recs))
	}
	for _, name := range []string{"feishu.webhook_answer", "feishu.webhook_answer.loaded", "feishu.ws_event_to_keys", "feishu.webhook_event_to_keys"} {
		r, ok := byName[name]
		switch {
		case !ok:
			t.Errorf("no record %s in %v", name, names(recs))
		case r.Value <= 0:
			t.Errorf("%s measured nothing: %+v", name, r)
		case r.Baseline == nil:
			t.Errorf("%s has no baseline", name)
		case strings.Contains(r.Notes, "never typed"):
			t.Errorf("%s: messages were not typed: %s", name, r.Notes)
		}
	}
	if r := byName["feishu.webhook_answer"]; *r.Baseline != 100 || !strings.Contains(r.Notes, "not judged at") {
		t.Errorf("webhook_answer: baseline %v, notes %q: want the 100 ms limit, not judged at a tiny size", *r.Baseline, r.Notes)
	}
	if r := byName["feishu.ws_event_to_keys"]; *r.Baseline != tg.Value || r.Target != "<= 1.5x baseline" || r.Pass == nil {
		t.Errorf("ws_event_to_keys: baseline %v target %q pass %v: want the Telegram p99 %v and <= 1.5x", *r.Baseline, r.Target, r.Pass, tg.Value)
	}
	base := os.Getenv("TMUX_TMPDIR")
	if base == "" {
		base = "/tmp"
	}
	left, _ := filepath.Glob(filepath.Join(base, fmt.Sprintf("tmux-%d", os.Getuid()), fmt.Sprintf("thatch-bench-%d-*", os.Getpid())))
	if len(left) > 0 {
		t.Errorf("tmux sockets left behind: %v", left)
	}
}
