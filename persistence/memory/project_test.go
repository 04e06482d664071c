package memory

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseRemote(t *testing.T) {
	tests := []struct {
		remote, want string
		ok           bool
	}{
		{"git@github.com:Thatch-Run/Thatch.git", "thatch-run/thatch", true},
		{"git@github.com:owner/repo", "owner/repo", true},
		{"ssh://git@github.com/owner/repo.git", "owner/repo", true},
		{"ssh://git@git.example.com:2222/owner/repo.git/", "owner/repo", true},
		{"https://github.com/owner/repo", "owner/repo", true},
		{"https://github.com/owner/repo.git", "owner/repo", true},
		{"https://user:s3cret@github.com/owner/repo.git", "owner/repo", true},
		{"http://gitlab.example.com/group/sub/repo.git", "sub/repo", true},
		{"git://example.com/owner/repo.git", "owner/repo", true},
		{"file:///srv/git/owner/repo.git", "owner/repo", true},
		{"/srv/git/owner/repo.git", "owner/repo", true},
		{"https://github.com/repo", "", false},
		{"https://github.com", "", false},
		{"git@github.com:repo.git", "", false},
		{"", "", false},
		{"   ", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.remote, func(t *testing.T) {
			got, ok := ParseRemote(tt.remote)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("ParseRemote(%q) = %q, %v; want %q, %v", tt.remote, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func requireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
}

// git runs git in dir with a fixed identity and fails the test on error.
func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func TestProjectStore(t *testing.T) {
	requireGit(t)
	plain := t.TempDir()
	if got := ProjectStore(plain); got != GlobalStore {
		t.Fatalf("ProjectStore(not a repo) = %q, want %q", got, GlobalStore)
	}
	repo := t.TempDir()
	git(t, repo, "init", "-q")
	if got := ProjectStore(repo); got != GlobalStore {
		t.Fatalf("ProjectStore(repo without origin) = %q, want %q", got, GlobalStore)
	}
	git(t, repo, "remote", "add", "origin", "git@github.com:Acme/Widgets.git")
	if got := ProjectStore(repo); got != "acme/widgets" {
		t.Fatalf("ProjectStore(repo) = %q, want acme/widgets", got)
	}
	sub := filepath.Join(repo, "pkg", "deep")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := ProjectStore(sub); got != "acme/widgets" {
		t.Fatalf("ProjectStore(subdir) = %q, want acme/widgets", got)
	}
	if got := ProjectStore(filepath.Join(repo, "missing")); got != GlobalStore {
		t.Fatalf("ProjectStore(missing dir) = %q, want %q", got, GlobalStore)
	}
}

func TestGitBranches(t *testing.T) {
	requireGit(t)
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	bs, err := GitBranches(repo)
	if err != nil || len(bs) != 0 {
		t.Fatalf("branches of unborn repo = %v, %v; want none", bs, err)
	}
	git(t, repo, "commit", "-q", "--allow-empty", "-m", "first")
	git(t, repo, "branch", "feature/login")
	git(t, repo, "branch", "fix-1")
	bs, err = GitBranches(repo)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(bs)
	if want := []string{"feature/login", "fix-1", "main"}; !slices.Equal(bs, want) {
		t.Fatalf("branches = %v, want %v", bs, want)
	}
	git(t, repo, "branch", "-D", "fix-1")
	bs, _ = GitBranches(repo)
	if slices.Contains(bs, "fix-1") {
		t.Fatalf("deleted branch still listed: %v", bs)
	}
	if _, err := GitBranches(t.TempDir()); err == nil {
		t.Fatal("GitBranches outside a repository should fail")
	}
}
