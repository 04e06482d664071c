package front_test

import (
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/persistence"
)

var _ = Describe("The session registry", func() {
	It("takes over the child links, hosts and directories an older thatch kept in rows, once", func() {
		dir := GinkgoT().TempDir()
		st, err := persistence.Open(filepath.Join(dir, "journal"), persistence.Options{})
		Expect(err).NotTo(HaveOccurred())
		rows := st.Rows()
		Expect(rows.Put("opencode.parent", "ses_c", []byte("ses_p"))).To(Succeed())
		Expect(rows.Put("opencode.family_host", "ses_p", []byte(hostName))).To(Succeed())
		Expect(rows.Put("opencode.family_dir", "ses_p", []byte("/src/project"))).To(Succeed())
		Expect(st.Close()).To(Succeed())

		w := newWorldIn(dir)
		routed := func() []string {
			fam, host, d := w.oc.RoutingForTest("ses_c")
			return []string{fam, host, d}
		}
		Expect(routed()).To(Equal([]string{"ses_p", hostName, "/src/project"}), "the child routes to its family, on its host")
		for table, key := range map[string]string{"opencode.parent": "ses_c", "opencode.family_host": "ses_p", "opencode.family_dir": "ses_p"} {
			_, ok, err := w.oc.RowForTest(table, key)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeFalse(), "the old row of %s is gone", table)
		}

		By("a change after the import survives a restart, and the rows are not imported again")
		w.childCreated("ses_c2", "ses_c", "explore")
		w.restart()
		Expect(routed()).To(Equal([]string{"ses_p", hostName, "/src/project"}))
		fam, _, _ := w.oc.RoutingForTest("ses_c2")
		Expect(fam).To(Equal("ses_p"), "a grandchild joins the family")
	})

	It("routes a child to its family across a restart without any row", func() {
		w := withParent(0)
		w.childCreated("ses_c", "ses_p", "explore")
		w.restart()
		fam, host, d := w.oc.RoutingForTest("ses_c")
		Expect([]string{fam, host, d}).To(Equal([]string{"ses_p", hostName, "/src/project"}))
		for _, table := range []string{"opencode.parent", "opencode.family_host", "opencode.family_dir"} {
			_, ok, err := w.oc.RowForTest(table, "ses_p")
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeFalse(), "the registry, not a row, owns %s", table)
		}
	})
})

var _ = Describe("An event whose bookkeeping fails", func() {
	It("is delivered all the same: a new session still gets its family and its start reminder", func() {
		w := newWorld()
		w.oc.BreakRegistryForTest()
		w.parentCreated("ses_q") // its directory and host cannot be recorded
		Expect(w.view("ses_q").SessionID).To(Equal("ses_q"))
		Eventually(func() []hostCall {
			var out []hostCall
			for _, c := range w.host.CallsOf(mNoReply) {
				if c.Session == "ses_q" {
					out = append(out, c)
				}
			}
			return out
		}).Should(HaveLen(1), "the start reminder went out")
		w.childCreated("ses_qc", "ses_q", "explore") // its link cannot be recorded
		Expect(w.view("ses_q").Children).To(ContainElement(HaveField("SessionID", "ses_qc")), "the child's creation reached its family")
	})
})
