// Command fakemimo stands in for MiMo Code (mimo) in the e2e suite, which
// cannot run it: it keeps its sessions where and as the real one does, in
// SQLite at ~/.local/share/mimocode/mimocode.db, in opencode's schema
// (the tables session, message and part as opencode 1.18.33 creates them,
// im/agents/testdata/mimo), in WAL mode, and answers every message with
// "echo: <message>".
//
// As the real one, it makes its session at the first prompt (not at
// start), prints no session id, and draws each reply in a frame ("┃ ")
// as its TUI does: a reply relayed without the frame was read from the
// database, not from the pane. Each reply is written as the real one
// streams it: the assistant message first, its text in part, then the
// whole text and the message's completion time.
//
//	mimo                 a new session in the current directory
//	mimo --resume ID     session ID (exit 1 when the database has none)
//
// It may import only the standard library and the SQLite driver: it must
// not share code with im/agents, so that a reader there that misreads the
// format is caught by a writer here that does not.
package main

import (
	"bufio"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite"
)

// schema is the part of opencode's schema fakemimo writes (opencode
// 1.18.33, read off im/agents/testdata/mimo/mimocode.db).
const schema = "CREATE TABLE IF NOT EXISTS `project` (`id` text PRIMARY KEY, `worktree` text NOT NULL, `vcs` text, `name` text, `icon_url` text, `icon_url_override` text, `icon_color` text, `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `time_initialized` integer, `sandboxes` text NOT NULL, `commands` text);\n" +
	"CREATE TABLE IF NOT EXISTS `session` (`id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text, `parent_id` text, `slug` text NOT NULL, `directory` text NOT NULL, `path` text, `title` text NOT NULL, `version` text NOT NULL, `share_url` text, `summary_additions` integer, `summary_deletions` integer, `summary_files` integer, `summary_diffs` text, `metadata` text, `cost` real DEFAULT 0 NOT NULL, `tokens_input` integer DEFAULT 0 NOT NULL, `tokens_output` integer DEFAULT 0 NOT NULL, `tokens_reasoning` integer DEFAULT 0 NOT NULL, `tokens_cache_read` integer DEFAULT 0 NOT NULL, `tokens_cache_write` integer DEFAULT 0 NOT NULL, `revert` text, `permission` text, `agent` text, `model` text, `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `time_compacting` integer, `time_archived` integer, CONSTRAINT `fk_session_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE);\n" +
	"CREATE TABLE IF NOT EXISTS `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL, CONSTRAINT `fk_message_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE);\n" +
	"CREATE INDEX IF NOT EXISTS `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);\n" +
	"CREATE TABLE IF NOT EXISTS `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL, `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL, CONSTRAINT `fk_part_message_id_message_id_fk` FOREIGN KEY (`message_id`) REFERENCES `message`(`id`) ON DELETE CASCADE);\n" +
	"CREATE INDEX IF NOT EXISTS `part_message_id_id_idx` ON `part` (`message_id`,`id`);\n" +
	"CREATE INDEX IF NOT EXISTS `part_session_idx` ON `part` (`session_id`);\n"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

type mimo struct {
	db      *sql.DB
	cwd     string
	session string // "" until the first prompt
	last    int64  // the last time handed out, Unix ms: times rise
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var resume string
	for i, a := range args {
		if a == "--resume" && i+1 < len(args) {
			resume = args[i+1]
		}
	}
	m, err := open()
	if err != nil {
		fmt.Fprintln(stderr, "mimo:", err)
		return 1
	}
	defer m.db.Close()
	if resume != "" {
		var one int
		if err := m.db.QueryRow("SELECT 1 FROM session WHERE id = ?", resume).Scan(&one); err != nil {
			fmt.Fprintf(stderr, "mimo: session not found: %s\n", resume)
			return 1
		}
		m.session = resume
	}
	fmt.Fprintln(stdout, "mimo (fake)  ctrl+p commands")
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		msg := strings.TrimSpace(strings.NewReplacer("\x1b[200~", "", "\x1b[201~", "", "\r", "").Replace(sc.Text()))
		if msg == "" {
			continue
		}
		if msg == "exit" {
			return 0
		}
		reply := "echo: " + msg
		if err := m.turn(msg, reply); err != nil {
			fmt.Fprintln(stderr, "mimo:", err)
			return 1
		}
		fmt.Fprintln(stdout, "┃ "+reply)
	}
	return 0
}

