//go:build capture

// Command capture regenerates im/agents/testdata/mimo/mimocode.db, the
// SQLite fixture of the mimo reader. MiMo Code is built on opencode and
// keeps opencode's database, so the fixture is written by the real
// opencode server the e2e suite installs (e2e/opencode.version, installed
// by e2e/install-opencode.sh), in a private HOME and XDG tree, with its
// only model the e2e suite's fake (e2e/fakemodel) on 127.0.0.1:
//
//	oc="$(bash e2e/install-opencode.sh)"
//	go run -tags capture ./im/agents/testdata/mimo/capture -opencode "$oc" \
//		-deps ~/.cache/thatch-e2e/deps-1.18.33/opencode \
//		-out im/agents/testdata/mimo/mimocode.db
//
// (-deps, optional, is the e2e suite's npm template for opencode's config
// folder, so that opencode installs nothing.) It makes, in /tmp/proj, a
// titled session of two turns (the second calls the read tool, so its
// reply is two assistant messages) and a sub-agent's session under it
// (parent_id), a session in /tmp/other, and a session in /tmp/proj made
// without a title (opencode titles it through the fake model). It stops
// the server by its PID and writes a compact copy of opencode.db to -out:
// the event table emptied, VACUUM INTO, then 512-byte pages. The
// temporary project paths are rewritten to /tmp/proj and /tmp/other in
// the copy, so that the fixture does not change with the temporary
// directory. It lives under testdata so that `go build ./...` and the
// import rules of im/agents never see it.
package main

import (
	"database/sql"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	_ "modernc.org/sqlite"

	"github.com/thatch-run/thatch/e2e/fakemodel"
	"github.com/thatch-run/thatch/e2e/ocenv"
)

