package front

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/thatch-run/thatch/im/agents"
	"github.com/thatch-run/thatch/messages"
)

// Following a database is how the replies of an agent that keeps its
// sessions in SQLite (mimo) are relayed once its session is in there:
// the follower reads the session's finished assistant messages after the
// binding's cursor (a message's time_created, journaled as the offset)
// on every pane poll, and only when one of the database's files changed
// since the last read. The database belongs to the agent, which writes
// it while we read: it is opened read only, and a read that fails (the
// agent held a lock past the busy timeout) is tried again at the next
// poll with the cursor where it was. Until the session is in the
// database the window's pane is followed instead (pane.go).

// dbPrefix marks a "transcript" that is a session in an agent's
// database: "db:ses_...".
const dbPrefix = "db:"

// dbReader reads one session's replies after a cursor; files are the
// database's files, whose sizes and times say whether to read again.
type dbReader struct {
	replies func(ctx context.Context, after int64) (replies []string, ends []int64, next int64, err error)
	files   []string
}

// dbFollow is one session being followed in a database.
type dbFollow struct {
	binding string
	cursor  int64
	read    dbReader
	// stamp is what the database's files looked like at the last read
	// that delivered (or had nothing to deliver): the same stamp, no read.
	stamp string
}

// mimoReader reads a mimo session's replies, cleaned as transcript
// replies are.
func mimoReader(a *agents.Agent, session string) dbReader {
	db := a.MimoDB()
	return dbReader{
		replies: func(ctx context.Context, after int64) ([]string, []int64, int64, error) {
			rs, ends, next, err := a.SessionReplies(ctx, session, after)
			var outR []string
			var outE []int64
			for i, r := range rs {
				if r = strings.TrimSpace(cleanText(r, 256<<10)); r != "" {
					outR, outE = append(outR, r), append(outE, ends[i])
				}
			}
			return outR, outE, next, err
		},
		files: []string{db, db + "-wal"},
	}
}

// followDB starts (or moves) following a session in a database for
// binding from cursor.
func (f *follower) followDB(binding, path string, cursor int64, r dbReader) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur, ok := f.dbs[path]; ok {
		cur.binding, cur.read = binding, r
		cur.cursor = max(cur.cursor, cursor)
		cur.stamp = "" // read at the next poll
		return
	}
	f.dbs[path] = &dbFollow{binding: binding, cursor: cursor, read: r}
}

// pollDBs reads every followed session whose database changed.
func (f *follower) pollDBs(ctx context.Context) {
	f.mu.Lock()
	paths := slices.Collect(maps.Keys(f.dbs))
	f.mu.Unlock()
	for _, path := range paths {
		if ctx.Err() != nil {
			return
		}
		f.pollDB(ctx, path)
	}
}

func (f *follower) pollDB(ctx context.Context, path string) {
	f.mu.Lock()
	d, ok := f.dbs[path]
	if !ok {
		f.mu.Unlock()
		return
	}
	item := *d
	f.mu.Unlock()
	stamp := fileStamp(item.read.files)
	if stamp == item.stamp {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, effectTimeout)
	replies, ends, next, err := item.read.replies(rctx, item.cursor)
	cancel()
	if err != nil {
		f.log.Debug("cannot read an agent's database; trying again", "path", path, "error", err)
		return
	}
	if len(replies) > 0 {
		m := &messages.IMTranscriptRead{Path: path, From: item.cursor, To: next, Replies: replies, Ends: ends}
		dctx, cancel := context.WithTimeout(ctx, deliverTimeout)
		_, err := f.deliver(dctx, item.binding, m)
		cancel()
		if err != nil {
			f.log.Warn("cannot relay replies read from an agent's database; trying again", "path", path, "error", err)
			return
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if d, ok := f.dbs[path]; ok && d.binding == item.binding {
		// A message still being written keeps next where it was: it is
		// read again (the stamp changes when it is finished).
		d.cursor = max(d.cursor, next)
		d.stamp = stamp
	}
}

// fileStamp sums up the files' sizes and modification times ("" parts
// for missing ones).
func fileStamp(files []string) string {
	var b strings.Builder
	for _, p := range files {
		if st, err := os.Stat(p); err == nil {
			fmt.Fprintf(&b, "%d.%d;", st.Size(), st.ModTime().UnixNano())
		} else {
			b.WriteString(";")
		}
	}
	return b.String()
}
