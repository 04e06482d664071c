package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/e2e/fakefeishu"
)

// The Feishu benchmarks run the IM world of im.go (the runtime with the IM
// front end, a real tmux server on a private socket whose windows run cat,
// bindings planted in the journal) with a Feishu app against
// e2e/fakefeishu beside the Telegram bot against e2e/faketelegram: 100
// Feishu chats and 100 Telegram topics are bound, each to a window of its
// own. The daemon runs twice on the same journal and windows: first with
// the Feishu app in webhook mode, then over the long connection (mode
// "ws"). In each, Feishu events take turns with Telegram messages at the
// same rate over as many bindings, the baseline of the Feishu path.
const (
	fsApp    = "cli_bench"
	fsSecret = "bench-app-secret"
	fsToken  = "bench-verification-token"
	fsKey    = "bench-encrypt-key"
	fsUser   = "ou_bench"
	fsPath   = "/feishu/events"
	// fsEventType is the event every round sends: a text message.
	fsEventType = "im.message.receive_v1"
	// fsEventTable is the row table in which the front end keeps each
	// Feishu event id it took, with the update id it handed the event
	// over with (im/front's eventRows: "<update id>", then " done" once
	// the binding journaled it). The benchmark reads an event's update id
	// there, to find the event in the front end's Trace.
	fsEventTable = "im.feishu.events"

	fsChatsFull  = 100                    // bound chats the targets are set for
	fsRate       = 50                     // events per second, over all the chats
	fsAnswerMax  = 100 * time.Millisecond // webhook event to its 200, p99
	fsRatioLimit = 1.5                    // Feishu event to keys, p99, against Telegram's
	// fsSegment is about how long a Telegram or Feishu stretch of a
	// compared round lasts (see compare).
	fsSegment = time.Second
)

func init() {
	register(Bench{
		Name: "feishu",
		Doc: "Feishu: webhook event to its 200 (journaled first; 100 bound chats, 50 events/s), quiet and beside two busy loops, vs 100 ms; " +
			"long-connection event to keys typed vs 1.5x the Telegram update's, measured in the same run",
		Order: 91,
		Run:   benchFeishu,
	})
}

// fsWorld is the IM world with the fake Feishu beside the fake Bot API.
type fsWorld struct {
	*imWorld
	fs    *fakefeishu.Server
	urls  *fsURLs
	tg    []imBinding // Telegram topics
	chats []imBinding // Feishu chats
	// bot is the @-mention of the bot every message starts with, as in a
	// group where the bot hears only its mentions.
	bot fakefeishu.Mention
}

// fsURLs reads the webhook's address from the daemon's log line "Feishu
// webhook listening url=...".
type fsURLs struct {
	mu   sync.Mutex
	last string
}

var fsWebhookLine = regexp.MustCompile(`Feishu webhook listening.*url=(http://127\.0\.0\.1:\d+` + fsPath + `)`)

func (u *fsURLs) Write(p []byte) (int, error) {
	if m := fsWebhookLine.FindSubmatch(p); m != nil {
		u.mu.Lock()
		u.last = string(m[1])
		u.mu.Unlock()
	}
	return len(p), nil
}

// take returns the address logged since the last take, "" for none.
func (u *fsURLs) take() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	url := u.last
	u.last = ""
	return url
}

