package screenshot

import (
	"os"
	"slices"
	"testing"
	"time"
)

// loadFixture reads the claude-like 200×50 capture in testdata: a real
// `tmux capture-pane -e -p` of a pane that showed a Claude Code screen
// (truecolor text, bold, italic, reverse, a diff with coloured
// backgrounds, the logo's block elements, rounded and square boxes).
func loadFixture(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile("testdata/claude-200x50.ansi")
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkRender200x50 is the target of the performance budget: a 200×50
// pane in at most 50 ms (p99). The glyph cache is warm after the first
// iteration, as it is in the daemon after the first screenshot.
func BenchmarkRender200x50(b *testing.B) {
	benchP99(b, func(capture []byte, o Options) error { _, err := Render(capture, o); return err })
}

// BenchmarkPNG200x50 is Render plus the PNG encoding the chat upload needs.
func BenchmarkPNG200x50(b *testing.B) {
	benchP99(b, func(capture []byte, o Options) error { _, err := PNG(capture, o); return err })
}

// benchP99 times draw on the 200x50 fixture, each iteration, and reports
// the p99.
func benchP99(b *testing.B, draw func([]byte, Options) error) {
	capture := loadFixture(b)
	o := Options{Cols: 200, Rows: 50}
	b.SetBytes(int64(len(capture)))
	b.ReportAllocs()
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := draw(capture, o); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	reportP99(b, took)
}

// reportP99 adds the 99th percentile of the iterations' times as the
// metric p99-ms, the figure the budget is stated in.
func reportP99(b *testing.B, took []time.Duration) {
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	p99 := took[min(len(took)-1, len(took)*99/100)]
	b.ReportMetric(float64(p99)/float64(time.Millisecond), "p99-ms")
}
