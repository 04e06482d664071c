package agents

import "time"

// CompareTreesForTest returns pid's tree by the children walk and by the
// full scan; ok is false when the kernel lacks the children files.
func CompareTreesForTest(pid int) (fast, full []Proc, ok bool) {
	root, err := readProc(pid)
	if err != nil {
		return nil, nil, false
	}
	fast, ok = childTree(root)
	full, _ = scanTree(root)
	return fast, full, ok
}

// WithoutProcForTest makes ProcTree act as where /proc is missing,
// taking ps's output from ps (nil: the real ps), until the returned
// function restores it. Tests that call it must not run in parallel.
func WithoutProcForTest(ps func() ([]byte, error)) (restore func()) {
	avail, run := procAvailable, runPS
	procAvailable = func() bool { return false }
	if ps != nil {
		runPS = ps
	}
	return func() { procAvailable, runPS = avail, run }
}

// ListSessionsForTest is the listing findNewest polls with.
func ListSessionsForTest(a *Agent, cwd string, since time.Time) ([]Session, error) {
	return a.listSessions(cwd, since)
}