// newFSWorld makes the world, n Feishu chats known to the fake and n
// Telegram topics, a window running cat for each, and plants their
// bindings; the daemon does not run yet.
func newFSWorld(c *Config, n int) (*fsWorld, error) {
	im, err := newIMWorld(c, "feishu", 5*time.Minute)
	if err != nil {
		return nil, err
	}
	w := &fsWorld{imWorld: im, fs: fakefeishu.New(fsApp, fsSecret), urls: &fsURLs{}}
	w.info = w.urls
	w.bot = fakefeishu.Mention{Key: "@_user_1", OpenID: w.fs.BotOpenID, Name: "thatch"}
	w.cfg.IM.Feishu = config.Feishu{AppID: fsApp, AppSecret: fsSecret, VerificationToken: fsToken, EncryptKey: fsKey,
		BaseURL: w.fs.URL, Mode: "webhook", Listen: "127.0.0.1:0", Path: fsPath, AllowedUsers: []string{fsUser}}
	bs := make([]imBinding, 2*n)
	for i := range n {
		bs[i] = imBinding{thread: imFirstThread + int64(i)}
		// The chat's name is the binding's: the name an event seeds
		// changes nothing.
		id, name := fmt.Sprintf("oc_bench_%d", i), fmt.Sprintf("bench chat %d", i)
		w.fs.AddChat(fakefeishu.Chat{ID: id, Name: name})
		bs[n+i] = imBinding{chatID: id, topic: name}
	}
	w.tg, w.chats = bs[:n], bs[n:]
	c.Logf("feishu: %d tmux windows running cat on socket %s", len(bs), w.socket)
	if err := w.openWindows(bs); err != nil {
		w.close()
		return nil, err
	}
	if err := w.plant(bs); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// close stops the daemon and the fakes and removes what the world made.
func (w *fsWorld) close() {
	w.imWorld.close() // the runtime first: it talks to the fake
	w.fs.Close()
}

// startMode starts the daemon (stopping the one running) with the Feishu
// app in mode ("webhook" or "ws") and waits until it receives: until it
// logged the webhook's address, which it returns, or until a long
// connection is open at the fake.
func (w *fsWorld) startMode(mode string) (string, error) {
	w.stop()
	w.cfg.IM.Feishu.Mode = mode
	w.urls.take()
	if err := w.start(); err != nil {
		return "", err
	}
	if mode == "ws" {
		return "", imWaitFor(time.Minute, "a long connection", func() (bool, error) { return w.fs.WSOpen() > 0, nil })
	}
	var url string
	err := imWaitFor(time.Minute, "the webhook's address logged", func() (bool, error) {
		url = w.urls.take()
		return url != "", nil
	})
	return url, err
}

// fsDeliver delivers one event and returns when the request that carried
// it started and how long Feishu waited for the 200.
type fsDeliver func(ctx context.Context, eventID string, event map[string]any) (time.Time, time.Duration, error)

// webhookPoster posts events to the webhook at url as Feishu does, signed
// and encrypted; the body is made before the clock starts. closeIdle
// drops the client's idle connections.
func webhookPoster(url string) (deliver fsDeliver, closeIdle func()) {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}
	p := &fakefeishu.Poster{URL: url, Token: fsToken, EncryptKey: fsKey, AppID: fsApp,
		Client: &http.Client{Timeout: 30 * time.Second, Transport: tr}}
	deliver = func(ctx context.Context, eventID string, event map[string]any) (time.Time, time.Duration, error) {
		plain := p.Envelope(eventID, fsEventType, event)
		body, err := json.Marshal(map[string]string{"encrypt": fakefeishu.Encrypt(fsKey, plain)})
		if err != nil {
			return time.Time{}, 0, err
		}
		header := p.SignHeaders(body)
		start := time.Now()
		a, err := p.PostRaw(ctx, body, header)
		took := time.Since(start)
		if err == nil && a.Status != http.StatusOK {
			err = fmt.Errorf("bench: feishu: the webhook answered event %s %d %s", eventID, a.Status, strings.TrimSpace(a.Body))
		}
		return start, took, err
	}
	return deliver, tr.CloseIdleConnections
}

// pusher pushes events over the fake's long connection, each in one
// frame, and times each to the client's answer.
func (w *fsWorld) pusher() fsDeliver {
	return func(ctx context.Context, eventID string, event map[string]any) (time.Time, time.Duration, error) {
		start := time.Now()
		a, err := w.fs.PushEvent(ctx, eventID, fsEventType, event, 1)
		took := time.Since(start)
		if err == nil && a.Status != http.StatusOK {
			err = fmt.Errorf("bench: feishu: the long connection answered event %s %d", eventID, a.Status)
		}
		return start, took, err
	}
}

// fsRun is what one round of Feishu events gave.
type fsRun struct {
	keys    *keysRun        // received to typed, and delivered to typed
	answers []time.Duration // request start to Feishu's 200, sorted
}

