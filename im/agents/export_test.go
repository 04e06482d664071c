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

// ListSessionsForTest is the listing findNewest polls with.
func ListSessionsForTest(a *Agent, cwd string, since time.Time) ([]Session, error) {
	return a.listSessions(cwd, since)
}
