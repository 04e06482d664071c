package plugin

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// flakyDaemon answers each session's calls from a script: the nth call of
// a session gets script[session][n] (the last entry repeats). An entry is
// a status and a body; 200 gets the route's ordinary answer.
type flakyDaemon struct {
	mu     sync.Mutex
	script map[string][]answer
	calls  map[string]int // path+" "+session -> calls
}

type answer struct {
	status int
	body   string
}

var (
	busy     = answer{http.StatusServiceUnavailable, `{"error":"supervisor: request session/ses: no answer in time after 30s","retryable":true}`}
	poison   = answer{http.StatusUnprocessableEntity, `{"error":"actors: message rejected: message failed session/ses 2 times","retryable":false}`}
	invalid  = answer{http.StatusBadRequest, `{"error":"args: number 1e999 is out of range","retryable":false}`}
	stranger = answer{http.StatusNotFound, `{"error":"thatch knows no session ses_stranger: no family holds anything for it","retryable":false}`}
	noRoute  = answer{http.StatusNotFound, "404 page not found\n"}
	fine     = answer{http.StatusOK, ""}
)

func (d *flakyDaemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	session, _ := body["sessionID"].(string)
	if r.URL.Path == "/v1/opencode/register" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"host":"opencode@127.0.0.1:4999","api":"v1"}`)
		return
	}
	d.mu.Lock()
	key := r.URL.Path + " " + session
	n := d.calls[key]
	d.calls[key] = n + 1
	script := d.script[session]
	d.mu.Unlock()
	a := fine
	if len(script) > 0 {
		a = script[min(n, len(script)-1)]
	}
	if a.status != http.StatusOK {
		if strings.HasPrefix(a.body, "{") {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/v1/opencode/done":
		_, _ = io.WriteString(w, `{"completed":2}`)
	default:
		_, _ = io.WriteString(w, `{"ok":true}`)
	}
}

func (d *flakyDaemon) count(path, session string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[path+" "+session]
}

// retryDriver makes one call per scripted session, prints each tool's
// answer and every warning the plugin logged.
const retryDriver = `
import { ThatchPlugin } from "./plugin/thatch.js";
const warnings = [];
const hooks = await ThatchPlugin({
  client: { app: { log: async ({ body }) => { if (body.level === "warn") warnings.push(body.message); } } },
  directory: "/work/proj", worktree: "/work/proj",
  serverUrl: new URL("http://127.0.0.1:4999"),
});
const hook = (sessionID) => hooks["tool.execute.after"]({ tool: "bash", sessionID, callID: "c-" + sessionID, args: {} }, { title: "", output: "", metadata: {} });
for (const s of ["ses_flaky", "ses_poison", "ses_invalid", "ses_busy"]) await hook(s);
const ctx = (sessionID) => ({ sessionID, messageID: "m", agent: "build", abort: new AbortController().signal });
const out = {};
out.done = await hooks.tool.thatch_extraction_done.execute({}, ctx("ses_flaky"));
out.stranger = await hooks.tool.thatch_get_extraction_payload.execute({}, ctx("ses_stranger"));
out.noRoute = await hooks.tool.thatch_get_extraction_payload.execute({}, ctx("ses_noroute"));
out.busy = await hooks.tool.memory_recall.execute({ query: "q" }, ctx("ses_busy"));
out.poison = await hooks.tool.memory_recall.execute({ query: "q" }, ctx("ses_poison"));
out.warnings = warnings;
await hooks.dispose();
console.log(JSON.stringify(out));
`

// TestPluginRetriesOnlyRetryableFailures: a call thatch answers with a
// retryable failure is sent again (a few times, with backoff) and gets
// through when the daemon recovers; a final answer is never repeated, and
// both reach the log and the model with what thatch said.
func TestPluginRetriesOnlyRetryableFailures(t *testing.T) {
	d := &flakyDaemon{calls: map[string]int{}, script: map[string][]answer{
		"ses_flaky":    {busy, busy, fine},
		"ses_poison":   {poison, fine},
		"ses_invalid":  {invalid, fine},
		"ses_busy":     {busy},
		"ses_stranger": {stranger, fine},
		"ses_noroute":  {noRoute, fine},
	}}
	res := runDriver(t, d, retryDriver, "OPENCODE_THATCH_RETRY_MS=1")
	warnings := ""
	for _, w := range res["warnings"].([]any) {
		warnings += w.(string) + "\n"
	}

	t.Run("a retryable failure is retried until it gets through", func(t *testing.T) {
		if n := d.count("/v1/opencode/tool", "ses_flaky"); n != 3 {
			t.Errorf("the tool call was sent %d times, want 3 (two busy answers, then accepted)", n)
		}
		if strings.Contains(warnings, "ses_flaky") {
			t.Errorf("a call that got through was logged as lost:\n%s", warnings)
		}
		if res["done"] != "Acknowledged: 2 interaction(s) completed." {
			t.Errorf("done after a busy answer: %q", res["done"])
		}
	})
	t.Run("a final failure is sent once", func(t *testing.T) {
		for _, s := range []string{"ses_poison", "ses_invalid"} {
			if n := d.count("/v1/opencode/tool", s); n != 1 {
				t.Errorf("%s: the refused tool call was sent %d times", s, n)
			}
		}
		if n := d.count("/v1/memory/recall", "ses_poison"); n != 1 {
			t.Errorf("a refused tool was sent %d times", n)
		}
		if n := d.count("/v1/opencode/payload", "ses_stranger"); n != 1 {
			t.Errorf("a 404 payload fetch was sent %d times", n)
		}
	})
	t.Run("retries are bounded", func(t *testing.T) {
		for _, path := range []string{"/v1/opencode/tool", "/v1/memory/recall"} {
			if n := d.count(path, "ses_busy"); n < 2 || n > 4 {
				t.Errorf("%s for a daemon that stays busy was sent %d times, want 2 to 4", path, n)
			}
		}
		if s, _ := res["busy"].(string); !strings.HasPrefix(s, "thatch: recalling memories failed: supervisor") || !strings.Contains(s, "gave up after") {
			t.Errorf("busy answer to the model: %q", s)
		}
	})
	t.Run("what thatch said reaches the log and the model", func(t *testing.T) {
		for _, want := range []string{"ses_invalid not recorded: args: number 1e999 is out of range", "ses_poison not recorded: actors: message rejected", "ses_busy not recorded: supervisor: request session/ses: no answer in time"} {
			if !strings.Contains(warnings, want) {
				t.Errorf("no warning says %q:\n%s", want, warnings)
			}
		}
		if !strings.Contains(warnings, "not retried") {
			t.Errorf("a final failure's warning does not say it was not retried:\n%s", warnings)
		}
		if s, _ := res["poison"].(string); !strings.Contains(s, "message rejected") || !strings.Contains(s, "not retried") {
			t.Errorf("final answer to the model: %q", s)
		}
		if s, _ := res["stranger"].(string); !strings.Contains(s, "thatch knows no session ses_stranger") || strings.Contains(s, "upgrade") {
			t.Errorf("a 404 from thatch reads as a missing route: %q", s)
		}
		if s, _ := res["noRoute"].(string); !strings.Contains(s, "upgrade thatch") {
			t.Errorf("a route the daemon lacks: %q", s)
		}
	})
}