// round delivers total text messages round robin over the chats, from
// chat from on, spread over d from now, each in a goroutine of its own at
// its time (an open loop: a slow answer does not hold the next event
// back). Every delivery must be answered 200 and its event id recorded as
// handled; it then waits (at most imDrainTimeout) until each was typed.
// With strict, an event not typed in time is an error; otherwise it is
// counted as missing.
func (w *fsWorld) round(deliver fsDeliver, from, total int, d time.Duration, prefix string, strict bool) (*fsRun, error) {
	eventIDs := make([]string, total)
	started := make([]time.Time, total)
	answers := make([]time.Duration, total)
	errs := make([]error, total)
	ctx, cancel := context.WithTimeout(context.Background(), d+imDrainTimeout)
	defer cancel()
	var wg sync.WaitGroup
	took, _ := imPace(total, d, func(i int) error {
		b := w.chats[(from+i)%len(w.chats)]
		eventIDs[i] = fmt.Sprintf("ev_%s_%d", prefix, i)
		msgID := fmt.Sprintf("om_%s_%d", prefix, i)
		// The fake knows the user's message, so that the bot could reply
		// to it.
		w.fs.Received(b.chatID, msgID)
		ev := fakefeishu.TextMessage(msgID, b.chatID, "group", "", fsUser, w.bot.Key+" "+prefix+strconv.Itoa(i), w.bot)
		wg.Go(func() { started[i], answers[i], errs[i] = deliver(ctx, eventIDs[i], ev) })
		return nil
	})
	wg.Wait()
	if failed := slices.DeleteFunc(errs, func(err error) bool { return err == nil }); len(failed) > 0 {
		return nil, fmt.Errorf("%w (and %d more of %d events)", failed[0], len(failed)-1, total)
	}
	ids := make([]int64, total)
	rows := w.fe.store.Rows()
	for i, ev := range eventIDs {
		row, ok, err := rows.Get(fsEventTable, ev)
		if err != nil {
			return nil, err
		}
		id, done := strings.CutSuffix(string(row.Value), " done")
		if !ok || !done {
			return nil, fmt.Errorf("bench: feishu: event %s was answered 200 but is not recorded as handled in %s (row %q)",
				ev, fsEventTable, row.Value)
		}
		if ids[i], err = strconv.ParseInt(id, 10, 64); err != nil {
			return nil, fmt.Errorf("bench: feishu: event %s: row %q names no update id", ev, row.Value)
		}
	}
	keys, err := w.typedRound(ids, started, took, strict)
	if err != nil {
		return nil, err
	}
	slices.Sort(answers)
	return &fsRun{keys: keys, answers: answers}, nil
}

// compare runs total Feishu events through deliver and total Telegram
// messages over as many topics, each at fsRate over d, in alternating
// stretches of about fsSegment (a Telegram stretch first, then a Feishu
// one, then the other way round), so that a change in the machine's load
// meets both paths alike. Every event and message must be typed: the
// percentiles are over all of them.
func (w *fsWorld) compare(deliver fsDeliver, total int, d time.Duration, tag string) (*fsRun, *keysRun, error) {
	k := max(1, int(d/fsSegment))
	seg := d / time.Duration(k)
	fs, tg := &fsRun{keys: &keysRun{}}, &keysRun{}
	done := 0
	for s := range k {
		count := total*(s+1)/k - done
		if count == 0 {
			continue
		}
		feishu := func() error {
			r, err := w.round(deliver, done, count, seg, fmt.Sprintf("%s%d", tag, s), false)
			if err == nil {
				fs.keys.add(r.keys)
				fs.answers = append(fs.answers, r.answers...)
			}
			return err
		}
		telegram := func() error {
			topics := slices.Concat(w.tg[done%len(w.tg):], w.tg[:done%len(w.tg)])
			r, err := w.typeRound(topics, count, seg, fmt.Sprintf("t%s%d-", tag, s), false)
			if err == nil {
				tg.add(r)
			}
			return err
		}
		first, second := telegram, feishu
		if s%2 == 1 {
			first, second = feishu, telegram
		}
		if err := first(); err != nil {
			return nil, nil, err
		}
		if err := second(); err != nil {
			return nil, nil, err
		}
		done += count
	}
	for _, r := range []*keysRun{fs.keys, tg} {
		slices.Sort(r.inside)
		slices.Sort(r.endToEnd)
	}
	slices.Sort(fs.answers)
	return fs, tg, nil
}

// add adds o's latencies and counts to r's (unsorted; sort after the
// last).
func (r *keysRun) add(o *keysRun) {
	r.inside = append(r.inside, o.inside...)
	r.endToEnd = append(r.endToEnd, o.endToEnd...)
	r.pushing += o.pushing
	r.drained += o.drained
	r.missing += o.missing
}

// fsCount is how many events a round of d makes at fsRate, at least one
// per chat.
func fsCount(n int, d time.Duration) int {
	return max(int(fsRate*d.Seconds()), n)
}