func open() (*mimo, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(home, ".local", "share", "mimocode", "mimocode.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}).String())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, err
	}
	return &mimo{db: db, cwd: cwd}, nil
}

// now is a Unix ms time after every one handed out before.
func (m *mimo) now() int64 {
	m.last = max(m.last+1, time.Now().UnixMilli())
	return m.last
}

// id is an opencode-style id: prefix, then time-ordered hex and random
// letters.
func (m *mimo) id(prefix string, at int64) string {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var b [14]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return fmt.Sprintf("%s_%012x%s", prefix, at, b[:])
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// turn records one prompt and its reply, making the session at the
// first prompt.
func (m *mimo) turn(msg, reply string) error {
	at := m.now()
	if m.session == "" {
		m.session = m.id("ses", at)
		if _, err := m.db.Exec(`INSERT OR IGNORE INTO project (id, worktree, time_created, time_updated, sandboxes) VALUES ('global', '/', ?, ?, '[]')`, at, at); err != nil {
			return err
		}
		title := msg
		if len(title) > 50 {
			title = title[:50]
		}
		if _, err := m.db.Exec(`INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated)
			VALUES (?, 'global', 'fake-slug', ?, ?, '0.0.0-fakemimo', ?, ?)`, m.session, m.cwd, title, at, at); err != nil {
			return err
		}
	}
	user := m.id("msg", at)
	if err := m.message(user, at, map[string]any{"role": "user", "time": map[string]any{"created": at}, "agent": "build"}); err != nil {
		return err
	}
	if err := m.part(user, m.now(), map[string]any{"type": "text", "text": msg}); err != nil {
		return err
	}
	// The reply, as it streams: the message, half its text, then all of
	// it and the completion time.
	created := m.now()
	asst := m.id("msg", created)
	data := map[string]any{"parentID": user, "role": "assistant", "mode": "build", "agent": "build",
		"path": map[string]any{"cwd": m.cwd, "root": "/"}, "time": map[string]any{"created": created}}
	if err := m.message(asst, created, data); err != nil {
		return err
	}
	if err := m.part(asst, m.now(), map[string]any{"type": "step-start"}); err != nil {
		return err
	}
	text := m.id("prt", m.now())
	if _, err := m.db.Exec(`INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)`,
		text, asst, m.session, created, created, jsonText(map[string]any{"type": "text", "text": reply[:len(reply)/2]})); err != nil {
		return err
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := m.db.Exec(`UPDATE part SET data = ? WHERE id = ?`, jsonText(map[string]any{"type": "text", "text": reply}), text); err != nil {
		return err
	}
	done := m.now()
	data["time"] = map[string]any{"created": created, "completed": done}
	data["finish"] = "stop"
	if _, err := m.db.Exec(`UPDATE message SET data = ?, time_updated = ? WHERE id = ?`, jsonText(data), done, asst); err != nil {
		return err
	}
	_, err := m.db.Exec(`UPDATE session SET time_updated = ? WHERE id = ?`, done, m.session)
	return err
}

func (m *mimo) message(id string, at int64, data map[string]any) error {
	_, err := m.db.Exec(`INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)`,
		id, m.session, at, at, jsonText(data))
	if err == nil {
		_, err = m.db.Exec(`UPDATE session SET time_updated = ? WHERE id = ?`, at, m.session)
	}
	return err
}

func (m *mimo) part(message string, at int64, data map[string]any) error {
	_, err := m.db.Exec(`INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)`,
		m.id("prt", at), message, m.session, at, at, jsonText(data))
	return err
}
