package front_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/hosts/opencode"
	"github.com/thatch-run/thatch/hosts/opencode/front"
	"github.com/thatch-run/thatch/messages"
)

// reconcile has the host list ses_p and children (and nothing else) and
// runs the host-level reconcile a (re)connect runs.
func (w *world) reconcile(parentBusy bool, children ...messages.HostSession) {
	GinkgoHelper()
	list := []opencode.Session{{ID: "ses_p", Title: "a parent", Directory: "/src/project"}}
	busy := map[string]bool{"ses_p": parentBusy}
	for _, c := range children {
		list = append(list, opencode.Session{ID: c.SessionID, ParentID: c.ParentID, Title: c.Title})
		busy[c.SessionID] = c.Busy
	}
	w.host.ListOnly(list, busy)
	Expect(w.oc.ReconcileHost(context.Background(), hostName)).To(Succeed())
}

func extractionChild(id string, busy bool) messages.HostSession {
	return messages.HostSession{SessionID: id, ParentID: "ses_p", Title: ocfamily.ExtractionTitle, Busy: busy}
}

func taskChild(id string, busy bool) messages.HostSession {
	return messages.HostSession{SessionID: id, ParentID: "ses_p", Title: "explore", Busy: busy}
}

// finishGrace is the default grace before thatch finishes an extraction
// child found idle after a restart.
const finishGrace = 10 * time.Second