func benchFeishu(c *Config) ([]Record, error) {
	n, d := c.Count(fsChatsFull, fsChatsFull), c.Duration(12*time.Second, 3*time.Second)
	total := fsCount(n, d)
	w, err := newFSWorld(c, n)
	if err != nil {
		return nil, err
	}
	defer w.close()

	c.Logf("feishu: webhook mode")
	url, err := w.startMode("webhook")
	if err != nil {
		return nil, err
	}
	post, closePost := webhookPoster(url)
	defer closePost()
	if err := w.warmUp(post, n, "w"); err != nil {
		return nil, err
	}
	c.Logf("feishu: %d webhook events and %d Telegram messages, each over %v, in stretches of about %v", total, total, d, fsSegment)
	hook, hookTG, err := w.compare(post, total, d, "h")
	if err != nil {
		return nil, err
	}
	c.Logf("feishu: %d webhook events over %v with %d busy loops running", total, d, fsBusyLoops)
	loaded, err := w.loadedRound(post, total, d)
	if err != nil {
		return nil, err
	}
	closePost()

	c.Logf("feishu: long connection (mode ws)")
	if _, err := w.startMode("ws"); err != nil {
		return nil, err
	}
	push := w.pusher()
	if err := w.warmUp(push, n, "v"); err != nil {
		return nil, err
	}
	c.Logf("feishu: %d long-connection events and %d Telegram messages, each over %v, in stretches of about %v", total, total, d, fsSegment)
	ws, wsTG, err := w.compare(push, total, d, "s")
	if err != nil {
		return nil, err
	}
	return append(fsRecords(n, total, d, hook, hookTG, ws, wsTG), fsLoadedRecord(n, total, d, loaded)), nil
}

// fsBusyLoops is how many busy CPU loops (shells spinning, processes of
// their own) run beside the daemon in the loaded round.
const fsBusyLoops = 2

// loadedRound delivers total events over d while fsBusyLoops busy loops
// run, each its own process, ended by its PID afterwards.
func (w *fsWorld) loadedRound(deliver fsDeliver, total int, d time.Duration) (*fsRun, error) {
	var loops []*exec.Cmd
	defer func() {
		for _, l := range loops {
			_ = l.Process.Kill()
			_ = l.Wait()
		}
	}()
	for range fsBusyLoops {
		l := exec.Command("sh", "-c", "while :; do :; done")
		if err := l.Start(); err != nil {
			return nil, fmt.Errorf("bench: feishu: start a busy loop: %w", err)
		}
		loops = append(loops, l)
	}
	return w.round(deliver, 0, total, d, "l", false)
}

// fsLoadedRecord is the webhook's answers under load.
func fsLoadedRecord(n, total int, d time.Duration, r *fsRun) Record {
	rec := newRecord("feishu.webhook_answer.loaded", ms(percentile(r.answers, 99)), "ms",
		fmt.Sprintf("as feishu.webhook_answer (%d bound chats, %d events over %v at %d/s, round robin, an open loop), with %d "+
			"busy CPU loops (`sh -c 'while :; do :; done'`, processes of their own) running through the round: %s; each "+
			"answered 200, recorded handled and typed (%d typed in time); the threads' events are handled at once, each "+
			"thread's in order; baseline is the 100 ms limit, not a measurement",
			n, total, d, fsRate, fsBusyLoops, imLatencies(r.answers), len(r.keys.inside))).withBaseline(ms(fsAnswerMax))
	return fsMissing(imJudged(rec, n, fsChatsFull, ms(fsAnswerMax)), r.keys.missing)
}

// warmUp sends one message to each Telegram topic and one event to each
// Feishu chat, each of which must be typed: the daemon rehydrates each
// binding, and the adapter reads each chat's info.
func (w *fsWorld) warmUp(deliver fsDeliver, n int, prefix string) error {
	w.c.Logf("feishu: warm-up, one message per Telegram topic and one event per chat")
	if _, err := w.typeRound(w.tg, n, time.Second, "t"+prefix, true); err != nil {
		return err
	}
	_, err := w.round(deliver, 0, n, time.Second, prefix, true)
	return err
}

