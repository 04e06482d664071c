package telegram

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/internal/testwait"
)

func TestRunDeliversEachKindOfUpdateInItsConversationsOrderWithItsFields(t *testing.T) {
	w := newWorld(t, nil)
	const forum, group, private = int64(-1001), int64(-2002), int64(555)
	thread := w.srv.CreateTopic(forum, "claude: fix build")
	u2 := w.srv.Message(forum, thread, 7, "hello agent")
	w.srv.EditTopic(forum, thread, "claude: fix the build")
	u4 := w.srv.Message(private, 0, private, "private hi")
	u5 := w.srv.Message(group, 0, 8, "group without topics")
	ids, err := w.bot.Send(context.Background(), Outbound{ChatID: forum, ThreadID: thread, Topic: true, Text: "allow?", Buttons: [][]Button{{{Text: "Yes", Data: "approve:1"}}}})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	u6 := w.srv.Press(forum, thread, 7, ids[0], "approve:1")

	rec := &recorder{}
	run(t, w.bot, func(_ context.Context, in Inbound) error { rec.add(in); return nil })
	testwait.Until(t, "six updates", func() bool { return len(rec.get()) >= 6 })

	// Conversations are handed over at once: each keeps its order, and
	// the ids say where each update stands in Telegram's.
	got := rec.get()
	lastOf := map[string]int64{}
	for i := range got {
		if prev := lastOf[laneOf(got[i])]; got[i].UpdateID <= prev {
			t.Fatalf("update %d of %s handed over after %d", got[i].UpdateID, laneOf(got[i]), prev)
		}
		lastOf[laneOf(got[i])] = got[i].UpdateID
		if got[i].Cursor < 1 || got[i].Cursor > got[i].UpdateID+1 {
			t.Fatalf("update %d has cursor %d: it may pass only what is handled", got[i].UpdateID, got[i].Cursor)
		}
		got[i].Cursor = 0
	}
	sort.Slice(got, func(i, j int) bool { return got[i].UpdateID < got[j].UpdateID })
	if got[5].Callback == nil || got[5].Callback.ID == "" {
		t.Fatalf("update 6 is not a callback with an id: %+v", got[5])
	}
	cbID := got[5].Callback.ID
	want := []Inbound{
		{UpdateID: 1, UserID: 1, ChatID: forum, ThreadID: thread, Topic: true, TopicName: "claude: fix build", NameSrc: chat.NameCreated},
		{UpdateID: u2, UserID: 7, ChatID: forum, ThreadID: thread, Topic: true, Text: "hello agent", TopicName: "claude: fix build", NameSrc: chat.NameSeed},
		{UpdateID: 3, UserID: 1, ChatID: forum, ThreadID: thread, Topic: true, TopicName: "claude: fix the build", NameSrc: chat.NameEdited},
		{UpdateID: u4, UserID: private, ChatID: private, ThreadID: private, Text: "private hi"},
		{UpdateID: u5, UserID: 8, ChatID: group, ThreadID: group, Text: "group without topics"},
		{UpdateID: u6, UserID: 7, ChatID: forum, ThreadID: thread, Topic: true, Callback: &Callback{ID: cbID, Data: "approve:1", MessageID: ids[0]}},
	}
	if !reflect.DeepEqual(got, want) {
		for i := range want {
			if i < len(got) && !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("update %d:\n got %+v\nwant %+v", i+1, got[i], want[i])
			}
		}
		if len(got) != len(want) {
			t.Errorf("got %d updates, want %d", len(got), len(want))
		}
	}
	if err := w.bot.AnswerCallback(context.Background(), cbID, "approved"); err != nil {
		t.Fatalf("AnswerCallback: %v", err)
	}
}

