package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/thatch-run/thatch/e2e/faketelegram"
)

// Live turns at Telegram's rates: turns of many tool calls in several
// topics of one forum group, shown live (im.live = "turn", the default),
// against a fake Bot API that answers 429 past Telegram's rates (a
// request a second in a chat, 20 a minute in a group). The daemon paces
// as it does for real Telegram (im.telegram's defaults).
const (
	liveThreads   = 10
	liveCalls     = 500 // tool calls in all, round robin over the threads
	liveCallsRate = 20  // tool calls a second, all threads together
	liveEndLimit  = 2 * time.Second
	liveLineSlack = 250 * time.Millisecond
	liveDrain     = 5 * time.Minute
)

func init() {
	register(Bench{
		Name: "live-edits",
		Doc: fmt.Sprintf("live turns at Telegram's rates: %d tool calls at %d a second over %d topics of one group, "+
			"against a fake Bot API that answers 429 past a request a second per chat and 20 a minute per group: "+
			"429s (0), the last edit after a turn's end (<= 2 s), transcript line to the live message (<= im.live_every + 250 ms)",
			liveCalls, liveCallsRate, liveThreads),
		Order: 92,
		Run:   benchLiveEdits,
	})
}

// stepOf finds the tool calls a live message shows ("▸ Bash: step 12").
var stepOf = regexp.MustCompile(`step (\d+)`)

func benchLiveEdits(c *Config) ([]Record, error) {
	// A quick run has fewer topics: the group's 20 requests a minute make
	// each topic's answer and summary cost seconds.
	threads := c.Count(liveThreads, 4)
	calls := max(c.Count(liveCalls, 60), threads)
	d := time.Duration(float64(calls) / liveCallsRate * float64(time.Second))
	w, err := newIMWorld(c, "live", 5*time.Minute)
	if err != nil {
		return nil, err
	}
	defer w.close()
	w.paced = true
	bs, files, err := w.startFollowing(threads)
	defer closeAll(files)
	if err != nil {
		return nil, err
	}
	w.tg.EnforceRates()
	c.Logf("live-edits: %d tool calls over %v in %d topics, one turn each", calls, d, threads)
	run, err := liveTurns(files, calls, d)
	if err != nil {
		return nil, err
	}
	if err := imWaitFor(liveDrain, "every turn's answer and summary", func() (bool, error) {
		return run.done(w.tg.Sent(), bs), nil
	}); err != nil {
		for _, s := range w.tg.Sent() {
			c.Logf("live-edits: sent %s %d %q", s.Method, s.ThreadID, s.Text[:min(len(s.Text), 60)])
		}
		return nil, err
	}
	return run.records(w, bs), nil
}

// liveRun is what the benchmark wrote: when each tool call's line was
// written (by step), whose thread it is, and when each turn ended.
type liveRun struct {
	written []time.Time
	thread  []int
	ended   []time.Time // by thread
	last    []int       // each thread's last step
}