// fsRecords makes the records of the two daemons' rounds.
func fsRecords(n, total int, d time.Duration, hook *fsRun, hookTG *keysRun, ws *fsRun, wsTG *keysRun) []Record {
	load := fmt.Sprintf("%d bound chats (planted, each with a window running cat), %d text messages (a new event id each, "+
		"@-mentioning the bot) over %v at %d/s, round robin", n, total, d, fsRate)
	compared := fmt.Sprintf("in stretches of about %v taking turns with as many Telegram messages to %d bound topics (windows of "+
		"their own) at the same rate, pushed into the fake Bot API", fsSegment, n)
	wsP99, hookP99 := ms(percentile(wsTG.inside, 99)), ms(percentile(hookTG.inside, 99))

	answer := newRecord("feishu.webhook_answer", ms(percentile(hook.answers, 99)), "ms",
		fmt.Sprintf("webhook mode, encrypt key and verification token set: %s, %s; each event posted signed and encrypted in a "+
			"goroutine of its own at its time (an open loop), timed from the request's start (body encrypted and signed before) "+
			"to the 200. Before the 200: decrypt, signature and token checks, the event id recorded (a synced row), the chat's "+
			"info (cached since the warm-up), the binding journals the message (synced), the id marked handled (a synced row); "+
			"events of different chats are handled at once, each chat's in order: %s; each was answered 200, recorded handled, and typed into its window "+
			"(see feishu.webhook_event_to_keys); baseline is the 100 ms limit, not a measurement",
			load, compared, imLatencies(hook.answers))).withBaseline(ms(fsAnswerMax))
	answer = fsMissing(imJudged(answer, n, fsChatsFull, ms(fsAnswerMax)), hook.keys.missing)

	wsRec := newRecord("feishu.ws_event_to_keys", ms(percentile(ws.keys.inside, 99)), "ms",
		fmt.Sprintf("long connection (mode ws): %s, %s; each event pushed in one frame by the fake over the daemon's websocket, "+
			"in a goroutine of its own at its time; Trace(\"typed\") minus Trace(\"received\") of each event's update (found by "+
			"its row in %s), as im.update_to_keys: %s (the adapter's work before it hands an event over, decoding it and "+
			"recording its id in a synced row, is outside this span, as the Telegram adapter's is); from the push to typed: %s; push to the frame's answer (200): %s; "+
			"baseline is feishu.telegram_update_to_keys, the p99 of the Telegram messages between",
			load, compared, fsEventTable, imLatencies(ws.keys.inside), imLatencies(ws.keys.endToEnd), imLatencies(ws.answers))).
		withBaseline(wsP99).ratioAtMost(fsRatioLimit)
	wsRec = fsMissing(wsRec, ws.keys.missing)

	hookKeys := newRecord("feishu.webhook_event_to_keys", ms(percentile(hook.keys.inside, 99)), "ms",
		fmt.Sprintf("as feishu.ws_event_to_keys, of the webhook events of feishu.webhook_answer (an earlier daemon on the same "+
			"journal and windows): %s; from the post's start to typed: %s; baseline is the p99 of the Telegram messages "+
			"between them, in that daemon: %s; not judged: the long connection is the default mode, and its record carries "+
			"the target", imLatencies(hook.keys.inside), imLatencies(hook.keys.endToEnd), imLatencies(hookTG.inside))).
		withBaseline(hookP99)
	hookKeys = fsMissing(hookKeys, hook.keys.missing+hookTG.missing)

	tg := newRecord("feishu.telegram_update_to_keys", wsP99, "ms",
		fmt.Sprintf("%d bound Telegram topics, %d messages over %v at %d/s, round robin, pushed into the fake Bot API in "+
			"stretches taking turns with the events of feishu.ws_event_to_keys, in the same daemon; Trace(\"typed\") minus "+
			"Trace(\"received\"), as im.update_to_keys: %s",
			n, total, d, fsRate, imLatencies(wsTG.inside)))
	return []Record{answer, wsRec, hookKeys, fsMissing(tg, wsTG.missing)}
}

// fsMissing fails r's target "every message typed" when missing of the
// messages it is of were not, and says so.
func fsMissing(r Record, missing int) Record {
	if missing == 0 {
		return r
	}
	r = r.addTarget("every message typed", false)
	r.Notes += fmt.Sprintf("; %d messages were never typed: the typed percentiles are of the typed ones only", missing)
	return r
}

// ratioAtMost adds the target Ratio <= max; without a baseline it fails.
func (r Record) ratioAtMost(max float64) Record {
	return r.addTarget("<= "+formatNumber(max)+"x baseline", r.Ratio != nil && *r.Ratio <= max)
}
