package front_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
)

var _ = Describe("Session error from a child", func() {
	var w *world
	BeforeEach(func() {
		w = withParent(3)
	})

	It("requeues what a fetching child claimed, clears the flag and the child; the next idle re-extracts", func() {
		x := w.extraction("ses_p")
		Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))
		w.tools("ses_p", "b", 1)

		w.errored(x)
		v := w.view("ses_p")
		Expect(v.Accepted).To(Equal(0))
		Expect(v.Pending).To(Equal(4))
		Expect(v.Extracting).To(BeFalse())
		Expect(v.Children).To(BeEmpty())

		next := w.extraction("ses_p")
		Expect(w.fetch(next, "ses_p").callIDs()).To(Equal([]string{"a-1", "a-2", "a-3", "b-1"}))
	})

	It("requeues only the erroring child's claim, not a sibling's", func() {
		x := w.extraction("ses_p")
		Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))
		w.tools("ses_p", "b", 2)
		w.childCreated("ses_task", "ses_p", "lint")
		Expect(w.fetch("ses_task", "").callIDs()).To(HaveLen(2))

		w.errored("ses_task")
		v := w.view("ses_p")
		Expect(v.Claims).To(Equal(map[string]int{x: 3}))
		Expect(v.Pending).To(Equal(2))
		Expect(v.Extracting).To(BeTrue(), "a task child's error leaves the running extraction alone")
		Expect(v.ExtractionChild).To(Equal(x))
	})

	It("from a task child that never fetched pulls nothing back from the running extractor", func() {
		x := w.extraction("ses_p")
		Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))
		w.childCreated("ses_task", "ses_p", "lint")
		w.errored("ses_task") // an interrupted task ends in session.error
		v := w.view("ses_p")
		Expect(v.Claims).To(Equal(map[string]int{x: 3}))
		Expect(v.Pending).To(Equal(0))
		Expect(v.ExtractionChild).To(Equal(x))

		By("the extractor's completion still consumes its own entries")
		w.memory(x, messages.MemoryCreated)
		w.idle(x)
		v = w.view("ses_p")
		Expect(v.Accepted + v.Pending).To(Equal(0))
		w.never(w.countOf(mCreate), Equal(1), "nothing came back to extract twice")
	})

	It("requeues the parent's whole accepted set when the child never fetched", func() {
		x := w.extraction("ses_p")
		Expect(w.fetch("ses_p", "").callIDs()).To(HaveLen(3), "the parent holds a claim")
		w.errored(x)
		v := w.view("ses_p")
		Expect(v.Accepted).To(Equal(0))
		Expect(v.Pending).To(Equal(3), "the error is terminal: the accepted set is recovered at once")
		Expect(v.Extracting).To(BeFalse())
		Expect(v.Children).To(BeEmpty())
	})
})

