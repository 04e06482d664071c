package plugin

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRenderFillsPaths(t *testing.T) {
	js, err := Render(Paths{StateFile: `/data/th"at/control.json`, TokenFile: "/data/thatch/control.token"})
	if err != nil {
		t.Fatal(err)
	}
	s := string(js)
	for _, want := range []string{
		`const DEFAULT_STATE_FILE = "/data/th\"at/control.json";`,
		`const DEFAULT_TOKEN_FILE = "/data/thatch/control.token";`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("rendered plugin lacks %s", want)
		}
	}
	if strings.Contains(s, "{{") {
		t.Error("a placeholder is left in the rendered plugin")
	}
}

func TestSourceExportsOnlyThePluginFunction(t *testing.T) {
	// opencode 1.18.33 fails a plugin module with any export that is not a
	// plugin function.
	var exports []string
	for _, line := range strings.Split(Source(), "\n") {
		if strings.HasPrefix(line, "export ") {
			exports = append(exports, line)
		}
	}
	if len(exports) != 1 || !strings.HasPrefix(exports[0], "export const ThatchPlugin = async (input) =>") {
		t.Errorf("exports: %q", exports)
	}
}

// call is one request the fake daemon received.
type call struct {
	Path string
	Auth string
	Body map[string]any
}

type fakeDaemon struct {
	mu    sync.Mutex
	calls []call
}

