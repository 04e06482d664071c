package front

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/im/agents"
	"github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/internal/testwait"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder collects what the follower delivers; fail makes deliveries
// fail until it is cleared; answer, when set, is the binding's answer to
// a read.
type recorder struct {
	mu      sync.Mutex
	got     []*messages.IMTranscriptRead
	fail    bool
	failed  int
	changes []*messages.IMSessionChanged
	answer  func(*messages.IMTranscriptRead) *messages.IMTranscriptAt
}

func (r *recorder) deliver(_ context.Context, binding string, msg any) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		r.failed++
		return nil, errors.New("journal unavailable")
	}
	if binding != "b1" {
		return nil, errors.New("delivered to the wrong binding " + binding)
	}
	switch m := msg.(type) {
	case *messages.IMTranscriptRead:
		r.got = append(r.got, m)
		if r.answer != nil {
			return r.answer(m), nil
		}
	case *messages.IMSessionChanged:
		r.changes = append(r.changes, m)
	default:
		return nil, errors.New("unexpected message")
	}
	return nil, nil
}

func (r *recorder) replies() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, m := range r.got {
		out = append(out, m.Replies...)
		for _, it := range m.Items {
			out = append(out, it.Text)
		}
	}
	return out
}

// parseEcho takes every line "R:<text>" as a reply.
func parseEcho(_ string, line []byte) []messages.IMTurnItem {
	if t, ok := strings.CutPrefix(string(line), "R:"); ok {
		return []messages.IMTurnItem{{Kind: messages.TurnText, Text: t}}
	}
	return nil
}

// startFollower starts a follower that reads "R:" lines as replies and
// delivers them to rec; the test's cleanup closes it.
func startFollower(t *testing.T, rec *recorder) *follower {
	t.Helper()
	f, err := newFollower(hclog.NewNullLogger(), parseEcho, rec.deliver, nil, filepath.Join(t.TempDir(), "hooks", "claude-sessions.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func appendLine(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestFollowerRelaysCompleteLinesOnceFromTheJournaledOffset(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	appendLine(t, path, "R:old\n")
	offset := int64(len("R:old\n"))
	rec := &recorder{}
	f := startFollower(t, rec)
	f.Follow("b1", path, "claude", offset, "", "")
	appendLine(t, path, "tool noise\nR:one\nR:tw")
	testwait.Until(t, "the first reply", func() bool { return len(rec.replies()) == 1 })
	appendLine(t, path, "o\n")
	testwait.Until(t, "the second reply", func() bool { return len(rec.replies()) == 2 })
	if got := strings.Join(rec.replies(), ","); got != "one,two" {
		t.Fatalf("replies %q: the history before the offset is not relayed, a partial line waits for its end", got)
	}
	last := rec.got[len(rec.got)-1]
	st, _ := os.Stat(path)
	if last.To != st.Size() {
		t.Fatalf("read to %d of %d", last.To, st.Size())
	}
}

func TestFollowerRetriesAFailedDeliveryWithoutLosingIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	rec := &recorder{fail: true}
	f := startFollower(t, rec)
	f.Follow("b1", path, "claude", 0, "", "")
	appendLine(t, path, "R:kept\n")
	testwait.Until(t, "a failed delivery", func() bool { rec.mu.Lock(); defer rec.mu.Unlock(); return rec.failed > 0 })
	rec.mu.Lock()
	rec.fail = false
	rec.mu.Unlock()
	testwait.Until(t, "the retried reply", func() bool { return len(rec.replies()) == 1 })
}

func TestFollowerWaitsForAFileNotWrittenYet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "later.jsonl")
	rec := &recorder{}
	f := startFollower(t, rec)
	f.Follow("b1", path, "claude", 0, "", "")
	appendLine(t, path, "R:first\n")
	testwait.Until(t, "a reply from a file created after Follow", func() bool { return len(rec.replies()) == 1 })
}