var _ = Describe("Session deleted", func() {
	var w *world
	BeforeEach(func() {
		w = withParent(3)
	})

	It("a deleted extraction child's claim is requeued, and the next idle re-extracts", func() {
		x := w.extraction("ses_p")
		Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))

		w.hostDeletes(x)
		v := w.view("ses_p")
		Expect(v.Pending).To(Equal(3))
		Expect(v.Accepted).To(Equal(0))
		Expect(v.Extracting).To(BeFalse())
		Expect(v.Children).To(BeEmpty())

		next := w.extraction("ses_p")
		Expect(next).NotTo(Equal(x))
		Expect(w.fetch(next, "ses_p").callIDs()).To(Equal([]string{"a-1", "a-2", "a-3"}))
		Expect(w.done(next)).To(Equal(3))
	})

	It("a deleted extraction child that never fetched requeues the parent's whole accepted set", func() {
		x := w.extraction("ses_p")
		w.childCreated("ses_task", "ses_p", "search")
		Expect(w.fetch("ses_task", "").callIDs()).To(HaveLen(3))
		w.hostDeletes(x)
		v := w.view("ses_p")
		Expect(v.Pending).To(Equal(3))
		Expect(v.Accepted).To(Equal(0))
	})

	It("a deleted task sub-agent requeues its own claim only", func() {
		x := w.extraction("ses_p")
		Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))
		w.tools("ses_p", "b", 2)
		w.childCreated("ses_task", "ses_p", "search")
		Expect(w.fetch("ses_task", "").callIDs()).To(Equal([]string{"b-1", "b-2"}))

		w.hostDeletes("ses_task")
		v := w.view("ses_p")
		Expect(v.Claims).To(Equal(map[string]int{x: 3}))
		Expect(v.Pending).To(Equal(2))
	})

	It("a deleted task sub-agent without a claim never pulls an extractor's payload back", func() {
		x := w.extraction("ses_p")
		Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))
		for _, id := range []string{"ses_t1", "ses_t2", "ses_t3"} {
			w.childCreated(id, "ses_p", "explore")
			w.hostDeletes(id)
		}
		v := w.view("ses_p")
		Expect(v.Claims).To(Equal(map[string]int{x: 3}))
		Expect(v.Pending).To(Equal(0))
		Expect(v.Extracting).To(BeTrue())
		Expect(w.done(x)).To(Equal(3))
	})

	It("a deleted parent takes its accepted entries along, and clears its flags, queue and wrap-up", func() {
		x := w.extraction("ses_p")
		Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))
		w.tools("ses_p", "b", 2)
		w.command("ses_p", "/thatch/compact")
		Expect(w.view("ses_p").WrapUp).NotTo(BeNil())

		w.hostDeletes("ses_p")
		v := w.view("ses_p")
		Expect(v.Deleted).To(BeTrue())
		Expect(v.Pending).To(Equal(0), "its pending buffer row is dropped")
		Expect(v.Accepted).To(Equal(0), "accepted entries go with the parent")
		Expect(v.Extracting).To(BeFalse())
		Expect(v.WrapUp).To(BeNil(), "deleting a session clears its armed wrap-up")

		By("the orphaned extractor's calls get nothing and complete nothing")
		Expect(w.fetch(x, "ses_p")).To(BeNil())
		Expect(w.done(x)).To(Equal(0))

		By("nothing more happens on the host for the deleted family")
		before := len(w.host.Calls())
		w.idle("ses_p")
		w.tools("ses_p", "c", 1)
		w.never(func() int { return len(w.host.Calls()) }, Equal(before), "a deleted family is inert")
		Expect(w.view("ses_p").Pending).To(Equal(0))
	})

	It("is forgotten by the sweep once the deletion is older than the runtime-state lifetime", func() {
		w := withParent(2)
		w.deleted("ses_p")
		noted := func() bool {
			_, ok, err := w.oc.RowForTest(tableDeletedFamilies, "ses_p")
			Expect(err).NotTo(HaveOccurred())
			return ok
		}
		Eventually(noted).Should(BeTrue(), "the deletion is noted for the sweep")
		// lists reports whether a journal index lists the family.
		lists := func(index func(kind string, fn func(persistence.Identity) error) error) func() bool {
			return func() bool {
				found := false
				Expect(index(ocfamily.KindName, func(id persistence.Identity) error {
					found = found || id.ID == "ses_p"
					return nil
				})).To(Succeed())
				return found
			}
		}
		active := lists(w.oc.JournalForTest().Active)
		Eventually(active).Should(BeFalse(), "once noted, the tombstone needs no rehydration")
		w.restart() // the tombstone is not rehydrated: nothing holds it live
		known := lists(w.oc.JournalForTest().EntityIDs)
		Expect(known()).To(BeTrue())

		w.clock.Advance(w.cfg.Sweep.DeletedSessionTTL - time.Hour) // sweeps run; the deletion is younger
		w.never(known, BeTrue(), "a recent tombstone still answers its session's late events")

		w.clock.Advance(2 * time.Hour)
		Eventually(known).Should(BeFalse(), "the sweep forgot the family's journal")
		Eventually(noted).Should(BeFalse(), "and then its note")
	})
})

var _ = Describe("Session compacted", func() {
	var w *world
	BeforeEach(func() {
		// Two buffered calls and a /thatch/compact whose checklist the
		// model finished: the next idle greenlights the compaction.
		w = newWorld()
		w.parentCreated("ses_p")
		w.tools("ses_p", "a", 2)
		w.command("ses_p", "/thatch/compact")
		w.host.SetFinalText("ses_p", "Checklist done.\n"+ocfamily.TokenCompact)
	})

	It("blocks extraction while compacting and clears the flag on session.compacted", func() {
		w.idle("ses_p")
		Eventually(w.callsOf(mExecTUI)).Should(HaveLen(1))
		Expect(w.view("ses_p").Compacting).To(BeTrue())

		By("an idle while compacting triggers no extraction")
		w.idle("ses_p")
		w.never(w.countOf(mCreate), Equal(0), "no extraction while compacting")

		By("session.compacted clears the flag; the next idle extracts")
		w.compacted("ses_p")
		Expect(w.view("ses_p").Compacting).To(BeFalse())
		x := w.extraction("ses_p")
		Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(2))
	})

	It("clears the flag and tells the user when the host refuses the compaction", func() {
		w.host.FailNext(mExecTUI, 1)
		w.idle("ses_p")
		Eventually(w.callsOf(mToast)).Should(ContainElement(And(
			HaveField("Variant", "warning"), HaveField("Text", ContainSubstring("/thatch/compact again")))))
		Expect(w.view("ses_p").Compacting).To(BeFalse(), "no session.compacted will come")

		By("the next idle extracts")
		x := w.extraction("ses_p")
		Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(2))
	})
})
