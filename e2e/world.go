package e2e

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/ocenv"
)

// Binaries are what SynchronizedBeforeSuite prepares once for every
// process of the suite.
type Binaries struct {
	// Thatch is the built cmd/thatch.
	Thatch string `json:"thatch"`
	// FakeAgent is the built e2e/fakeagent: the IM specs link it as
	// claude, codex, copilot and mimo.
	FakeAgent string `json:"fakeAgent"`
	// OpenCode is the pinned opencode executable ("" when it could not be
	// installed; specs labelled opencode then fail with the reason).
	OpenCode string `json:"opencode"`
	// OpenCodeErr says why OpenCode is empty.
	OpenCodeErr string `json:"opencodeErr,omitempty"`
	// Deps is an opencode config folder where `thatch install` already put
	// @opencode-ai/plugin; worlds copy its node_modules (hard links) so that
	// each spec's install finds the package and skips npm.
	Deps string `json:"deps"`
	// NPMCache is the npm cache shared by every install in the suite.
	NPMCache string `json:"npmCache"`
	// Claude and Codex are the pinned real agent CLIs (install-agents.sh;
	// "" when they could not be installed: the specs that run them fail
	// with AgentsErr).
	Claude    string `json:"claude,omitempty"`
	Codex     string `json:"codex,omitempty"`
	AgentsErr string `json:"agentsErr,omitempty"`
}

// bins is set on every process by SynchronizedBeforeSuite.
var bins Binaries

// World is one spec's private machine: HOME, the XDG folders, a project
// folder and a thatch config, all under a temp dir that Ginkgo removes.
type World struct {
	Root       string
	Home       string
	ConfigHome string
	DataHome   string
	Project    string
	// ThatchConfig is the daemon's config file; DataDir is its data.dir.
	ThatchConfig string
	DataDir      string
	// Env is the environment every process of the world runs with.
	Env []string
}

// NewWorld makes the folders and the environment of one spec. The world
// is private to its spec (see isolation.go): its processes carry its
// marker, and the spec fails if one of them outlives it.
func NewWorld() *World {
	root := GinkgoT().TempDir()
	// Registered before anything starts, so it runs after every other
	// cleanup of the world has stopped what it started.
	DeferCleanup(checkNothingOutlives, root)
	w := &World{
		Root:       root,
		Home:       filepath.Join(root, "home"),
		ConfigHome: filepath.Join(root, "config"),
		DataHome:   filepath.Join(root, "data"),
		Project:    filepath.Join(root, "project"),
		DataDir:    filepath.Join(root, "thatch"),
	}
	for _, d := range []string{w.Home, w.ConfigHome, w.DataHome, w.Project, filepath.Join(root, "cache"), filepath.Join(root, "state")} {
		Expect(os.MkdirAll(d, 0o755)).To(Succeed())
	}
	path := os.Getenv("PATH")
	if bins.OpenCode != "" {
		path = filepath.Dir(bins.OpenCode) + string(os.PathListSeparator) + path
	}
	w.Env = []string{
		"PATH=" + path,
		"HOME=" + w.Home,
		"XDG_CONFIG_HOME=" + w.ConfigHome,
		"XDG_DATA_HOME=" + w.DataHome,
		"XDG_CACHE_HOME=" + filepath.Join(root, "cache"),
		"XDG_STATE_HOME=" + filepath.Join(root, "state"),
		"TMPDIR=" + os.TempDir(),
		"LANG=C.UTF-8",
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_CLAUDE_CODE=1",
		"npm_config_cache=" + bins.NPMCache,
		"npm_config_update_notifier=false",
		// The plugin looks for a restarted daemon this often.
		"OPENCODE_THATCH_POLL_MS=200",
		// No strand sweep unless a spec arms it (sweep_test.go): a sweep
		// must never act on an opencode database by mistake.
		"THATCH_STRAND_SWEEP=off",
		// Every process of the world (and what it starts, tmux and the
		// agents included: the name is not THATCH_*, so config.ChildEnv
		// keeps it) carries the world's marker.
		worldMarker + "=" + root,
	}
	w.ThatchConfig = filepath.Join(root, "thatch.toml")
	w.WriteThatchConfig()
	w.WriteReadme(w.Project)
	return w
}

// NewProject makes another project folder in the world, with a README.
func (w *World) NewProject(name string) string {
	dir := filepath.Join(w.Root, name)
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	w.WriteReadme(dir)
	return dir
}

// WriteReadme gives a project the README the scripted turns read.
func (w *World) WriteReadme(dir string) {
	Expect(os.WriteFile(filepath.Join(dir, "README.md"),
		[]byte("# demo\n\nBuild with `make build`; the tests need CGO_ENABLED=1.\n"), 0o644)).To(Succeed())
}

// WriteThatchConfig writes the daemon's config: data in DataDir, debug
// logs (the harness waits for some of them), and a short finish grace for
// extraction children found idle after a reconnect.
func (w *World) WriteThatchConfig() {
	cfg := strings.Join([]string{
		"[data]",
		"dir = " + quote(w.DataDir),
		"[log]",
		`level = "trace"`,
		"[opencode]",
		`finish_grace = "1s"`,
		`request_timeout = "10s"`,
		"",
	}, "\n")
	Expect(os.WriteFile(w.ThatchConfig, []byte(cfg), 0o644)).To(Succeed())
}

// SeedDeps gives the world's global opencode config folder the plugin's
// npm dependency from the suite's template, as an earlier install would
// have, so that this spec's install and opencode start run no npm.
func (w *World) SeedDeps() {
	Expect(bins.Deps).NotTo(BeEmpty(), "the suite has no dependency template")
	dst := filepath.Join(w.ConfigHome, "opencode")
	Expect(ocenv.CopyTree(bins.Deps, dst)).To(Succeed())
}

func quote(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
}
