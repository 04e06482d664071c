package telegram

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/thatch-run/thatch/e2e/faketelegram"
)

const forum = int64(-1001)

// longReply is about n characters of numbered lines of varied length, with
// a non-BMP rune on some, so that UTF-16 and byte counts differ.
func longReply(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %04d %s%s\n", i, strings.Repeat("word ", i%17), strings.Repeat("😀", i%3))
	}
	return b.String()
}

func texts(ms []faketelegram.Sent) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Text)
	}
	return out
}

func TestSendSplitsALongReplyIntoOrderedPartsAtLineBoundaries(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.srv.CreateTopic(forum, "t")
	reply := longReply(10000)
	ids, err := w.bot.Send(context.Background(), Outbound{ChatID: forum, ThreadID: thread, Topic: true, Text: reply})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := w.srv.Messages(forum, thread)
	if len(got) < 3 || len(got) != len(ids) {
		t.Fatalf("%d parts recorded, %d ids returned; want the same number, at least 3", len(got), len(ids))
	}
	for i, m := range got {
		if m.MessageID != ids[i] {
			t.Errorf("part %d has id %d, Send returned %d", i, m.MessageID, ids[i])
		}
		if n := utf16Len(m.Text); n > MaxMessageLen {
			t.Errorf("part %d is %d units", i, n)
		}
		if i < len(got)-1 && !strings.HasSuffix(m.Text, "\n") {
			t.Errorf("part %d breaks a line: ends %q", i, m.Text[len(m.Text)-20:])
		}
	}
	if joined := strings.Join(texts(got), ""); joined != reply {
		t.Fatalf("the parts do not add up to the reply (%d vs %d bytes)", len(joined), len(reply))
	}
}

// A long reply whose second part fails returns the first part's id and
// reports it sent; sent again from part 1, it completes the reply with
// every part shown once, and each part but the last is reported.
func TestSendGoesOnFromThePartItIsGivenAndReportsEachPart(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.srv.CreateTopic(forum, "t")
	reply := longReply(10000)
	var reported []int
	m := Outbound{ChatID: forum, ThreadID: thread, Topic: true, Text: reply, OnPart: func(n int) { reported = append(reported, n) }}
	w.srv.FailAfter(1, 1)
	ids, err := w.bot.Send(context.Background(), m)
	if err == nil || Permanent(err) || len(ids) != 1 || !reflect.DeepEqual(reported, []int{1}) {
		t.Fatalf("Send with part 2 failing: ids %v, reported %v, %v; want 1 id, [1] and an error to try again", ids, reported, err)
	}
	m.FromPart = 1
	more, err := w.bot.Send(context.Background(), m)
	if err != nil {
		t.Fatalf("Send from part 1: %v", err)
	}
	got := w.srv.Messages(forum, thread)
	if len(got) < 3 || len(got) != 1+len(more) {
		t.Fatalf("%d messages in the topic, %d+%d ids; want every part once, at least 3", len(got), len(ids), len(more))
	}
	if joined := strings.Join(texts(got), ""); joined != reply {
		t.Fatalf("the topic's messages do not add up to the reply (%d vs %d bytes)", len(joined), len(reply))
	}
	var want []int // 1 from the first Send, then 2..len-1 from the second
	for n := 1; n < len(got); n++ {
		want = append(want, n)
	}
	if !reflect.DeepEqual(reported, want) {
		t.Errorf("reported %v, want %v", reported, want)
	}
	// A text split otherwise than when its parts were counted (a new
	// build) goes out whole rather than lose its end.
	if again, err := w.bot.Send(context.Background(), Outbound{ChatID: forum, ThreadID: thread, Topic: true, Text: reply, FromPart: len(got)}); err != nil || len(again) != len(got) {
		t.Errorf("Send from past the last part: %d ids, %v; want the whole text, %d parts", len(again), err, len(got))
	}
}

