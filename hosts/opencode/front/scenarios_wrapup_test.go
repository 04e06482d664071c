package front_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/ocfamily"
)

// The registry table a parent's deletion writes; it mirrors the runtime's.
const tableDeletedFamilies = "opencode.deleted_family"

var _ = Describe("Wrap-up commands", func() {
	var w *world
	BeforeEach(func() {
		w = withParent(2)
	})

	Describe("arming", func() {
		DescribeTable("each command arms its kind and token",
			func(cmd, kind, token string) {
				w.command("ses_p", cmd)
				v := w.view("ses_p")
				Expect(v.WrapUp).NotTo(BeNil())
				Expect(v.WrapUp.Kind).To(Equal(kind))
				Expect(v.WrapUp.Token).To(Equal(token))
			},
			Entry("/thatch/compact", "/thatch/compact", ocfamily.WrapUpCompact, "THATCH_COMPACT_READY"),
			Entry("/thatch/exit", "/thatch/exit", ocfamily.WrapUpExit, "THATCH_EXIT_READY"),
			Entry("without the slash", "thatch/exit", ocfamily.WrapUpExit, "THATCH_EXIT_READY"),
		)

		It("does not arm on unknown commands", func() {
			w.command("ses_p", "/help")
			w.command("ses_p", "/thatch/unknown")
			Expect(w.view("ses_p").WrapUp).To(BeNil())
			w.idle("ses_p")
			Eventually(w.countOf(mCreate)).Should(Equal(1), "an idle without a wrap-up extracts as usual")
			Expect(w.host.CallsOf(mMsgs)).To(BeEmpty())
		})
	})

	Describe("compact", func() {
		BeforeEach(func() { w.command("ses_p", "/thatch/compact") })

		It("with the token alone on the last line, triggers the host's compaction and returns early", func() {
			w.host.SetFinalText("ses_p", "Saved 3 memories.\nNothing blocks compaction.\n\n  THATCH_COMPACT_READY  \n\n")
			w.idle("ses_p")
			Eventually(w.callsOf(mExecTUI)).Should(HaveLen(1))
			Expect(w.host.CallsOf(mExecTUI)[0].Command).To(Equal("session_compact"))
			Expect(w.host.CallsOf(mMsgs)).To(ConsistOf(HaveField("Session", "ses_p")), "the final assistant text was checked")
			v := w.view("ses_p")
			Expect(v.WrapUp).To(BeNil(), "a greenlit wrap-up is spent")
			Expect(v.Compacting).To(BeTrue())
			w.never(w.countOf(mCreate), Equal(0), "the checklist drained the buffer: no extraction")
			Expect(w.host.CallsOf(mPubTUI)).To(BeEmpty())
		})
	})

	Describe("exit", func() {
		BeforeEach(func() { w.command("ses_p", "/thatch/exit") })

		It("with the token, closes the host", func() {
			w.host.SetFinalText("ses_p", "All done.\nTHATCH_EXIT_READY")
			w.idle("ses_p")
			Eventually(w.callsOf(mPubTUI)).Should(HaveLen(1))
			Expect(w.host.CallsOf(mPubTUI)[0].Command).To(Equal("app.exit"))
			Expect(w.view("ses_p").WrapUp).To(BeNil())
			w.never(w.countOf(mCreate), Equal(0), "no extraction after a greenlit exit")
			Expect(w.host.CallsOf(mExecTUI)).To(BeEmpty(), "exit does not compact")
		})

		It("with a secret in the reply, closes the host: the token survives the redactor", func() {
			w.host.SetFinalText("ses_p", "Pushed with GITHUB_TOKEN="+fakeGitHub+"\nAll done.\nTHATCH_EXIT_READY")
			w.idle("ses_p")
			Eventually(w.callsOf(mPubTUI)).Should(HaveLen(1))
			Expect(w.host.CallsOf(mPubTUI)[0].Command).To(Equal("app.exit"))
			w.stop()
			Expect(filesHolding(w.dir, []string{fakeGitHub})).To(BeEmpty())
		})

		Describe("a crash after the greenlight, before the host closed", func() {
			// greenlitThenStop greenlights the exit, holds its close at the
			// host and stops thatch there; the blocked call dies with it.
			greenlitThenStop := func() {
				w.host.SetFinalText("ses_p", "All done.\nTHATCH_EXIT_READY")
				w.idleBlocked("ses_p", mPubTUI, false)
				Expect(w.view("ses_p").ExitingSince).NotTo(BeNil(), "the greenlit exit is journaled before its effects")
				w.stop()
			}
			closes := func() []hostCall {
				var ok []hostCall
				for _, c := range w.host.CallsOf(mPubTUI) {
					if c.Err == nil {
						ok = append(ok, c)
					}
				}
				return ok
			}

			It("closes the session once its host is back after a prompt restart", func() {
				greenlitThenStop()
				w.clock = actors.NewFakeClock(w.clock.Now().Add(30 * time.Second))
				w.start()
				Expect(w.view("ses_p").ExitingSince).NotTo(BeNil(), "the exit waits for its host")
				w.reconcile(false)
				Eventually(closes).Should(HaveLen(1))
				Expect(closes()[0].Command).To(Equal("app.exit"))
				Eventually(func() *time.Time { return w.view("ses_p").ExitingSince }).Should(BeNil(), "the exit ends once its close went out")
				w.restart()
				w.reconcile(false)
				w.never(func() int { return len(closes()) }, Equal(1), "a finished exit is not issued again")
			})

			It("leaves the session open when its host is back only after the window, and tells the user", func() {
				greenlitThenStop()
				w.clock = actors.NewFakeClock(w.clock.Now().Add(time.Hour))
				w.start()
				w.reconcile(false)
				Eventually(w.callsOf(mToast)).Should(ContainElement(HaveField("Text", ContainSubstring("/thatch/exit again"))))
				Expect(closes()).To(BeEmpty(), "an hour later the user may be working in it again")
				Expect(w.view("ses_p").ExitingSince).To(BeNil())
			})

			It("ends the exit with its window when the host does not come back", func() {
				greenlitThenStop()
				w.start()
				// The view is answered after the family's recovery, which
				// set the window timer.
				Expect(w.view("ses_p").ExitingSince).NotTo(BeNil())
				w.clock.Advance(2 * time.Minute)
				Eventually(func() *time.Time { return w.view("ses_p").ExitingSince }).Should(BeNil())
				Eventually(w.callsOf(mToast)).Should(ContainElement(HaveField("Text", ContainSubstring("/thatch/exit again"))))
				Expect(closes()).To(BeEmpty())
			})
		})

		DescribeTable("without the token alone on the last line, warns and falls through to the normal idle",
			func(final string) {
				w.host.SetFinalText("ses_p", final)
				w.idle("ses_p")
				Eventually(w.callsOf(mToast)).Should(HaveLen(1))
				t := w.host.CallsOf(mToast)[0]
				Expect(t.Variant).To(Equal("warning"))
				Expect(t.Text).To(ContainSubstring("THATCH_EXIT_READY"), "the toast says what the reply must end with")
				Expect(t.Text).To(ContainSubstring("blockers"))
				Eventually(func() []hostCall { return w.createsFor("ses_p") }).Should(HaveLen(1), "buffered interactions still get extracted")
				Expect(w.host.CallsOf(mPubTUI)).To(BeEmpty())
				v := w.view("ses_p")
				Expect(v.WrapUp).NotTo(BeNil(), "the wrap-up stays armed for the next idle")
				Expect(v.WrapUp.Checking).To(BeFalse())
			},
			Entry("the token in the middle of the text", "I will print THATCH_EXIT_READY when the tests pass.\nTests still fail."),
			Entry("the token sharing its line", "Done: THATCH_EXIT_READY"),
			Entry("the other command's token", "THATCH_COMPACT_READY"),
			Entry("no assistant reply at all", ""),
		)

		It("with the token on a later idle, after a first idle without it", func() {
			w.host.SetFinalText("ses_p", "Blocked: the build is red.")
			w.idle("ses_p")
			Eventually(w.callsOf(mToast)).Should(HaveLen(1))
			w.host.SetFinalText("ses_p", "Build fixed.\nTHATCH_EXIT_READY")
			w.idle("ses_p")
			Eventually(w.callsOf(mPubTUI)).Should(HaveLen(1))
		})

		It("triggers nothing when the messages cannot be fetched", func() {
			w.host.FailNext(mMsgs, 1)
			w.host.SetFinalText("ses_p", "THATCH_EXIT_READY")
			w.idle("ses_p")
			Eventually(w.callsOf(mMsgs)).Should(HaveLen(1))
			w.never(w.countOf(mPubTUI), Equal(0), "no exit without the checked text")
			Expect(w.view("ses_p").WrapUp).NotTo(BeNil(), "still armed: the next idle checks again")

			w.idle("ses_p")
			Eventually(w.callsOf(mPubTUI)).Should(HaveLen(1))
		})

		It("is cleared when the session is deleted", func() {
			w.hostDeletes("ses_p")
			Expect(w.view("ses_p").WrapUp).To(BeNil())
			w.host.SetFinalText("ses_p", "THATCH_EXIT_READY")
			w.idle("ses_p")
			w.never(w.countOf(mMsgs), Equal(0), "a deleted session's wrap-up is never checked")
			Expect(w.host.CallsOf(mPubTUI)).To(BeEmpty())
		})
	})

	It("a parent that fetched its own payload during the checklist completes it with done", func() {
		w.command("ses_p", "/thatch/compact")
		Expect(w.fetch("ses_p", "").callIDs()).To(Equal([]string{"a-1", "a-2"}))
		Expect(w.done("ses_p")).To(Equal(2))
		w.host.SetFinalText("ses_p", "THATCH_COMPACT_READY")
		w.idle("ses_p")
		Eventually(w.callsOf(mExecTUI)).Should(HaveLen(1))
		v := w.view("ses_p")
		Expect(v.Pending + v.Accepted).To(Equal(0))
	})
})
