package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// One memory across the machines of a cluster (issue 33): every memory
// written on one node is recalled on every node, a node that was down
// catches up, and two writes of one label end the same everywhere.
var _ = Describe("One memory across the machines of a cluster", Label("cluster", "memory"), func() {
	It("recalls on every node what one remembered, on a node that was down too, and ends two writes of one label the same everywhere", func() {
		cw := NewClusterWorld(3)
		cw.StartAll()
		cw.WaitFormed()
		a, b, c := cw.Nodes[0], cw.Nodes[1], cw.Nodes[2]
		recall := func(n *ClusterNode, query string) func() []string {
			return func() []string {
				var res struct {
					Hits []struct {
						Entry struct{ Label, Content string }
					}
				}
				if n.D == nil || n.D.Post("/v1/memory/recall", map[string]any{"store": "global", "query": query}, &res) != nil {
					return nil
				}
				var out []string
				for _, h := range res.Hits {
					out = append(out, h.Entry.Label+": "+h.Entry.Content)
				}
				return out
			}
		}
		remember := func(n *ClusterNode, label, content string) {
			GinkgoHelper()
			Expect(n.D.Post("/v1/memory/remember", map[string]any{"store": "global", "label": label, "content": content, "overwrite": true}, nil)).To(Succeed())
		}

		By(c.Name + " goes down; a memory is written on " + a.Name)
		c.Kill()
		Eventually(func() ([]string, error) {
			st, err := a.Cluster()
			return st.MemberNames(), err
		}, time.Minute, 250*time.Millisecond).ShouldNot(ContainElement(c.Name))
		remember(a, "Deploy path", "The web app deploys with make ship, staging first")
		Eventually(recall(b, "how does the web app deploy")).Should(ContainElement("Deploy path: The web app deploys with make ship, staging first"),
			b.Name+" recalls it")
		Eventually(func() (uint64, error) {
			st, err := a.Cluster()
			return st.MemoryBehind[c.Name], err
		}).Should(BeNumerically(">=", 1), "the status says how far the node that is down is behind")

		By(c.Name + " is back and catches up")
		c.Start()
		cw.WaitFormed()
		Eventually(recall(c, "how does the web app deploy"), time.Minute).Should(ContainElement("Deploy path: The web app deploys with make ship, staging first"))
		Eventually(func() (uint64, error) {
			st, err := c.ClusterCLI()
			return st.MemoryBehind[c.Name], err
		}).Should(BeZero())

		By("two writes of one label on two nodes at once end the same on every node")
		done := make(chan struct{}, 2)
		for i, n := range []*ClusterNode{a, b} {
			go func() {
				defer GinkgoRecover()
				defer func() { done <- struct{}{} }()
				remember(n, "Test command", fmt.Sprintf("Run the tests with make test-%d", i))
			}()
		}
		<-done
		<-done
		same := func() (string, error) {
			var seen []string
			for _, n := range []*ClusterNode{a, b, c} {
				got := recall(n, "test command")()
				if len(got) == 0 {
					return "", fmt.Errorf("%s recalls nothing", n.Name)
				}
				for _, g := range got {
					if len(g) > 13 && g[:13] == "Test command:" {
						seen = append(seen, g)
					}
				}
			}
			if len(seen) != 3 || seen[0] != seen[1] || seen[1] != seen[2] {
				return "", fmt.Errorf("the nodes differ: %q", seen)
			}
			return seen[0], nil
		}
		Eventually(same, time.Minute).Should(HavePrefix("Test command: Run the tests with make test-"))
	})
})
