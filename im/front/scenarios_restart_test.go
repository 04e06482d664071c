package front_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors/imbinding"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/im/telegram"
	"github.com/thatch-run/thatch/internal/testwait"
	"github.com/thatch-run/thatch/persistence"
)

// thatch stops and starts again on the same store while tmux and the
// agent go on: the binding is kept (same window, same session), a reply
// the agent wrote while thatch was down is relayed once, a message sent
// meanwhile is typed once and answered, and nothing relayed or typed
// before the restart is relayed or typed again.
func TestScenarioARestartKeepsTheBindingAndRelaysNothingTwice(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("steady", "api", "m0")
	w.send(thread, "m1")
	w.waitSaid(thread, "echo: m1")
	w.quiesce()
	before := w.said(thread)
	bound := w.binding(thread)
	if bound.State != imbinding.PhaseBound || bound.Queued != 0 || bound.Unsent != 0 {
		t.Fatalf("binding %+v before the restart, want it bound with nothing waiting", bound)
	}
	win := w.onlyWindow()

	w.stop()
	// While thatch is down the user types into the window by hand, and
	// writes in the topic.
	w.tmux("send-keys", "-t", win.ID, "-l", "typed by hand")
	w.tmux("send-keys", "-t", win.ID, "Enter")
	w.waitTyped("m0", "m1", "typed by hand")
	w.send(thread, "m2")
	w.restart()

	w.waitSaid(thread, "echo: typed by hand")
	w.waitSaid(thread, "echo: m2")
	w.quiesce()
	want := append(slices.Clone(before), "echo: typed by hand", "echo: m2")
	if got := w.said(thread); !slices.Equal(got, want) {
		t.Fatalf("the topic shows %q, want %q: what came before the restart once, then the replies since", got, want)
	}
	if got := w.typed(); !slices.Equal(got, []string{"m0", "m1", "typed by hand", "m2"}) {
		t.Fatalf("the agent took %q: a message handled before the restart was typed again, or m2 was lost", got)
	}
	if got := w.onlyWindow(); got != win {
		t.Fatalf("window %+v after the restart, want %+v", got, win)
	}
	after := w.binding(thread)
	if after.State != imbinding.PhaseBound || after.Window != bound.Window || after.Session != bound.Session || after.Queued != 0 || after.Unsent != 0 {
		t.Fatalf("binding %+v after the restart, want %+v kept", after, bound)
	}
}

// thatch stops while a reply waits in the binding's outbox (Telegram
// asked for a wait longer than a send may take): after the restart the
// reply goes out, once, without a new message to wake the binding.
func TestScenarioAReplyHeldInTheOutboxGoesOutAfterARestart(t *testing.T) {
	const retryAfter = 3 // seconds: over the send timeout
	w := newWorld(t, func(c *config.Config) { c.IM.Telegram.SendTimeout = 2 * time.Second })
	thread := w.setup("held", "docs", "m0")
	w.waitSaid(thread, "echo: m0")
	w.quiesce()

	w.tg.Fail429(1, retryAfter)
	w.send(thread, "m1")
	testwait.Until(t, "m1's reply in the outbox", func() bool { return w.binding(thread).Unsent == 1 })
	w.quiesce()
	refused := time.Now() // the quiescence waited for the refused send
	w.stop()
	if got := w.echoes(thread); !slices.Equal(got, []string{"echo: m0"}) {
		t.Fatalf("the topic got %q while Telegram asked to wait", got)
	}

	// thatch is down for longer than Telegram asked it to wait.
	testwait.Until(t, "Telegram's retry_after to pass", func() bool { return time.Since(refused) > retryAfter*time.Second })
	w.restart()
	w.waitSaid(thread, "echo: m1")
	w.quiesce()
	if got, want := w.echoes(thread), []string{"echo: m0", "echo: m1"}; !slices.Equal(got, want) {
		t.Fatalf("the topic got %q, want %q", got, want)
	}
	if got := w.typed(); !slices.Equal(got, []string{"m0", "m1"}) {
		t.Fatalf("the agent took %q", got)
	}
	if n := w.tg.Early(); n != 0 {
		t.Fatalf("%d sends came before retry_after had passed", n)
	}
	if v := w.binding(thread); v.Unsent != 0 || v.State != imbinding.PhaseBound {
		t.Fatalf("binding %+v, want it bound with its outbox empty", v)
	}
}

// A thread whose binding is quarantined (its journal could not be read)
// is told its message was not delivered: the notice goes through an
// outbox of its own, so a chat that fails to take it gets it once it
// does, and a restart before then loses it not.
func TestScenarioAQuarantinedThreadIsToldThroughAnOutbox(t *testing.T) {
	w := newWorld(t, nil)
	thread := w.setup("sick", "api", "first")
	w.waitSaid(thread, "echo: first")
	w.quiesce()
	w.stop()
	st, err := persistence.Open(filepath.Join(w.data, "journal"), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := telegram.ThreadKey(chat, thread)
	if err := st.Rows().Put("supervisor.quarantine", imbinding.KindName+"/"+key, []byte("a journal that cannot be read")); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	w.tg.FailAfter(0, 1000)
	w.restart()

	const told = "thatch cannot handle this thread now: its state needs repair (thatch status, thatch repair). Your message was not delivered."
	w.send(thread, "are you there")
	testwait.UntilReason(t, "the notice tried", func() (bool, string) {
		return w.tg.Failed() > 0, "no sendMessage failed yet"
	})
	w.quiesce()
	w.stop()
	w.tg.FailAfter(0, 0)
	w.restart()
	testwait.UntilReason(t, "the notice sent after the restart", func() (bool, string) {
		return w.count(thread, told) > 0, fmt.Sprintf("%q", w.said(thread))
	})
	w.clock.Advance(time.Minute) // past any retry's timer
	w.quiesce()
	if n := w.count(thread, told); n != 1 {
		t.Fatalf("the notice was sent %d times: %q", n, w.said(thread))
	}
	if got := w.typed(); !slices.Equal(got, []string{"first"}) {
		t.Fatalf("the agent took %q from a quarantined thread", got)
	}
}
