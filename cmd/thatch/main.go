// Command thatch is the thatch daemon and its command-line tools. It wires
// packages together and holds no logic of its own.
package main

import (
	"fmt"
	"os"
)

const usage = `thatch: a runtime for the sessions of AI coding agents

Usage:
  thatch serve [--config FILE] [flags]      run the daemon
  thatch check-config [--config FILE]        print the effective config (secrets redacted) or every error
  thatch status [--all] [--json] [--config FILE]
                                             ask the running daemon for its status
  thatch install opencode [--global | --project DIR]
                                             install the opencode plugin, wrap-up commands and skill
  thatch memory list|search|show|forget      read and edit the memory store (--json for JSON)
  thatch hygiene [--resolve A,B --verdict V]  the memory hygiene report; judge reported pairs
  thatch repair [list|drop|release KIND/ID]  look at and repair entities that cannot recover
  thatch hook claude                         record a starting claude's session (Claude Code SessionStart hook)
  thatch version                             print the version

Run 'thatch COMMAND --help' for a command's flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	var code int
	switch cmd {
	case "serve":
		code = runServe(args)
	case "check-config":
		code = runCheckConfig(args)
	case "status":
		code = runStatus(args)
	case "memory":
		code = runMemory(args)
	case "hygiene":
		code = runHygiene(args)
	case "install":
		code = runInstall(args)
	case "repair":
		code = runRepair(args)
	case "hook":
		code = runHook(args)
	case "version", "--version", "-v":
		fmt.Println(versionString())
	case "help", "--help", "-h":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "thatch: unknown command %q\n\n%s", cmd, usage)
		code = 2
	}
	os.Exit(code)
}
