package install

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/thatch-run/thatch/hosts/opencode/plugin"
)

// PluginPackage is the npm package the plugin imports for tool argument
// schemas.
const PluginPackage = "@opencode-ai/plugin"

// DefaultOpenCodeVersion is the opencode release thatch is tested against;
// @opencode-ai/plugin is published in lockstep with it.
const DefaultOpenCodeVersion = "1.18.33"

var (
	// ErrNoConfigDir is returned when neither the directory to install into
	// nor opencode's global config directory could be determined.
	ErrNoConfigDir = errors.New("install: cannot determine the opencode config directory (set XDG_CONFIG_HOME or HOME)")
	// ErrNPM is returned when npm is needed but missing or failed.
	ErrNPM = errors.New("install: npm install failed")
)

// Scope says which opencode config directory receives thatch.
type Scope int

const (
	// Global installs into $XDG_CONFIG_HOME/opencode, read by every project.
	Global Scope = iota
	// Project installs into <project>/.opencode, read only there.
	Project
)

// Runner runs a command in dir and returns its combined output. Tests
// replace it to install without network.
type Runner func(ctx context.Context, dir, name string, args ...string) ([]byte, error)

// Options describe one install.
type Options struct {
	Scope Scope
	// ProjectDir is the project for Scope Project. Required then.
	ProjectDir string
	// GlobalDir is opencode's global config directory. Default: from
	// Environ and HomeDir, as GlobalConfigDir computes it.
	GlobalDir string
	Environ   []string
	HomeDir   string
	// Paths are the daemon's control files, written into the plugin.
	Paths plugin.Paths
	// OpenCodeVersion picks the @opencode-ai/plugin version to install
	// when it is missing. Default: DefaultOpenCodeVersion.
	OpenCodeVersion string
	// NPM is the npm executable. Default: "npm" from PATH.
	NPM string
	// SkipNPM leaves dependencies to opencode's own first start.
	SkipNPM bool
	// Run runs npm. Default: os/exec.
	Run Runner
}

// Action is what Install did with one path.
type Action string

// Actions a Report lists.
const (
	Created   Action = "created"
	Updated   Action = "updated"
	Unchanged Action = "unchanged"
	// Installed means npm installed the plugin package into the directory.
	Installed Action = "npm installed"
	// Present means the package was already installed there.
	Present Action = "already installed"
	// Skipped means npm was not run (SkipNPM).
	Skipped Action = "skipped"
)

// Change is one line of a Report.
type Change struct {
	Path   string
	What   string // "plugin", "command /thatch/compact", "skill", "dependencies"
	Action Action
}

// Report lists everything Install looked at, in order.
type Report struct {
	// ConfigDir is the opencode config directory thatch went into.
	ConfigDir string
	Changes   []Change
}

// Changed reports whether anything was written or installed.
func (r *Report) Changed() bool {
	for _, c := range r.Changes {
		if c.Action == Created || c.Action == Updated || c.Action == Installed {
			return true
		}
	}
	return false
}

// GlobalConfigDir is where opencode keeps its global config:
// $XDG_CONFIG_HOME/opencode, or ~/.config/opencode. It returns "" when
// neither is known.
func GlobalConfigDir(environ []string, home string) string {
	for i := len(environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(environ[i], "="); ok && k == "XDG_CONFIG_HOME" {
			if filepath.IsAbs(v) {
				return filepath.Join(v, "opencode")
			}
			break
		}
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".config", "opencode")
}

// file is one file Install keeps in sync.
type file struct {
	rel     string
	what    string
	content []byte
}

// Files returns the files Install writes into a config directory, with
// paths relative to it.
func Files(p plugin.Paths) (map[string][]byte, error) {
	fs, err := files(p)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(fs))
	for _, f := range fs {
		out[f.rel] = f.content
	}
	return out, nil
}

func files(p plugin.Paths) ([]file, error) {
	js, err := plugin.Render(p)
	if err != nil {
		return nil, err
	}
	return []file{
		{filepath.Join("plugin", plugin.FileName), "plugin", js},
		{filepath.Join("command", "thatch", "compact.md"), "command /thatch/compact", []byte(compactCommand)},
		{filepath.Join("command", "thatch", "exit.md"), "command /thatch/exit", []byte(exitCommand)},
		{filepath.Join("skills", SkillName, "SKILL.md"), "skill " + SkillName, []byte(skill)},
	}, nil
}