// TestRunConfirmsNoUpdateBeforeItsHandlerSucceeded is the offset contract:
// five updates arrive in one batch; the handler handles 1 and 2 and then
// fails on (or blocks in) 3. Telegram is told about 1 and 2 only, and a
// Run restarted with the same Offset gets 3, 4, 5: nothing lost, nothing
// handled twice.
func TestRunConfirmsNoUpdateBeforeItsHandlerSucceeded(t *testing.T) {
	for _, mode := range []string{"fails", "blocks"} {
		t.Run(mode, func(t *testing.T) {
			w := newWorld(t, nil)
			for i := range 5 {
				w.srv.Message(-100, 0, 9, string(rune('a'+i)))
			}
			var attemptsOn3 atomic.Int32
			first := &recorder{}
			stop := run(t, w.bot, func(ctx context.Context, in Inbound) error {
				first.add(in)
				if in.UpdateID != 3 {
					return nil
				}
				attemptsOn3.Add(1)
				if mode == "blocks" {
					<-ctx.Done()
					return ctx.Err()
				}
				return errors.New("binding not ready")
			})
			if mode == "fails" {
				testwait.Until(t, "update 3 retried", func() bool { return attemptsOn3.Load() >= 3 })
			} else {
				testwait.Until(t, "handler blocked on 3", func() bool { return attemptsOn3.Load() == 1 })
			}
			if err := stop(); err != nil {
				t.Fatalf("Run returned %v after cancel", err)
			}
			for _, in := range first.get() {
				if in.UpdateID > 3 {
					t.Fatalf("update %d was handed out before 3 succeeded", in.UpdateID)
				}
			}
			if got := w.srv.Confirmed(); got != 2 {
				t.Fatalf("Telegram was told updates up to %d are handled, want 2", got)
			}

			again := w.newBot(nil) // a restart: the same Options, so the same Offset
			second := &recorder{}
			run(t, again, func(_ context.Context, in Inbound) error { second.add(in); return nil })
			testwait.Until(t, "updates 3-5 redelivered", func() bool { return len(second.get()) >= 3 })
			var ids []int64
			for _, in := range second.get() {
				ids = append(ids, in.UpdateID)
			}
			if !reflect.DeepEqual(ids, []int64{3, 4, 5}) {
				t.Fatalf("after restart got updates %v, want [3 4 5]", ids)
			}
			testwait.Until(t, "all five confirmed", func() bool { return w.srv.Confirmed() == 5 })
		})
	}
}

// A refused token does not stop polling for good (one 401 once did,
// silently): Run keeps asking, slowly, Health says it is refused and why,
// and once the token is accepted again the updates come through.
func TestRunOutlastsARefusedTokenAndSaysSo(t *testing.T) {
	w := newWorld(t, nil)
	w.srv.Revoke(true)
	rec := &recorder{}
	run(t, w.bot, func(_ context.Context, in Inbound) error { rec.add(in); return nil })
	testwait.Until(t, "the refusal shown", func() bool { return w.bot.Health().Refused })
	h := w.bot.Health()
	if h.Polling || !strings.Contains(h.LastError, "401") || strings.Contains(h.LastError, testToken) || h.Since.IsZero() {
		t.Fatalf("health %+v: want refused, with the 401 and without the token", h)
	}
	w.srv.Message(1, 0, 1, "after the token came back")
	w.srv.Revoke(false)
	testwait.Until(t, "the update after the refusal", func() bool { return len(rec.get()) == 1 })
	if h := w.bot.Health(); !h.Polling || h.Refused || h.LastError != "" {
		t.Fatalf("health %+v after the token was accepted again", h)
	}
}

func TestRunRefusesASecondConcurrentRun(t *testing.T) {
	w := newWorld(t, nil)
	started := make(chan struct{})
	var once atomic.Bool
	w.srv.Message(1, 0, 1, "x")
	run(t, w.bot, func(ctx context.Context, _ Inbound) error {
		if once.CompareAndSwap(false, true) {
			close(started)
		}
		<-ctx.Done()
		return ctx.Err()
	})
	<-started
	if err := w.bot.Run(context.Background(), nil); !errors.Is(err, ErrRunning) {
		t.Fatalf("second Run = %v, want ErrRunning", err)
	}
}

// After a week without updates Telegram may number the next ones anew,
// below the offset the bot would ask with, which would drop them unseen.
// A bot idle that long (or started on an offset saved that long ago) asks
// from the earliest unconfirmed update instead.
func TestRunTakesUpdatesTelegramNumberedAnewAfterAWeek(t *testing.T) {
	for _, how := range []string{"idle while running", "restarted on an old offset"} {
		t.Run(how, func(t *testing.T) {
			w := newWorld(t, nil)
			for i := range 3 {
				w.srv.Message(-100, 0, 9, string(rune('a'+i)))
			}
			rec := &recorder{}
			var mu sync.Mutex
			now := time.Now()
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			bot := w.bot
			bot.now = clock
			stop := run(t, bot, func(_ context.Context, in Inbound) error { rec.add(in); return nil })
			testwait.Until(t, "the first three", func() bool { return len(rec.get()) == 3 })
			testwait.Until(t, "the first three confirmed", func() bool { return w.srv.Confirmed() == 3 })
			if how == "restarted on an old offset" {
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				bot = w.newBot(func(o *Options) { o.Offset, o.OffsetSaved = 4, now.Add(-IDReset-time.Hour) })
				bot.now = clock
			}
			mu.Lock()
			now = now.Add(IDReset + time.Hour) // a week without updates
			mu.Unlock()
			if how == "restarted on an old offset" {
				run(t, bot, func(_ context.Context, in Inbound) error { rec.add(in); return nil })
			}
			// The poll in flight when the clock jumped asked with the old
			// offset; Telegram renumbers only after the week, when the
			// bot's next poll asks from the earliest unconfirmed update.
			testwait.Until(t, "a poll from the earliest unconfirmed update", func() bool {
				return strings.Contains(w.log.String(), "asking from the earliest unconfirmed update")
			})
			w.srv.Renumber(2)
			w.srv.Message(-100, 0, 9, "after the week")
			testwait.Until(t, "the renumbered update", func() bool { return len(rec.get()) == 4 })
			if got := rec.get()[3]; got.UpdateID != 2 || got.Text != "after the week" {
				t.Fatalf("got update %d %q, want 2 \"after the week\"", got.UpdateID, got.Text)
			}
		})
	}
}