func TestTheBrowserNeverLeavesTheRoots(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	for _, d := range []string{"a", "b", ".hidden"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	st, err := persistence.Open(t.TempDir(), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f := &FrontEnd{roots: []string{root}, opts: Options{Zoxide: "-"}, log: hclog.NewNullLogger(), rows: st.Rows()}
	cases := []struct{ ask, want string }{
		{"", root},
		{filepath.Join(root, "a"), filepath.Join(root, "a")},
		{filepath.Dir(root), root},                   // ".." from a root
		{outside, root},                              // a path outside
		{filepath.Join(root, "a", "..", ".."), root}, // climbing out by ..
		{filepath.Join(root, "escape"), root},        // a link pointing out
		{"relative/path", root},
		{filepath.Join(root, "missing"), root},
	}
	for _, tc := range cases {
		res := f.listDirectory(context.Background(), bindingID("t"), &messages.IMListDirectory{Path: tc.ask})
		got := res.(*messages.IMDirectoryListed)
		if got.Path != tc.want {
			t.Errorf("asked for %q, listed %q, want %q", tc.ask, got.Path, tc.want)
		}
	}
	top := f.listDirectory(context.Background(), bindingID("t"), &messages.IMListDirectory{}).(*messages.IMDirectoryListed)
	if strings.Join(top.Dirs, ",") != "a,b" || !top.AtRoot {
		t.Errorf("root lists %v (at root %v): hidden directories and links out of the roots are not offered", top.Dirs, top.AtRoot)
	}
}

func TestCleanTextKeepsWhatCanBeJournaled(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain", "plain"},
		{"nul\x00byte", "nulbyte"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
	}
	for _, tc := range cases {
		if got := cleanText(tc.in, 100); got != tc.want {
			t.Errorf("cleanText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := strings.Repeat("é", 100)
	got := cleanText(long, 64)
	if len(got) > 64 || !strings.HasSuffix(got, "too long]") {
		t.Errorf("a long text is cut to the limit with a note: %q (%d bytes)", got, len(got))
	}
}

func TestNewLinesOfAPane(t *testing.T) {
	cases := []struct {
		name     string
		old, cur []string
		want     []string
	}{
		{"grown", []string{"$ mimo", "> hi"}, []string{"$ mimo", "> hi", "echo: hi"}, []string{"echo: hi"}},
		{"unchanged", []string{"a", "b"}, []string{"a", "b"}, nil},
		{"scrolled", []string{"a", "b", "c"}, []string{"b", "c", "d", "e"}, []string{"d", "e"}},
		{"a repeated last line is matched with the one before it", []string{"x", "ok"}, []string{"y", "ok", "x", "ok", "new"}, []string{"new"}},
		{"redrawn, not grown", []string{"a", "b"}, []string{"c"}, nil},
		{"scrolled past everything", []string{"a"}, []string{"p", "q"}, []string{"p", "q"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := newLines(tc.old, tc.cur); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("newLines = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFollowerReadsAFileWhoseDirectoryIsMadeLater(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "projects", "-home-u-api")
	path := filepath.Join(dir, "s.jsonl")
	rec := &recorder{}
	f := startFollower(t, rec)
	f.Follow("b1", path, "claude", 0, "", "")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	appendLine(t, path, "R:made later\n")
	testwait.Until(t, "a reply in a directory made after Follow", func() bool { return len(rec.replies()) == 1 })
	appendLine(t, path, "R:and watched\n")
	testwait.Until(t, "the next reply, by the watch", func() bool { return len(rec.replies()) == 2 })
}

func TestIsStartKnowsTheBotCommandOnly(t *testing.T) {
	for text, want := range map[string]bool{
		"/start": true, "/start@thatch_bot": true, "/start deep-link": true,
		"/started": false, "start": false, "please /start": false, "": false, "/stop": false,
	} {
		if got := isStart(text); got != want {
			t.Errorf("isStart(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestRecentDirectoriesKeepTheNewestOnly(t *testing.T) {
	st, err := persistence.Open(t.TempDir(), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f := &FrontEnd{log: hclog.NewNullLogger(), rows: st.Rows()}
	var dirs []string
	for i := range maxRecent + 10 {
		dirs = append(dirs, fmt.Sprintf("/src/project-%02d", i))
		f.rememberDir(dirs[i])
	}
	got := f.recentDirs()
	if len(got) != maxRecent {
		t.Fatalf("%d recent directories kept, want %d", len(got), maxRecent)
	}
	if got[0] != dirs[len(dirs)-1] || slices.Contains(got, dirs[9]) || !slices.Contains(got, dirs[10]) {
		t.Fatalf("kept %v, want the newest %d, newest first", got, maxRecent)
	}
}

func TestMediaCaptionSaysWhatTheCaptionCameWith(t *testing.T) {
	for _, c := range []struct{ media, caption, want string }{
		{"photo", "the failing screen", "(sent with a photo that could not be passed on) the failing screen"},
		{"audio file", "listen", "(sent with an audio file that could not be passed on) listen"},
		{"photo", "  ", ""},
	} {
		if got := mediaCaption(c.media, c.caption); got != c.want {
			t.Errorf("mediaCaption(%q, %q) = %q, want %q", c.media, c.caption, got, c.want)
		}
	}
}

func TestFollowerTellsTheBindingWhenTheAgentSwitchesSessions(t *testing.T) {
	rec := &recorder{}
	f := startFollower(t, rec)
	dir := t.TempDir()
	const tag, old, cleared = "thatch:tg:1:2:1", "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
	oldPath := filepath.Join(dir, old+".jsonl")
	if err := agents.WriteHook(f.hookFile, tag, agents.HookEntry{SessionID: old, TranscriptPath: oldPath, Agent: "claude", Source: "startup"}); err != nil {
		t.Fatal(err)
	}
	f.Follow("b1", oldPath, "claude", 0, tag, old)

	// A hook that reports another window's session, or this one's again, changes nothing.
	if err := agents.WriteHook(f.hookFile, "thatch:tg:1:3:1", agents.HookEntry{SessionID: cleared, TranscriptPath: filepath.Join(dir, cleared+".jsonl"), Agent: "claude"}); err != nil {
		t.Fatal(err)
	}
	// /clear: the hook reports a new session for the window.
	newPath := filepath.Join(dir, cleared+".jsonl")
	if err := agents.WriteHook(f.hookFile, tag, agents.HookEntry{SessionID: cleared, TranscriptPath: newPath, Agent: "claude", Source: "clear"}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the binding told of the new session", func() bool { rec.mu.Lock(); defer rec.mu.Unlock(); return len(rec.changes) == 1 })
	rec.mu.Lock()
	got := *rec.changes[0]
	rec.mu.Unlock()
	want := messages.IMSessionChanged{Tag: tag, SessionID: cleared, Transcript: newPath, Source: "clear", Updated: got.Updated}
	if got != want || got.Updated == 0 {
		t.Fatalf("told %+v, want %+v with the entry's time (a new session's transcript is read from its start)", got, want)
	}

	// Until the binding takes it, each write of the map tells it the same
	// entry again (the binding decides each entry once, by its time).
	if err := agents.WriteHook(f.hookFile, "thatch:tg:1:4:1", agents.HookEntry{SessionID: old, Agent: "claude"}); err != nil {
		t.Fatal(err)
	}
	appendLine(t, oldPath, "R:still read\n")
	testwait.Until(t, "the old transcript still read", func() bool { return len(rec.replies()) == 1 })
	testwait.Until(t, "the entry told again", func() bool { rec.mu.Lock(); defer rec.mu.Unlock(); return len(rec.changes) >= 2 })
	rec.mu.Lock()
	again := *rec.changes[len(rec.changes)-1]
	rec.mu.Unlock()
	if again != got {
		t.Fatalf("told %+v again, want the same entry %+v", again, got)
	}
}

// The cursor row follows the last update of a burst too: a burst within
// cursorEvery is written once at its start and once after it, so a
// restart asks the platform for what follows the last update handled, not
// for one before it.
func TestTheCursorRowCatchesUpAfterABurst(t *testing.T) {
	st, err := persistence.Open(t.TempDir(), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f := &FrontEnd{rows: st.Rows(), log: hclog.NewNullLogger()}
	c, _, err := f.cursor("telegram")
	if err != nil {
		t.Fatal(err)
	}
	row := func() string {
		r, ok, err := st.Rows().Get("im.telegram", cursorKey)
		if err != nil || !ok {
			return ""
		}
		return string(r.Value)
	}
	c.note("11")
	if got := row(); got != "11" {
		t.Fatalf("row %q after the first update, want 11", got)
	}
	c.note("12")
	c.note("13")
	testwait.Until(t, "the trailing write of the burst's last cursor", func() bool { return row() == "13" })
	c.note("14")
	c.stop()
	if got := row(); got != "14" {
		t.Fatalf("row %q after Stop, want 14", got)
	}
	if _, r, err := f.cursor("telegram"); err != nil || r.Cursor != "14" {
		t.Fatalf("the cursor read back at the next start: %+v, %v; want 14", r, err)
	}
}

// A transcript that is truncated, or replaced by a rename, is read again
// from its start: the replies written after that reach the binding (told
// Reset, so that it takes a lower offset), none is lost.
func TestFollowerReadsATruncatedOrReplacedTranscriptFromItsStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	appendLine(t, path, "R:one\nR:two, a longer line than what comes after\n")
	rec := &recorder{}
	f := startFollower(t, rec)
	f.Follow("b1", path, "claude", 0, "", "")
	testwait.Until(t, "the first replies", func() bool { return len(rec.replies()) == 2 })

	if err := os.WriteFile(path, []byte("R:three\n"), 0o600); err != nil { // truncated and rewritten
		t.Fatal(err)
	}
	testwait.Until(t, "the reply after the truncation", func() bool { return len(rec.replies()) == 3 })

	tmp := filepath.Join(dir, "new.tmp")
	if err := os.WriteFile(tmp, []byte("R:four, in a file of its own that is longer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil { // replaced
		t.Fatal(err)
	}
	testwait.Until(t, "the reply in the replacing file", func() bool { return len(rec.replies()) == 4 })
	if got := strings.Join(rec.replies(), "|"); got != "one|two, a longer line than what comes after|three|four, in a file of its own that is longer" {
		t.Fatalf("replies %q", got)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !rec.got[1].Reset || rec.got[1].From != 0 || !rec.got[2].Reset {
		t.Fatalf("reads after a truncation or replacement must say Reset from 0: %+v %+v", rec.got[1], rec.got[2])
	}
}

// The journal takes text only: a directory whose name is not UTF-8 is
// not offered by the browser (its button would make a prompt that cannot
// be journaled).
func TestTheBrowserLeavesOutNamesThatAreNotText(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"ok", "bad\xff", "ctl\x01"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	st, err := persistence.Open(t.TempDir(), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f := &FrontEnd{roots: []string{root}, opts: Options{Zoxide: "-"}, log: hclog.NewNullLogger(), rows: st.Rows()}
	got := f.listDirectory(context.Background(), actors.Identity{}, &messages.IMListDirectory{Path: root}).(*messages.IMDirectoryListed)
	if strings.Join(got.Dirs, ",") != "ok" {
		t.Fatalf("dirs %q, want only ok", got.Dirs)
	}
	if _, err := messages.Encode(&messages.IMPromptOpened{Choices: got.Dirs}); err != nil {
		t.Fatal(err)
	}
}

func TestHoldsTextKnowsATypedMessageInTheInputLine(t *testing.T) {
	for _, c := range []struct {
		line, text string
		want       bool
	}{
		{"survive this", "survive this", true},
		{"line one", "line one\nline two", true},
		{"a long message that wraps at the screen's edg", "a long message that wraps at the screen's edge and goes on", true},
		{"short", "short and more", false},
		{"", "anything", false},
		{"a draft of the user's", "another message", false},
	} {
		if got := holdsText(c.line, c.text); got != c.want {
			t.Errorf("holdsText(%q, %q) = %v, want %v", c.line, c.text, got, c.want)
		}
	}
}

func TestWithheldNamesWhatChildEnvKeepsFromTmux(t *testing.T) {
	cfg := config.Defaults()
	cfg.IM.Telegram.Token = "123456:bot-token-secret"
	environ := []string{
		"HOME=/home/u",
		"THATCH_IM_TELEGRAM_TOKEN=123456:bot-token-secret",
		"PATH=/usr/bin",
		"HOOK_URL=https://api.telegram.org/bot123456:bot-token-secret/x",
		"=odd",
	}
	got := withheld(environ, cfg.ChildEnv(environ))
	if want := []string{"THATCH_IM_TELEGRAM_TOKEN", "HOOK_URL"}; !slices.Equal(got, want) {
		t.Errorf("withheld = %q, want %q", got, want)
	}
	if got := withheld([]string{"A=1"}, []string{"A=1"}); len(got) != 0 {
		t.Errorf("nothing withheld, yet %q", got)
	}
}

// A hook map read while the binding takes a switch (it follows the new
// session and the old one both) names a
// session the binding follows: that is no switch. Deciding on a copy of
// what was followed before the map was read told such a binding of the
// switch a second time.
func TestAHookMapReadDuringASwitchTellsNothingAgain(t *testing.T) {
	const tag = "thatch:tg:1:2:1"
	f := &follower{files: map[string]*followed{
		"/t/s-1.jsonl": {binding: "b1", agent: "claude", tag: tag, session: "s-1"},
		"/t/s-2.jsonl": {binding: "b1", agent: "claude", tag: tag, session: "s-2"},
	}}
	hooks := map[string]agents.HookEntry{tag: {SessionID: "s-2", TranscriptPath: "/t/s-2.jsonl", Agent: "claude", Source: "clear"}}
	if got := f.switchesLocked(hooks); len(got) != 0 {
		t.Fatalf("told %d switches to a session the binding follows: %+v", len(got), got[0].msg)
	}
	// Once it stops following the new one (it refused it), it is a
	// switch again.
	delete(f.files, "/t/s-2.jsonl")
	got := f.switchesLocked(hooks)
	if len(got) != 1 || got[0].binding != "b1" || got[0].msg.SessionID != "s-2" {
		t.Fatalf("switches = %+v, want b1 told of s-2", got)
	}
}

// A binding that moved on by itself (a session picked in the chat) and
// whose agent then goes back to a session it was told of before (/resume)
// is told of the new entry (the binding takes it: its time is new).
func TestFollowerTellsASwitchBackToASessionToldOfBefore(t *testing.T) {
	rec := &recorder{}
	f := startFollower(t, rec)
	dir := t.TempDir()
	const tag, s1, s2, s3 = "thatch:tg:1:2:1", "s-1", "s-2", "s-3"
	path := func(s string) string { return filepath.Join(dir, s+".jsonl") }
	changes := func() int { rec.mu.Lock(); defer rec.mu.Unlock(); return len(rec.changes) }
	f.Follow("b1", path(s1), "claude", 0, tag, s1)
	if err := agents.WriteHook(f.hookFile, tag, agents.HookEntry{SessionID: s2, TranscriptPath: path(s2), Agent: "claude", Source: "clear"}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the binding told of "+s2, func() bool { return changes() == 1 })
	f.Follow("b1", path(s2), "claude", 0, tag, s2)
	f.Stop(path(s1))
	// The user picks s3 in the chat: the binding follows it, and the hook
	// map is not written (the binding itself switched).
	f.Follow("b1", path(s3), "claude", 0, tag, s3)
	f.Stop(path(s2))
	if err := agents.WriteHook(f.hookFile, tag, agents.HookEntry{SessionID: s2, TranscriptPath: path(s2), Agent: "claude", Source: "resume"}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the binding told of the resume", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		last := rec.changes[len(rec.changes)-1]
		return last.SessionID == s2 && last.Source == "resume" && last.Updated > rec.changes[0].Updated
	})
}

// textIDsTree records what the front end delivers to bindings.
type textIDsTree struct {
	frontend.Tree
	mu  sync.Mutex
	got []any
}

func (t *textIDsTree) DeliverContext(_ context.Context, _ actors.Identity, msg any, _ time.Duration) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.got = append(t.got, msg)
	return nil
}

// textIDsChat is an adapter whose users and message ids are text, as
// Feishu's are.
type textIDsChat struct {
	chat.Adapter
	mu      sync.Mutex
	cleared []string
}

func (*textIDsChat) Name() string            { return "feishu" }
func (*textIDsChat) Scheme() string          { return "fs" }
func (*textIDsChat) Allows(user string) bool { return user == "ou_alice" }
func (*textIDsChat) Limits() chat.Limits {
	return chat.Limits{MaxMessage: 100, MaxButtonData: 64, MaxName: 100}
}
func (*textIDsChat) AnswerPress(context.Context, string, string, string) error { return nil }
func (*textIDsChat) BotName() string                                           { return "" }
func (*textIDsChat) Send(context.Context, chat.Message) ([]string, error) {
	return []string{"om_1", "om_2"}, nil
}
func (c *textIDsChat) EditButtons(_ context.Context, thread, id string, rows [][]chat.Button) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cleared = append(c.cleared, thread+" "+id)
	return nil
}

// An adapter's text ids reach the binding as they are: a Feishu open id
// is the user of the message and of the press (so a press answers only
// the prompt asked of its presser), and a sent message's id is the one
// the binding clears the buttons of. A user id that is no valid text is
// dropped at the edge.
func TestTextIDsReachTheBindingUnchanged(t *testing.T) {
	tree := &textIDsTree{}
	a := &textIDsChat{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &FrontEnd{cfg: config.Defaults(), tree: tree, runCtx: ctx, runCancel: cancel, log: hclog.NewNullLogger(),
		chats: []*chatPort{{a: a}}}
	const thread = "fs:oc_1"
	for _, u := range []chat.Update{
		{ID: 7, Thread: thread, User: "ou_alice", Text: "hi"},
		{ID: 8, Thread: thread, User: "ou_alice", Press: &chat.Press{ID: "p1", Data: "1:a:0", Message: "om_2"}},
		{ID: 9, Thread: thread, User: "ou_bob", Text: "not allowed"},
		{ID: 10, Thread: thread, User: "ou_\xff", Text: "not text"},
	} {
		if err := f.route(ctx, a, u, ""); err != nil {
			t.Fatal(err)
		}
	}
	want := []any{
		&messages.IMUpdate{UpdateID: 7, User: "ou_alice", Text: "hi"},
		&messages.IMPress{UpdateID: 8, User: "ou_alice", CallbackID: "p1", Data: "1:a:0", MessageID: "om_2"},
	}
	if !reflect.DeepEqual(tree.got, want) {
		t.Fatalf("delivered %s; want %s", spew(tree.got), spew(want))
	}
	sent := f.sendNow(bindingID(thread), &messages.IMSendChat{Seq: 1, Text: "which agent?"})
	if sent.Err != "" || sent.MessageID != "om_2" {
		t.Fatalf("the send came back as %+v; want the last part's id om_2", sent)
	}
	f.clearButtons(ctx, bindingID(thread), &messages.IMClearButtons{MessageID: sent.MessageID})
	if len(a.cleared) != 1 || a.cleared[0] != thread+" om_2" {
		t.Fatalf("cleared %v; want the buttons of om_2 in %s", a.cleared, thread)
	}
}

func spew(vs []any) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "%T%+v ", v, v)
	}
	return b.String()
}

// A window reference names the server and the window, whatever the
// socket's path holds, and one of thatch's own server is its tmux id.
func TestWindowReferencesRoundTrip(t *testing.T) {
	for _, tc := range []struct{ socket, id string }{
		{"", "@12"},
		{"default", "@3"},
		{"/tmp/a:@b/my:sock", "@7"},
	} {
		ref := windowRef(tc.socket, tc.id)
		if tc.socket == "" && ref != tc.id {
			t.Errorf("thatch's window %s is referenced as %q", tc.id, ref)
		}
		if s, id := splitRef(ref); s != tc.socket || id != tc.id {
			t.Errorf("splitRef(%q) = %q, %q; want %q, %q", ref, s, id, tc.socket, tc.id)
		}
	}
}

// The follower reads on from the offset the binding answered with (its
// journaled one), not from where its own read ended; and a transcript
// the binding says it no longer follows is not read for it any more.
func TestFollowerReadsOnFromTheBindingsAnswer(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	appendLine(t, path, "R:a\n")
	skip := int64(len("R:a\nR:b\n")) // the binding journaled b already (before a restart)
	following := true
	rec := &recorder{}
	rec.answer = func(m *messages.IMTranscriptRead) *messages.IMTranscriptAt {
		return &messages.IMTranscriptAt{Following: following, Offset: max(m.To, skip)}
	}
	f := startFollower(t, rec)
	f.Follow("b1", path, "claude", 0, "", "")
	testwait.Until(t, "a relayed", func() bool { return len(rec.replies()) == 1 })
	appendLine(t, path, "R:b\nR:c\n")
	testwait.Until(t, "c relayed", func() bool { return len(rec.replies()) == 2 })
	rec.mu.Lock()
	last := rec.got[len(rec.got)-1]
	following = false
	rec.mu.Unlock()
	if last.From != skip || len(last.Items) != 1 || last.Items[0].Text != "c" {
		t.Fatalf("the second read %+v, want from the binding's offset %d", last, skip)
	}
	appendLine(t, path, "R:d\n")
	testwait.Until(t, "the transcript no longer followed", func() bool { return f.Count() == 0 })
	if got := rec.replies(); len(got) != 3 || got[2] != "d" {
		t.Fatalf("replies %q: the read the binding refused was still delivered once", got)
	}
}

// The poll asks for the hook map to be read again when its size or time
// is not what was last read, should the watcher have missed the write;
// an unchanged map, or none, asks for nothing.
func TestAHookMapWrittenUnseenIsReadAgainByThePoll(t *testing.T) {
	f := &follower{hookFile: filepath.Join(t.TempDir(), "claude-sessions.json")}
	if f.hookChanged(); f.hooksDirty {
		t.Fatal("no map, nothing read before: dirty")
	}
	if err := agents.WriteHook(f.hookFile, "thatch:tg:1:2:1", agents.HookEntry{SessionID: "s-2", TranscriptPath: "/t/s-2.jsonl"}); err != nil {
		t.Fatal(err)
	}
	if f.hookChanged(); !f.hooksDirty {
		t.Fatal("a map written unseen is not read again")
	}
	f.hooksDirty, f.hookStamp = false, hookStamp(f.hookFile)
	if f.hookChanged(); f.hooksDirty {
		t.Fatal("the map as read last is read again")
	}
}