func TestSendClosesAndReopensACodeBlockCutInTwo(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.srv.CreateTopic(forum, "t")
	var code strings.Builder
	for i := 0; code.Len() < 6000; i++ {
		fmt.Fprintf(&code, "fmt.Println(%d < %d && ok)\n", i, i+1)
	}
	md := "Here is the **fix**:\n```go\n" + code.String() + "```\nDone & dusted."
	if _, err := w.bot.Send(context.Background(), Outbound{ChatID: forum, ThreadID: thread, Topic: true, Text: md, Markdown: true}); err != nil {
		t.Fatalf("Send: %v (the fake refuses HTML that does not parse)", err)
	}
	got := w.srv.Messages(forum, thread)
	if len(got) != 2 {
		t.Fatalf("got %d parts, want 2", len(got))
	}
	if !strings.HasPrefix(got[0].Text, "Here is the <b>fix</b>:\n<pre><code class=\"language-go\">") || !strings.HasSuffix(got[0].Text, "</code></pre>") {
		t.Errorf("part 1 does not open and close the block: %q ... %q", got[0].Text[:60], got[0].Text[len(got[0].Text)-30:])
	}
	if !strings.HasPrefix(got[1].Text, "<pre><code class=\"language-go\">") || !strings.HasSuffix(got[1].Text, "</code></pre>\nDone &amp; dusted.") {
		t.Errorf("part 2 does not reopen the block: %q ... %q", got[1].Text[:40], got[1].Text[len(got[1].Text)-40:])
	}
	shown := visibleText(got[0].Text) + "\n" + visibleText(got[1].Text)
	if !strings.Contains(shown, strings.TrimSuffix(code.String(), "\n")) {
		t.Errorf("the code lost or reordered lines across the cut")
	}
	for _, m := range got {
		if m.ParseMode != "HTML" {
			t.Errorf("part sent with parse mode %q, want HTML", m.ParseMode)
		}
	}
}

// TestSendLosesAndReordersNothingIn429Storm: the fake answers 429 four
// times; every part of every message still arrives once, in order, and no
// retry came before the retry_after the fake asked for (the fake answers
// such a retry 429 again and counts it).
func TestSendLosesAndReordersNothingIn429Storm(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.srv.CreateTopic(forum, "t")
	w.srv.Fail429(4, 1)
	msgs := []string{"first", longReply(5000), "third", "fourth"}
	var want []string
	for _, m := range msgs {
		if _, err := w.bot.Send(context.Background(), Outbound{ChatID: forum, ThreadID: thread, Topic: true, Text: m}); err != nil {
			t.Fatalf("Send: %v", err)
		}
		want = append(want, Split(m, MaxMessageLen)...)
	}
	if got := texts(w.srv.Messages(forum, thread)); !reflect.DeepEqual(got, want) {
		t.Fatalf("recorded %d parts, want %d in order", len(got), len(want))
	}
	if n := w.srv.Early(); n != 0 {
		t.Fatalf("%d retries came before retry_after had passed", n)
	}
	if !strings.Contains(w.log.String(), "slow down") {
		t.Fatalf("the 429 waits were not logged:\n%s", w.log.String())
	}
}

