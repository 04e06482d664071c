package agents

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrNoProcess is returned by ProcTree for a pid that is not running.
var ErrNoProcess = errors.New("agents: no such process")

// procRoot is where ProcTree reads processes; tests keep /proc.
const procRoot = "/proc"

// LsofTimeout bounds one lsof run: lsof can hang on a stale network mount.
const LsofTimeout = 5 * time.Second

// Proc is one process of a pane's process tree.
type Proc struct {
	PID, PPID int
	// Name is the kernel's name for it (/proc/<pid>/comm, at most 15
	// bytes): the executable's base name, or what the program set as its
	// title.
	Name string
	// Cmdline is its arguments joined by spaces; "" for a zombie or a
	// kernel thread.
	Cmdline string
	// State is the kernel's one-letter state ('R', 'S', 'T' stopped, 'Z'
	// zombie, ...); 0 when unknown.
	State byte
	// SID is the process's session id: a daemon an agent starts leaves
	// the pane's session (setsid).
	SID int
}

// ProcTree returns pid and all its descendants, read from /proc (Linux),
// or from one run of ps (PSArgs, ParsePS) where /proc is missing (macOS):
// pid first, then breadth first, children in pid order, so a process
// comes before the processes it started.
func ProcTree(pid int) ([]Proc, error) {
	if !procAvailable() {
		return psTree(pid)
	}
	root, err := readProc(pid)
	if err != nil {
		return nil, err
	}
	if out, ok := childTree(root); ok {
		return out, nil
	}
	return scanTree(root)
}

// childTree walks down from root through /proc/<pid>/task/<tid>/children
// (Linux 3.5 and later, with CONFIG_PROC_CHILDREN): it reads the pane's
// own processes only, where scanTree reads every process on the machine.
// ok is false when the kernel does not offer the files.
func childTree(root Proc) ([]Proc, bool) {
	out := []Proc{root}
	for i := 0; i < len(out) && len(out) < maxTree; i++ {
		kids, ok := childPIDs(out[i].PID)
		if !ok {
			if i == 0 {
				return nil, false
			}
			continue // it ended while we looked
		}
		for _, k := range kids {
			if p, err := readProc(k); err == nil && p.PPID == out[i].PID {
				out = append(out, p)
			}
		}
	}
	return out, true
}

// maxTree bounds a pane's process tree (a fork bomb in a pane must not
// stall a check).
const maxTree = 4096

// childPIDs lists the children of pid over all its threads, sorted.
func childPIDs(pid int) ([]int, bool) {
	tasks, err := os.ReadDir(filepath.Join(procRoot, strconv.Itoa(pid), "task"))
	if err != nil {
		return nil, false
	}
	var kids []int
	found := false
	for _, t := range tasks {
		data, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "task", t.Name(), "children"))
		if err != nil {
			continue
		}
		found = true
		for _, f := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(f); err == nil {
				kids = append(kids, n)
			}
		}
	}
	sort.Ints(kids)
	return kids, found
}

// scanTree finds root's descendants by reading every process's parent.
func scanTree(root Proc) ([]Proc, error) {
	pid := root.PID
	es, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("agents: list %s: %w", procRoot, err)
	}
	var all []Proc
	for _, e := range es {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n == pid {
			continue
		}
		p, err := readProc(n)
		if err != nil {
			continue // it ended while we looked
		}
		all = append(all, p)
	}
	return descendants(root, all), nil
}

// descendants returns root and those of all that descend from it, breadth
// first, children in pid order, at most maxTree processes.
func descendants(root Proc, all []Proc) []Proc {
	children := map[int][]Proc{}
	for _, p := range all {
		if p.PID != root.PID {
			children[p.PPID] = append(children[p.PPID], p)
		}
	}
	out := []Proc{root}
	for i := 0; i < len(out) && len(out) < maxTree; i++ {
		kids := children[out[i].PID]
		sort.Slice(kids, func(a, b int) bool { return kids[a].PID < kids[b].PID })
		out = append(out, kids...)
	}
	return out
}

// readProc reads one process's stat and cmdline.
func readProc(pid int) (Proc, error) {
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return Proc{}, fmt.Errorf("%w: %d: %w", ErrNoProcess, pid, err)
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses,
	// so it ends at the last ')'.
	lp, rp := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if lp < 0 || rp < lp {
		return Proc{}, fmt.Errorf("%w: %d: unreadable stat", ErrNoProcess, pid)
	}
	fields := strings.Fields(string(stat[rp+1:]))
	if len(fields) < 4 {
		return Proc{}, fmt.Errorf("%w: %d: short stat", ErrNoProcess, pid)
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return Proc{}, fmt.Errorf("%w: %d: ppid %q", ErrNoProcess, pid, fields[1])
	}
	p := Proc{PID: pid, PPID: ppid, Name: string(stat[lp+1 : rp]), State: fields[0][0]}
	p.SID, _ = strconv.Atoi(fields[3])
	if cl, err := os.ReadFile(filepath.Join(dir, "cmdline")); err == nil {
		p.Cmdline = strings.TrimSpace(strings.ReplaceAll(string(cl), "\x00", " "))
	}
	return p, nil
}