// liveTurns starts a turn in each transcript (the user's message), writes
// the tool calls round robin over d, and ends each turn with an answer
// once its last call is written.
func liveTurns(files []*os.File, calls int, d time.Duration) (*liveRun, error) {
	r := &liveRun{written: make([]time.Time, calls), thread: make([]int, calls), ended: make([]time.Time, len(files)),
		last: make([]int, len(files))}
	for i := range calls {
		r.last[i%len(files)] = i
	}
	for _, f := range files {
		if _, err := f.Write(claudeUserLine("go")); err != nil {
			return nil, fmt.Errorf("bench: live-edits: %w", err)
		}
	}
	_, err := imPace(calls, d, func(i int) error {
		b := i % len(files)
		r.written[i], r.thread[i] = time.Now(), b
		if _, err := files[b].Write(claudeToolLines(i)); err != nil {
			return err
		}
		if i == r.last[b] {
			r.ended[b] = time.Now()
			_, err := files[b].Write(claudeEndLine("answer " + strconv.Itoa(b)))
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bench: live-edits: transcript write: %w", err)
	}
	return r, nil
}

// claudeUserLine is a user's message in a Claude Code transcript.
func claudeUserLine(text string) []byte {
	return []byte(`{"type":"user","message":{"role":"user","content":` + strconv.Quote(text) + `}}` + "\n")
}

// claudeToolLines are a Bash call ("step i") and its result.
func claudeToolLines(i int) []byte {
	id := strconv.Quote("toolu_" + strconv.Itoa(i))
	return []byte(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":` + id +
		`,"name":"Bash","input":{"command":"step ` + strconv.Itoa(i) + `"}}]}}` + "\n" +
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":` + id + `,"content":"ok"}]}}` + "\n")
}

// claudeEndLine is the turn's answer, which ends it.
func claudeEndLine(text string) []byte {
	return []byte(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":` + strconv.Quote(text) +
		`}],"stop_reason":"end_turn"}}` + "\n")
}

// done reports whether every thread got its answer and its live message
// its summary.
func (r *liveRun) done(sent []faketelegram.Sent, bs []imBinding) bool {
	for b := range bs {
		if _, ok := r.summaryAt(sent, bs[b].thread); !ok || !answered(sent, bs[b].thread, "answer "+strconv.Itoa(b)) {
			return false
		}
	}
	return true
}

// summaryAt is when the thread's live message was edited into the turn's
// summary ("✓ 50 tool calls, ..."), or the summary was sent as a message
// (a turn over before its live message could be sent).
func (r *liveRun) summaryAt(sent []faketelegram.Sent, thread int64) (time.Time, bool) {
	for _, s := range sent {
		if s.ThreadID == thread && (s.Method == "editMessageText" || s.Method == "sendMessage") && strings.HasPrefix(s.Text, "✓ ") {
			return s.At, true
		}
	}
	return time.Time{}, false
}

func answered(sent []faketelegram.Sent, thread int64, text string) bool {
	return slices.ContainsFunc(sent, func(s faketelegram.Sent) bool {
		// After more than im.alert_after of work the answer says how long
		// it took, after its text.
		return s.ThreadID == thread && s.Method == "sendMessage" && strings.HasPrefix(s.Text, text)
	})
}

// lineLatencies is, for each tool call, the time from its line's write
// to the first request on its thread's live message that shows it or a
// later call (the live message shows the newest state, so a call folded
// away before an edit is shown by that edit).
func (r *liveRun) lineLatencies(sent []faketelegram.Sent, bs []imBinding) []time.Duration {
	shown := make([][]faketelegram.Sent, len(bs))
	for _, s := range sent {
		if s.Method != "sendMessage" && s.Method != "editMessageText" {
			continue
		}
		for b := range bs {
			if s.ThreadID == bs[b].thread && stepOf.MatchString(s.Text) {
				shown[b] = append(shown[b], s)
			}
		}
	}
	var out []time.Duration
	for i, at := range r.written {
		for _, s := range shown[r.thread[i]] {
			if s.At.Before(at) {
				continue
			}
			if newest(s.Text) >= i {
				out = append(out, s.At.Sub(at))
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// newest is the highest step a live message's text shows.
func newest(text string) int {
	n := -1
	for _, m := range stepOf.FindAllStringSubmatch(text, -1) {
		if v, err := strconv.Atoi(m[1]); err == nil {
			n = max(n, v)
		}
	}
	return n
}

// busiest is the most requests the group took in any minute and in any
// second (from the fake's record of what it accepted).
func busiest(sent []faketelegram.Sent, chat int64) (minute, second int) {
	var at []time.Time
	for _, s := range sent {
		if s.ChatID == chat && s.Method != "answerCallbackQuery" {
			at = append(at, s.At)
		}
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	for i := range at {
		j, k := i, i
		for j < len(at) && at[j].Sub(at[i]) < time.Minute {
			j++
		}
		for k < len(at) && at[k].Sub(at[i]) < time.Second {
			k++
		}
		minute, second = max(minute, j-i), max(second, k-i)
	}
	return minute, second
}

func (r *liveRun) records(w *imWorld, bs []imBinding) []Record {
	sent := w.tg.Sent()
	var lags []time.Duration
	for b := range bs {
		if at, ok := r.summaryAt(sent, bs[b].thread); ok {
			lags = append(lags, at.Sub(r.ended[b]))
		}
	}
	slices.Sort(lags)
	lines := r.lineLatencies(sent, bs)
	every := w.cfg.IM.LiveEvery
	perMinute, perSecond := busiest(sent, imChat)
	setup := fmt.Sprintf("%d topics of one forum group, one turn each of %d tool calls (Bash, each with its result) written round "+
		"robin at %d a second in all, then the turn's answer; the daemon paces as for Telegram (a request a second per chat, "+
		"%d a minute per group, live edits at most every %v per chat); the fake answers 429 past a request a second per chat "+
		"and 20 a minute per group", len(bs), len(r.written)/len(bs), liveCallsRate, w.cfg.IM.Telegram.GroupPerMinute, every)
	limited := newRecord("live.rate_limited", float64(w.tg.RateLimited()), "429s",
		setup+fmt.Sprintf("; the group took at most %d requests in a minute and %d in a second", perMinute, perSecond)).atMost(0)
	end := newRecord("live.last_edit_after_end", ms(lags[len(lags)-1]), "ms",
		"the summary edit of each turn's live message after its answer's line was written: "+imLatencies(lags)+
			"; baseline is the 2 s limit, not a measurement").withBaseline(ms(liveEndLimit)).atMost(ms(liveEndLimit))
	line := newRecord("live.line_to_live_message", ms(percentile(lines, 99)), "ms",
		fmt.Sprintf("a tool call's line written to the first send or edit of its thread's live message that shows it (or a "+
			"later call of the turn): %s; baseline is im.live_every (%v) + 250 ms, not a measurement; %d topics share the "+
			"group's %d requests a minute, so a topic's live message is edited about every %v",
			imLatencies(lines), every, len(bs), w.cfg.IM.Telegram.GroupPerMinute,
			time.Duration(len(bs))*time.Minute/time.Duration(max(w.cfg.IM.Telegram.GroupPerMinute, 1)))).
		withBaseline(ms(every + liveLineSlack)).atMost(ms(every + liveLineSlack))
	return []Record{limited, end, line}
}
