package agents

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
)

// MimoQueryTimeout bounds one read of mimo's database: a writer holding
// a lock must not stall a picker or a session search.
const MimoQueryTimeout = 5 * time.Second

// mimoPromptParts is how many parts of a session are read looking for
// its first prompt.
const mimoPromptParts = 200

// MimoDB returns the path of MiMo Code's database for the registry's home
// directory: ~/.local/share/mimocode/mimocode.db (opencode's layout,
// opencode.db under $XDG_DATA_HOME/opencode, with MiMo Code's names).
// $XDG_DATA_HOME is not honoured.
func (a *Agent) MimoDB() string {
	return filepath.Join(a.home, ".local", "share", "mimocode", "mimocode.db")
}

// openMimo opens mimo's database read only. ok is false, with no error,
// when there is no database yet (mimo never ran): no sessions.
func (a *Agent) openMimo() (db *sql.DB, ok bool, err error) {
	path := a.MimoDB()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, fmt.Errorf("agents: mimo database: %w", err)
	}
	// mode=ro: never create or write it. query_only: not even by mistake.
	// busy_timeout: mimo writes it while we read (WAL).
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "busy_timeout(2000)")
	q.Add("_pragma", "query_only(1)")
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	db, err = sql.Open("sqlite", u.String())
	if err != nil {
		return nil, false, fmt.Errorf("agents: open mimo database %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, true, nil
}

// mimoSessions lists the top-level sessions (not a subagent's, not
// archived) whose directory is cwd and that were updated at since or
// later (zero: all), newest first, at most limit (<= 0: all). Path stays
// "": mimo keeps no transcript file.
func (a *Agent) mimoSessions(cwd string, since time.Time, limit int) ([]Session, error) {
	db, ok, err := a.openMimo()
	if err != nil || !ok {
		return nil, err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), MimoQueryTimeout)
	defer cancel()
	var after int64
	if !since.IsZero() {
		after = since.UnixMilli()
	}
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := db.QueryContext(ctx, `SELECT id, title, time_updated FROM session
		WHERE directory = ? AND parent_id IS NULL AND time_archived IS NULL AND time_updated >= ?
		ORDER BY time_updated DESC, id LIMIT ?`, cwd, after, limit)
	if err != nil {
		return nil, fmt.Errorf("agents: list mimo sessions in %s: %w", a.MimoDB(), err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		var s Session
		var updated int64
		if err := rows.Scan(&s.ID, &s.Title, &updated); err != nil {
			return nil, fmt.Errorf("agents: read mimo sessions in %s: %w", a.MimoDB(), err)
		}
		if !ValidSessionID(s.ID) {
			continue // typed into a shell by ResumeCommand
		}
		s.Modified = time.UnixMilli(updated)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("agents: read mimo sessions in %s: %w", a.MimoDB(), err)
	}
	return out, nil
}

// mimoFirstPrompts fills in each session's first prompt: the first text
// part, not synthetic, of a user message. A session with none shows its
// title instead.
func (a *Agent) mimoFirstPrompts(list []Session) {
	if len(list) == 0 {
		return
	}
	db, ok, err := a.openMimo()
	if err != nil || !ok {
		return
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), MimoQueryTimeout)
	defer cancel()
	for i := range list {
		list[i].FirstPrompt = cutPrompt(mimoFirstPrompt(ctx, db, list[i].ID))
		if list[i].FirstPrompt == "" {
			list[i].FirstPrompt = cutPrompt(list[i].Title)
		}
	}
}

func mimoFirstPrompt(ctx context.Context, db *sql.DB, session string) string {
	rows, err := db.QueryContext(ctx, `SELECT m.data, p.data FROM part p JOIN message m ON m.id = p.message_id
		WHERE p.session_id = ? ORDER BY m.time_created, m.id, p.id LIMIT ?`, session, mimoPromptParts)
	if err != nil {
		return ""
	}
	defer rows.Close()
	for rows.Next() {
		var msg, part []byte
		if rows.Scan(&msg, &part) != nil {
			return ""
		}
		var m mimoMessage
		var p mimoPart
		if json.Unmarshal(msg, &m) != nil || m.Role != "user" || json.Unmarshal(part, &p) != nil {
			continue
		}
		if t := strings.TrimSpace(p.Text); p.Type == "text" && !p.Synthetic && t != "" && !strings.HasPrefix(t, "<") {
			return t
		}
	}
	return ""
}

