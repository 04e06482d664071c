package front

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
	_ "modernc.org/sqlite"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/im/agents"
	"github.com/thatch-run/thatch/internal/testwait"
	"github.com/thatch-run/thatch/messages"
)

// mimoReadme is a session of the agents package's mimo fixture (written
// by the real opencode): two turns in /tmp/proj, three replies.
const mimoReadme = "ses_dca961430ffe0Hma3RYeM7AXIi"

// mimoAgent returns the agents' registry and its mimo, with a copy of the
// fixture as mimo's database, and the copy's path.
func mimoAgent(t *testing.T) (*agents.Registry, *agents.Agent, string) {
	t.Helper()
	home := t.TempDir()
	db := filepath.Join(home, ".local", "share", "mimocode", "mimocode.db")
	b, err := os.ReadFile(filepath.Join("..", "agents", "testdata", "mimo", "mimocode.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(db), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, b, 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := agents.NewRegistry(home, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := reg.Get(agents.Mimo)
	if a.MimoDB() != db {
		t.Fatalf("mimo's database is %s, the test wrote %s", a.MimoDB(), db)
	}
	return reg, a, db
}

// writeMimoDB runs statements against mimo's database, as mimo would.
func writeMimoDB(t *testing.T, db string, stmts ...string) {
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

// TestFollowerRelaysMimoRepliesFromItsDatabase: a mimo session in its
// database is followed there, from the binding's cursor: the reply to the
// prompt just typed is relayed once it is finished, whole and once, and
// nothing mimo wrote before the cursor.
func TestFollowerRelaysMimoRepliesFromItsDatabase(t *testing.T) {
	_, a, db := mimoAgent(t)
	cursor, ok, err := a.RepliesCursor(context.Background(), mimoReadme, false)
	if err != nil || !ok {
		t.Fatalf("RepliesCursor = %v, %v", ok, err)
	}
	rec := &recorder{}
	f := startFollower(t, rec)
	path := dbPrefix + mimoReadme
	f.followDB("b1", path, cursor, mimoReader(a, mimoReadme))
	writeMimoDB(t, db,
		`INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES
			('msg_u', '`+mimoReadme+`', 1796192500000, 1796192500000, '{"role":"user","time":{"created":1796192500000}}'),
			('msg_a', '`+mimoReadme+`', 1796192500100, 1796192500100, '{"role":"assistant","time":{"created":1796192500100}}')`,
		`INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES
			('prt_1', 'msg_u', '`+mimoReadme+`', 1796192500000, 1796192500000, '{"type":"text","text":"more?"}'),
			('prt_2', 'msg_a', '`+mimoReadme+`', 1796192500100, 1796192500100, '{"type":"text","text":"Half a rep"}')`)
	// Being written: nothing yet. Proved by a poll that read the
	// database after the write (its stamp is the new one).
	stamp := fileStamp([]string{db, db + "-wal"})
	testwait.Until(t, "a poll of the written database", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.dbs[path].stamp == stamp
	})
	if got := rec.replies(); len(got) != 0 {
		t.Fatalf("relayed %q before the reply was finished", got)
	}
	writeMimoDB(t, db,
		`UPDATE part SET data = '{"type":"text","text":"Half a reply, now whole."}' WHERE id = 'prt_2'`,
		`UPDATE message SET data = '{"role":"assistant","time":{"created":1796192500100,"completed":1796192501000}}' WHERE id = 'msg_a'`)
	testwait.Until(t, "the finished reply", func() bool { return len(rec.replies()) > 0 })
	if got := rec.replies(); !slices.Equal(got, []string{"Half a reply, now whole."}) {
		t.Fatalf("replies %q; want the finished one only", got)
	}
	rec.mu.Lock()
	m := *rec.got[0]
	rec.mu.Unlock()
	want := messages.IMTranscriptRead{Path: path, From: cursor, To: 1796192500100, Replies: []string{"Half a reply, now whole."}, Ends: []int64{1796192500100}}
	if m.Path != want.Path || m.From != want.From || m.To != want.To || !slices.Equal(m.Ends, want.Ends) {
		t.Errorf("delivered %+v; want %+v", m, want)
	}
	// A write that adds no reply (a new prompt) relays nothing again.
	writeMimoDB(t, db, `INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES
			('msg_u2', '`+mimoReadme+`', 1796192600000, 1796192600000, '{"role":"user","time":{"created":1796192600000}}')`)
	stamp = fileStamp([]string{db, db + "-wal"})
	testwait.Until(t, "a poll of the written database", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.dbs[path].stamp == stamp
	})
	if got := rec.replies(); len(got) != 1 {
		t.Errorf("replies %q after a write with no new reply; want the one", got)
	}
	f.Stop(path)
	if f.Count() != 0 {
		t.Errorf("still following %d after Stop", f.Count())
	}
}

// TestFollowerRetriesADatabaseReadThatFailed: a read of the agent's
// database that fails (mimo held its lock past the busy timeout) is tried
// again at a later poll, from the same cursor, though the database's
// files did not change since: no reply is lost.
func TestFollowerRetriesADatabaseReadThatFailed(t *testing.T) {
	_, a, _ := mimoAgent(t)
	rec := &recorder{}
	f := startFollower(t, rec)
	var reads atomic.Int32
	r := mimoReader(a, mimoReadme)
	read := r.replies
	r.replies = func(ctx context.Context, after int64) ([]string, []int64, int64, error) {
		if reads.Add(1) <= 2 {
			return nil, nil, after, errors.New("database is locked (5) (SQLITE_BUSY)")
		}
		return read(ctx, after)
	}
	f.followDB("b1", dbPrefix+mimoReadme, 0, r)
	testwait.Until(t, "the replies after two failed reads", func() bool { return len(rec.replies()) == 3 })
	if got := strings.Join(rec.replies(), "|"); !strings.HasPrefix(got, "The README says") || reads.Load() != 3 {
		t.Errorf("replies %q after %d reads; want the session's from its start, at the third", got, reads.Load())
	}
}

// TestHistoryOfAMimoSessionComesFromItsDatabase: /history of a binding
// that follows a mimo session in its database shows the session's
// prompts and replies (there is no transcript file to read).
func TestHistoryOfAMimoSessionComesFromItsDatabase(t *testing.T) {
	reg, _, _ := mimoAgent(t)
	f := &FrontEnd{log: hclog.NewNullLogger(), agents: reg}
	got, ok := f.readHistory(context.Background(), actors.Identity{}, &messages.IMReadHistory{Path: dbPrefix + mimoReadme, Agent: agents.Mimo, N: 1}).(*messages.IMHistoryRead)
	want := "▶ And the tests?\nLet me look.\nFirst part of the answer.\n\nThe tests need CGO_ENABLED=1."
	if !ok || got.Err != "" || got.Text != want {
		t.Fatalf("/history 1 = %+v; want %q", got, want)
	}
	got, _ = f.readHistory(context.Background(), actors.Identity{}, &messages.IMReadHistory{Path: dbPrefix + "ses_gone", Agent: agents.Mimo, N: 1}).(*messages.IMHistoryRead)
	if got == nil || !strings.Contains(got.Err, "no longer in mimo's database") {
		t.Errorf("/history of a session not in the database = %+v; want it said", got)
	}
}
