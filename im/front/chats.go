package front

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/im/cluster"
	"github.com/thatch-run/thatch/im/feishu"
	"github.com/thatch-run/thatch/im/telegram"
	"github.com/thatch-run/thatch/persistence"
)

// This file is the one place of the front end that names chat platforms:
// it builds the adapters the config asks for. Everything else speaks
// chat.Adapter.

// Enabled reports whether cfg asks for the IM front end: a chat platform
// is configured (a Telegram bot token or a Feishu app id is set).
func Enabled(cfg *config.Config) bool {
	return cfg.IM.Telegram.Token != "" || cfg.IM.Feishu.AppID != ""
}

// chatPort is one adapter and the row that keeps its cursor.
type chatPort struct {
	a      chat.Adapter
	cursor *cursorRow
	// account names the platform account (the bot, the app) in a
	// cluster: the key of the lease to receive for it.
	account string
	// everywhere: in a cluster, every node receives for the account (a
	// webhook: the platform posts to whichever node its URL names), with
	// no lease.
	everywhere bool
}

// openChats builds an adapter for each platform the config sets up, each
// resuming from its stored cursor.
func (f *FrontEnd) openChats() error {
	im := f.cfg.IM
	if im.Telegram.Token != "" {
		if len(im.AllowedUsers) == 0 && !im.Open {
			return errors.New("im: im.allowed_users is empty; list the user ids allowed in, or set im.open = true")
		}
		cursor, resume, err := f.cursor("telegram")
		if err != nil {
			return err
		}
		interval, perMinute := im.Telegram.ChatInterval, im.Telegram.GroupPerMinute
		if f.opts.ChatInterval != 0 {
			interval = f.opts.ChatInterval
		}
		if perMinute == 0 || interval < 0 {
			perMinute = -1 // no limit (interval < 0: no pacing at all, tests)
		}
		var parking telegram.Parking
		if !f.cfg.Cluster.Enabled() {
			// In a cluster, updates are parked on the owner's stream
			// subject instead; a row here could wait for a lease this
			// node no longer holds.
			parking = &parkRows{rows: f.rows, log: f.log}
		}
		a, err := telegram.Open(telegram.Options{
			Token:          im.Telegram.Token.Reveal(),
			APIURL:         im.Telegram.APIURL,
			PollTimeout:    f.opts.PollTimeout,
			SendTimeout:    im.Telegram.SendTimeout,
			ChatInterval:   interval,
			GroupPerMinute: perMinute,
			Parking:        parking,
			Logger:         f.log.Named("telegram"),
		}, im.AllowedUsers, resume)
		if err != nil {
			return fmt.Errorf("im: %w", err)
		}
		botID, _, _ := strings.Cut(im.Telegram.Token.Reveal(), ":")
		f.chats = append(f.chats, &chatPort{a: a, cursor: cursor, account: cluster.AccountKey("tg", botID)})
	}
	if fs := im.Feishu; fs.AppID != "" {
		if len(fs.AllowedUsers) == 0 && !im.Open {
			return errors.New("im: im.feishu.allowed_users is empty; list the open ids allowed in, or set im.open = true")
		}
		a, err := feishu.Open(feishu.Options{
			AppID:             fs.AppID,
			AppSecret:         fs.AppSecret.Reveal(),
			VerificationToken: fs.VerificationToken.Reveal(),
			EncryptKey:        fs.EncryptKey.Reveal(),
			BaseURL:           fs.BaseURL,
			Mode:              fs.Mode,
			Listen:            fs.Listen,
			Path:              fs.Path,
			AllowedUsers:      fs.AllowedUsers,
		}, &eventRows{rows: f.rows}, f.log.Named("feishu"))
		if err != nil {
			return fmt.Errorf("im: %w", err)
		}
		if u := a.URL(); u != "" {
			f.log.Info("Feishu webhook listening", "url", u)
		} else {
			f.log.Info("Feishu events over the long connection", "base_url", fs.BaseURL)
		}
		// Feishu's updates carry no cursor: its redeliveries are
		// deduplicated by event id in eventRows.
		f.chats = append(f.chats, &chatPort{a: a, cursor: &cursorRow{rows: f.rows, log: f.log, table: "im.feishu"},
			account: cluster.AccountKey("fs", fs.AppID), everywhere: fs.Mode == feishu.ModeWebhook})
	}
	if len(f.chats) == 0 {
		return errors.New("im: no chat platform is configured (set im.telegram.token or im.feishu.app_id)")
	}
	return nil
}

// eventTable holds a row per Feishu event id taken (feishu.EventStore),
// pruned by the adapter after feishu.EventKeep.
const eventTable = "im.feishu.events"

// eventRows is the Feishu adapter's feishu.EventStore on the row table:
// the value is the Update.ID, followed by " done" once handled. Rows.Put
// is a synced write, so a record is durable when Put returns.
type eventRows struct {
	rows *persistence.Rows
}

func (e *eventRows) Get(eventID string) (feishu.EventRecord, bool, error) {
	row, ok, err := e.rows.Get(eventTable, eventID)
	if err != nil || !ok {
		return feishu.EventRecord{}, false, err
	}
	r, err := readEventRow(row)
	return r, err == nil, err
}

func readEventRow(row persistence.Row) (feishu.EventRecord, error) {
	id, done := strings.CutSuffix(string(row.Value), " done")
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return feishu.EventRecord{}, fmt.Errorf("im: event row %s: %q is not an update id", row.Key, row.Value)
	}
	return feishu.EventRecord{Update: n, Done: done}, nil
}

