package agents

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PSTimeout bounds one ps run, where ProcTree falls back to ps.
const PSTimeout = 5 * time.Second

// PSArgs are the arguments ProcTree runs ps with where /proc is missing
// (macOS): every process, with its pid, parent, command name and command
// line, and no header. Both BSD ps (macOS) and procps (Linux) take them.
var PSArgs = []string{"-axo", "pid=,ppid=,comm=,args="}

// procAvailable reports whether ProcTree can read /proc. A variable so
// that a test on Linux can take the ps path.
var procAvailable = func() bool {
	_, err := os.Stat(filepath.Join(procRoot, "self", "stat"))
	return err == nil
}

// runPS runs ps with PSArgs and returns its output. A variable so that a
// test can feed captured output.
var runPS = func() ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), PSTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ps", PSArgs...).Output()
	if err != nil {
		return nil, fmt.Errorf("agents: ps %s: %w", strings.Join(PSArgs, " "), err)
	}
	return out, nil
}

// psTree is ProcTree where /proc is missing: one ps run, then the same
// walk as scanTree. ps says nothing of a process's state or session here,
// so State and SID stay 0 and Detect cannot skip a stopped agent or a
// daemon that left the pane's session.
func psTree(pid int) ([]Proc, error) {
	out, err := runPS()
	if err != nil {
		return nil, err
	}
	all := ParsePS(out)
	for _, p := range all {
		if p.PID == pid {
			return descendants(p, all), nil
		}
	}
	return nil, fmt.Errorf("%w: %d: not in ps output", ErrNoProcess, pid)
}

// ParsePS reads the output of `ps -axo pid=,ppid=,comm=,args=` (PSArgs):
// one process a line, pid and parent pid, then the command name and the
// command line, which both may hold spaces (macOS reports the command as
// the executable's full path, "/Applications/Visual Studio Code.app/...";
// Linux pads it to 15 columns, and a program may name itself "tmux:
// server"). Where the name ends is a guess, tried in this order at each
// run of spaces, the first such run winning:
//
//  1. the command line starts with the name (argv[0] is the executable,
//     as on macOS), or with '-' and the name (a login shell);
//  2. the command line's first word is a path ending in "/name" (Linux:
//     the name is the executable's base name);
//  3. the run is of two spaces or more (the column padding);
//  4. the first run of spaces.
//
// A run of two spaces or more is never inside a name. Name is the base
// name of a command given as a path, to match /proc/<pid>/comm. Lines
// that do not start with two numbers are skipped. State and SID are 0:
// ps was not asked for them.
func ParsePS(out []byte) []Proc {
	var procs []Proc
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	for sc.Scan() {
		if p, ok := parsePSLine(sc.Text()); ok {
			procs = append(procs, p)
		}
	}
	return procs
}

func parsePSLine(line string) (Proc, bool) {
	rest := strings.TrimLeft(line, " \t")
	var nums [2]int
	for i := range nums {
		end := strings.IndexAny(rest, " \t")
		if end < 0 {
			return Proc{}, false
		}
		n, err := strconv.Atoi(rest[:end])
		if err != nil {
			return Proc{}, false
		}
		nums[i], rest = n, strings.TrimLeft(rest[end:], " \t")
	}
	rest = strings.TrimRight(rest, " \t\r")
	if rest == "" {
		return Proc{}, false
	}
	comm, args := splitCommArgs(rest)
	name := comm
	if strings.HasPrefix(comm, "/") {
		name = filepath.Base(comm)
	}
	return Proc{PID: nums[0], PPID: nums[1], Name: name, Cmdline: args}, true
}

// splitCommArgs splits "comm<spaces>args" by the rules of ParsePS.
func splitCommArgs(rest string) (comm, args string) {
	type gap struct{ start, end int }
	var gaps []gap
	for i := 0; i < len(rest); {
		if rest[i] != ' ' && rest[i] != '\t' {
			i++
			continue
		}
		j := i
		for j < len(rest) && (rest[j] == ' ' || rest[j] == '\t') {
			j++
		}
		gaps = append(gaps, gap{i, j})
		if j-i >= 2 {
			break // later runs are inside the command line
		}
		i = j
	}
	if len(gaps) == 0 {
		return rest, ""
	}
	for _, rule := range []func(c, a string, width int) bool{
		func(c, a string, _ int) bool { return startsWithWord(a, c) || startsWithWord(a, "-"+c) },
		func(c, a string, _ int) bool { return pathEndsIn(a, c) },
		func(_, _ string, width int) bool { return width >= 2 },
	} {
		for _, g := range gaps {
			if c, a := rest[:g.start], rest[g.end:]; rule(c, a, g.end-g.start) {
				return c, a
			}
		}
	}
	g := gaps[0]
	return rest[:g.start], rest[g.end:]
}

// startsWithWord reports whether s is w, or starts with w and a space.
func startsWithWord(s, w string) bool {
	return strings.HasPrefix(s, w) && (len(s) == len(w) || s[len(w)] == ' ')
}

// pathEndsIn reports whether s starts with a path (no run of two spaces
// in it) whose last element is name, followed by a space or the end.
func pathEndsIn(s, name string) bool {
	i := strings.Index(s, "/"+name)
	if i < 0 || strings.Contains(s[:i], "  ") {
		return false
	}
	rest := s[i+1+len(name):]
	return rest == "" || rest[0] == ' '
}
