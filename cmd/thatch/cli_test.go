package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// isolate points every place a command could read config or data from at
// temporary directories.
func isolate(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	for _, kv := range [][2]string{
		{"HOME", home}, {"XDG_CONFIG_HOME", filepath.Join(home, "config")},
		{"XDG_DATA_HOME", filepath.Join(home, "data")}, {"XDG_STATE_HOME", filepath.Join(home, "state")},
		{"XDG_RUNTIME_DIR", filepath.Join(home, "run")}, {"THATCH_CONFIG", ""},
	} {
		t.Setenv(kv[0], kv[1])
	}
	return home
}

// quiet sends what runners print to os.Stdout and os.Stderr to
// /dev/null until the test ends.
func quiet(t *testing.T) {
	t.Helper()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = null, null
	t.Cleanup(func() { os.Stdout, os.Stderr = stdout, stderr; null.Close() })
}

// paths lists every command of table with its words ("memory list").
func paths(table []*command) [][]string {
	var out [][]string
	var walk func(prefix []string, cs []*command)
	walk = func(prefix []string, cs []*command) {
		for _, c := range cs {
			p := append(append([]string{}, prefix...), c.name)
			out = append(out, p)
			walk(p, c.subs)
		}
	}
	walk(nil, table)
	return out
}

// TestHelpOfEveryCommand: `thatch WORDS --help` (and -h, and `thatch help
// WORDS`) exits 0 and prints that command's synopsis and its own flags,
// not the daemon's config flags (only serve owns those).
func TestHelpOfEveryCommand(t *testing.T) {
	isolate(t)
	table := commands()
	daemonOnly := "--control-listen" // a config key: serve lists it, no other command
	for _, p := range paths(table) {
		c, _ := lookup(table, p)
		for _, args := range [][]string{append(p[:len(p):len(p)], "--help"), append(p[:len(p):len(p)], "-h"), append([]string{"help"}, p...)} {
			var out, errb bytes.Buffer
			if code := dispatch(table, args, &out, &errb); code != 0 {
				t.Errorf("thatch %s: exit %d, want 0 (stderr %q)", strings.Join(args, " "), code, errb.String())
				continue
			}
			help := out.String()
			if want := "Usage: thatch " + strings.Join(p, " "); !strings.HasPrefix(help, want) {
				t.Errorf("thatch %s: help starts %q, want %q", strings.Join(args, " "), firstLine(help), want)
			}
			c.ownFlags().VisitAll(func(f *pflag.Flag) {
				if !strings.Contains(help, "--"+f.Name) {
					t.Errorf("thatch %s: help does not list its flag --%s", strings.Join(args, " "), f.Name)
				}
			})
			if p[0] != "serve" && strings.Contains(help, daemonOnly) {
				t.Errorf("thatch %s: help lists the daemon's flags:\n%s", strings.Join(args, " "), help)
			}
			for _, s := range c.subs {
				if !strings.Contains(help, "  "+s.name) {
					t.Errorf("thatch %s: help does not list the subcommand %s", strings.Join(args, " "), s.name)
				}
			}
		}
	}
	var out, errb bytes.Buffer
	if code := dispatch(table, []string{"serve", "--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), daemonOnly) {
		t.Errorf("thatch serve --help: exit %d, does not list %s", code, daemonOnly)
	}
}

// TestTopHelpListsEveryCommand: `thatch help`, `thatch --help` and -h exit
// 0 with every command of the table; no command at all is a usage error.
func TestTopHelpListsEveryCommand(t *testing.T) {
	table := commands()
	for _, arg := range []string{"help", "--help", "-h"} {
		var out, errb bytes.Buffer
		if code := dispatch(table, []string{arg}, &out, &errb); code != 0 {
			t.Fatalf("thatch %s: exit %d", arg, code)
		}
		for _, c := range table {
			if !strings.Contains(out.String(), "  "+c.name+" ") {
				t.Errorf("thatch %s does not list %s:\n%s", arg, c.name, out.String())
			}
		}
	}
	var out, errb bytes.Buffer
	if code := dispatch(table, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "Commands:") {
		t.Errorf("thatch with no command: exit %d, stderr %q; want 2 and the command list", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := dispatch(table, []string{"frobnicate"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown command "frobnicate"`) {
		t.Errorf("thatch frobnicate: exit %d, stderr %q", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := dispatch(table, []string{"help", "frobnicate"}, &out, &errb); code != 2 {
		t.Errorf("thatch help frobnicate: exit %d, want 2", code)
	}
}

// TestUnknownFlagExits2: every runnable command refuses a flag it does not
// have with exit code 2, before doing anything.
func TestUnknownFlagExits2(t *testing.T) {
	home := isolate(t)
	quiet(t)
	table := commands()
	for _, p := range paths(table) {
		if p[0] == "help" {
			continue
		}
		args := append(append([]string{}, p...), "--no-such-flag", "--data-dir", filepath.Join(home, "d"))
		if code := dispatch(table, args, &bytes.Buffer{}, &bytes.Buffer{}); code != 2 {
			t.Errorf("thatch %s: exit %d, want 2", strings.Join(args, " "), code)
		}
	}
}

// TestDeclaredFlagsAreAccepted: the commands whose runners parse flags of
// their own (in commands.go and install.go) accept every flag their table
// entry declares; an exit code 2 would be a flag error.
func TestDeclaredFlagsAreAccepted(t *testing.T) {
	home := isolate(t)
	quiet(t)
	data := filepath.Join(home, "d")
	table := commands()
	value := func(f *pflag.Flag) []string {
		if f.NoOptDefVal != "" {
			return []string{"--" + f.Name}
		}
		switch f.Name {
		case "config":
			cfg := filepath.Join(home, "thatch.toml")
			if err := os.WriteFile(cfg, []byte(""), 0o600); err != nil {
				t.Fatal(err)
			}
			return []string{"--config", cfg}
		case "project":
			return []string{"--project", t.TempDir()}
		case "opencode-version":
			return []string{"--opencode-version", "1.0.0"}
		}
		return []string{"--" + f.Name, "x"}
	}
	for _, p := range [][]string{{"check-config"}, {"status"}, {"repair"}, {"repair", "list"}, {"install", "opencode"}} {
		c, _ := lookup(table, p)
		c.ownFlags().VisitAll(func(f *pflag.Flag) {
			args := append(append([]string{}, p...), value(f)...)
			args = append(args, "--data-dir", data)
			if p[0] == "install" && f.Name != "skip-npm" {
				args = append(args, "--skip-npm")
			}
			if code := dispatch(table, args, &bytes.Buffer{}, &bytes.Buffer{}); code == 2 {
				t.Errorf("thatch %s: exit 2: the runner does not accept the flag its table entry declares", strings.Join(args, " "))
			}
		})
	}
}

// TestBashCompletion: the bash script parses, and completing in a real
// bash offers commands, subcommands and each command's own flags.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	var script bytes.Buffer
	if err := writeCompletion(&script, "bash", commands()); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "thatch.bash")
	if err := os.WriteFile(file, script.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bash, "-n", file).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		line string
		want []string
		not  []string
	}{
		{"thatch ", []string{"serve", "memory", "hygiene", "completion", "version"}, []string{"--json"}},
		{"thatch mem", []string{"memory"}, []string{"serve"}},
		{"thatch memory ", []string{"list", "export", "import"}, []string{"serve"}},
		{"thatch memory export --", []string{"--store", "--config"}, []string{"--json", "--limit", "--data-dir"}},
		{"thatch memory --store acme/app search --", []string{"--limit"}, []string{"--verdict"}},
		{"thatch hygiene --", []string{"--resolve", "--verdict"}, []string{"--limit"}},
		{"thatch completion ", []string{"bash", "zsh", "fish"}, nil},
		{"thatch status --store x --", []string{"--all", "--json"}, nil},
	} {
		cmd := exec.Command(bash, "-c", `source "$1"; read -ra COMP_WORDS <<<"$2"; [[ "$2" == *" " ]] && COMP_WORDS+=(""); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _thatch; printf '%s\n' "${COMPREPLY[@]}"`, "bash", file, tc.line)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("complete %q: %v\n%s", tc.line, err, out)
		}
		got := strings.Fields(string(out))
		for _, w := range tc.want {
			if !contains(got, w) {
				t.Errorf("complete %q: %v lacks %s", tc.line, got, w)
			}
		}
		for _, w := range tc.not {
			if contains(got, w) {
				t.Errorf("complete %q: %v offers %s", tc.line, got, w)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestZshAndFishCompletion: each script names every command path and
// flag of the table; where zsh or fish is installed, it also parses.
func TestZshAndFishCompletion(t *testing.T) {
	table := commands()
	for _, shell := range []string{"zsh", "fish"} {
		var script bytes.Buffer
		if err := writeCompletion(&script, shell, table); err != nil {
			t.Fatal(err)
		}
		s := script.String()
		for _, n := range completionTree(table) {
			quoted := shellQuote(n.path)
			if shell == "fish" {
				quoted = fishQuote(n.path)
			}
			if !strings.Contains(s, quoted) {
				t.Errorf("%s script lacks the command %s", shell, n.path)
			}
			for _, f := range n.flags {
				if shell == "fish" && !strings.Contains(s, "-n "+fishQuote("__thatch_at "+fishQuote(n.path))+" -l "+f.Name) {
					t.Errorf("fish script does not complete --%s after %s", f.Name, n.path)
				}
			}
		}
		if shell == "zsh" {
			if !strings.HasPrefix(s, "#compdef thatch\n") || !strings.Contains(s, "compdef _thatch thatch") {
				t.Errorf("zsh script is not a completion function:\n%s", s)
			}
			if !strings.Contains(s, `'thatch memory export' '--config --store'`) {
				t.Errorf("zsh script does not offer export's flags")
			}
		}
		file := filepath.Join(t.TempDir(), "thatch."+shell)
		if err := os.WriteFile(file, script.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		bin, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("%s is not installed; checked the script's content only", shell)
			continue
		}
		if out, err := exec.Command(bin, "-n", file).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", shell, err, out)
			continue
		}
		switch shell {
		case "zsh":
			// Loading it into a zsh with completion on registers it.
			out, err := exec.Command(bin, "-f", "-c", `autoload -Uz compinit && compinit -u -d "$2" && source "$1" && print -r -- ${_comps[thatch]}`,
				"zsh", file, filepath.Join(t.TempDir(), "zcompdump")).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "_thatch" {
				t.Errorf("zsh: loading the script: %v\n%s", err, out)
			}
		case "fish":
			for line, want := range map[string]string{
				"thatch memory ":          "export\twrite every memory",
				"thatch memory export --": "--store\t",
				"thatch hygiene --v":      "--verdict\t",
				"thatch completion ":      "fish\t",
			} {
				out, err := exec.Command(bin, "--no-config", "-c", `source $argv[1]; complete -C $argv[2]`, file, line).CombinedOutput()
				if err != nil || !strings.Contains(string(out), want) {
					t.Errorf("fish: complete %q: %v\n%s\nwant a line with %q", line, err, out, want)
				}
			}
		}
	}
	if err := writeCompletion(&bytes.Buffer{}, "tcsh", table); err == nil {
		t.Error("a completion script for tcsh")
	}
}

// TestCompletionFollowsTheTable: a command added to the table is in the
// help and every completion script without further work.
func TestCompletionFollowsTheTable(t *testing.T) {
	table := append(commands(), &command{name: "frob", summary: "frobnicate", config: true,
		flags: func(fs *pflag.FlagSet) { fs.Bool("hard", false, "frobnicate hard") },
		subs:  []*command{{name: "deep", summary: "deeper"}}})
	var help bytes.Buffer
	printTopHelp(&help, table)
	if !strings.Contains(help.String(), "frob") {
		t.Error("help lacks the new command")
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		var s bytes.Buffer
		if err := writeCompletion(&s, shell, table); err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{"frob", "deep", "hard"} {
			if !strings.Contains(s.String(), w) {
				t.Errorf("%s script lacks %s", shell, w)
			}
		}
	}
}
