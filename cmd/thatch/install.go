package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/thatch-run/thatch/hosts/opencode/install"
	"github.com/thatch-run/thatch/hosts/opencode/plugin"
	"github.com/thatch-run/thatch/im/agents"
)

const installUsage = `Usage: thatch install opencode [--global | --project DIR] [--config FILE] [flags]
       thatch install claude|codex [--uninstall] [--config FILE]

Writes the thatch plugin, the /thatch/compact and /thatch/exit commands and the
thatch-fact-extractor skill into an opencode config directory, and installs the
npm package the plugin needs. The plugin finds the daemon through the control
files of the config given here (--config, THATCH_* variables, flags).
`

func runInstall(args []string) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Print(installUsage)
			return 0
		}
		fmt.Fprint(os.Stderr, installUsage)
		return 2
	}
	switch args[0] {
	case "claude", "codex":
		return runInstallAgent(args[0], args[1:])
	case "opencode":
	default:
		fmt.Fprintf(os.Stderr, "thatch install: unknown host %q (opencode, claude or codex)\n\n%s", args[0], installUsage)
		return 2
	}
	var (
		global, skipNPM bool
		project, ocVer  string
	)
	cfg, code, err := loadConfig("install opencode", args[1:], func(fs *pflag.FlagSet) {
		fs.BoolVar(&global, "global", false, "install into $XDG_CONFIG_HOME/opencode, for every project (the default)")
		fs.StringVar(&project, "project", "", "install into DIR/.opencode, for that project only")
		fs.BoolVar(&skipNPM, "skip-npm", false, "do not npm-install @opencode-ai/plugin; opencode then installs it at its first start")
		fs.StringVar(&ocVer, "opencode-version", "", "opencode version whose @opencode-ai/plugin to install (default: `opencode --version`, else "+install.DefaultOpenCodeVersion+")")
	})
	if cfg == nil && err == nil {
		return code
	}
	if cfg == nil {
		fmt.Fprintf(os.Stderr, "thatch install: %v\n", err)
		return code
	}
	// Only the control file paths matter here; other config problems are
	// for `thatch serve` to report.
	if cfg.Control.StateFile == "" || cfg.Control.TokenFile == "" {
		fmt.Fprintln(os.Stderr, "thatch install: cannot tell where the daemon's control files are: set data.dir (or HOME)")
		if err != nil {
			fmt.Fprintf(os.Stderr, "  %v\n", err)
		}
		return 1
	}
	if global && project != "" {
		fmt.Fprintln(os.Stderr, "thatch install: --global and --project exclude each other")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	o := install.Options{
		Scope:           install.Global,
		ProjectDir:      project,
		Environ:         os.Environ(),
		Paths:           plugin.Paths{StateFile: cfg.Control.StateFile, TokenFile: cfg.Control.TokenFile},
		OpenCodeVersion: ocVer,
		SkipNPM:         skipNPM,
	}
	if project != "" {
		o.Scope = install.Project
	}
	if o.OpenCodeVersion == "" && !skipNPM {
		o.OpenCodeVersion = installedOpenCodeVersion(ctx)
	}
	rep, err := install.Install(ctx, o)
	if rep != nil {
		printInstallReport(rep)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch install: %v\n", err)
		return 1
	}
	return 0
}

var semver = regexp.MustCompile(`\b\d+\.\d+\.\d+\b`)

// installedOpenCodeVersion asks the opencode on PATH for its version, so
// the plugin package matches it; "" when there is none.
func installedOpenCodeVersion(ctx context.Context) string {
	path, err := exec.LookPath("opencode")
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return ""
	}
	return semver.FindString(string(out))
}

func printInstallReport(rep *install.Report) {
	fmt.Printf("thatch for opencode in %s\n", rep.ConfigDir)
	for _, c := range rep.Changes {
		fmt.Printf("  %-18s %-32s %s\n", c.Action, c.What, c.Path)
	}
	if !rep.Changed() {
		fmt.Println("Everything was already in place; nothing changed.")
		return
	}
	fmt.Println("Done. This takes effect at the next opencode start: opencode reads plugins, commands and")
	fmt.Println("skills only when it starts, so restart running opencode instances. Start the TUI with")
	fmt.Println("--port 0 (or use `opencode serve`) so that `thatch serve` can reach its server.")
}

// runInstallAgent is `thatch install claude|codex [--uninstall]`: the
// memory's MCP server (and claude's hook) for the agents a user starts by
// hand, at user scope.
func runInstallAgent(agent string, args []string) int {
	var uninstall bool
	cfg, code, err := loadConfig("install "+agent, args, func(fs *pflag.FlagSet) {
		fs.BoolVar(&uninstall, "uninstall", false, "take out what an install put in")
	})
	if cfg == nil {
		if err != nil {
			fmt.Fprintf(os.Stderr, "thatch install %s: %v\n", agent, err)
		}
		return code
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch install %s: thatch's own path: %v\n", agent, err)
		return 1
	}
	home, err := os.UserHomeDir()
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch install %s: %v\n", agent, err)
		return 1
	}
	o := agents.InstallOptions{Home: home, ClaudeConfigDir: os.Getenv("CLAUDE_CONFIG_DIR"), CodexHome: os.Getenv("CODEX_HOME"),
		Thatch: exe, ControlArgs: []string{"--state-file", cfg.Control.StateFile, "--token-file", cfg.Control.TokenFile}}
	install := agents.InstallClaude
	if agent == "codex" {
		install = agents.InstallCodex
	}
	res, err := install(o, uninstall)
	for _, f := range res.Files {
		fmt.Printf("  wrote %s\n", f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch install %s: %v\n", agent, err)
		return 1
	}
	switch {
	case len(res.Files) == 0:
		fmt.Println("Everything was already in place; nothing changed.")
	case uninstall:
		fmt.Printf("thatch is out of %s's user configuration; restart running %s sessions.\n", agent, agent)
	default:
		for _, w := range res.What {
			fmt.Println(w)
		}
		fmt.Printf("Done. Sessions of %s started from now on get thatch's memory; restart running ones.\n", agent)
	}
	return 0
}