// Install writes thatch into the opencode config directory o selects and
// makes sure the plugin's npm dependency is in place.
func Install(ctx context.Context, o Options) (*Report, error) {
	global := o.GlobalDir
	if global == "" {
		home := o.HomeDir
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		global = GlobalConfigDir(o.Environ, home)
	}
	target := global
	if o.Scope == Project {
		if o.ProjectDir == "" {
			return nil, fmt.Errorf("install: a project install needs the project directory")
		}
		abs, err := filepath.Abs(o.ProjectDir)
		if err != nil {
			return nil, fmt.Errorf("install: project directory %s: %w", o.ProjectDir, err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("install: project directory %s does not exist", abs)
		}
		target = filepath.Join(abs, ".opencode")
	}
	if target == "" {
		return nil, ErrNoConfigDir
	}
	fs, err := files(o.Paths)
	if err != nil {
		return nil, err
	}
	rep := &Report{ConfigDir: target}
	for _, f := range fs {
		path := filepath.Join(target, f.rel)
		act, err := syncFile(path, f.content)
		if err != nil {
			return rep, err
		}
		rep.Changes = append(rep.Changes, Change{Path: path, What: f.what, Action: act})
	}
	// opencode installs the package into every config directory it reads,
	// and the global one is always among them.
	dirs := []string{target}
	if global != "" && global != target {
		dirs = append(dirs, global)
	}
	for _, dir := range dirs {
		act, err := ensurePackage(ctx, o, dir)
		rep.Changes = append(rep.Changes, Change{Path: filepath.Join(dir, "node_modules", PluginPackage), What: "dependencies", Action: act})
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// syncFile writes content to path unless it already holds exactly that.
func syncFile(path string, content []byte) (Action, error) {
	old, err := os.ReadFile(path)
	switch {
	case err == nil && bytes.Equal(old, content):
		return Unchanged, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("install: read %s: %w", path, err)
	}
	act := Created
	if err == nil {
		act = Updated
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("install: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".thatch-*")
	if err != nil {
		return "", fmt.Errorf("install: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return "", fmt.Errorf("install: write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return "", fmt.Errorf("install: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("install: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("install: write %s: %w", path, err)
	}
	return act, nil
}

// PackagePresent reports whether dir satisfies opencode's own check, so
// that opencode will not run npm there at start-up: node_modules holds the
// package, and both package.json and package-lock.json name it.
func PackagePresent(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "node_modules", PluginPackage, "package.json")); err != nil {
		return false
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "package.json")); err != nil || json.Unmarshal(b, &pkg) != nil {
		return false
	}
	if _, ok := pkg.Dependencies[PluginPackage]; !ok {
		return false
	}
	var lock struct {
		Packages map[string]struct {
			Dependencies map[string]string `json:"dependencies"`
		} `json:"packages"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "package-lock.json")); err != nil || json.Unmarshal(b, &lock) != nil {
		return false
	}
	_, ok := lock.Packages[""].Dependencies[PluginPackage]
	return ok
}

func ensurePackage(ctx context.Context, o Options, dir string) (Action, error) {
	if PackagePresent(dir) {
		return Present, nil
	}
	if o.SkipNPM {
		return Skipped, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("install: %w", err)
	}
	npm := o.NPM
	if npm == "" {
		npm = "npm"
	}
	run := o.Run
	if run == nil {
		run = execRun(o.Environ)
	}
	version := o.OpenCodeVersion
	if version == "" {
		version = DefaultOpenCodeVersion
	}
	out, err := run(ctx, dir, npm, "install", "--no-audit", "--no-fund", "--save-exact", "--ignore-scripts",
		"--loglevel=error", PluginPackage+"@"+version)
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 2000 {
			msg = msg[len(msg)-2000:]
		}
		return "", fmt.Errorf("%w in %s: %w\n%s\n(without it, opencode installs %s itself at its first start, which takes a while; rerun with --skip-npm to leave it to opencode)",
			ErrNPM, dir, err, msg, PluginPackage)
	}
	if !PackagePresent(dir) {
		return "", fmt.Errorf("%w in %s: npm finished but %s is not installed", ErrNPM, dir, PluginPackage)
	}
	return Installed, nil
}

func execRun(environ []string) Runner {
	return func(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		if environ != nil {
			cmd.Env = environ
		}
		return cmd.CombinedOutput()
	}
}