func TestSendSpacesRequestsToOneChatByChatInterval(t *testing.T) {
	const gap = 150 * time.Millisecond
	w := newWorld(t, func(o *Options) { o.ChatInterval = gap })
	for _, text := range []string{"a", "b", "c"} {
		if _, err := w.bot.Send(context.Background(), Outbound{ChatID: 5, ThreadID: 5, Text: text}); err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	got := w.srv.Messages(5, 0)
	if len(got) != 3 {
		t.Fatalf("%d messages recorded", len(got))
	}
	// A lower bound only: the bot waits at least gap after each answer.
	for i := 1; i < len(got); i++ {
		if d := got[i].At.Sub(got[i-1].At); d < gap {
			t.Errorf("messages %d and %d are %v apart, want at least %v", i-1, i, d, gap)
		}
	}
}

// A group takes GroupPerMinute requests in any minute, its topics
// together: the next is refused at once (its turn is further off than
// SendTimeout) rather than sent into a 429; the typing sign is not
// counted, and a private chat has no such limit.
func TestAGroupTakesAtMostGroupPerMinuteRequestsAMinute(t *testing.T) {
	w := newWorld(t, func(o *Options) { o.GroupPerMinute = 3 })
	a, b := w.srv.CreateTopic(forum, "a"), w.srv.CreateTopic(forum, "b")
	ctx := context.Background()
	for i, thread := range []int64{a, b, a} {
		if err := w.bot.inChat(ctx, forum, "sendChatAction", func(context.Context) error { return nil }); err != nil {
			t.Fatalf("typing sign %d: %v", i, err)
		}
		if _, err := w.bot.Send(ctx, Outbound{ChatID: forum, ThreadID: thread, Topic: true, Text: fmt.Sprint("m", i)}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if _, err := w.bot.Send(ctx, Outbound{ChatID: forum, ThreadID: b, Topic: true, Text: "m3"}); !errors.Is(err, ErrRateLimited) || Permanent(err) {
		t.Fatalf("a fourth request in the minute = %v; want ErrRateLimited, not permanent", err)
	}
	for i := range 5 {
		if _, err := w.bot.Send(ctx, Outbound{ChatID: 5, ThreadID: 5, Text: fmt.Sprint("p", i)}); err != nil {
			t.Fatalf("private send %d: %v", i, err)
		}
	}
	if got := texts(w.srv.Sent()); len(got) != 8 || got[2] != "m2" {
		t.Errorf("the fake recorded %q", got)
	}
}

func TestSendFallsBackToPlainTextWhenTelegramRefusesTheEntities(t *testing.T) {
	w := newWorld(t, nil)
	md := "**bold** and <tags> & more"
	w.srv.RefuseEntities(1)
	if _, err := w.bot.Send(context.Background(), Outbound{ChatID: 9, ThreadID: 9, Text: md, Markdown: true}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if _, err := w.bot.Send(context.Background(), Outbound{ChatID: 9, ThreadID: 9, Text: md, Markdown: true}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := w.srv.Messages(9, 0)
	want := []faketelegram.Sent{
		{Method: "sendMessage", ChatID: 9, Text: md, ParseMode: ""},
		{Method: "sendMessage", ChatID: 9, Text: "<b>bold</b> and &lt;tags&gt; &amp; more", ParseMode: "HTML"},
	}
	if len(got) != 2 {
		t.Fatalf("recorded %d messages, want 2", len(got))
	}
	for i := range want {
		if got[i].Text != want[i].Text || got[i].ParseMode != want[i].ParseMode {
			t.Errorf("message %d = %q (%q), want %q (%q)", i, got[i].Text, got[i].ParseMode, want[i].Text, want[i].ParseMode)
		}
	}
}

func TestSendRefusesButtonDataOver64Bytes(t *testing.T) {
	w := newWorld(t, nil)
	long := strings.Repeat("x", 65)
	_, err := w.bot.Send(context.Background(), Outbound{ChatID: 9, ThreadID: 9, Text: "pick", Buttons: [][]Button{{{Text: "ok", Data: "ok"}, {Text: "long", Data: long}}}})
	if !errors.Is(err, ErrButtonData) {
		t.Fatalf("Send = %v, want ErrButtonData", err)
	}
	if err := w.bot.EditButtons(context.Background(), 9, 1, [][]Button{{{Text: "long", Data: long}}}); !errors.Is(err, ErrButtonData) {
		t.Fatalf("EditButtons = %v, want ErrButtonData", err)
	}
	if _, err := w.bot.Send(context.Background(), Outbound{ChatID: 9, ThreadID: 9, Text: "pick", Buttons: [][]Button{{{Text: "max", Data: strings.Repeat("y", 64)}}}}); err != nil {
		t.Fatalf("64 bytes of data refused: %v", err)
	}
	if got := w.srv.Sent(); len(got) != 1 || got[0].Buttons[0][0].Data != strings.Repeat("y", 64) {
		t.Fatalf("the fake saw %+v, want only the message with 64 bytes of data", got)
	}
}

func TestSendPutsButtonsOnTheLastPartOnly(t *testing.T) {
	w := newWorld(t, nil)
	rows := [][]Button{{{Text: "Yes", Data: "y"}, {Text: "No", Data: "n"}}}
	if _, err := w.bot.Send(context.Background(), Outbound{ChatID: 9, ThreadID: 9, Text: longReply(6000), Buttons: rows}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := w.srv.Messages(9, 0)
	if len(got) != 2 || got[0].Buttons != nil || !reflect.DeepEqual(got[1].Buttons, []([]faketelegram.Button){{{Text: "Yes", Data: "y"}, {Text: "No", Data: "n"}}}) {
		t.Fatalf("buttons per part: %+v / %+v", got[0].Buttons, got[len(got)-1].Buttons)
	}
}

func TestSendRefusesEmptyText(t *testing.T) {
	w := newWorld(t, nil)
	for _, m := range []Outbound{{ChatID: 9, Text: ""}, {ChatID: 9, Text: " \n\t"}, {ChatID: 9, Text: "```\n```", Markdown: true}} {
		if _, err := w.bot.Send(context.Background(), m); !errors.Is(err, ErrEmptyText) {
			t.Errorf("Send(%q) = %v, want ErrEmptyText", m.Text, err)
		}
	}
}

func TestEditsAndDeletesReachTelegramAndRepeatingThemSucceeds(t *testing.T) {
	w := newWorld(t, nil)
	ctx := context.Background()
	ids, err := w.bot.Send(ctx, Outbound{ChatID: 9, ThreadID: 9, Text: "allow?", Buttons: [][]Button{{{Text: "Yes", Data: "y"}}}})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	id := ids[0]
	steps := []struct {
		name string
		do   func() error
	}{
		{"remove buttons", func() error { return w.bot.EditButtons(ctx, 9, id, nil) }},
		{"remove buttons again", func() error { return w.bot.EditButtons(ctx, 9, id, nil) }},
		{"edit text", func() error { return w.bot.EditText(ctx, 9, id, "allowed <by> you") }},
		{"edit text again", func() error { return w.bot.EditText(ctx, 9, id, "allowed <by> you") }},
		{"delete", func() error { return w.bot.Delete(ctx, 9, id) }},
		{"delete again", func() error { return w.bot.Delete(ctx, 9, id) }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	var methods []string
	for _, s := range w.srv.Sent() {
		methods = append(methods, s.Method)
	}
	want := []string{"sendMessage", "editMessageReplyMarkup", "editMessageText", "deleteMessage"}
	if !reflect.DeepEqual(methods, want) {
		t.Fatalf("the fake recorded %v, want %v", methods, want)
	}
	if err := w.bot.EditText(ctx, 9, 999, "x"); err == nil {
		t.Fatalf("editing an unknown message succeeded")
	}
	if err := w.bot.EditText(ctx, 9, id, strings.Repeat("x", MaxMessageLen+1)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("EditText over the limit = %v, want ErrTooLong", err)
	}
}

// TestTheTokenNeverAppearsInErrorsOrLogs drives the paths whose errors
// carry a URL or an answer: a refused token, a network failure (retried,
// logged), an API error.
func TestTheTokenNeverAppearsInErrorsOrLogs(t *testing.T) {
	w := newWorld(t, nil)
	ctx := context.Background()
	_, err := w.bot.Send(ctx, Outbound{ChatID: 9, ThreadID: 12345, Topic: true, Text: "no such thread"})
	if err == nil {
		t.Fatalf("sending into a thread that does not exist succeeded")
	}
	assertNoToken(t, "API error", err.Error())

	dead := faketelegram.New(testToken)
	deadURL := dead.URL()
	dead.Close()
	offline := w.newBot(func(o *Options) { o.APIURL = deadURL })
	_, err = offline.Send(ctx, Outbound{ChatID: 9, Text: "hi"})
	if err == nil {
		t.Fatalf("sending to a closed server succeeded")
	}
	assertNoToken(t, "network error", err.Error())
	if err := offline.Run(canceledAfterFirstLog(t, w.log), func(context.Context, Inbound) error { return nil }); err != nil {
		assertNoToken(t, "Run error", err.Error())
	}
	if !strings.Contains(w.log.String(), "retrying") {
		t.Fatalf("no retries were logged, the log check proves nothing:\n%s", w.log.String())
	}
	assertNoToken(t, "log", w.log.String())
}

// canceledAfterFirstLog is a context that ends once the log holds a
// getUpdates failure.
func canceledAfterFirstLog(t *testing.T, log *syncBuffer) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		defer cancel()
		for !strings.Contains(log.String(), "getUpdates failed") {
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return ctx
}