var _ = Describe("After a restart", func() {
	Describe("state comes back from the journal", Ordered, func() {
		var w *world
		var x string
		var before ocfamily.StatusView

		BeforeAll(func() {
			w = withParent(3)
			x = w.fetchingExtraction(3)
			w.memory(x, messages.MemoryCreated)
			w.tools("ses_p", "b", 3) // the memory write completed a-1..3; these stay pending
			w.childCreated("ses_task", "ses_p", "explore")
			w.tools("ses_task", "t", 2)
			Expect(w.fetch("ses_task", "").callIDs()).To(Equal([]string{"b-1", "b-2", "b-3"}))
			w.tools("ses_p", "c", 2)
			w.command("ses_p", "/thatch/exit")
			before = w.view("ses_p")
			Expect(before.Pending).To(Equal(2))
			Expect(before.Claims).To(Equal(map[string]int{"ses_task": 3}))
			Expect(before.Extracting).To(BeTrue())
			Expect(before.WrapUp).NotTo(BeNil())
		})

		It("shows the same family after the restart", func() {
			w.restart()
			Expect(w.view("ses_p")).To(Equal(before))
		})

		It("keeps the start reminder sent once", func() {
			w.parentCreated("ses_p")
			w.never(w.countOf(mNoReply), Equal(1), "the restarted family remembers it was created")
		})

		It("carries on: the extraction child's idle shows its counts and deletes it", func() {
			w.idle(x)
			Eventually(w.callsOf(mDelete)).Should(ConsistOf(HaveField("Session", x)))
			Eventually(w.callsOf(mToast)).Should(ConsistOf(HaveField("Text", ContainSubstring("1 new"))))
			v := w.view("ses_p")
			Expect(v.Extracting).To(BeFalse())
			Expect(v.Children).To(ConsistOf(HaveField("SessionID", "ses_task")), "the task child and its buffer remain")
			Expect(v.Children[0].Buffered).To(Equal(2))
		})

		It("carries on: the armed exit is checked on the next idle", func() {
			w.host.SetFinalText("ses_p", "THATCH_EXIT_READY")
			w.idle("ses_p")
			Eventually(w.callsOf(mPubTUI)).Should(HaveLen(1))
		})
	})

	Describe("an extraction child that went idle while thatch was down", Ordered, func() {
		var w *world
		var x string

		BeforeAll(func() {
			w = withParent(3)
			x = w.fetchingExtraction(3)
			w.memory(x, messages.MemoryUpdated) // completes the claim
			w.tools("ses_p", "b", 2)
			w.childCreated("ses_x2", "ses_p", ocfamily.ExtractionTitle)
			Expect(w.fetch("ses_x2", "ses_p").callIDs()).To(HaveLen(2))
			w.restart()
		})

		It("is finished through the host after the grace period", func() {
			w.reconcile(false, extractionChild(x, false), extractionChild("ses_x2", true))
			c, ok := w.child("ses_p", x)
			Expect(ok).To(BeTrue())
			Expect(c.Finishing).To(BeTrue())
			Expect(w.host.CallsOf(mDelete)).To(BeEmpty(), "not before the grace period")

			w.clock.Advance(finishGrace)
			Eventually(w.callsOf(mDelete)).Should(ConsistOf(HaveField("Session", x)))
			Eventually(w.callsOf(mToast)).Should(ConsistOf(HaveField("Text", ContainSubstring("1 updated"))))
			_, ok = w.child("ses_p", x)
			Expect(ok).To(BeFalse())
			Expect(w.view("ses_p").Extracting).To(BeFalse())
		})

		It("leaves a busy extraction child to finish on its own", func() {
			v := w.view("ses_p")
			Expect(v.Claims).To(Equal(map[string]int{"ses_x2": 2}))
			c, _ := w.child("ses_p", "ses_x2")
			Expect(c.Finishing).To(BeFalse())
		})

		It("completes the claim of a finished child when it turns idle after the grace", func() {
			w.reconcile(false, extractionChild("ses_x2", false))
			w.clock.Advance(finishGrace)
			Eventually(w.callsOf(mDelete)).Should(HaveLen(2))
			Expect(w.host.CallsOf(mDelete)[1].Session).To(Equal("ses_x2"))
			v := w.view("ses_p")
			Expect(v.Accepted).To(Equal(0), "a finished child's claim is completed")
			Expect(v.Pending).To(Equal(0))
		})
	})

	Describe("an extraction child that turned busy again before the grace ran out", Ordered, func() {
		var w *world
		var x string
		BeforeAll(func() {
			w = withParent(2)
			x = w.fetchingExtraction(2)
			w.restart()
			w.reconcile(false, extractionChild(x, false))
		})

		It("is not finished", func() {
			w.reconcile(false, extractionChild(x, true))
			w.clock.Advance(finishGrace)
			w.never(w.countOf(mDelete), Equal(0), "a busy child is still working")
			Expect(w.view("ses_p").Claims).To(Equal(map[string]int{x: 2}))
		})
	})

	Describe("an extraction child that is gone after the restart", Ordered, func() {
		var w *world
		var x string
		BeforeAll(func() {
			w = withParent(3)
			x = w.fetchingExtraction(3)
			w.host.Remove(x) // deleted while thatch was down
			w.restart()
		})

		It("has its claim requeued and its records cleared", func() {
			w.reconcile(false)
			w.clock.Advance(finishGrace)
			Eventually(func() int { return w.view("ses_p").Pending }).Should(Equal(3))
			v := w.view("ses_p")
			Expect(v.Accepted).To(Equal(0))
			Expect(v.Children).To(BeEmpty())
			Expect(v.Extracting).To(BeFalse())
			Expect(w.host.CallsOf(mDelete)).To(BeEmpty(), "there is nothing left to delete")
		})

		It("lets the next idle extract again", func() {
			next := w.extraction("ses_p")
			Expect(next).NotTo(Equal(x))
			Expect(w.fetch(next, "ses_p").callIDs()).To(Equal([]string{"a-1", "a-2", "a-3"}))
		})
	})

	Describe("a task child", Ordered, func() {
		var w *world
		BeforeAll(func() {
			w = withParent(2)
			w.childCreated("ses_task", "ses_p", "explore")
			Expect(w.fetch("ses_task", "").callIDs()).To(HaveLen(2))
			w.restart()
		})

		It("restores without the extraction flags and is never finished", func() {
			w.reconcile(false, taskChild("ses_task", false))
			c, ok := w.child("ses_p", "ses_task")
			Expect(ok).To(BeTrue())
			Expect(c.Kind).To(Equal(ocfamily.ChildTask))
			Expect(c.Finishing).To(BeFalse())
			Expect(w.view("ses_p").Extracting).To(BeFalse())
			w.clock.Advance(finishGrace)
			w.never(w.countOf(mDelete), Equal(0), "task sub-agents are never deleted")
			Expect(w.view("ses_p").Claims).To(Equal(map[string]int{"ses_task": 2}))
		})

		It("completes its claim when it next goes idle", func() {
			w.idle("ses_task")
			Expect(w.view("ses_p").Accepted).To(Equal(0))
			_, ok := w.child("ses_p", "ses_task")
			Expect(ok).To(BeTrue())
		})

		It("that the host lists but thatch never saw is recorded as a task child and routes to its family", func() {
			w.reconcile(false, taskChild("ses_task", false), taskChild("ses_new", true))
			c, ok := w.child("ses_p", "ses_new")
			Expect(ok).To(BeTrue())
			Expect(c.Kind).To(Equal(ocfamily.ChildTask))
			w.tools("ses_p", "b", 1)
			Expect(w.fetch("ses_new", "").callIDs()).To(Equal([]string{"b-1"}), "the new child's tool calls reach its parent's family")
		})
	})

	Describe("a session thatch first met through its events", Ordered, func() {
		// It existed before the daemon started, or its session.created was
		// lost: no session.created ever reached thatch.
		var w *world
		var repo string
		BeforeAll(func() {
			w = newWorld()
			repo = gitRepo("git@github.com:acme/old.git")
			for _, id := range []string{"ses_old", "ses_gone_later"} {
				w.host.AddSession(opencode.Session{ID: id, Directory: repo})
			}
			w.tools("ses_old", "a", 2)
			w.tools("ses_gone_later", "g", 1)
		})

		It("is reconciled once its host's stream named it, and its payload names the project store", func() {
			x := w.extraction("ses_old") // session.idle, from the host's stream
			Expect(w.oc.ReconcileHost(context.Background(), hostName)).To(Succeed())
			p := w.fetch(x, "ses_old")
			Expect(p.callIDs()).To(Equal([]string{"a-1", "a-2"}))
			Expect(p.ProjectStore).To(Equal("acme/old"), "the directory came from the host's listing")
		})

		It("is not judged by a host's listing when only the plugin's calls named it", func() {
			// The plugin names the server, not the directory-scoped
			// connection whose listing a reconcile reads: a session of
			// another project on the same server is not listed there.
			w.host.Remove("ses_gone_later")
			Expect(w.oc.ReconcileHost(context.Background(), hostName)).To(Succeed())
			v := w.view("ses_gone_later")
			Expect(v.Deleted).To(BeFalse())
			Expect(v.Pending).To(Equal(1))
		})

		It("when it is a child whose session.created was lost, has its first stream event routed to its family", func() {
			w.host.AddSession(opencode.Session{ID: "ses_lost_task", ParentID: "ses_old", Title: "explore", Directory: repo})
			w.tools("ses_lost_task", "t", 2) // its plugin calls come first: a stray "family" buffers them
			w.idle("ses_lost_task")          // the host lists it under ses_old
			w.never(func() []hostCall {
				var under []hostCall
				for _, c := range w.host.CallsOf(mCreate) {
					if c.Parent == "ses_lost_task" {
						under = append(under, c)
					}
				}
				return under
			}, BeEmpty(), "no extraction of its own")
			v := w.view("ses_lost_task")
			Expect(v.Deleted).To(BeTrue(), "the stray entity is ended, for the sweep to forget")
			Expect(v.Pending).To(Equal(0), "a child's own calls are never extracted")
		})

		It("is not judged deleted by the listing read for its first stream event", func() {
			// A listing covers one directory, and a session can run in
			// another: leaving it out proves nothing.
			w.tools("ses_elsewhere", "e", 1)
			w.idle("ses_elsewhere")
			v := w.view("ses_elsewhere")
			Expect(v.Deleted).To(BeFalse())
			Expect(v.Pending + v.Accepted).To(Equal(1))
		})

		It("is found deleted by a reconcile once its host no longer lists it", func() {
			w.host.Remove("ses_old")
			Expect(w.oc.ReconcileHost(context.Background(), hostName)).To(Succeed())
			v := w.view("ses_old")
			Expect(v.Deleted).To(BeTrue())
			Expect(v.Pending + v.Accepted).To(Equal(0))
		})
	})

	Describe("a session whose opencode came back on another port while thatch was down", Ordered, func() {
		var w *world
		var moved *fakeHost
		BeforeAll(func() {
			w = withParent(2)
			w.idleBlocked("ses_p", mCreate, false)
			moved = newFakeHost()
			moved.AddSession(opencode.Session{ID: "ses_p", Directory: "/src/project"})
			moved.AddSession(opencode.Session{ID: "ses_other", Directory: "/src/project"})
			// The blocked create ends with the runtime.
			w.restartWith(map[string]front.HostInfo{"moved": {Client: moved, API: "v1"}})
			// The new host's first reconcile cannot know the family yet.
			Expect(w.oc.ReconcileHost(context.Background(), "moved")).To(Succeed())
		})

		It("resumes the extraction on the new host at its first event there", func() {
			w.deliver(&messages.SessionIdle{Host: "moved", SessionID: "ses_p"})
			Eventually(func() []hostCall { return moved.CallsOf(mCreate) }).Should(HaveLen(1))
			Expect(moved.CallsOf(mCreate)[0].Parent).To(Equal("ses_p"))
		})

		It("is reconciled on the new host from then on", func() {
			moved.Remove("ses_p")
			Expect(w.oc.ReconcileHost(context.Background(), "moved")).To(Succeed())
			Expect(w.view("ses_p").Deleted).To(BeTrue())
		})
	})

	It("keeps a session on one connection when its server is watched under two names", func() {
		// The config names the server, and its plugin registered it too:
		// every stream event arrives twice, once per name.
		w := newWorld()
		twin := newFakeHost()
		w.restartWith(map[string]front.HostInfo{hostName: {Client: w.host, API: "v1"}, "twin": {Client: twin, API: "v1"}})
		w.parentCreated("ses_p")
		w.deliver(&messages.SessionCreated{Host: "twin", SessionID: "ses_p", Title: "a parent", Directory: "/src/project"})
		w.tools("ses_p", "a", 2)
		w.deliver(&messages.SessionIdle{Host: "twin", SessionID: "ses_p"})
		Eventually(w.countOf(mCreate)).Should(Equal(1), "the extraction goes to the connection the session was recorded on")
		w.deliver(&messages.SessionCreated{Host: "twin", SessionID: "ses_task", ParentID: "ses_p", Title: "explore"})
		Expect(w.view("ses_p").Host).To(Equal(hostName), "a child's event names the family's connection too")
		w.idle("ses_p")
		w.never(func() []hostCall { return twin.Calls() }, BeEmpty(), "nothing goes to the twin")
	})

	Describe("a crash between journaling and the host call", Label("crash"), func() {
		Describe("before the create reached the host", Ordered, func() {
			var w *world
			BeforeAll(func() {
				w = withParent(3)
				w.idleBlocked("ses_p", mCreate, false)
				v := w.view("ses_p")
				Expect(v.Extracting).To(BeTrue(), "the decision to extract is journaled")
				Expect(v.ExtractionChild).To(BeEmpty())
				w.restart()        // the blocked call ends with the old runtime
				w.reconcile(false) // the host reconnects
			})

			It("creates the child exactly once after the restart", func() {
				Eventually(func() []hostCall { return w.createsFor("ses_p") }).Should(HaveLen(1))
				Expect(w.host.Children("ses_p", ocfamily.ExtractionTitle)).To(HaveLen(1))
			})

			It("proceeds with the extraction", func() {
				x := w.createsFor("ses_p")[0].Session
				w.childCreated(x, "ses_p", ocfamily.ExtractionTitle)
				Eventually(w.promptsTo(x)).Should(HaveLen(1))
				Expect(w.fetch(x, "ses_p").callIDs()).To(Equal([]string{"a-1", "a-2", "a-3"}))
				Expect(w.done(x)).To(Equal(3))
				w.idle(x)
				Eventually(w.callsOf(mDelete)).Should(ConsistOf(HaveField("Session", x)))
				Expect(w.view("ses_p").Extracting).To(BeFalse())
			})
		})

		Describe("after the host created the child but before thatch heard back", Ordered, func() {
			var w *world
			var x string
			BeforeAll(func() {
				w = withParent(3)
				w.idleBlocked("ses_p", mCreate, true)
				kids := w.host.Children("ses_p", ocfamily.ExtractionTitle)
				Expect(kids).To(HaveLen(1))
				x = kids[0]
				w.childCreated(x, "ses_p", ocfamily.ExtractionTitle) // the host's event stream reported it
				w.restart()
				w.reconcile(false, extractionChild(x, false)) // the host reconnects; x was never prompted
			})

			It("reuses the child the host already made (FindChild) instead of creating a second", func() {
				Eventually(w.promptsTo(x)).Should(HaveLen(1))
				Expect(w.host.CallsOf(mFind)).To(ContainElement(HaveField("Session", x)))
				Expect(w.host.CallsOf(mCreate)).To(HaveLen(1), "the one create, interrupted by the crash")
				Expect(w.host.Children("ses_p", ocfamily.ExtractionTitle)).To(ConsistOf(x))
				Expect(w.view("ses_p").ExtractionChild).To(Equal(x))
			})

			It("does not finish the reused child although the reconcile found it idle", func() {
				c, ok := w.child("ses_p", x)
				Expect(ok).To(BeTrue())
				Expect(c.Finishing).To(BeFalse(), "attached and prompted: it is working now")
				w.clock.Advance(finishGrace)
				_, ok = w.child("ses_p", x) // answered after any timer the advance fired
				Expect(ok).To(BeTrue(), "a finish would have cleared the child's record")
				Expect(w.view("ses_p").ExtractionChild).To(Equal(x))
			})

			It("proceeds with the extraction", func() {
				Expect(w.fetch(x, "ses_p").callIDs()).To(Equal([]string{"a-1", "a-2", "a-3"}))
				w.memory(x, messages.MemoryCreated)
				w.idle(x)
				Eventually(w.callsOf(mDelete)).Should(ConsistOf(HaveField("Session", x)))
				Eventually(w.countOf(mToast)).Should(Equal(1))
				v := w.view("ses_p")
				Expect(v.Pending + v.Accepted).To(Equal(0))
			})
		})

		Describe("before the child was prompted", Ordered, func() {
			var w *world
			var x string
			BeforeAll(func() {
				w = withParent(3)
				w.idleBlocked("ses_p", mAsync, false)
				x = w.createsFor("ses_p")[0].Session
				w.childCreated(x, "ses_p", ocfamily.ExtractionTitle)
				Expect(w.view("ses_p").ExtractionChild).To(Equal(x))
				w.restart()
			})

			It("finishes the never-prompted child after the reconcile finds it idle", func() {
				w.reconcile(false, extractionChild(x, false))
				w.clock.Advance(finishGrace)
				Eventually(w.callsOf(mDelete)).Should(ConsistOf(HaveField("Session", x)))
				v := w.view("ses_p")
				Expect(v.Extracting).To(BeFalse())
				Expect(v.Pending).To(Equal(3), "the child never fetched: nothing was consumed")
			})

			It("extracts again on the next idle", func() {
				next := w.extraction("ses_p")
				Expect(next).NotTo(Equal(x))
				Expect(w.fetch(next, "ses_p").callIDs()).To(HaveLen(3))
			})
		})

		Describe("while the wrap-up's messages were being fetched", Ordered, func() {
			var w *world
			BeforeAll(func() {
				w = newWorld()
				w.parentCreated("ses_p")
				w.command("ses_p", "/thatch/exit")
				w.host.SetFinalText("ses_p", "THATCH_EXIT_READY")
				w.idleBlocked("ses_p", mMsgs, false)
				Expect(w.view("ses_p").WrapUp.Checking).To(BeTrue())
				w.restart()
				w.reconcile(false) // the host reconnects
			})

			It("checks again after the restart and exits", func() {
				Eventually(w.callsOf(mPubTUI)).Should(HaveLen(1))
				Expect(w.view("ses_p").WrapUp).To(BeNil())
			})
		})

		Describe("after a compaction was decided", Ordered, func() {
			var w *world
			BeforeAll(func() {
				w = withParent(2)
				w.command("ses_p", "/thatch/compact")
				w.host.SetFinalText("ses_p", "THATCH_COMPACT_READY")
				w.idleBlocked("ses_p", mExecTUI, false)
				Expect(w.view("ses_p").Compacting).To(BeTrue())
				w.restart()
			})

			It("clears the compacting flag when the reconcile finds the parent idle, so extraction resumes", func() {
				w.reconcile(false)
				Expect(w.view("ses_p").Compacting).To(BeFalse())
				x := w.extraction("ses_p")
				Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(2))
			})
		})
	})
})
