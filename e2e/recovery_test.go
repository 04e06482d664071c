package e2e

import (
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/fakemodel"
)

func claimOf(child string) func(Family) int {
	return func(f Family) int { return f.Claims[child] }
}

var _ = Describe("recovery", Label("opencode"), func() {
	It("loses nothing when the daemon is killed mid-extraction, and finishes the child off after a restart", func() {
		s := StartStack()
		s.Model.On(ParentTurn(s.W, "PARENT-KILL"))
		hold := make(chan struct{})
		DeferCleanup(func() { closeOnce(hold) })
		s.Model.On(Extractor(nil, nil, hold)) // held before memory_remember

		parent := s.OC.NewParent()
		s.OC.Prompt(parent.ID, "PARENT-KILL: look around")
		Eventually(s.OC.ExtractionChildren(parent.ID)).Should(HaveLen(1))
		child := s.OC.ExtractionChildren(parent.ID)()[0]
		Eventually(func() int { return s.Model.Served(ExtractorName, stepRemember) }).Should(Equal(1))
		Eventually(s.D.FamilyOf(parent.ID)).Should(WithTransform(claimOf(child), Equal(2)))

		By("SIGKILL while the child holds its claim; after a restart the claim is all there")
		s.D.Kill()
		s.D = StartDaemon(s.W)
		Expect(s.D.Family(parent.ID)).To(SatisfyAll(
			WithTransform(claimOf(child), Equal(2)),
			WithTransform(func(f Family) int { return f.Pending }, Equal(0)),
			WithTransform(func(f Family) string { return f.ExtractionChild }, Equal(child)),
		))
		By("the plugin re-registers its server with the new daemon, which finds the child still busy")
		s.D.WaitWatching(s.OC.HostPort)
		Expect(s.D.Family(parent.ID)).To(WithTransform(claimOf(child), Equal(2)))

		By("SIGKILL again; the child finishes while no daemon runs (its thatch calls fail)")
		s.D.Kill()
		idles := s.OC.Idles(child)
		closeOnce(hold)
		s.OC.WaitIdleAfter(child, idles)
		Expect(resultOf(s.Model, ExtractorName, stepFinal, 2)).To(ContainSubstring("thatch: saving the memory failed"))

		By("after the restart the daemon reconciles, finds the child idle and finishes it off")
		s.D = StartDaemon(s.W)
		s.D.WaitWatching(s.OC.HostPort)
		Eventually(s.OC.Deleted(child)).Should(BeTrue())
		Eventually(s.D.FamilyOf(parent.ID)).Should(Satisfy(drained))
	})

	It("reconnects to a restarted opencode server and reconciles what changed while it was away", func() {
		s := StartStack()
		s.Model.On(ParentTurn(s.W, "PARENT-RESTART"))
		s.Model.On(readTurn(s.W, "PARENT-LATER"))
		hold := make(chan struct{})
		DeferCleanup(func() { closeOnce(hold) })
		s.Model.On(fakemodel.Rule{Name: "held-extractor", Match: fakemodel.FirstUserContains(extractionMarker), Times: 3, Steps: []fakemodel.Step{
			Extractor().Steps[stepSkill], Extractor().Steps[stepFetch], {Text: "never sent", Gate: hold},
		}})

		parent := s.OC.NewParent()
		s.OC.Prompt(parent.ID, "PARENT-RESTART: look around")
		Eventually(s.OC.ExtractionChildren(parent.ID)).Should(HaveLen(1))
		child := s.OC.ExtractionChildren(parent.ID)()[0]
		Eventually(s.D.FamilyOf(parent.ID)).Should(WithTransform(claimOf(child), Equal(2)))

		By("opencode dies mid-extraction and comes back on the same port")
		port := s.OC.Port
		reconciles := strings.Count(s.D.Log(), "reconciled: host=opencode@"+s.OC.HostPort)
		s.OC.Kill()
		Eventually(s.D.LogMatches(`event stream lost; reconnecting: host=opencode@` + regexp.QuoteMeta(s.OC.HostPort))).Should(BeTrue())
		s.OC = StartOpenCode(s.W, port)

		By("the daemon's stream reconnects and reconciles")
		Eventually(func() int { return strings.Count(s.D.Log(), "reconciled: host=opencode@"+s.OC.HostPort) }).Should(BeNumerically(">", reconciles))

		By("the child, idle since its server died, is finished off: deleted, its claim completed")
		Eventually(s.OC.Exists(child)).Should(BeFalse())
		Eventually(s.D.FamilyOf(parent.ID)).Should(Satisfy(drained))

		By("the reconnected stream drives the next extraction")
		s.Model.On(Extractor())
		s.OC.Prompt(parent.ID, "PARENT-LATER: and again")
		Eventually(func() int { return s.Model.Served(ExtractorName, stepFinal) }).Should(Equal(1))
		Expect(payloadTools(resultOf(s.Model, ExtractorName, stepFinal, 1))).To(Equal([]string{"read"}))
		Eventually(s.D.FamilyOf(parent.ID)).Should(Satisfy(drained))
	})

	It("serves two opencode servers from one daemon, each with its own extraction", func() {
		s := StartStack()
		s.Model.On(Extractor())
		s.Model.On(ParentTurn(s.W, "SERVER-ONE"))
		s.Model.On(readTurn(s.W, "SERVER-TWO"))
		second := s.W.NewProject("project-two")
		WriteOpenCodeConfigIn(second, s.Model)
		// Its own opencode data, so the two servers share only the config.
		oc2 := StartOpenCodeIn(s.W, second, 0, "XDG_DATA_HOME="+s.W.Root+"/data-two")
		s.D.WaitWatching(oc2.HostPort)
		Expect(oc2.HostPort).NotTo(Equal(s.OC.HostPort))

		p1 := s.OC.NewParent()
		p2 := oc2.NewParent()
		s.OC.Prompt(p1.ID, "SERVER-ONE: look around")
		oc2.Prompt(p2.ID, "SERVER-TWO: read it")

		By("each server gets an extraction child for its own parent, and none for the other's")
		Eventually(s.OC.ExtractionChildren(p1.ID)).Should(HaveLen(1))
		Eventually(oc2.ExtractionChildren(p2.ID)).Should(HaveLen(1))
		Expect(s.OC.ExtractionChildren(p2.ID)()).To(BeEmpty())
		Expect(oc2.ExtractionChildren(p1.ID)()).To(BeEmpty())

		By("both extractions finish on their own server")
		Eventually(s.OC.Deleted(s.OC.ExtractionChildren(p1.ID)()[0])).Should(BeTrue())
		Eventually(oc2.Deleted(oc2.ExtractionChildren(p2.ID)()[0])).Should(BeTrue())
		Eventually(s.OC.Toasts).Should(ContainElement(ContainSubstring("memories saved")))
		Eventually(oc2.Toasts).Should(ContainElement(ContainSubstring("memories saved")))
		Eventually(s.D.FamilyOf(p1.ID)).Should(Satisfy(drained))
		Eventually(s.D.FamilyOf(p2.ID)).Should(Satisfy(drained))
	})
})
