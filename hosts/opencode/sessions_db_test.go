package opencode

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// plantSessionDB writes a database with the columns of opencode 1.18's
// session and project tables that the reader uses.
func plantSessionDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "opencode.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL, vcs text, sandboxes text NOT NULL)`,
		`CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text, slug text NOT NULL,
			directory text NOT NULL, title text NOT NULL, version text NOT NULL, time_created integer NOT NULL,
			time_updated integer NOT NULL, time_archived integer)`,
		`INSERT INTO project VALUES ('prj1', '/src/main', 'git', '[]')`,
		`INSERT INTO session VALUES ('ses_top', 'prj1', NULL, 's', '/src/wt', 'real', '1.18.33', 1, 2, NULL)`,
		`INSERT INTO session VALUES ('ses_x', 'prj1', 'ses_top', 's', '/src/wt', 'thatch-extraction', '1.18.33', 3, 4, NULL)`,
		`INSERT INTO session VALUES ('ses_old', 'prj1', NULL, 's', '/src/wt', 'archived', '1.18.33', 5, 6, 7)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return path
}

func TestReadSessionDBReadsMachineWideRowsAndWritesNothing(t *testing.T) {
	path := plantSessionDB(t)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := ReadSessionDB(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Sessions) != 2 {
		t.Fatalf("want the two unarchived sessions, got %+v", got.Sessions)
	}
	byID := map[string]Session{}
	for _, s := range got.Sessions {
		byID[s.ID] = s
	}
	if x := byID["ses_x"]; x.ParentID != "ses_top" || x.Title != "thatch-extraction" || x.Directory != "/src/wt" || x.ProjectID != "prj1" {
		t.Fatalf("child row %+v", x)
	}
	if len(got.Projects) != 1 || got.Projects[0].Worktree != "/src/main" {
		t.Fatalf("projects %+v", got.Projects)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("reading the database changed it")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("reading left files beside the database: %v", entries)
	}
}

func TestReadSessionDBOfAMissingFileFailsWithoutMakingIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.db")
	if _, err := ReadSessionDB(context.Background(), path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the reader created the database")
	}
}

func TestDefaultSessionDBFollowsXDG(t *testing.T) {
	env := map[string]string{"XDG_DATA_HOME": "/x/data", "HOME": "/h"}
	if got := DefaultSessionDB(func(k string) string { return env[k] }); got != "/x/data/opencode/opencode.db" {
		t.Fatal(got)
	}
	delete(env, "XDG_DATA_HOME")
	if got := DefaultSessionDB(func(k string) string { return env[k] }); got != "/h/.local/share/opencode/opencode.db" {
		t.Fatal(got)
	}
}

func TestProjectListingAndCheckedMove(t *testing.T) {
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/session":
			reply(200, `[{"id":"ses_a","directory":"/gone","projectID":"p"}]`)(n, w, r)
		case r.URL.Path == "/project":
			reply(200, `[{"id":"p","worktree":"/main","sandboxes":[]}]`)(n, w, r)
		case n == 4: // the second move
			reply(400, `{"name":"MoveSessionError","data":{"message":"Destination directory belongs to another project"}}`)(n, w, r)
		default:
			reply(204, "")(n, w, r)
		}
	})
	c := newTestClient(t, f, func(o *Options) { o.Directory = "/main" })
	ctx := context.Background()
	ss, err := c.ListProjectSessions(ctx)
	if err != nil || len(ss) != 1 || ss[0].Directory != "/gone" {
		t.Fatalf("sessions %+v %v", ss, err)
	}
	ps, err := c.Projects(ctx)
	if err != nil || len(ps) != 1 || ps[0].Worktree != "/main" {
		t.Fatalf("projects %+v %v", ps, err)
	}
	if err := c.MoveSessionChecked(ctx, "ses_a", "/main"); err != nil {
		t.Fatal(err)
	}
	err = c.MoveSessionChecked(ctx, "ses_other", "/elsewhere")
	if !errors.Is(err, ErrMoveRefused) || !strings.Contains(err.Error(), "another project") {
		t.Fatalf("refused move: %v", err)
	}
	reqs := f.requests()
	if reqs[0].Query != "directory=%2Fmain&scope=project" && reqs[0].Query != "scope=project&directory=%2Fmain" {
		t.Fatalf("listing query %q", reqs[0].Query)
	}
}
