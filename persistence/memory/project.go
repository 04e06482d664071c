package memory

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"time"
)

// GitTimeout bounds every git command this package runs. git answers these
// queries from local files in milliseconds; a hang means a broken repository
// or filesystem, and a heartbeat must not wait on it.
const GitTimeout = 5 * time.Second

// ProjectStore is the memory store of the project checked out in dir:
// "owner/repo" from the URL of its "origin" remote, lowercased. A directory
// that is not a git repository, has no origin, or whose origin cannot be
// parsed belongs to GlobalStore.
func ProjectStore(dir string) string {
	out, err := runGit(dir, "remote", "get-url", "origin")
	if err != nil {
		return GlobalStore
	}
	if s, ok := ParseRemote(strings.TrimSpace(out)); ok {
		return s
	}
	return GlobalStore
}

// ParseRemote extracts "owner/repo" (lowercased, without ".git") from a git
// remote URL in any of git's forms:
//
//	git@github.com:owner/repo.git
//	ssh://git@host:2222/owner/repo.git
//	https://user:token@host/owner/repo
//	/srv/git/owner/repo.git, file:///srv/git/owner/repo.git
//
// A path with more than two segments (GitLab subgroups) keeps the last two.
// ok is false when no owner/repo pair can be found.
func ParseRemote(remote string) (store string, ok bool) {
	r := strings.TrimSpace(remote)
	if r == "" {
		return "", false
	}
	var p string
	if i := strings.Index(r, "://"); i >= 0 {
		rest := r[i+3:]
		j := strings.IndexByte(rest, '/')
		if j < 0 {
			return "", false
		}
		p = rest[j:]
	} else if c := strings.IndexByte(r, ':'); c > 0 && !strings.Contains(r[:c], "/") {
		// scp-like syntax: [user@]host:path
		p = r[c+1:]
	} else {
		p = r
	}
	p = strings.TrimRight(p, "/")
	p = strings.TrimSuffix(p, ".git")
	p = strings.Trim(path.Clean("/"+p), "/")
	parts := strings.Split(p, "/")
	if len(parts) < 2 {
		return "", false
	}
	owner, repo := parts[len(parts)-2], parts[len(parts)-1]
	if owner == "" || repo == "" || owner == "." || repo == "." || owner == ".." || repo == ".." {
		return "", false
	}
	s := strings.ToLower(owner + "/" + repo)
	if checkName("store", s) != nil {
		return "", false
	}
	return s, true
}

// GitBranches lists the local branches of the repository in dir (the names
// under refs/heads). An empty list with a nil error means git knows no
// branches (for example a repository without commits); callers then skip
// the orphaned-branch check rather than call every branch memory orphaned.
func GitBranches(dir string) ([]string, error) {
	out, err := runGit(dir, "for-each-ref", "--format=%(refname)", "refs/heads")
	if err != nil {
		return nil, err
	}
	var bs []string
	for line := range strings.SplitSeq(out, "\n") {
		if b, ok := strings.CutPrefix(strings.TrimSpace(line), "refs/heads/"); ok && b != "" {
			bs = append(bs, b)
		}
	}
	return bs, nil
}

func runGit(dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), GitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return "", fmt.Errorf("memory: git %s in %s: %w: %s", strings.Join(args, " "), dir, err, msg)
	}
	return stdout.String(), nil
}