// MaxUpdate scans the table (a week of events at most); a row that
// cannot be read counts for nothing (its Get says why).
func (e *eventRows) MaxUpdate() (int64, error) {
	var most int64
	err := e.rows.Scan(eventTable, func(row persistence.Row) error {
		if r, err := readEventRow(row); err == nil {
			most = max(most, r.Update)
		}
		return nil
	})
	return most, err
}

func (e *eventRows) Put(eventID string, r feishu.EventRecord) error {
	v := strconv.FormatInt(r.Update, 10)
	if r.Done {
		v += " done"
	}
	return e.rows.Put(eventTable, eventID, []byte(v))
}

func (e *eventRows) Prune(cutoff time.Time) error {
	_, err := e.rows.DeleteWrittenBefore(eventTable, cutoff)
	return err
}

// parkTable holds the Telegram updates confirmed to Telegram before their
// bindings journaled them (telegram.Parking): a thread whose binding is
// slow holds up no other, and its updates are handed over at the next
// start if thatch stops first.
const parkTable = "im.telegram.parked"

// parkRows is the Telegram adapter's telegram.Parking on the row table:
// the key is the update id (zero-padded, so rows come in order), the
// value the update as JSON. Rows.Put is a synced write.
type parkRows struct {
	rows *persistence.Rows
	log  hclog.Logger
}

func (p *parkRows) Park(in telegram.Inbound) error {
	v, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return p.rows.Put(parkTable, fmt.Sprintf("%020d", in.UpdateID), v)
}

func (p *parkRows) Unpark(id int64) error {
	return p.rows.Delete(parkTable, fmt.Sprintf("%020d", id))
}

// Parked skips a row that cannot be read, saying so in the log (and
// keeps it, for a look): the rest still go.
func (p *parkRows) Parked() ([]telegram.Inbound, error) {
	var out []telegram.Inbound
	err := p.rows.Scan(parkTable, func(row persistence.Row) error {
		var in telegram.Inbound
		if err := json.Unmarshal(row.Value, &in); err != nil || in.UpdateID <= 0 {
			p.log.Error("a parked Telegram update cannot be read; it is not handed over", "table", parkTable, "key", row.Key, "error", err)
			return nil
		}
		out = append(out, in)
		return nil
	})
	return out, err
}

// closeChats drops the adapters' connections.
func (f *FrontEnd) closeChats() {
	for _, p := range f.chats {
		p.a.Close()
	}
}

// adapterOf returns the adapter that owns thread (by its key's scheme).
func (f *FrontEnd) adapterOf(thread string) (chat.Adapter, error) {
	scheme := chat.SchemeOf(thread)
	for _, p := range f.chats {
		if p.a.Scheme() == scheme {
			return p.a, nil
		}
	}
	return nil, fmt.Errorf("%w: no chat adapter runs for thread %q", chat.ErrNoThread, thread)
}

// cursorKey is the key of a platform's cursor row in its table
// (im.<platform>).
const cursorKey = "offset"

// cursor reads a platform's stored cursor and makes its row.
func (f *FrontEnd) cursor(platform string) (*cursorRow, chat.Resume, error) {
	c := &cursorRow{rows: f.rows, log: f.log, table: "im." + platform}
	var r chat.Resume
	row, ok, err := f.rows.Get(c.table, cursorKey)
	if err != nil {
		return nil, r, fmt.Errorf("im: read the %s cursor: %w", platform, err)
	}
	if ok {
		r = chat.Resume{Cursor: string(row.Value), Saved: row.WrittenAt}
		c.saved = r.Cursor
	}
	return c, r, nil
}

// cursorEvery is how often a cursor row is written while updates stream
// in. The row is a hint for the next start (what to ask the platform
// for); the bindings' own update ids are what keeps an update from being
// handled twice, so a row a second old costs nothing but a few updates
// offered again, and not writing it per update keeps a synced write out
// of every update's path.
const cursorEvery = time.Second

// cursorRow keeps one adapter's cursor in the row table.
type cursorRow struct {
	rows  *persistence.Rows
	log   hclog.Logger
	table string
	// put, when set, stores the cursor instead of the row (a cluster's
	// shared cursor, for whichever node receives next).
	put func(cursor string) error

	mu      sync.Mutex
	next    string
	saved   string // the value the row holds
	written time.Time
	timer   *time.Timer // the trailing write; nil when none is due
	stopped bool
}

// note records the cursor of the last update handled, writing the row at
// most every cursorEvery; one skipped is written cursorEvery after the
// last write (a trailing write), so the row never stays behind the last
// update of a burst. stop writes it too. Threads handled at once note
// their cursors in any order: each passes only updates handled, and one
// a little behind only has the platform offer again what the bindings
// drop.
func (c *cursorRow) note(next string) {
	if next == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next = next
	if wait := cursorEvery - time.Since(c.written); wait > 0 {
		if c.timer == nil && !c.stopped {
			c.timer = time.AfterFunc(wait, func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.timer = nil
				if !c.stopped {
					c.writeLocked()
				}
			})
		}
		return
	}
	c.writeLocked()
}

// stop writes the cursor a last time and stops the trailing write.
func (c *cursorRow) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	c.writeLocked()
}

func (c *cursorRow) writeLocked() {
	if c.next == "" || c.next == c.saved {
		return
	}
	if c.put != nil {
		if err := c.put(c.next); err != nil {
			c.log.Warn("cannot store the chat's cursor in the cluster", "table", c.table, "error", err)
			return
		}
	} else if err := c.rows.Put(c.table, cursorKey, []byte(c.next)); err != nil {
		c.log.Warn("cannot store the chat's cursor", "table", c.table, "error", err)
		return
	}
	c.written, c.saved = time.Now(), c.next
}
