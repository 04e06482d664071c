package front_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/internal/testwait"
)

// Telegram answers the reply with 429 and a retry_after within what a
// send may wait: the reply goes out once the wait is over, not before
// (Telegram would refuse it again), once, and the replies after it wait
// their turn behind it.
func TestScenarioA429DelaysAReplyButLosesAndReordersNothing(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("storm", "api", "m0")
	w.waitSaid(thread, "echo: m0")
	w.quiesce()

	const retryAfter = 1 // seconds
	w.tg.Fail429(1, retryAfter)
	asked := time.Now()
	for i := 1; i <= 3; i++ {
		w.send(thread, fmt.Sprintf("m%d", i))
	}
	w.waitSaid(thread, "echo: m3")
	w.quiesce()

	want := []string{"echo: m0", "echo: m1", "echo: m2", "echo: m3"}
	if got := w.echoes(thread); !slices.Equal(got, want) {
		t.Fatalf("the topic got %q, want %q: each reply once, in order", got, want)
	}
	if n := w.tg.Early(); n != 0 {
		t.Fatalf("%d sends came before retry_after had passed", n)
	}
	// m1's reply was the send refused: it went out only after the wait.
	if waited := w.sent(thread, "echo: m1").At.Sub(asked); waited < retryAfter*time.Second {
		t.Fatalf("m1's reply went out %v after m1 was sent, within the retry_after of %ds", waited, retryAfter)
	}
}

// Telegram asks for a wait longer than a send may take
// (im.telegram.send_timeout): the send fails, the reply stays in the
// binding's outbox with the one after it, and goes out, before it and
// once, when the outbox tries again after the wait.
func TestScenarioAReplyHeldBackLongerThanASendMayWaitStaysInTheOutbox(t *testing.T) {
	const sendTimeout, retryAfter = 2 * time.Second, 3 // retryAfter in seconds
	const outboxRetry = 10 * time.Second               // imbinding's wait before a failed send is tried again
	w := newWorld(t, func(c *config.Config) { c.IM.Telegram.SendTimeout = sendTimeout })
	thread := w.setup("held", "web", "m0")
	w.waitSaid(thread, "echo: m0")
	w.quiesce()

	w.tg.Fail429(1, retryAfter)
	w.send(thread, "m1")
	testwait.Until(t, "m1's reply in the outbox", func() bool { return w.binding(thread).Unsent == 1 })
	w.send(thread, "m2")
	w.waitTyped("m0", "m1", "m2")
	testwait.Until(t, "m2's reply in the outbox", func() bool { return w.binding(thread).Unsent == 2 })
	w.quiesce()
	if got := w.echoes(thread); !slices.Equal(got, []string{"echo: m0"}) {
		t.Fatalf("the topic got %q while Telegram asked to wait", got)
	}

	// Telegram's wait runs on the wall clock; the outbox's on thatch's
	// (the fake clock): once the first is over, the second is advanced
	// past the outbox's retry, and the replies go out.
	refused := time.Now() // the 429 came before: the quiescence above waited for its send
	testwait.Until(t, "Telegram's retry_after to pass", func() bool { return time.Since(refused) > retryAfter*time.Second })
	w.quiesce()
	if got := w.echoes(thread); !slices.Equal(got, []string{"echo: m0"}) {
		t.Fatalf("the topic got %q before the outbox tried again", got)
	}
	w.clock.Advance(outboxRetry)
	w.waitSaid(thread, "echo: m2")
	w.quiesce()
	if got, want := w.echoes(thread), []string{"echo: m0", "echo: m1", "echo: m2"}; !slices.Equal(got, want) {
		t.Fatalf("the topic got %q, want %q", got, want)
	}
	if n := w.tg.Early(); n != 0 {
		t.Fatalf("%d sends came before retry_after had passed", n)
	}
	if v := w.binding(thread); v.Unsent != 0 {
		t.Fatalf("binding %+v, want its outbox empty", v)
	}
}

// A topic closed ends its binding and keeps its window; a message sent
// there meanwhile gets one note and is not typed; reopened, the topic is
// bound again to the same session, and what is sent next is typed to it.
func TestScenarioAClosedTopicEndsItsBindingAndReopenedResumes(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("lid", "api", "first")
	w.waitSaid(thread, "echo: first")
	w.quiesce()
	w.tg.CloseTopic(chat, thread)
	testwait.UntilReason(t, "the binding to end", func() (bool, string) {
		v := w.binding(thread)
		return v.State == "ended", fmt.Sprintf("%+v", v)
	})
	if v := w.binding(thread); v.Ended != "topic closed; window kept" {
		t.Fatalf("status says %q", v.Ended)
	}
	if ws := w.windows(); len(ws) != 1 {
		t.Fatalf("windows %+v, want the window kept", ws)
	}
	w.send(thread, "while closed")
	w.quiesce()
	w.tg.ReopenTopic(chat, thread)
	w.waitSaid(thread, "Reopened: this thread is bound again to claude in lid.")
	w.send(thread, "after")
	w.waitSaid(thread, "echo: after")
	w.quiesce()
	if got := w.typed(); !slices.Equal(got, []string{"first", "after"}) {
		t.Fatalf("the agent took %q", got)
	}
}
