package front_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/messages"
)

var _ = Describe("Payload fetch and completion", func() {
	var w *world
	BeforeEach(func() {
		w = withParent(3)
	})

	It("reaches the parent's queue from an extraction child whose session.created was lost", func() {
		w.idle("ses_p")
		Eventually(func() []hostCall { return w.createsFor("ses_p") }).Should(HaveLen(1))
		x := w.createsFor("ses_p")[0].Session
		Eventually(w.promptsTo(x)).Should(HaveLen(1))
		// No session.created for x reaches thatch (its stream was down).
		Expect(w.fetch(x, "").callIDs()).To(Equal([]string{"a-1", "a-2", "a-3"}))
		w.memory(x, messages.MemoryCreated)
		w.idle(x)
		Eventually(w.callsOf(mDelete)).Should(ContainElement(HaveField("Session", x)))
		v := w.view("ses_p")
		Expect(v.Pending + v.Accepted).To(Equal(0))
	})

	DescribeTable("a child's fetch means its parent's queue",
		func(target func(child string) string) {
			x := w.extraction("ses_p")
			p := w.fetch(x, target(x))
			Expect(p.callIDs()).To(Equal([]string{"a-1", "a-2", "a-3"}))
			Expect(p.ProjectStore).NotTo(BeEmpty())
			Expect(p.GlobalStore).NotTo(BeEmpty())
			v := w.view("ses_p")
			Expect(v.Pending).To(Equal(0), "pending entries moved to accepted")
			Expect(v.Accepted).To(Equal(3))
			Expect(v.Claims).To(Equal(map[string]int{x: 3}), "the claim records the fetcher")
		},
		Entry("with no session_id", func(string) string { return "" }),
		Entry("with the child's own id", func(child string) string { return child }),
		Entry("with the parent's id", func(string) string { return "ses_p" }),
	)

	It("returns null when nothing is queued, and for another family's id", func() {
		x := w.extraction("ses_p")
		Expect(w.fetch(x, "ses_other")).To(BeNil(), "another family's queue is not the child's to take")
		Expect(w.view("ses_p").Pending).To(Equal(3))
		Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))
		Expect(w.fetch(x, "ses_p")).To(BeNil(), "nothing is left")
	})

	It("two extractors: the second sees only what is still pending, and the first completion consumes only its own entries", func() {
		first := w.extraction("ses_p")
		Expect(w.fetch(first, "ses_p").callIDs()).To(Equal([]string{"a-1", "a-2", "a-3"}))

		w.tools("ses_p", "b", 2)
		w.childCreated("ses_second", "ses_p", ocfamily.ExtractionTitle)
		Expect(w.fetch("ses_second", "ses_p").callIDs()).To(Equal([]string{"b-1", "b-2"}))
		Expect(w.view("ses_p").Claims).To(Equal(map[string]int{first: 3, "ses_second": 2}))

		Expect(w.done(first)).To(Equal(3))
		v := w.view("ses_p")
		Expect(v.Claims).To(Equal(map[string]int{"ses_second": 2}), "the second claim is untouched")
		Expect(v.Accepted).To(Equal(2))
		Expect(v.Pending).To(Equal(0))

		Expect(w.done(first)).To(Equal(0), "a second ack completes nothing twice")
		Expect(w.done("ses_second")).To(Equal(2))
		Expect(w.view("ses_p").Accepted).To(Equal(0))
	})

	It("a done-ack before any fetch consumes nothing when nothing is accepted", func() {
		x := w.extraction("ses_p")
		Expect(w.done(x)).To(Equal(0))
		Expect(w.view("ses_p").Pending).To(Equal(3), "the queue is still there for the next extraction")

		By("the child then goes idle: it is deleted, and the next parent idle extracts again")
		w.idle(x)
		Eventually(w.callsOf(mDelete)).Should(ContainElement(HaveField("Session", x)))
		Expect(w.view("ses_p").Extracting).To(BeFalse())
		next := w.extraction("ses_p")
		Expect(next).NotTo(Equal(x))
		Expect(w.fetch(next, "ses_p").callIDs()).To(HaveLen(3))
	})

	It("a done-ack from a child that never fetched completes the parent's whole accepted set", func() {
		x := w.extraction("ses_p")
		Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))
		w.tools("ses_p", "b", 1)
		w.childCreated("ses_late", "ses_p", ocfamily.ExtractionTitle)

		Expect(w.done("ses_late")).To(Equal(3), "the fallback completes every accepted entry")
		v := w.view("ses_p")
		Expect(v.Accepted).To(Equal(0))
		Expect(v.Pending).To(Equal(1), "pending entries are not part of the fallback")
		Expect(w.done(x)).To(Equal(0), "entries are never completed twice")
	})

	It("a parent that fetched its own payload completes its own claim on done (the wrap-up case)", func() {
		p := w.fetch("ses_p", "")
		Expect(p.callIDs()).To(HaveLen(3))
		Expect(w.view("ses_p").Claims).To(Equal(map[string]int{"ses_p": 3}))
		Expect(w.done("ses_p")).To(Equal(3))
		Expect(w.view("ses_p").Accepted).To(Equal(0))
	})

	It("a parent's done-ack never completes a child's claim", func() {
		x := w.extraction("ses_p")
		Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))
		Expect(w.done("ses_p")).To(Equal(0))
		Expect(w.view("ses_p").Claims).To(Equal(map[string]int{x: 3}))
	})

	Describe("memory writes", func() {
		It("complete the writing child's claim and are counted for its toast", func() {
			x := w.extraction("ses_p")
			Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))
			w.memory(x, messages.MemoryCreated)
			Expect(w.view("ses_p").Accepted).To(Equal(0), "memory_remember completes the claim")
			w.memory(x, messages.MemoryCreated)
			w.memory(x, messages.MemoryUpdated)
			w.memory(x, messages.MemoryDeleted)
			Expect(w.done(x)).To(Equal(0))

			w.idle(x)
			Eventually(w.callsOf(mToast)).Should(HaveLen(1))
			t := w.host.CallsOf(mToast)[0]
			Expect(t.Text).To(ContainSubstring("2 new"))
			Expect(t.Text).To(ContainSubstring("1 updated"))
			Expect(t.Text).To(ContainSubstring("1 deleted"))
		})

		It("through the real memory_remember and memory_forget routes complete the claim and are counted", func() {
			x := w.extraction("ses_p")
			p := w.fetch(x, "ses_p")
			Expect(p.callIDs()).To(HaveLen(3))
			w.post("/v1/memory/remember", map[string]any{"sessionID": x, "store": p.ProjectStore,
				"label": "test command", "content": "The project's tests run with make test."}, nil)
			Expect(w.view("ses_p").Accepted).To(Equal(0), "the write completed the child's claim")
			w.post("/v1/memory/remember", map[string]any{"sessionID": x, "store": p.ProjectStore, "overwrite": true,
				"label": "test command", "content": "The project's tests run with make test (needs -race)."}, nil)
			w.post("/v1/memory/forget", map[string]any{"sessionID": x, "store": p.ProjectStore, "label": "test command"}, nil)

			w.idle(x)
			Eventually(w.callsOf(mToast)).Should(HaveLen(1))
			Expect(w.host.CallsOf(mToast)[0].Text).To(ContainSubstring("1 new, 1 updated, 1 deleted"))
		})

		It("by a child that holds no claim consume nothing", func() {
			x := w.extraction("ses_p")
			Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))
			w.childCreated("ses_task", "ses_p", "explore")
			w.memory("ses_task", messages.MemoryCreated)
			Expect(w.view("ses_p").Claims).To(Equal(map[string]int{x: 3}))

			w.childCreated("ses_x2", "ses_p", ocfamily.ExtractionTitle)
			w.memory("ses_x2", messages.MemoryCreated)
			Expect(w.view("ses_p").Claims).To(Equal(map[string]int{x: 3}), "no claim, no completion: not even the fallback")
		})
	})
})