// holding is a handler that records each update, holding the one of id
// until release is closed (or Run ends).
func holding(id int64, release <-chan struct{}, rec *recorder) func(context.Context, Inbound) error {
	return func(ctx context.Context, in Inbound) error {
		if in.UpdateID == id {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		rec.add(in)
		return nil
	}
}

// TestAConversationWhoseHandlerHangsHoldsUpNoOther: the handler of one
// forum topic hangs on its first update. Another chat's updates, the one
// in the same batch and one sent after it, are handed over meanwhile; the
// hanging topic's second update waits for its first; Telegram is told
// nothing past the hanging update until it is handled, and then all.
func TestAConversationWhoseHandlerHangsHoldsUpNoOther(t *testing.T) {
	w := newWorld(t, nil)
	const slowChat, otherChat = int64(-100), int64(-200)
	slow1 := w.srv.Message(slowChat, 0, 9, "slow one")
	w.srv.Message(otherChat, 0, 9, "other one")
	release := make(chan struct{})
	rec := &recorder{}
	run(t, w.bot, holding(slow1, release, rec))
	texts := func() []string {
		var out []string
		for _, in := range rec.get() {
			out = append(out, in.Text)
		}
		return out
	}
	testwait.Until(t, "the other chat's first update", func() bool { return len(rec.get()) == 1 })
	w.srv.Message(slowChat, 0, 9, "slow two")
	w.srv.Message(otherChat, 0, 9, "other two")
	testwait.Until(t, "the other chat's update sent while the topic hangs", func() bool { return len(rec.get()) == 2 })
	if got := texts(); !reflect.DeepEqual(got, []string{"other one", "other two"}) {
		t.Fatalf("while the slow chat hangs, handed over %q", got)
	}
	if c := w.srv.Confirmed(); c >= slow1 {
		t.Fatalf("Telegram was told update %d is handled while its handler hangs", c)
	}
	close(release)
	testwait.Until(t, "the slow chat's updates", func() bool { return len(rec.get()) == 4 })
	if got := texts(); !reflect.DeepEqual(got[2:], []string{"slow one", "slow two"}) {
		t.Fatalf("the slow chat's updates came as %q, want in order", got[2:])
	}
	testwait.Until(t, "all four confirmed", func() bool { return w.srv.Confirmed() == 4 })
}

// memParking is a Parking in memory, kept across the Bots of a test.
type memParking struct {
	mu  sync.Mutex
	ins map[int64]Inbound
}

func (p *memParking) Park(in Inbound) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ins[in.UpdateID] = in
	return nil
}

func (p *memParking) Unpark(id int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.ins, id)
	return nil
}

func (p *memParking) Parked() ([]Inbound, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Inbound
	for _, in := range p.ins {
		out = append(out, in)
	}
	return out, nil
}

func (p *memParking) texts() []string {
	ins, _ := p.Parked()
	sort.Slice(ins, func(i, j int) bool { return ins[i].UpdateID < ins[j].UpdateID })
	var out []string
	for _, in := range ins {
		out = append(out, in.Text)
	}
	return out
}