// mimoMessage is the part of a message row's data the readers use:
// {"role":"assistant","time":{"created":...,"completed":...},"finish":...}.
type mimoMessage struct {
	Role string `json:"role"`
	Time struct {
		Created   int64 `json:"created"`
		Completed int64 `json:"completed"`
	} `json:"time"`
}

// mimoPart is the part of a part row's data the readers use: {"type":
// "text","text":...} for text; "synthetic" marks text opencode added
// itself, "ignored" text that is not shown.
type mimoPart struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	Synthetic bool   `json:"synthetic"`
	Ignored   bool   `json:"ignored"`
}

// mimoTurn is one message of a mimo session as the readers see it: its
// text parts (not synthetic, not ignored, not blank) in order.
type mimoTurn struct {
	id       string
	created  int64 // time_created, Unix ms: the readers' cursor
	role     string
	finished bool // an assistant message whose time.completed is set
	texts    []string
}

// mimoTurns calls fn with each message of session created after after
// (Unix ms), oldest first, until fn returns false. withText: read the
// parts too (else texts stays nil: a cursor needs no text). ok is false
// when the session is not in the database (or there is no database).
func (a *Agent) mimoTurns(ctx context.Context, sessionID string, after int64, withText bool, fn func(mimoTurn) bool) (ok bool, err error) {
	if a.format != formatMimo || !ValidSessionID(sessionID) {
		return false, nil
	}
	db, ok, err := a.openMimo()
	if err != nil || !ok {
		return false, err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, MimoQueryTimeout)
	defer cancel()
	var one int
	switch err := db.QueryRowContext(ctx, `SELECT 1 FROM session WHERE id = ?`, sessionID).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("agents: read mimo session %s: %w", sessionID, err)
	}
	q := `SELECT m.id, m.time_created, m.data, NULL FROM message m
		WHERE m.session_id = ? AND m.time_created > ? ORDER BY m.time_created, m.id`
	if withText {
		q = `SELECT m.id, m.time_created, m.data, p.data FROM message m LEFT JOIN part p ON p.message_id = m.id
		WHERE m.session_id = ? AND m.time_created > ? ORDER BY m.time_created, m.id, p.id`
	}
	rows, err := db.QueryContext(ctx, q, sessionID, after)
	if err != nil {
		return true, fmt.Errorf("agents: read mimo session %s: %w", sessionID, err)
	}
	defer rows.Close()
	var cur mimoTurn
	for rows.Next() {
		var id string
		var created int64
		var msg []byte
		var part sql.NullString
		if err := rows.Scan(&id, &created, &msg, &part); err != nil {
			return true, fmt.Errorf("agents: read mimo session %s: %w", sessionID, err)
		}
		if id != cur.id {
			if cur.id != "" && !fn(cur) {
				return true, nil
			}
			var m mimoMessage
			if json.Unmarshal(msg, &m) != nil {
				m.Role = ""
			}
			cur = mimoTurn{id: id, created: created, role: m.Role, finished: m.Role == "assistant" && m.Time.Completed != 0}
		}
		if !part.Valid || len(part.String) > MaxLine {
			continue
		}
		var p mimoPart
		if json.Unmarshal([]byte(part.String), &p) == nil && p.Type == "text" && !p.Synthetic && !p.Ignored && strings.TrimSpace(p.Text) != "" {
			cur.texts = append(cur.texts, p.Text)
		}
	}
	if err := rows.Err(); err != nil {
		return true, fmt.Errorf("agents: read mimo session %s: %w", sessionID, err)
	}
	if cur.id != "" {
		fn(cur)
	}
	return true, nil
}

// SessionReplies reads the replies of a mimo session out of its database:
// the text of each finished assistant message (its time.completed set)
// created after the message at after (a message's time_created, Unix
// milliseconds; 0: from the start), oldest first, one string per message
// (its text parts joined by a blank line; a message with no text, only
// tool calls, gives none), and in ends the time_created of each. next is
// the time_created of the last finished assistant message read, after
// itself when none was: what to pass next time. Reading stops at the
// first assistant message still being written, so a reply is never read
// in part nor skipped. An int64 cursor is what the front end's follower
// journals for transcripts (a byte offset); message creation times, not a
// count, survive a revert that deletes messages. Other agents, and a
// session not in the database, read nothing.
func (a *Agent) SessionReplies(ctx context.Context, sessionID string, after int64) (replies []string, ends []int64, next int64, err error) {
	next = after
	_, err = a.mimoTurns(ctx, sessionID, after, true, func(t mimoTurn) bool {
		switch {
		case t.role != "assistant":
			return true
		case !t.finished:
			return false // still being written: read it whole next time
		}
		if len(t.texts) > 0 {
			replies = append(replies, strings.Join(t.texts, "\n\n"))
			ends = append(ends, t.created)
		}
		next = t.created
		return true
	})
	if err != nil {
		return nil, nil, after, err
	}
	return replies, ends, next, nil
}

