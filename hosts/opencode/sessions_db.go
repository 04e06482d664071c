package opencode

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// ErrMoveRefused is returned, wrapped, by MoveSession when opencode
// answers 400 MoveSessionError: the destination belongs to another
// project (a move works within one project only) or the session is gone.
// The error's text holds opencode's message.
var ErrMoveRefused = errors.New("opencode: move refused")

// ListProjectSessions returns every session of the project the client's
// directory belongs to, whatever directory each session records
// (GET /session?scope=project): the sessions of every worktree of one git
// repository, deleted worktrees included. The client's directory must
// exist: opencode boots an instance there to answer.
func (c *Client) ListProjectSessions(ctx context.Context) ([]Session, error) {
	var out []Session
	err := c.do(ctx, call{method: http.MethodGet, path: "/session", idempotent: true, query: url.Values{"scope": {"project"}}}, &out)
	return out, err
}

// Projects returns every project the server knows (GET /project), each
// with its canonical checkout (Worktree).
func (c *Client) Projects(ctx context.Context) ([]Project, error) {
	var out []Project
	err := c.do(ctx, call{method: http.MethodGet, path: "/project", idempotent: true}, &out)
	return out, err
}

// MoveSessionChecked is MoveSession with its answer checked: a 400
// MoveSessionError becomes ErrMoveRefused (wrapped, with opencode's
// message), and a 404 means the server has no move route (ErrNotFound).
func (c *Client) MoveSessionChecked(ctx context.Context, sessionID, directory string) error {
	err := c.MoveSession(ctx, sessionID, directory)
	var he *HTTPError
	if errors.As(err, &he) && he.StatusCode == http.StatusBadRequest && strings.Contains(he.Body, "MoveSessionError") {
		return fmt.Errorf("%w: %s", ErrMoveRefused, he.Body)
	}
	return err
}

// SessionDB is what ReadSessionDB found in opencode's database.
type SessionDB struct {
	// Sessions are every session row that is not archived, machine-wide.
	Sessions []Session
	// Projects are every project row with its canonical checkout.
	Projects []Project
}

// DefaultSessionDB is where opencode keeps its database:
// $XDG_DATA_HOME/opencode/opencode.db, else
// ~/.local/share/opencode/opencode.db; "" when neither is known. getenv
// is os.Getenv in the daemon.
func DefaultSessionDB(getenv func(string) string) string {
	if d := getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "opencode", "opencode.db")
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".local", "share", "opencode", "opencode.db")
}

// ReadSessionDB reads every session and project row of opencode's
// database at path, opened read-only (the v2 API has no session list that
// spans directories, and a sweep needs machine-wide rows). It never
// writes: the connection is read-only and query-only. ctx bounds the
// whole read.
func ReadSessionDB(ctx context.Context, path string) (SessionDB, error) {
	var out SessionDB
	if _, err := os.Stat(path); err != nil {
		return out, fmt.Errorf("opencode: session database: %w", err)
	}
	dsn := "file:" + path + "?mode=ro&_pragma=query_only(1)&_pragma=busy_timeout(2000)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return out, fmt.Errorf("opencode: open session database: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	rows, err := db.QueryContext(ctx, `SELECT id, project_id, COALESCE(parent_id, ''), directory, title,
		COALESCE(version, ''), time_created, time_updated FROM session WHERE time_archived IS NULL`)
	if err != nil {
		return out, fmt.Errorf("opencode: read sessions from %s: %w", path, err)
	}
	for rows.Next() {
		var s Session
		if err := rows.Scan(&s.ID, &s.ProjectID, &s.ParentID, &s.Directory, &s.Title, &s.Version, &s.Time.Created, &s.Time.Updated); err != nil {
			rows.Close()
			return out, fmt.Errorf("opencode: read a session row: %w", err)
		}
		out.Sessions = append(out.Sessions, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("opencode: read sessions from %s: %w", path, err)
	}
	prow, err := db.QueryContext(ctx, `SELECT id, worktree, COALESCE(vcs, '') FROM project`)
	if err != nil {
		return out, fmt.Errorf("opencode: read projects from %s: %w", path, err)
	}
	defer prow.Close()
	for prow.Next() {
		var p Project
		if err := prow.Scan(&p.ID, &p.Worktree, &p.VCS); err != nil {
			return out, fmt.Errorf("opencode: read a project row: %w", err)
		}
		out.Projects = append(out.Projects, p)
	}
	return out, prow.Err()
}