func (d *fakeDaemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/test/registered" {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, c := range d.calls {
			if c.Path == "/v1/opencode/register" {
				_, _ = io.WriteString(w, "true")
				return
			}
		}
		_, _ = io.WriteString(w, "false")
		return
	}
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	d.mu.Lock()
	d.calls = append(d.calls, call{Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: body})
	d.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/v1/opencode/register":
		_, _ = io.WriteString(w, `{"host":"opencode@127.0.0.1:4999","api":"v1"}`)
	case "/v1/opencode/payload":
		_, _ = io.WriteString(w, `{"interactions":[{"tool":"read"}],"projectStore":"o/r","globalStore":"global"}`)
	case "/v1/opencode/done":
		_, _ = io.WriteString(w, `{"completed":3}`)
	case "/v1/memory/remember":
		if body["label"] == "taken" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"memory: \"taken\" already exists"}`)
			return
		}
		_, _ = io.WriteString(w, `{"slug":"x","op":"new"}`)
	default:
		_, _ = io.WriteString(w, `{"ok":true}`)
	}
}

// driver loads the plugin the way opencode does (a default-less ES module
// whose export is called with the plugin input) and exercises its hooks
// and tools, printing each tool's answer as a JSON line.
const driver = `
import { ThatchPlugin } from "./plugin/thatch.js";
const base = process.env.DAEMON;
const hooks = await ThatchPlugin({
  client: { app: { log: async () => { throw new Error("logging is down too"); } } },
  directory: "/work/proj", worktree: "/work/proj",
  serverUrl: new URL("http://127.0.0.1:4999"),
});
for (let i = 0; i < 200; i++) {
  if ((await (await fetch(base + "/test/registered")).text()) === "true") break;
  await new Promise((r) => setTimeout(r, 10));
}
const long = "x".repeat(3000);
await hooks["tool.execute.after"]({ tool: "read", sessionID: "ses_p", callID: "c1", args: { filePath: long, nested: { deep: long }, n: 1 } }, { title: "t", output: long, metadata: {} });
for (const t of ["thatch_extraction_done", "skill", "task", "subagent", "memory_remember", "memory_recall"]) {
  await hooks["tool.execute.after"]({ tool: t, sessionID: "ses_p", callID: "c-" + t, args: {} }, { title: "", output: "", metadata: {} });
}
await hooks["tool.execute.after"]({ tool: "memory_graph", sessionID: "ses_p", callID: "c3", args: {} }, { title: "", output: "another plugin's memory tool", metadata: {} });
await hooks["tool.execute.after"]({ tool: "mcp_thing", sessionID: "ses_p", callID: "c2", args: {} }, { content: [{ type: "text", text: "mcp" }] });
await hooks["command.execute.before"]({ command: "thatch/compact", sessionID: "ses_p", arguments: "soon" }, { parts: [] });
await hooks["command.execute.before"]({ command: "init", sessionID: "ses_p", arguments: "" }, { parts: [] });
const ctx = { sessionID: "ses_child", messageID: "m", agent: "build", abort: new AbortController().signal };
const out = {};
out.payload = await hooks.tool.thatch_get_extraction_payload.execute({ session_id: "ses_p" }, ctx);
out.done = await hooks.tool.thatch_extraction_done.execute({}, ctx);
out.remember = await hooks.tool.memory_remember.execute({ label: "l", content: "c", confidence: 7 }, ctx);
out.taken = await hooks.tool.memory_remember.execute({ label: "taken", content: "c" }, ctx);
out.forgetNothing = await hooks.tool.memory_forget.execute({}, ctx);
process.env.THATCH_CONTROL_STATE_FILE = process.env.MISSING;
out.down = await hooks.tool.memory_recall.execute({ query: "q" }, ctx);
await hooks["tool.execute.after"]({ tool: "read", sessionID: "ses_p", callID: "c3", args: {} }, { title: "", output: "", metadata: {} });
out.hookSurvived = true;
await hooks.dispose();
const warnings = [];
const inProcess = await ThatchPlugin({
  client: { app: { log: async ({ body }) => { warnings.push(body.message); } } },
  directory: "/work/tui", worktree: "/work/tui",
  serverUrl: new URL("http://localhost:4096"),
});
out.noServerWarning = warnings.join("\n");
await inProcess.dispose();
console.log(JSON.stringify(out));
`

// stubPackage stands in for @opencode-ai/plugin: tool() returns its input
// and tool.schema is a zod-like builder that accepts any chain of calls.
const stubPackage = `
const chain = new Proxy(function () {}, { get: () => chain, apply: () => chain });
export function tool(input) { return input; }
tool.schema = chain;
`

// runDriver installs the plugin against daemon, runs driver under node
// next to it and returns the JSON object the driver prints. It skips the
// test without node.
func runDriver(t *testing.T, daemon http.Handler, driver string, env ...string) map[string]any {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	dir := t.TempDir()
	srv := httptest.NewServer(daemon)
	t.Cleanup(srv.Close)
	state := filepath.Join(dir, "control.json")
	token := filepath.Join(dir, "control.token")
	st, _ := json.Marshal(map[string]any{"addr": strings.TrimPrefix(srv.URL, "http://"), "pid": 42, "startedAt": time.Now()})
	must(t, os.WriteFile(state, st, 0o600))
	must(t, os.WriteFile(token, []byte("sekrit-token-0123456789\n"), 0o600))
	js, err := Render(Paths{StateFile: state, TokenFile: token})
	must(t, err)
	must(t, os.MkdirAll(filepath.Join(dir, "plugin"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "plugin", FileName), js, 0o644))
	pkg := filepath.Join(dir, "node_modules", "@opencode-ai", "plugin")
	must(t, os.MkdirAll(pkg, 0o755))
	must(t, os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"@opencode-ai/plugin","type":"module","exports":{".":"./index.js"}}`), 0o644))
	must(t, os.WriteFile(filepath.Join(pkg, "index.js"), []byte(stubPackage), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"type":"module"}`), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "driver.mjs"), []byte(driver), 0o644))

	cmd := exec.Command(node, "driver.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DAEMON="+srv.URL, "MISSING="+filepath.Join(dir, "nope.json"), "OPENCODE_THATCH_POLL_MS=50",
		"THATCH_CONTROL_STATE_FILE=", "THATCH_CONTROL_TOKEN_FILE=", "THATCH_DATA_DIR=")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("driver: %v\n%s\n%s", err, out, stderr)
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("driver output %q: %v", out, err)
	}
	return res
}

func TestPluginAgainstFakeDaemon(t *testing.T) {
	fd := &fakeDaemon{}
	res := runDriver(t, fd, driver)

	fd.mu.Lock()
	calls := append([]call(nil), fd.calls...)
	fd.mu.Unlock()
	byPath := map[string][]call{}
	for _, c := range calls {
		if c.Auth != "Bearer sekrit-token-0123456789" {
			t.Errorf("%s sent Authorization %q", c.Path, c.Auth)
		}
		byPath[c.Path] = append(byPath[c.Path], c)
	}

	t.Run("registers its server, unless opencode has none listening", func(t *testing.T) {
		reg := byPath["/v1/opencode/register"]
		if len(reg) != 1 {
			t.Fatalf("%d registrations (the in-process TUI server must not register)", len(reg))
		}
		if w, _ := res["noServerWarning"].(string); !strings.Contains(w, "--port 0") {
			t.Errorf("no warning for an opencode without a listening server: %q", w)
		}
		if reg[0].Body["url"] != "http://127.0.0.1:4999/" || reg[0].Body["directory"] != "/work/proj" || reg[0].Body["pid"] == nil {
			t.Errorf("register body %v", reg[0].Body)
		}
	})
	t.Run("forwards tool calls, cut, and skips its own and dispatch tools", func(t *testing.T) {
		tools := byPath["/v1/opencode/tool"]
		var names []string
		for _, c := range tools {
			names = append(names, c.Body["tool"].(string))
		}
		if strings.Join(names, ",") != "read,memory_graph,mcp_thing" {
			t.Fatalf("forwarded tools %v (the call made with the daemon gone must not arrive)", names)
		}
		first := tools[0].Body
		if first["host"] != "opencode@127.0.0.1:4999" || first["sessionID"] != "ses_p" || first["callID"] != "c1" {
			t.Errorf("tool body %v", first)
		}
		if n := len([]rune(first["output"].(string))); n != 2001 {
			t.Errorf("output cut to %d runes, want 2000 and an ellipsis", n)
		}
		args := first["args"].(map[string]any)
		if n := len([]rune(args["filePath"].(string))); n != 2001 {
			t.Errorf("top-level string arg cut to %d runes", n)
		}
		if n := len(args["nested"].(map[string]any)["deep"].(string)); n != 3000 {
			t.Errorf("nested arg changed to %d chars; only top-level strings are cut", n)
		}
		if !strings.Contains(tools[2].Body["output"].(string), "mcp") {
			t.Errorf("a non-string output is sent as JSON: %v", tools[2].Body)
		}
	})
	t.Run("forwards only thatch commands", func(t *testing.T) {
		cmds := byPath["/v1/opencode/command"]
		if len(cmds) != 1 || cmds[0].Body["command"] != "thatch/compact" || cmds[0].Body["arguments"] != "soon" {
			t.Errorf("commands %v", cmds)
		}
	})
	t.Run("tools act for the calling session", func(t *testing.T) {
		p := byPath["/v1/opencode/payload"]
		if len(p) != 1 || p[0].Body["sessionID"] != "ses_child" || p[0].Body["target"] != "ses_p" {
			t.Errorf("payload calls %v", p)
		}
		if !strings.Contains(res["payload"].(string), `"interactions":[{"tool":"read"}]`) {
			t.Errorf("payload answer %q", res["payload"])
		}
		if res["done"] != "Acknowledged: 3 interaction(s) completed." {
			t.Errorf("done answer %q", res["done"])
		}
		rem := byPath["/v1/memory/remember"]
		if len(rem) != 2 || rem[0].Body["sessionID"] != "ses_child" || rem[0].Body["confidence"] != float64(7) {
			t.Errorf("remember calls %v", rem)
		}
		if _, ok := rem[0].Body["store"]; ok {
			t.Errorf("an unset optional argument was sent: %v", rem[0].Body)
		}
	})
	t.Run("errors reach the model as text", func(t *testing.T) {
		if s := res["taken"].(string); !strings.Contains(s, `"taken" already exists`) || !strings.HasPrefix(s, "thatch: saving the memory failed") {
			t.Errorf("daemon error answer %q", s)
		}
		if s := res["forgetNothing"].(string); !strings.Contains(s, "needs a label or a slug") {
			t.Errorf("forget without key %q", s)
		}
		if s := res["down"].(string); !strings.Contains(s, "the thatch daemon is not running") || !strings.Contains(s, "thatch serve") {
			t.Errorf("daemon down answer %q", s)
		}
		if res["hookSurvived"] != true {
			t.Error("a hook threw with the daemon down")
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
