package agents_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/thatch-run/thatch/im/agents"
)

// The sessions of testdata/mimo/mimocode.db, written by the real opencode
// 1.18.33 (see testdata/mimo/capture): in /tmp/proj a titled session of
// two turns (the second calls the read tool, so its reply is two assistant
// messages) with a subagent's session under it, a session in /tmp/other,
// and a session in /tmp/proj that opencode titled itself.
const (
	mimoReadme   = "ses_dca961430ffe0Hma3RYeM7AXIi"
	mimoChild    = "ses_dca96062effeMyaNdx2ssFJd7k"
	mimoOther    = "ses_dca960097ffen9Zy7av1EV9kJq"
	mimoLatest   = "ses_dca95f62bffeRDOQsucktegWH0"
	mimoReadmeAt = 1796192466290 // time_updated, Unix ms
	mimoChildAt  = 1796192467672
	mimoLatestAt = 1796192471680
)

// mimoHome returns a home directory holding a copy of the fixture as
// mimo's database, and the copy's path.
func mimoHome(t *testing.T) (home, db string) {
	t.Helper()
	home = t.TempDir()
	db = filepath.Join(home, ".local", "share", "mimocode", "mimocode.db")
	b, err := os.ReadFile(filepath.Join("testdata", "mimo", "mimocode.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(db), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return home, db
}

// writeMimo runs statements against a mimo database, as mimo would.
func writeMimo(t *testing.T, db string, stmts ...string) {
	t.Helper()
	d, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, s := range stmts {
		if _, err := d.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func TestMimoSessionsComeFromItsDatabase(t *testing.T) {
	home, db := mimoHome(t)
	a := agent(t, newRegistry(t, home, nil), "mimo")
	if got := a.MimoDB(); got != db {
		t.Fatalf("MimoDB() = %s, want %s", got, db)
	}
	got, err := a.Sessions("/tmp/proj/", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []agents.Session{
		{ID: mimoLatest, Modified: time.UnixMilli(mimoLatestAt), FirstPrompt: "What is in the readme?", Title: "Fake title"},
		{ID: mimoReadme, Modified: time.UnixMilli(mimoReadmeAt), FirstPrompt: "What does the readme say?", Title: "Read the readme"},
	}
	if !reflect.DeepEqual(got, want) { // the subagent's session is not offered
		t.Errorf("Sessions(/tmp/proj) =\n%+v\nwant\n%+v", got, want)
	}
	if got, err := a.Sessions("/tmp/proj", 1); err != nil || len(got) != 1 || got[0].ID != mimoLatest {
		t.Errorf("Sessions(/tmp/proj, 1) = %+v, %v; want the newest only", got, err)
	}
	if got, err := a.Sessions("/tmp/other", 0); err != nil || len(got) != 1 || got[0].ID != mimoOther || got[0].FirstPrompt != "Say hi" {
		t.Errorf("Sessions(/tmp/other) = %+v, %v", got, err)
	}
	if got, err := a.Sessions("/tmp/nowhere", 0); err != nil || len(got) != 0 {
		t.Errorf("Sessions(/tmp/nowhere) = %+v, %v; want none", got, err)
	}
	// A session without a typed prompt shows its title; an archived one
	// is not offered.
	writeMimo(t, db, `DELETE FROM part WHERE session_id = '`+mimoLatest+`'`,
		`UPDATE session SET time_archived = 1 WHERE id = '`+mimoReadme+`'`)
	if got, err := a.Sessions("/tmp/proj", 0); err != nil || len(got) != 1 || got[0].FirstPrompt != "Fake title" {
		t.Errorf("after the archive: Sessions(/tmp/proj) = %+v, %v; want the titled session only", got, err)
	}
	// mimo never ran: no sessions, no error, and no database made.
	empty := agent(t, newRegistry(t, t.TempDir(), nil), "mimo")
	if got, err := empty.Sessions("/tmp/proj", 0); err != nil || len(got) != 0 {
		t.Errorf("without a database: Sessions = %+v, %v", got, err)
	}
	if _, err := os.Stat(empty.MimoDB()); !os.IsNotExist(err) {
		t.Errorf("Sessions made %s: %v", empty.MimoDB(), err)
	}
}

func TestMimoDatabaseIsOpenedReadOnly(t *testing.T) {
	home, db := mimoHome(t)
	if err := os.Chmod(db, 0o444); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	a := agent(t, newRegistry(t, home, nil), "mimo")
	if got, err := a.Sessions("/tmp/proj", 0); err != nil || len(got) != 2 {
		t.Fatalf("Sessions of a read-only database = %+v, %v", got, err)
	}
	if _, _, _, err := a.SessionReplies(context.Background(), mimoReadme, 0); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Error("reading mimo's database changed it")
	}
}

func TestMimoSessionRepliesReadFinishedAssistantMessages(t *testing.T) {
	home, db := mimoHome(t)
	a := agent(t, newRegistry(t, home, nil), "mimo")
	ctx := context.Background()
	got, ends, next, err := a.SessionReplies(ctx, mimoReadme, 0)
	want := []string{
		"The README says: build with `make build`.",
		"Let me look.", // the step that called the read tool
		"First part of the answer.\n\nThe tests need CGO_ENABLED=1.",
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("SessionReplies(0) = %q, %v; want %q", got, err, want)
	}
	if len(ends) != len(got) || ends[len(ends)-1] != next || ends[0] >= ends[1] {
		t.Errorf("SessionReplies(0) ends %v, next %d: want one per reply, rising, the last at next", ends, next)
	}
	if got, _, again, err := a.SessionReplies(ctx, mimoReadme, next); err != nil || got != nil || again != next {
		t.Errorf("SessionReplies(next) = %q, %d, %v; want nothing new at %d", got, again, err, next)
	}
	// The next turn: a user message, and a reply still being written. It
	// is read once finished, whole.
	writeMimo(t, db,
		`INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES
			('msg_u', '`+mimoReadme+`', 1796192500000, 1796192500000, '{"role":"user","time":{"created":1796192500000}}'),
			('msg_a', '`+mimoReadme+`', 1796192500100, 1796192500100, '{"role":"assistant","time":{"created":1796192500100}}')`,
		`INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES
			('prt_1', 'msg_u', '`+mimoReadme+`', 1796192500000, 1796192500000, '{"type":"text","text":"more?"}'),
			('prt_2', 'msg_a', '`+mimoReadme+`', 1796192500100, 1796192500100, '{"type":"text","text":"Half a rep"}')`)
	got, _, n2, err := a.SessionReplies(ctx, mimoReadme, next)
	if err != nil || got != nil || n2 != next {
		t.Fatalf("with a reply being written: %q, %d, %v; want nothing yet at %d", got, n2, err, next)
	}
	writeMimo(t, db,
		`UPDATE part SET data = '{"type":"text","text":"Half a reply, now whole."}' WHERE id = 'prt_2'`,
		`INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES
			('prt_3', 'msg_a', '`+mimoReadme+`', 1796192500200, 1796192500200, '{"type":"text","text":"hidden","synthetic":true}')`,
		`UPDATE message SET data = '{"role":"assistant","time":{"created":1796192500100,"completed":1796192501000}}' WHERE id = 'msg_a'`)
	got, _, n3, err := a.SessionReplies(ctx, mimoReadme, next)
	if err != nil || !reflect.DeepEqual(got, []string{"Half a reply, now whole."}) || n3 != 1796192500100 {
		t.Errorf("once finished: %q, %d, %v", got, n3, err)
	}
	// Other agents, unsafe ids and unknown sessions read nothing.
	for _, c := range []struct{ agent, id string }{{"claude", mimoReadme}, {"mimo", "x'; DROP TABLE session; --"}, {"mimo", "ses_none"}} {
		if got, _, n, err := agent(t, newRegistry(t, home, nil), c.agent).SessionReplies(ctx, c.id, 7); got != nil || n != 7 || err != nil {
			t.Errorf("%s SessionReplies(%q) = %q, %d, %v; want nothing", c.agent, c.id, got, n, err)
		}
	}
}

// TestFindSessionOfMimoReadsItsDatabaseNotThePane is the bug of the issue
// "all four agents for real": any UUID on mimo's screen was taken as its
// session id, and resuming it then failed. The session comes from the
// database now, and resumes with the resume line.
func TestFindSessionOfMimoReadsItsDatabaseNotThePane(t *testing.T) {
	home, db := mimoHome(t)
	r := newRegistry(t, home, nil)
	a := agent(t, r, "mimo")
	screen := "mimo 1.0  session 0f0e0d0c-0b0a-4908-8706-050403020100\n> hello\nrequest 11111111-2222-4333-8444-555555555555 ok\n"
	ctx := context.Background()
	q := agents.FindQuery{PaneText: screen, Dir: "/tmp/proj", Since: time.UnixMilli(mimoChildAt)}
	f, ok := r.FindSession(ctx, a, q)
	if !ok || f != (agents.Found{ID: mimoLatest, How: agents.HowDB}) {
		t.Fatalf("FindSession(mimo) = %+v, %v; want %s from the database", f, ok, mimoLatest)
	}
	line, err := a.LaunchLine(f.ID, agents.Extras{ClaudeSettings: "/settings.json"}) // what Recover types
	if err != nil || line != "mimo --resume "+mimoLatest {
		t.Errorf("LaunchLine(%s) = %q, %v", f.ID, line, err)
	}
	for _, c := range []struct {
		name string
		q    agents.FindQuery
	}{
		{"no launch time", agents.FindQuery{PaneText: screen, Dir: "/tmp/proj"}},
		{"no directory", agents.FindQuery{PaneText: screen, Since: time.UnixMilli(mimoChildAt)}},
		{"nothing updated since the launch", agents.FindQuery{PaneText: screen, Dir: "/tmp/proj", Since: time.UnixMilli(mimoLatestAt + 1)}},
		{"two sessions updated since the launch", agents.FindQuery{PaneText: screen, Dir: "/tmp/proj", Since: time.UnixMilli(mimoReadmeAt - 1000)}},
		{"another directory's session", agents.FindQuery{PaneText: screen, Dir: "/tmp/elsewhere", Since: time.UnixMilli(mimoChildAt)}},
	} {
		if f, ok := r.FindSession(ctx, a, c.q); ok {
			t.Errorf("%s: FindSession(mimo) = %+v; want none", c.name, f)
		}
	}
	// A resumed session is found once the user's prompt updates it.
	writeMimo(t, db, `UPDATE session SET time_updated = 1796192600000 WHERE id = '`+mimoReadme+`'`)
	if f, ok := r.FindSession(ctx, a, agents.FindQuery{PaneText: screen, Dir: "/tmp/proj", Since: time.UnixMilli(1796192590000)}); !ok || f.ID != mimoReadme {
		t.Errorf("resumed session: FindSession(mimo) = %+v, %v; want %s", f, ok, mimoReadme)
	}
	// No database: nothing, whatever the screen shows.
	none := newRegistry(t, t.TempDir(), nil)
	if f, ok := none.FindSession(ctx, agent(t, none, "mimo"), q); ok {
		t.Errorf("without a database: FindSession(mimo) = %+v; want none", f)
	}
}

// TestMimoDatabaseIsReadWhileMimoWritesIt reads the database in WAL mode
// (opencode's) while a writer holds it open with changes not yet
// checkpointed, as a running mimo does.
func TestMimoDatabaseIsReadWhileMimoWritesIt(t *testing.T) {
	home, db := mimoHome(t)
	w, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	for _, s := range []string{`PRAGMA journal_mode=WAL`, `PRAGMA wal_autocheckpoint=0`,
		`UPDATE session SET time_updated = 1796192600000 WHERE id = '` + mimoReadme + `'`} {
		if _, err := w.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if _, err := os.Stat(db + "-wal"); err != nil {
		t.Fatalf("no write-ahead log: %v", err)
	}
	r := newRegistry(t, home, nil)
	f, ok := r.FindSession(context.Background(), agent(t, r, "mimo"), agents.FindQuery{Dir: "/tmp/proj", Since: time.UnixMilli(1796192590000)})
	if !ok || f.ID != mimoReadme {
		t.Errorf("FindSession(mimo) = %+v, %v; want %s, updated in the log", f, ok, mimoReadme)
	}
}

// TestMimoRepliesCursorStartsAfterWhatWasWritten: a binding that starts
// following a session (resumed, or found once the user typed into it)
// relays what mimo writes from then on, and a reply to the prompt just
// typed even when it finished before the session was found.
func TestMimoRepliesCursorStartsAfterWhatWasWritten(t *testing.T) {
	home, db := mimoHome(t)
	a := agent(t, newRegistry(t, home, nil), "mimo")
	ctx := context.Background()
	const secondPrompt, lastReply = 1796192465959, 1796192466184 // the fixture's
	if c, ok, err := a.RepliesCursor(ctx, mimoReadme, false); err != nil || !ok || c != lastReply {
		t.Fatalf("RepliesCursor(resumed) = %d, %v, %v; want %d, the last finished reply", c, ok, err, lastReply)
	}
	c, ok, err := a.RepliesCursor(ctx, mimoReadme, true)
	if err != nil || !ok || c >= secondPrompt {
		t.Fatalf("RepliesCursor(after a prompt) = %d, %v, %v; want before the newest prompt at %d", c, ok, err, secondPrompt)
	}
	if got, _, _, err := a.SessionReplies(ctx, mimoReadme, c); err != nil || len(got) != 2 || got[0] != "Let me look." {
		t.Errorf("replies after the cursor = %q, %v; want the newest prompt's two", got, err)
	}
	// A reply still being written is not history: the cursor stays
	// before it.
	writeMimo(t, db,
		`INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES
			('msg_u', '`+mimoReadme+`', 1796192500000, 1796192500000, '{"role":"user","time":{"created":1796192500000}}'),
			('msg_a', '`+mimoReadme+`', 1796192500100, 1796192500100, '{"role":"assistant","time":{"created":1796192500100}}')`)
	if c, ok, err := a.RepliesCursor(ctx, mimoReadme, false); err != nil || !ok || c != lastReply {
		t.Errorf("RepliesCursor with a reply being written = %d, %v, %v; want %d", c, ok, err, lastReply)
	}
	// A session mimo has not written: not ok, the pane it is.
	for _, id := range []string{"ses_none", "x'; --"} {
		if c, ok, err := a.RepliesCursor(ctx, id, false); err != nil || ok || c != 0 {
			t.Errorf("RepliesCursor(%q) = %d, %v, %v; want not ok", id, c, ok, err)
		}
	}
	if _, ok, err := agent(t, newRegistry(t, t.TempDir(), nil), "mimo").RepliesCursor(ctx, mimoReadme, false); ok || err != nil {
		t.Errorf("without a database: RepliesCursor = %v, %v; want not ok", ok, err)
	}
}

func TestMimoSessionHistoryReadsPromptsAndReplies(t *testing.T) {
	home, _ := mimoHome(t)
	a := agent(t, newRegistry(t, home, nil), "mimo")
	ctx := context.Background()
	got, ok, err := a.SessionHistory(ctx, mimoReadme, 5)
	want := []agents.Exchange{
		{Prompt: "What does the readme say?", Replies: []string{"The README says: build with `make build`."}},
		{Prompt: "And the tests?", Replies: []string{"Let me look.", "First part of the answer.\n\nThe tests need CGO_ENABLED=1."}},
	}
	if err != nil || !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("SessionHistory(5) = %q, %v, %v; want %q", got, ok, err, want)
	}
	if got, _, err := a.SessionHistory(ctx, mimoReadme, 1); err != nil || !reflect.DeepEqual(got, want[1:]) {
		t.Errorf("SessionHistory(1) = %q, %v; want the last exchange", got, err)
	}
	if _, ok, err := a.SessionHistory(ctx, "ses_none", 5); ok || err != nil {
		t.Errorf("SessionHistory(unknown) = %v, %v; want not ok", ok, err)
	}
}
