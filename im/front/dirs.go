package front

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
)

// maxJumps is how many quick jumps the browser offers.
const maxJumps = 4

// listDirectory lists a directory for the setup browser. The path the
// binding asks for is only a wish: anything outside the roots, missing or
// not a directory lists the first root instead, so no button press can
// take the browser out of im.roots.
func (f *FrontEnd) listDirectory(ctx context.Context, _ actors.Identity, e *messages.IMListDirectory) any {
	dir := filepath.Clean(e.Path)
	if e.Path == "" || !filepath.IsAbs(dir) || !f.inRoots(dir) || !isDir(dir) {
		dir = f.roots[0]
	}
	if !utf8.ValidString(dir) {
		dir = f.roots[0] // a root or a jump that is not text: start over
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return &messages.IMDirectoryListed{Path: dir, Err: err.Error(), AtRoot: f.isRoot(dir)}
	}
	var dirs []string
	for _, de := range entries {
		name := de.Name()
		if strings.HasPrefix(name, ".") || !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl) {
			// A name that is not text cannot be journaled (or shown on
			// a button) as it is; such a directory is not offered.
			continue
		}
		if de.IsDir() || (de.Type()&os.ModeSymlink != 0 && isDir(filepath.Join(dir, name)) && f.inRoots(filepath.Join(dir, name))) {
			dirs = append(dirs, name)
		}
	}
	sort.Strings(dirs)
	return &messages.IMDirectoryListed{Path: dir, Dirs: dirs, Jumps: f.jumps(ctx), AtRoot: f.isRoot(dir)}
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// inRoots reports whether dir is a root or inside one, after symlinks are
// resolved (a link inside a root may point out of it).
func (f *FrontEnd) inRoots(dir string) bool {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	for _, r := range f.roots {
		rr, err := filepath.EvalSymlinks(r)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(rr, real); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

func (f *FrontEnd) isRoot(dir string) bool { return slices.Contains(f.roots, filepath.Clean(dir)) }

// jumps are the quick jumps: zoxide's ranked directories when zoxide is
// installed, else the directories of recent bindings; only existing
// directories inside the roots.
func (f *FrontEnd) jumps(ctx context.Context) []string {
	var cands []string
	if z := f.zoxide(); z != "" {
		zctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		out, err := exec.CommandContext(zctx, z, "query", "-l").Output()
		cancel()
		if err == nil {
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() && len(cands) < 50 {
				cands = append(cands, strings.TrimSpace(sc.Text()))
			}
		}
	}
	if len(cands) == 0 {
		cands = f.recentDirs()
	}
	var out []string
	for _, c := range cands {
		if len(out) == maxJumps {
			break
		}
		if c != "" && utf8.ValidString(c) && filepath.IsAbs(c) && isDir(c) && f.inRoots(c) && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func (f *FrontEnd) zoxide() string {
	switch f.opts.Zoxide {
	case "-":
		return ""
	case "":
		p, err := exec.LookPath("zoxide")
		if err != nil {
			return ""
		}
		return p
	}
	return f.opts.Zoxide
}

// maxRecent is how many directories of recent bindings are kept.
const maxRecent = 50

// rememberDir records a directory a binding was made in, for quick jumps,
// and forgets the oldest beyond maxRecent.
func (f *FrontEnd) rememberDir(dir string) {
	if err := f.rows.Put(recentTable, dir, nil); err != nil {
		f.log.Debug("cannot record a recent directory", "error", err)
		return
	}
	recent := f.recentDirs()
	for _, old := range recent[min(len(recent), maxRecent):] {
		if err := f.rows.Delete(recentTable, old); err != nil {
			f.log.Debug("cannot forget a recent directory", "error", err)
			return
		}
	}
}

// recentDirs are the directories of recent bindings, newest first.
func (f *FrontEnd) recentDirs() []string {
	type seen struct {
		dir string
		at  time.Time
	}
	var all []seen
	_ = f.rows.Scan(recentTable, func(r persistence.Row) error {
		all = append(all, seen{r.Key, r.WrittenAt})
		return nil
	})
	sort.Slice(all, func(i, j int) bool { return all[i].at.After(all[j].at) })
	out := make([]string, 0, len(all))
	for _, s := range all {
		out = append(out, s.dir)
	}
	return out
}
