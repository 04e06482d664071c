package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"
)

// command is one entry of the command table (commands in main.go). The
// table is the single source of `thatch help`, each command's --help and
// the shell completion scripts, so adding a command is adding one entry.
type command struct {
	// name is the word that selects the command.
	name string
	// args is the synopsis after the command's words, e.g. "QUERY [--json]".
	args string
	// summary is one line for the list of commands.
	summary string
	// long is optional text printed by --help after the synopsis.
	long string
	// flags registers the command's own flags. Default: nil, no flags of
	// its own.
	flags func(*pflag.FlagSet)
	// config says the command loads the config: it takes --config FILE,
	// and every config key as a flag. Help lists only --config; the keys
	// are listed by `thatch serve --help`.
	config bool
	// files says the command's positional arguments are files (completion
	// offers file names).
	files bool
	// subs are the subcommands, selected by the next word.
	subs []*command
	// run runs the command with the arguments after its name and returns
	// the exit code. A command with subs gets the subcommand's name as
	// args[0]. Nil for commands main handles itself.
	run func(args []string) int
}

// configFlag is the help text of --config, as loadConfig registers it.
const configFlag = "config file (TOML or YAML); default $THATCH_CONFIG or $XDG_CONFIG_HOME/thatch/config.toml"

// fileFlags are the flags whose value is a path (completion offers files).
var fileFlags = map[string]bool{"config": true, "project": true, "profile-start": true}

// lookup finds the command named by words (e.g. "memory", "list"); nil
// when the first word names no command. It descends only through words
// that name a subcommand and returns the deepest one found and the words
// it used.
func lookup(table []*command, words []string) (*command, []string) {
	var cur *command
	var path []string
	subs := table
	for _, w := range words {
		next := find(subs, w)
		if next == nil {
			break
		}
		cur, path, subs = next, append(path, w), next.subs
	}
	return cur, path
}

func find(table []*command, name string) *command {
	for _, c := range table {
		if c.name == name {
			return c
		}
	}
	return nil
}

// wantsHelp reports whether args ask for help (-h or --help before "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "--help":
			return true
		}
	}
	return false
}

// words are the arguments that are not flags, up to "--".
func words(args []string) []string {
	var out []string
	for _, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}

// ownFlags is the flag set help and completion show for c: its own flags,
// and --config when it loads the config.
func (c *command) ownFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	if c.config {
		fs.String("config", "", configFlag)
	}
	if c.flags != nil {
		c.flags(fs)
	}
	return fs
}

// printTopHelp lists the commands of table.
func printTopHelp(w io.Writer, table []*command) {
	fmt.Fprint(w, "thatch: a runtime for the sessions of AI coding agents\n\nUsage: thatch COMMAND [flags]\n\nCommands:\n")
	printCommands(w, table, "")
	fmt.Fprint(w, "\nRun 'thatch COMMAND --help' for a command's flags.\n")
}

func printCommands(w io.Writer, table []*command, prefix string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range table {
		fmt.Fprintf(tw, "  %s%s\t%s\n", prefix, c.name, c.summary)
	}
	tw.Flush()
}

// printHelp prints the help of the command at path: its synopsis, its
// subcommands, and its own flags only.
func printHelp(w io.Writer, c *command, path []string) {
	name := "thatch " + strings.Join(path, " ")
	synopsis := name
	if len(c.subs) > 0 && c.args == "" {
		synopsis += " COMMAND"
	}
	if c.args != "" {
		synopsis += " " + c.args
	}
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", synopsis, c.summary)
	if c.long != "" {
		fmt.Fprintf(w, "\n%s", strings.TrimLeft(c.long, "\n"))
		if !strings.HasSuffix(c.long, "\n") {
			fmt.Fprintln(w)
		}
	}
	if len(c.subs) > 0 {
		fmt.Fprint(w, "\nCommands:\n")
		printCommands(w, c.subs, "")
	}
	fs := c.ownFlags()
	if fs.HasFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", fs.FlagUsages())
	}
	if c.config && c.name != "serve" {
		fmt.Fprint(w, "\nEvery config key is also a flag ('thatch serve --help' lists them), and a THATCH_* variable.\n")
	}
	if len(c.subs) > 0 {
		fmt.Fprintf(w, "\nRun '%s COMMAND --help' for a command's flags.\n", name)
	}
}

// dispatch runs the command line args (without the program name) against
// table and returns the exit code. --help anywhere before "--" prints the
// help of the deepest command named, to stdout, and exits 0.
func dispatch(table []*command, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printTopHelp(stderr, table)
		return 2
	}
	switch args[0] {
	case "help", "-h", "--help":
		if args[0] == "help" && len(words(args[1:])) == 0 && wantsHelp(args[1:]) {
			printHelp(stdout, find(table, "help"), []string{"help"})
			return 0
		}
		if c, path := lookup(table, words(args[1:])); c != nil {
			printHelp(stdout, c, path)
			return 0
		}
		if len(words(args[1:])) > 0 {
			fmt.Fprintf(stderr, "thatch help: unknown command %q\n\n", strings.Join(words(args[1:]), " "))
			printTopHelp(stderr, table)
			return 2
		}
		printTopHelp(stdout, table)
		return 0
	}
	c := find(table, args[0])
	if c == nil {
		fmt.Fprintf(stderr, "thatch: unknown command %q\n\n", args[0])
		printTopHelp(stderr, table)
		return 2
	}
	if wantsHelp(args[1:]) {
		sub, path := lookup(table, words(args))
		printHelp(stdout, sub, path)
		return 0
	}
	if c.run == nil {
		fmt.Fprintf(stderr, "thatch %s: not runnable\n", c.name)
		return 2
	}
	return c.run(args[1:])
}

// runSub runs the subcommand of parent named by args[0]: with none it
// prints parent's help to stderr and returns 2, as for an unknown one.
func runSub(parent *command, args []string) int {
	if len(args) == 0 {
		printHelp(os.Stderr, parent, []string{parent.name})
		return 2
	}
	sub := find(parent.subs, args[0])
	if sub == nil || sub.run == nil {
		fmt.Fprintf(os.Stderr, "thatch %s: unknown command %q\n\n", parent.name, args[0])
		printHelp(os.Stderr, parent, []string{parent.name})
		return 2
	}
	return sub.run(args[1:])
}

// noArgs fails with exit code 2 when a command that takes no arguments
// gets some.
func noArgs(name string, args []string) (int, bool) {
	if len(args) == 0 {
		return 0, true
	}
	fmt.Fprintf(os.Stderr, "thatch %s: takes no arguments, got %q ('thatch %s --help')\n", name, strings.Join(args, " "), name)
	return 2, false
}