// Detect returns which agent runs in a pane whose process tree is tree
// (as ProcTree returns it): the first process, in tree order, that some
// agent's Detect matches, agents tried in Names order. The process nearest
// the pane wins, so an agent that runs another agent as a tool is still
// itself. A process that cannot take input does not count: one stopped
// (Ctrl-Z), a zombie, or a daemon that left the pane's session (codex's
// app-server outlives the TUI that started it). Nor does a shell: the one
// that runs a launch line ("sh -ic 'claude ...'") names the agent in its
// arguments, and stays while the agent it started is stopped or gone.
func (r *Registry) Detect(tree []Proc) (name string, ok bool) {
	for _, p := range tree {
		if !Runs(p) || isShell(p.Name) || (tree[0].SID != 0 && p.SID != 0 && p.SID != tree[0].SID) {
			continue
		}
		for _, n := range r.namesOrder() {
			if r.agents[n].Matches(p) {
				return n, true
			}
		}
	}
	return "", false
}

// isShell reports a process named as a shell (its kernel name).
func isShell(name string) bool {
	switch strings.TrimPrefix(name, "-") {
	case "sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "tcsh", "csh", "ash", "busybox":
		return true
	}
	return false
}

// Runs reports whether p is running or waiting as usual: not stopped
// (by a signal or a tracer), a zombie or dead.
func Runs(p Proc) bool {
	switch p.State {
	case 'T', 't', 'Z', 'X', 'x':
		return false
	}
	return true
}

// openFiles returns the paths of the files the processes of pids hold
// open, by the registry's OpenFiles mode.
func (r *Registry) openFiles(ctx context.Context, pids []int) []string {
	switch r.openMode {
	case OpenFilesOff:
		return nil
	case OpenFilesProc:
		return procFDs(pids)
	}
	paths, err := r.lsofFiles(ctx, pids)
	if err == nil {
		return paths
	}
	if r.openMode == OpenFilesLsof {
		r.logger.Debug("lsof failed", "error", err)
		return nil
	}
	r.logger.Debug("lsof failed; reading /proc/<pid>/fd", "error", err)
	return procFDs(pids)
}

// lsofFiles runs lsof over pids in its field output mode (-F): "p<pid>",
// "f<fd>", "a<access>", "t<type>", "n<name>" lines. Only files open for
// writing count: an agent writes its own session, and may read another's
// (codex reads older sessions' transcripts while it starts), which must
// not be taken for its own.
func (r *Registry) lsofFiles(ctx context.Context, pids []int) ([]string, error) {
	bin, err := exec.LookPath(r.lsof)
	if err != nil {
		return nil, fmt.Errorf("agents: lsof: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, LsofTimeout)
	defer cancel()
	list := make([]string, len(pids))
	for i, p := range pids {
		list[i] = strconv.Itoa(p)
	}
	// -a: and the selections; -n -P: no DNS or port names; -w: no warnings.
	cmd := exec.CommandContext(ctx, bin, "-a", "-n", "-P", "-w", "-p", strings.Join(list, ","), "-F", "ftan")
	out, err := cmd.Output()
	// lsof exits 1 when one of the pids has gone; its output still counts.
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && len(out) > 0) {
		return nil, fmt.Errorf("agents: lsof -p %s: %w", strings.Join(list, ","), err)
	}
	var paths []string
	typ, access := "", ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l == "" {
			continue
		}
		switch l[0] {
		case 'f':
			typ, access = "", ""
		case 'a':
			access = l[1:]
		case 't':
			typ = l[1:]
		case 'n':
			if typ == "REG" && (access == "w" || access == "u") {
				paths = append(paths, l[1:])
			}
		}
	}
	return paths, nil
}

// readOnly reports whether the process pid holds its descriptor fd open
// for reading only (its fdinfo's flags; false when they cannot be read).
func readOnly(pid int, fd string) bool {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "fdinfo", fd))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return err == nil && flags&3 == 0 // O_RDONLY
		}
	}
	return false
}

// procFDs reads the targets of /proc/<pid>/fd/* for each pid; it sees
// only the caller's own user's processes, which the agents are.
func procFDs(pids []int) []string {
	var paths []string
	for _, pid := range pids {
		dir := filepath.Join(procRoot, strconv.Itoa(pid), "fd")
		es, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range es {
			t, err := os.Readlink(filepath.Join(dir, e.Name()))
			if err != nil || !strings.HasPrefix(t, "/") {
				continue // sockets, pipes, anon inodes
			}
			if readOnly(pid, e.Name()) {
				continue // another session read, not the agent's own
			}
			paths = append(paths, strings.TrimSuffix(t, " (deleted)"))
		}
	}
	return paths
}