// TestASlowConversationIsParkedAndHandedOverAfterARestart: with Parking,
// a conversation whose handler hangs has its updates parked, so that
// Telegram is told every update is taken and the other conversation's
// come through at once; a restart hands the parked ones over first, in
// order, and Telegram sends none of them again.
func TestASlowConversationIsParkedAndHandedOverAfterARestart(t *testing.T) {
	park := &memParking{ins: map[int64]Inbound{}}
	tweak := func(o *Options) { o.Parking, o.ParkAfter = park, 50*time.Millisecond }
	w := newWorld(t, tweak)
	const slowChat, otherChat = int64(-100), int64(-200)
	w.srv.Message(slowChat, 0, 9, "slow one")
	w.srv.Message(otherChat, 0, 9, "other one")
	rec := &recorder{}
	stop := run(t, w.bot, func(ctx context.Context, in Inbound) error {
		if in.ChatID == slowChat {
			<-ctx.Done()
			return ctx.Err()
		}
		rec.add(in)
		return nil
	})
	testwait.Until(t, "the other chat's first update", func() bool { return len(rec.get()) == 1 })
	w.srv.Message(slowChat, 0, 9, "slow two")
	w.srv.Message(otherChat, 0, 9, "other two")
	testwait.Until(t, "the other chat's second update", func() bool { return len(rec.get()) == 2 })
	testwait.Until(t, "every update confirmed, the slow chat's parked", func() bool { return w.srv.Confirmed() == 4 })
	if got := park.texts(); !reflect.DeepEqual(got, []string{"slow one", "slow two"}) {
		t.Fatalf("parked %q, want the slow chat's two updates", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	again := &recorder{}
	run(t, w.newBot(tweak), func(_ context.Context, in Inbound) error { again.add(in); return nil })
	testwait.Until(t, "the parked updates handed over", func() bool { return len(again.get()) == 2 })
	var texts []string
	for _, in := range again.get() {
		texts = append(texts, in.Text)
	}
	if !reflect.DeepEqual(texts, []string{"slow one", "slow two"}) {
		t.Fatalf("after the restart handed over %q, want the parked updates in order", texts)
	}
	testwait.Until(t, "nothing parked once handled", func() bool { return len(park.texts()) == 0 })
}

// gatedParking is a memParking whose Park waits for gate once armed.
type gatedParking struct {
	memParking
	armed atomic.Bool
	gate  chan struct{}
	parks atomic.Int32 // Park calls returned
}

func (p *gatedParking) Park(in Inbound) error {
	if p.armed.Load() {
		<-p.gate
	}
	defer p.parks.Add(1)
	return p.memParking.Park(in)
}

// TestAnUpdateHandledWhileItsParkIsWrittenIsNotLeftParked: a conversation
// that was slow has its next update parked as it comes; when the handler
// is done with it before the park is written, the park is taken back, so
// the update is not handed over again at the next start.
func TestAnUpdateHandledWhileItsParkIsWrittenIsNotLeftParked(t *testing.T) {
	park := &gatedParking{memParking: memParking{ins: map[int64]Inbound{}}, gate: make(chan struct{})}
	w := newWorld(t, func(o *Options) { o.Parking, o.ParkAfter = park, 50*time.Millisecond })
	const chatID = int64(-100)
	slow := w.srv.Message(chatID, 0, 9, "slow")
	release := make(chan struct{})
	rec := &recorder{}
	run(t, w.bot, holding(slow, release, rec))
	testwait.Until(t, "the slow update parked", func() bool { return len(park.texts()) == 1 })
	close(release)
	testwait.Until(t, "the slow update handled and unparked", func() bool { return len(rec.get()) == 1 && len(park.texts()) == 0 })

	park.armed.Store(true) // the next park waits
	w.srv.Message(chatID, 0, 9, "fast")
	testwait.Until(t, "the next update handled while its park waits", func() bool { return len(rec.get()) == 2 })
	if park.parks.Load() != 1 {
		t.Fatalf("%d parks written before the gate opened, want the slow update's only", park.parks.Load())
	}
	close(park.gate)
	testwait.Until(t, "every update confirmed", func() bool { return w.srv.Confirmed() == 2 })
	testwait.Until(t, "the second park written and taken back", func() bool {
		return park.parks.Load() == 2 && len(park.texts()) == 0
	})
}

// TestEveryHandledUpdateIsConfirmedByTheNextPoll: updates handled at once
// (the lane done before Run looks again) are confirmed all the same: the
// next poll's offset passes each, one message at a time.
func TestEveryHandledUpdateIsConfirmedByTheNextPoll(t *testing.T) {
	w := newWorld(t, nil)
	run(t, w.bot, func(context.Context, Inbound) error { return nil })
	for i := range 30 {
		id := w.srv.Message(int64(-100-i%3), 0, 9, "m")
		testwait.Until(t, "the update confirmed", func() bool { return w.srv.Confirmed() == id })
	}
}