func main() {
	bin := flag.String("opencode", "", "the opencode binary")
	out := flag.String("out", "mimocode.db", "where to write the fixture")
	deps := flag.String("deps", "", "an npm dependency template for opencode's config folder (optional)")
	flag.Parse()
	if *bin == "" {
		log.Fatal("capture: -opencode is required")
	}
	root, err := os.MkdirTemp("", "thatch-mimo-capture-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	dirs := map[string]string{}
	for _, d := range []string{"home", "config", "data", "cache", "state", "proj", "other"} {
		dirs[d] = filepath.Join(root, d)
		if err := os.MkdirAll(dirs[d], 0o755); err != nil {
			log.Fatal(err)
		}
	}
	if *deps != "" {
		if err := ocenv.CopyTree(*deps, filepath.Join(dirs["config"], "opencode")); err != nil {
			log.Fatal(err)
		}
	}
	model := fakemodel.New()
	defer model.Close()
	model.On(fakemodel.Rule{Name: "readme", Match: fakemodel.LastUserContains("readme"),
		Steps: []fakemodel.Step{{Text: "The README says: build with `make build`."}}})
	model.On(fakemodel.Rule{Name: "tests", Match: fakemodel.LastUserContains("tests"),
		Steps: []fakemodel.Step{
			{Text: "Let me look.", ToolCalls: []fakemodel.ToolCall{{Name: "read", ArgsFrom: readmeArgs}}},
			{Text: "First part of the answer.\n\nThe tests need CGO_ENABLED=1."},
		}})
	model.Fallback("OK.")
	for _, p := range []string{dirs["proj"], dirs["other"]} {
		if err := os.WriteFile(filepath.Join(p, "README.md"), []byte("# demo\n\nBuild with `make build`.\n"), 0o644); err != nil {
			log.Fatal(err)
		}
		if err := ocenv.WriteProjectConfig(p, model.BaseURL(), fakemodel.ModelID); err != nil {
			log.Fatal(err)
		}
	}
	cmd := exec.Command(*bin, "serve", "--hostname", "127.0.0.1", "--port", "0", "--print-logs", "--log-level", "WARN")
	cmd.Dir = dirs["proj"]
	cmd.Env = []string{
		"PATH=" + filepath.Dir(*bin) + ":" + os.Getenv("PATH"),
		"HOME=" + dirs["home"], "XDG_CONFIG_HOME=" + dirs["config"], "XDG_DATA_HOME=" + dirs["data"],
		"XDG_CACHE_HOME=" + dirs["cache"], "XDG_STATE_HOME=" + dirs["state"], "LANG=C.UTF-8",
		"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1", "OPENCODE_DISABLE_CLAUDE_CODE=1",
	}
	logf, err := os.Create(filepath.Join(root, "opencode.log"))
	if err != nil {
		log.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	base := waitListening(filepath.Join(root, "opencode.log"))
	hc := &http.Client{Timeout: 2 * time.Minute}
	session := func(dir string, create map[string]any, prompts ...string) string {
		q := "?" + url.Values{"directory": {dir}}.Encode()
		var s struct {
			ID string `json:"id"`
		}
		if err := ocenv.CallJSON(hc, "POST", base+"/session"+q, create, &s); err != nil {
			log.Fatal(err)
		}
		for _, p := range prompts {
			body := map[string]any{"parts": []map[string]any{{"type": "text", "text": p}}}
			if err := ocenv.CallJSON(hc, "POST", base+"/session/"+s.ID+"/message"+q, body, nil); err != nil {
				log.Fatal(err)
			}
		}
		log.Printf("session %s in %s", s.ID, dir)
		time.Sleep(1100 * time.Millisecond) // distinct time_updated
		return s.ID
	}
	first := session(dirs["proj"], map[string]any{"title": "Read the readme"}, "What does the readme say?", "And the tests?")
	session(dirs["proj"], map[string]any{"title": "A subagent", "parentID": first}, "Say hi")
	session(dirs["other"], map[string]any{"title": "Elsewhere"}, "Say hi")
	session(dirs["proj"], map[string]any{}, "What is in the readme?")
	_ = cmd.Process.Kill()
	_ = cmd.Wait()

	db, err := sql.Open("sqlite", filepath.Join(dirs["data"], "opencode", "opencode.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		fmt.Sprintf(`UPDATE session SET directory = replace(replace(directory, %q, '/tmp/proj'), %q, '/tmp/other')`, dirs["proj"], dirs["other"]),
		fmt.Sprintf(`UPDATE message SET data = replace(replace(data, %q, '/tmp/proj'), %q, '/tmp/other')`, dirs["proj"], dirs["other"]),
		fmt.Sprintf(`UPDATE part SET data = replace(replace(data, %q, '/tmp/proj'), %q, '/tmp/other')`, dirs["proj"], dirs["other"]),
		`DELETE FROM event`,
		fmt.Sprintf(`UPDATE project SET worktree = replace(replace(worktree, %q, '/tmp/proj'), %q, '/tmp/other')`, dirs["proj"], dirs["other"]),
	} {
		if _, err := db.Exec(strings.ReplaceAll(stmt, `"`, `'`)); err != nil {
			log.Printf("capture: %v (kept as is)", err)
		}
	}
	_ = os.Remove(*out)
	if _, err := db.Exec(`VACUUM INTO ?`, *out); err != nil {
		log.Fatal(err)
	}
	// The smallest pages keep the committed file small (opencode's 4 KiB
	// pages leave most of each table's page empty).
	small, err := sql.Open("sqlite", *out)
	if err != nil {
		log.Fatal(err)
	}
	defer small.Close()
	for _, stmt := range []string{`PRAGMA page_size = 512`, `VACUUM`} {
		if _, err := small.Exec(stmt); err != nil {
			log.Fatal(err)
		}
	}
	log.Printf("wrote %s", *out)
}

// readmeArgs reads the README of the directory the request's system
// prompt names.
func readmeArgs(r *fakemodel.Request) any {
	m := regexp.MustCompile(`Working directory: (\S+)`).FindStringSubmatch(r.System())
	if m == nil {
		return map[string]any{"filePath": "README.md"}
	}
	return map[string]any{"filePath": filepath.Join(m[1], "README.md")}
}

var listening = regexp.MustCompile(`opencode server listening on (http://[0-9.]+:\d+)`)

// waitListening reads the server's log until it says where it listens.
func waitListening(logPath string) string {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(logPath)
		if m := listening.FindSubmatch(b); m != nil {
			return string(m[1])
		}
		time.Sleep(200 * time.Millisecond)
	}
	b, _ := os.ReadFile(logPath)
	log.Fatalf("capture: opencode did not listen:\n%s", b)
	return ""
}
