package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("daemon crash", func() {
	It("keeps every acknowledged tool call across a SIGKILL in the middle of concurrent writes", func() {
		const (
			sessions = 60
			calls    = 20 // the buffer keeps at most 20 per session
			workers  = 16
			killAt   = 400 // acknowledged calls before the kill
		)
		w := NewWorld()
		d := StartDaemon(w)
		client := d.Client()

		type job struct{ s, i int }
		jobs := make(chan job)
		var acked, sent [sessions]atomic.Int32
		var total atomic.Int32
		ctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for j := range jobs {
					body := map[string]any{
						"sessionID": fmt.Sprintf("ses_crash_%03d", j.s),
						"callID":    fmt.Sprintf("call_%03d_%02d", j.s, j.i),
						"tool":      "read",
						"args":      map[string]string{"filePath": fmt.Sprintf("/src/file%02d.go", j.i)},
						"title":     "read",
						"output":    fmt.Sprintf("contents of file %d of session %d", j.i, j.s),
					}
					sent[j.s].Add(1)
					cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
					if client.Do(cctx, "POST", "/v1/opencode/tool", body, nil) == nil {
						acked[j.s].Add(1)
						total.Add(1)
					}
					ccancel()
				}
			}()
		}
		go func() {
			defer close(jobs)
			for i := range calls {
				for s := range sessions {
					select {
					case jobs <- job{s, i}:
					case <-ctx.Done():
						return
					}
				}
			}
		}()

		By("SIGKILL once enough calls are acknowledged, while writers keep going")
		Eventually(total.Load, time.Minute, 5*time.Millisecond).Should(BeNumerically(">=", killAt))
		d.Kill()
		cancel()
		wg.Wait()
		Expect(int(total.Load())).To(BeNumerically("<", sessions*calls), "the kill came before the writers finished")

		By("after a restart every acknowledged call is pending in its session")
		d = StartDaemon(w)
		fams := d.Families()
		for s := range sessions {
			id := fmt.Sprintf("ses_crash_%03d", s)
			a, n := int(acked[s].Load()), int(sent[s].Load())
			if n == 0 {
				continue
			}
			Expect(fams[id].Pending).To(And(BeNumerically(">=", a), BeNumerically("<=", n)),
				"session %s: %d acknowledged, %d sent, status %s", id, a, n, describeFamily(fams[id]))
		}
	})
})
