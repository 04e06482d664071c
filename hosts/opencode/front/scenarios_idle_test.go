package front_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/messages"
)

var _ = Describe("Session status idle", func() {
	var w *world
	BeforeEach(func() {
		w = withParent(3)
	})

	Describe("a parent going idle", func() {
		It("creates an extraction child and prompts it to fetch, remember and ack", func() {
			x := w.extraction("ses_p")
			create := w.createsFor("ses_p")[0]
			Expect(create.Title).To(Equal("thatch-extraction"))
			Expect(create.Parent).To(Equal("ses_p"))
			Expect(w.host.Calls()).To(ContainElement(HaveField("Method", mFind)), "a create first looks for a child left by a crash")

			prompt := w.promptsTo(x)()[0]
			Expect(prompt.Text).To(ContainSubstring("thatch_get_extraction_payload"))
			Expect(prompt.Text).To(ContainSubstring("ses_p"), "the prompt names the parent's queue")
			Expect(prompt.Text).To(ContainSubstring("memory_remember"))
			Expect(prompt.Text).To(ContainSubstring("thatch_extraction_done"))
			Expect(prompt.Text).To(MatchRegexp(`(?i)even if`), "the child acks even when it saved nothing")

			v := w.view("ses_p")
			Expect(v.Extracting).To(BeTrue())
			Expect(v.ExtractionChild).To(Equal(x))
		})

		It("starts no second extraction while one runs", func() {
			w.extraction("ses_p")
			w.tools("ses_p", "b", 1)
			w.idle("ses_p")
			w.never(w.countOf(mCreate), Equal(1), "one extraction at a time")
		})

		It("starts nothing when nothing is pending", func() {
			Expect(w.fetch("ses_p", "")).NotTo(BeNil()) // empties the queue
			w.idle("ses_p")
			w.never(w.countOf(mCreate), Equal(0), "nothing to extract")
			Expect(w.view("ses_p").Extracting).To(BeFalse())
		})

		It("returns stale accepted entries to pending ahead of newer ones, without duplicates", func() {
			x := w.extraction("ses_p")
			Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))
			w.tools("ses_p", "b", 2)

			By("within the stale window nothing moves")
			w.clock.Advance(14 * time.Minute)
			w.idle("ses_p")
			Expect(w.view("ses_p").Accepted).To(Equal(3))

			By("past 15 minutes the claim returns to pending, and the extractor that held it is deleted")
			w.clock.Advance(2 * time.Minute)
			w.idle("ses_p")
			v := w.view("ses_p")
			Expect(v.Accepted).To(Equal(0))
			Expect(v.Pending).To(Equal(5))
			Eventually(w.callsOf(mDelete)).Should(ContainElement(HaveField("Session", x)))
			_, held := w.child("ses_p", x)
			Expect(held).To(BeFalse())

			By("a second pass creates no duplicates")
			w.idle("ses_p")
			Expect(w.view("ses_p").Pending).To(Equal(5))

			By("the requeued entries go ahead of the newer ones")
			w.childCreated("ses_x2", "ses_p", ocfamily.ExtractionTitle)
			Expect(w.fetch("ses_x2", "ses_p").callIDs()).To(Equal([]string{"a-1", "a-2", "a-3", "b-1", "b-2"}))

			By("the stale fetcher's late ack completes nothing it no longer holds")
			Expect(w.done(x)).To(Equal(0))
			Expect(w.view("ses_p").Claims).To(Equal(map[string]int{"ses_x2": 5}))
		})

		It("has the stale reaper delete an extractor that hangs, even if the parent never goes idle again", func() {
			x := w.extraction("ses_p")
			Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))
			w.clock.Advance(16 * time.Minute) // the sweeper runs; no idle comes
			Eventually(w.callsOf(mDelete)).Should(ContainElement(HaveField("Session", x)))
			v := w.view("ses_p")
			Expect(v.Extracting).To(BeFalse())
			Expect(v.Pending).To(Equal(3), "what it held is back")

			By("the next idle extracts with a new child")
			next := w.extraction("ses_p")
			Expect(next).NotTo(Equal(x))
			Expect(w.fetch(next, "ses_p").callIDs()).To(Equal([]string{"a-1", "a-2", "a-3"}))
		})

		It("clears the flag when creating the child fails, so that the next idle retries, without nudging the model", func() {
			w.host.FailNext(mCreate, 1)
			w.idle("ses_p")
			Eventually(w.countOf(mCreate)).Should(Equal(1))
			Eventually(func() bool { return w.view("ses_p").Extracting }).Should(BeFalse())
			Expect(w.view("ses_p").Pending).To(Equal(3))
			w.never(w.countOf(mAsync), Equal(0), "no fallback prompt to the parent")

			x := w.extraction("ses_p")
			Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))
		})

		It("clears the flag when prompting the child fails, so that the next idle retries", func() {
			w.host.FailNext(mAsync, 1)
			w.idle("ses_p")
			Eventually(w.countOf(mAsync)).Should(Equal(1))
			Eventually(func() bool { return w.view("ses_p").Extracting }).Should(BeFalse())
			Expect(w.host.CallsOf(mAsync)[0].Session).NotTo(Equal("ses_p"))

			By("the next idle prompts an extraction child again")
			w.idle("ses_p")
			Eventually(w.countOf(mAsync)).Should(Equal(2))
			Expect(w.host.CallsOf(mAsync)[1].Err).NotTo(HaveOccurred())
			Expect(w.host.CallsOf(mAsync)[1].Session).NotTo(Equal("ses_p"), "never a nudge to the parent")
			Expect(w.view("ses_p").Extracting).To(BeTrue())
		})
	})

	Describe("an extraction child going idle", func() {
		It("completes its claim, shows the counts, forgets the child and deletes it", func() {
			x := w.extraction("ses_p")
			Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))
			w.tools(x, "own", 2) // the child's own calls
			c, _ := w.child("ses_p", x)
			Expect(c.Buffered).To(Equal(2))
			w.memory(x, messages.MemoryCreated)

			w.idle(x)
			Eventually(w.callsOf(mDelete)).Should(HaveLen(1))
			Expect(w.host.CallsOf(mDelete)[0].Session).To(Equal(x))
			Eventually(w.callsOf(mToast)).Should(HaveLen(1))
			Expect(w.host.CallsOf(mToast)[0].Text).To(ContainSubstring("1 new, 0 updated, 0 deleted"))
			v := w.view("ses_p")
			Expect(v.Accepted).To(Equal(0))
			Expect(v.Pending).To(Equal(0))
			Expect(v.Children).To(BeEmpty(), "every record of the child, its buffer with it, is gone")
			Expect(v.Extracting).To(BeFalse())
		})

		It("shows no toast when nothing was written", func() {
			x := w.extraction("ses_p")
			Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))
			Expect(w.done(x)).To(Equal(3))
			w.idle(x)
			Eventually(w.callsOf(mDelete)).Should(HaveLen(1))
			w.never(w.countOf(mToast), Equal(0), "a silent extraction shows no toast")
		})

		It("consumes nothing when it never fetched", func() {
			first := w.extraction("ses_p")
			Expect(w.fetch(first, "ses_p").callIDs()).To(HaveLen(3))
			w.tools("ses_p", "b", 2)
			w.childCreated("ses_idle", "ses_p", ocfamily.ExtractionTitle)

			w.idle("ses_idle")
			Eventually(w.callsOf(mDelete)).Should(ContainElement(HaveField("Session", "ses_idle")))
			v := w.view("ses_p")
			Expect(v.Claims).To(Equal(map[string]int{first: 3}))
			Expect(v.Pending).To(Equal(2))
		})
	})

	Describe("a task sub-agent going idle", func() {
		It("completes its own claim only, and is neither forgotten nor deleted", func() {
			w.childCreated("ses_task", "ses_p", "review the diff")
			w.tools("ses_task", "t", 2)
			Expect(w.fetch("ses_task", "").callIDs()).To(HaveLen(3), "a task child may fetch its parent's queue")

			w.idle("ses_task")
			v := w.view("ses_p")
			Expect(v.Accepted).To(Equal(0), "its claim completed")
			c, ok := w.child("ses_p", "ses_task")
			Expect(ok).To(BeTrue(), "the task tool still reads its output")
			Expect(c.Buffered).To(Equal(2), "its buffer is kept")
			w.never(w.countOf(mDelete), Equal(0), "a task sub-agent is never deleted")
		})

		It("a sibling sub-agent's idle leaves an extractor's claim alone", func() {
			x := w.extraction("ses_p")
			Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))
			w.childCreated("ses_task", "ses_p", "run the tests")

			w.idle("ses_task")
			v := w.view("ses_p")
			Expect(v.Claims).To(Equal(map[string]int{x: 3}))
			Expect(v.Extracting).To(BeTrue())
			w.never(w.countOf(mDelete), Equal(0), "nothing is deleted")

			Expect(w.done(x)).To(Equal(3), "the extractor still completes what it received")
		})
	})
})
