package front_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/opencode/front"
	"github.com/thatch-run/thatch/messages"
)

// toastsSaying lists the toasts whose message holds text.
func (w *world) toastsSaying(text string) func() []hostCall {
	return func() []hostCall {
		var out []hostCall
		for _, c := range w.host.CallsOf(mToast) {
			if c.Err == nil && strings.Contains(c.Text, text) {
				out = append(out, c)
			}
		}
		return out
	}
}

// incidents are the incident lines of parent's status view.
func (w *world) incidents(parent string) []ocfamily.Incident {
	GinkgoHelper()
	return w.view(parent).Incidents
}

// storeCosts is the "extraction" detail of the front end's status.
func (w *world) storeCosts() []front.StoreCost {
	rep := w.oc.Report(0)
	c, _ := rep.Details["extraction"].([]front.StoreCost)
	return c
}

var _ = Describe("Extraction failures are visible", func() {
	It("a child create that fails shows one toast and one status line, however often it is retried", func() {
		w := withParent(2)
		w.host.FailNext(mCreate, 2)
		w.idle("ses_p")
		Eventually(w.toastsSaying("extraction could not start: child create failed")).Should(HaveLen(1))
		Eventually(func() []ocfamily.Incident { return w.incidents("ses_p") }).Should(ConsistOf(
			And(HaveField("Kind", ocfamily.IncidentStartFailed), HaveField("Kept", "2 interactions kept for the next extraction"))))

		By("the retry on the next idle fails the same way: no second toast")
		w.idle("ses_p")
		Eventually(func() int {
			n := 0
			for _, c := range w.host.CallsOf(mCreate) {
				if c.Err != nil {
					n++
				}
			}
			return n
		}).Should(Equal(2))
		w.never(func() int { return len(w.toastsSaying("could not start")()) }, Equal(1), "one toast per incident, not per retry")
		Expect(w.incidents("ses_p")).To(HaveLen(1))

		By("nothing was lost: the next extraction gets everything")
		x := w.extraction("ses_p")
		Expect(w.fetch(x, "ses_p").callIDs()).To(Equal([]string{"a-1", "a-2"}))
	})

	It("a child that errors shows one toast and a status line", func() {
		w := withParent(3)
		x := w.fetchingExtraction(3)
		w.deliver(&messages.SessionErrored{Host: hostName, SessionID: x, Error: "model overloaded"})
		Eventually(w.toastsSaying("extraction child " + x + " errored: model overloaded")).Should(HaveLen(1))
		Expect(w.incidents("ses_p")).To(ConsistOf(And(
			HaveField("Kind", ocfamily.IncidentChildError),
			HaveField("Kept", "3 interactions kept for the next extraction"))))
		w.never(func() int { return len(w.toastsSaying("errored")()) }, Equal(1), "one toast")
	})

	It("a full buffer counts its drops, toasts once, and the extractor is told it sees a tail", func() {
		w := newWorldWith(GinkgoT().TempDir(), func(c *config.Config) { c.OpenCode.BufferLimit = 3 })
		w.parentCreated("ses_p")
		w.tools("ses_p", "a", 5)
		Eventually(w.toastsSaying("older interactions dropped")).Should(HaveLen(1))
		v := w.view("ses_p")
		Expect(v.Dropped).To(BeEquivalentTo(2))
		Expect(v.Pending).To(Equal(3))
		Expect(v.Incidents).To(ConsistOf(HaveField("Kind", ocfamily.IncidentBufferDrop)))

		x := w.extraction("ses_p")
		Expect(w.promptsTo(x)()[0].Text).To(ContainSubstring(
			"you see the last 3 of 5 interactions (2 older ones were dropped by the buffer limit)"))
		got := w.fetch(x, "ses_p")
		Expect(got.callIDs()).To(Equal([]string{"a-3", "a-4", "a-5"}))
		Expect(got.Note).To(ContainSubstring("you see the last 3 of 5 interactions"), "the payload says it is a tail")
		w.never(func() int { return len(w.toastsSaying("dropped")()) }, Equal(1), "one toast for the incident")
	})
})

var _ = Describe("Extraction cost", func() {
	It("is recorded per child and per store, and shown for 24 h and 7 days", func() {
		w := withParent(2)
		x := w.fetchingExtraction(2)
		v := w.view("ses_p")
		Expect(v.PayloadTokens).To(BeNumerically(">", 0))
		Expect(v.PayloadTokens).To(Equal(v.PayloadBytes / 4))
		c, ok := w.child("ses_p", x)
		Expect(ok).To(BeTrue())
		Expect(c.PayloadTokens).To(Equal(v.PayloadTokens))
		Eventually(w.storeCosts).Should(ConsistOf(And(
			HaveField("Tokens24h", v.PayloadTokens), HaveField("Tokens7d", v.PayloadTokens))))
	})

	It("past the daily budget pauses extraction with one toast, loses nothing, and resumes on request", func() {
		w := newWorldWith(GinkgoT().TempDir(), func(c *config.Config) { c.Memory.DailyBudgetTokens = 1 })
		w.parentCreated("ses_p")
		w.tools("ses_p", "a", 2)
		x := w.fetchingExtraction(2)
		w.memory(x, messages.MemoryCreated)
		w.idle(x)
		Eventually(func() int { return w.view("ses_p").Accepted }).Should(Equal(0))

		By("the budget is spent: the next idle pauses instead of creating a child")
		w.tools("ses_p", "b", 2)
		creates := len(w.host.CallsOf(mCreate))
		w.idle("ses_p")
		Eventually(w.toastsSaying("extraction paused for store")).Should(HaveLen(1))
		w.idle("ses_p")
		w.never(func() int { return len(w.host.CallsOf(mCreate)) }, Equal(creates), "no child while paused")
		Expect(w.toastsSaying("extraction paused")()).To(HaveLen(1), "one toast per store and day")
		v := w.view("ses_p")
		Expect(v.Pending).To(Equal(2), "nothing buffered is lost")
		Expect(v.Extracting).To(BeFalse())
		Expect(w.storeCosts()).To(ConsistOf(HaveField("Paused", ContainSubstring("budget 1 tokens/day reached"))))

		By("resume lifts the pause for today: the next idle extracts")
		var ans front.ResumeAnswer
		w.post("/v1/opencode/extraction/resume", map[string]string{}, &ans)
		Expect(ans.Resumed).To(HaveLen(1))
		Expect(w.storeCosts()).To(ConsistOf(HaveField("Paused", "")))
		y := w.extraction("ses_p")
		Expect(w.fetch(y, "ses_p").callIDs()).To(Equal([]string{"b-1", "b-2"}))
	})
})
