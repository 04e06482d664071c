// Command thatch is the thatch daemon and its command-line tools. It wires
// packages together and holds no logic of its own.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/opencode/install"
)

// commands is the command table: `thatch help`, every command's --help
// and the completion scripts come from it. Adding a command is adding one
// entry here (see command in cli.go for the fields).
func commands() []*command {
	return []*command{
		{name: "serve", args: "[--config FILE] [flags]", summary: "run the daemon", config: true, run: runServe,
			flags: func(fs *pflag.FlagSet) {
				config.RegisterFlags(fs)
				fs.String("profile-start", "", "write a CPU profile of the start (store open, rehydration, mount) to this file, to see why a start is slow")
			}},
		{name: "check-config", args: "[--config FILE]", summary: "print the effective config (secrets redacted) or every error", config: true, run: runCheckConfig},
		{name: "status", args: "[--all] [--json] [--config FILE]", summary: "ask the running daemon for its status", config: true, run: runStatus,
			flags: func(fs *pflag.FlagSet) {
				fs.Bool("json", false, "print the raw JSON status (every session)")
				fs.Bool("all", false, "list every session, also those at rest and deleted ones")
			}},
		{name: "install", summary: "install thatch into an agent host", run: runInstall, subs: []*command{
			{name: "opencode", args: "[--global | --project DIR] [--config FILE] [flags]", config: true,
				long:    installLong,
				summary: "install the opencode plugin, wrap-up commands and skill",
				flags: func(fs *pflag.FlagSet) {
					fs.Bool("global", false, "install into $XDG_CONFIG_HOME/opencode, for every project (the default)")
					fs.String("project", "", "install into DIR/.opencode, for that project only")
					fs.Bool("skip-npm", false, "do not npm-install @opencode-ai/plugin; opencode then installs it at its first start")
					fs.String("opencode-version", "", "opencode version whose @opencode-ai/plugin to install (default: `opencode --version`, else "+install.DefaultOpenCodeVersion+")")
				}},
			{name: "claude", args: "[--uninstall] [--config FILE]", config: true,
				summary: "give the claude you start by hand thatch's memory (MCP server, SessionStart hook), at user scope",
				flags:   func(fs *pflag.FlagSet) { fs.Bool("uninstall", false, "take out what an install put in") }},
			{name: "codex", args: "[--uninstall] [--config FILE]", config: true,
				summary: "give the codex you start by hand thatch's memory (MCP server in ~/.codex/config.toml)",
				flags:   func(fs *pflag.FlagSet) { fs.Bool("uninstall", false, "take out what an install put in") }},
		}},
		memoryCommand(),
		{name: "mcp", args: "[--dir DIR] [--state-file FILE --token-file FILE | --config FILE]", summary: "serve the memory over MCP on stdio (for claude, codex, copilot)", long: mcpLong, flags: mcpFlags, run: runMCP},
		extractionCommand(),
		{name: "hygiene", args: "[--json] [--resolve SLUG_A,SLUG_B --verdict duplicate|distinct --store S]",
			summary: "the memory hygiene report; judge reported pairs", config: true, flags: hygieneFlags, run: runHygiene},
		{name: "ui", args: "[--config FILE]", summary: "print a one-time login URL of the daemon's web page", long: uiLong, config: true, run: runUI},
		{name: "repair", args: "[list|drop|release KIND/ID]", summary: "look at and repair entities that cannot recover", config: true, run: runRepair, subs: []*command{
			{name: "list", summary: "list the quarantined entities and why", config: true},
			{name: "drop", args: "KIND/ID", summary: "delete the entity's journal; it starts afresh (what it held is lost)", config: true},
			{name: "release", args: "KIND/ID", summary: "try the entity again (after its journal or thatch was fixed)", config: true},
		}},
		{name: "hook", summary: "agent hooks thatch installs", run: runHook, subs: []*command{
			{name: "claude", args: "[--settings] [--state-file FILE --token-file FILE | --config FILE]",
				summary: "record a starting claude's session and give it the memory's reminder (Claude Code SessionStart hook, JSON on stdin)",
				flags:   hookFlags},
			{name: "codex", args: "[--state-file FILE --token-file FILE | --config FILE]",
				summary: "tell the daemon of a codex session started by hand, for its memory (codex SessionStart hook, JSON on stdin)",
				flags:   hookFlags},
		}},
		completionCommand(),
		{name: "version", summary: "print the version", run: func(args []string) int {
			if code, ok := noArgs("version", args); !ok {
				return code
			}
			fmt.Println(versionString())
			return 0
		}},
		{name: "help", args: "[COMMAND]", summary: "list the commands, or print a command's help"},
	}
}

const installLong = `Writes the thatch plugin, the /thatch/compact and /thatch/exit commands and the
thatch-fact-extractor skill into an opencode config directory, and installs the
npm package the plugin needs. The plugin finds the daemon through the control
files of the config given here (--config, THATCH_* variables, flags).
`

func main() {
	args := os.Args[1:]
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-v") {
		args[0] = "version"
	}
	os.Exit(dispatch(commands(), args, os.Stdout, os.Stderr))
}