// RepliesCursor returns where SessionReplies starts for a session that a
// binding starts following now, and ok false when the session is not in
// mimo's database (its replies then come from the pane). The cursor is
// the last assistant message finished (before any still being written):
// what mimo wrote until now is history, or was relayed from the pane
// while the session was not known. afterPrompt: the user's newest message
// was just typed (the session is looked for right after), so a reply to
// it that finished before this search is new, not history: the cursor
// stays before that message.
func (a *Agent) RepliesCursor(ctx context.Context, sessionID string, afterPrompt bool) (cursor int64, ok bool, err error) {
	var lastPrompt int64
	if afterPrompt {
		ok, err = a.mimoTurns(ctx, sessionID, 0, false, func(t mimoTurn) bool {
			if t.role == "user" {
				lastPrompt = t.created
			}
			return true
		})
		if err != nil || !ok {
			return 0, ok, err
		}
	}
	ok, err = a.mimoTurns(ctx, sessionID, 0, false, func(t mimoTurn) bool {
		if afterPrompt && lastPrompt > 0 && t.created >= lastPrompt {
			return false
		}
		switch {
		case t.role != "assistant":
			return true
		case !t.finished:
			return false
		}
		cursor = t.created
		return true
	})
	if err != nil || !ok {
		return 0, ok, err
	}
	return cursor, true, nil
}

// SessionHistory reads the last n exchanges of a mimo session out of its
// database, as History does of a transcript: each user message's typed
// text (not what opencode added, "<...>") with the text of the finished
// assistant messages after it. ok is false when the session is not in
// the database.
func (a *Agent) SessionHistory(ctx context.Context, sessionID string, n int) (ex []Exchange, ok bool, err error) {
	ok, err = a.mimoTurns(ctx, sessionID, 0, true, func(t mimoTurn) bool {
		switch {
		case t.role == "user":
			for _, text := range t.texts {
				if p := strings.TrimSpace(text); !strings.HasPrefix(p, "<") {
					ex = append(ex, Exchange{Prompt: p})
					if len(ex) > 2*n {
						ex = append(ex[:0], ex[len(ex)-n:]...)
					}
					break
				}
			}
		case t.finished && len(t.texts) > 0:
			if len(ex) == 0 {
				ex = append(ex, Exchange{})
			}
			last := &ex[len(ex)-1]
			last.Replies = append(last.Replies, strings.Join(t.texts, "\n\n"))
		}
		return true
	})
	if err != nil || !ok || n <= 0 {
		return nil, ok, err
	}
	if len(ex) > n {
		ex = ex[len(ex)-n:]
	}
	return ex, true, nil
}

// findMimo takes mimo's session from its database: the one top-level
// session whose directory is q.Dir and that was updated since q.Since
// (the launch). Of several it cannot tell which is this window's (another
// window may run mimo in the same directory), and takes none. mimo creates a session at its first
// prompt, so a search right after the launch finds none; the binding
// asks again once a message is typed. Ids on mimo's screen are never
// taken: they are not its session's (the bug this replaced).
func (r *Registry) findMimo(a *Agent, q FindQuery) (Found, bool) {
	if q.Since.IsZero() || q.Dir == "" {
		return Found{}, false
	}
	list, err := a.mimoSessions(filepath.Clean(q.Dir), q.Since, 0)
	if err != nil {
		r.logger.Debug("cannot read mimo's sessions", "db", a.MimoDB(), "dir", q.Dir, "error", err)
		return Found{}, false
	}
	if len(list) != 1 {
		if len(list) > 1 {
			r.logger.Debug("several new mimo sessions for the directory; taking none", "dir", q.Dir, "count", len(list))
		}
		return Found{}, false
	}
	return Found{ID: list[0].ID, How: HowDB}, true
}
