package persistence

import (
	"fmt"
	"sync"
	"testing"
)

// BenchmarkAppendC1000 is the journal's group commit under 1000 entities
// appending one event each, synchronously, as journal.durable.c1000 in
// make bench does; it exists for profiles (go test -bench -cpuprofile).
func BenchmarkAppendC1000(b *testing.B) {
	st, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	j := st.Journal()
	const n = 1000
	ev := make([]byte, 200)
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N/n + 1
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := Identity{Kind: "bench", ID: fmt.Sprintf("e%04d", w)}
			for i := range per {
				if err := j.Append(id, uint64(i+1), [][]byte{ev}, MarkUnchanged); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(per*n)/b.Elapsed().Seconds(), "events/s")
	c := st.commit
	b.ReportMetric(float64(c.appends.Load())/float64(max(c.groups.Load(), 1)), "appends/commit")
}
