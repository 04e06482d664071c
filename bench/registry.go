package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Bench is one named benchmark. Run measures and returns its records; an
// error means the harness could not measure (a database would not open, an
// entity did not recover), never that a target was missed.
type Bench struct {
	// Name selects the benchmark with -only and prefixes its record names.
	Name string
	// Doc is one line shown by -list.
	Doc string
	// Order sorts the benchmarks in a run: lower runs first. Ties run in
	// name order.
	Order int
	// Run measures. It must remove every file it creates (Config.TempDir
	// does that for it) and stop every goroutine it starts.
	Run func(c *Config) ([]Record, error)
}

var registry = struct {
	sync.Mutex
	byName map[string]Bench
}{byName: map[string]Bench{}}

// register adds a benchmark; call it from an init function. It panics on a
// duplicate or empty name, which is a programming error.
func register(b Bench) {
	registry.Lock()
	defer registry.Unlock()
	if b.Name == "" || strings.ContainsAny(b.Name, ", ") || b.Run == nil {
		panic(fmt.Sprintf("bench: bad registration %q", b.Name))
	}
	if _, dup := registry.byName[b.Name]; dup {
		panic(fmt.Sprintf("bench: %q registered twice", b.Name))
	}
	registry.byName[b.Name] = b
}

// benches returns every registered benchmark in run order.
func benches() []Bench {
	registry.Lock()
	defer registry.Unlock()
	out := make([]Bench, 0, len(registry.byName))
	for _, b := range registry.byName {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Order != out[j].Order {
			return out[i].Order < out[j].Order
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Config is what every benchmark gets: how big to make its data sets and
// where to put its files.
type Config struct {
	// Quick selects the small sizes and short durations of a CI smoke run.
	Quick bool
	// Scale multiplies every size and duration after Quick picked them.
	// Default: 1.
	Scale float64
	// TempRoot is the folder under which benchmarks create their databases.
	// Default: os.TempDir().
	TempRoot string
	// Progress receives one line per step, for a person watching the run.
	// Default: discarded.
	Progress io.Writer
}

// Count is full in a full run and quick in a quick run, times Scale, and at
// least 1.
func (c *Config) Count(full, quick int) int {
	n := full
	if c.Quick {
		n = quick
	}
	n = int(math.Round(float64(n) * c.scale()))
	return max(n, 1)
}

// Duration is like Count for measuring windows; it is at least 20ms.
func (c *Config) Duration(full, quick time.Duration) time.Duration {
	d := full
	if c.Quick {
		d = quick
	}
	d = time.Duration(float64(d) * c.scale())
	return max(d, 20*time.Millisecond)
}

func (c *Config) scale() float64 {
	if c.Scale <= 0 {
		return 1
	}
	return c.Scale
}

// Logf writes a progress line.
func (c *Config) Logf(format string, args ...any) {
	if c.Progress == nil {
		return
	}
	fmt.Fprintf(c.Progress, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// TempDir makes a fresh folder under TempRoot and returns it with a function
// that removes it. Benchmarks put every database in such a folder so that a
// run leaves nothing behind.
func (c *Config) TempDir(name string) (string, func(), error) {
	root := c.TempRoot
	if root == "" {
		root = os.TempDir()
	}
	dir, err := os.MkdirTemp(root, "thatch-bench-"+name+"-")
	if err != nil {
		return "", nil, fmt.Errorf("bench: temp dir: %w", err)
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}

// Record is one measured metric, as printed and as written to the JSON file.
// Every key is always present so that files from different runs line up;
// baseline, ratio and pass are null when they do not apply.
type Record struct {
	// Name is "<bench>.<metric>", stable across runs.
	Name string `json:"name"`
	// Value is the measurement in Unit.
	Value float64 `json:"value"`
	// Unit is e.g. "events/s", "ms", "B/entity".
	Unit string `json:"unit"`
	// Baseline is the same metric measured on the SQLite baseline in the
	// same run, in the same unit; for a "<metric>.vs_<limit>" record it is
	// that limit, measured in the same run (the notes say how).
	Baseline *float64 `json:"baseline"`
	// Ratio is Value / Baseline: above 1 is better for rates, below 1 is
	// better for times and sizes.
	Ratio *float64 `json:"ratio"`
	// Target is the goal in words, e.g. ">= 300000 and >= 10x baseline".
	Target string `json:"target"`
	// Pass reports whether Value meets Target; null without a target.
	Pass *bool `json:"pass"`
	// Notes holds the parameters of the measurement and secondary numbers.
	Notes string `json:"notes"`
}

// newRecord makes a record with no baseline and no target.
func newRecord(name string, value float64, unit, notes string) Record {
	if math.IsNaN(value) || math.IsInf(value, 0) {
		notes = strings.TrimSpace(notes + fmt.Sprintf(" (value was %v)", value))
		value = 0
	}
	return Record{Name: name, Value: value, Unit: unit, Notes: notes}
}

// withBaseline sets the baseline and the ratio.
func (r Record) withBaseline(b float64) Record {
	if math.IsNaN(b) || math.IsInf(b, 0) {
		return r
	}
	r.Baseline = &b
	if b != 0 {
		ratio := r.Value / b
		r.Ratio = &ratio
	}
	return r
}

// atLeast adds the target Value >= min.
func (r Record) atLeast(min float64) Record {
	return r.addTarget(">= "+formatNumber(min), r.Value >= min)
}

// atMost adds the target Value <= max.
func (r Record) atMost(max float64) Record {
	return r.addTarget("<= "+formatNumber(max), r.Value <= max)
}

// ratioAtLeast adds the target Ratio >= min; without a baseline it fails.
func (r Record) ratioAtLeast(min float64) Record {
	return r.addTarget(">= "+formatNumber(min)+"x baseline", r.Ratio != nil && *r.Ratio >= min)
}

func (r Record) addTarget(text string, ok bool) Record {
	if r.Target != "" {
		r.Target += " and " + text
	} else {
		r.Target = text
	}
	pass := ok && (r.Pass == nil || *r.Pass)
	r.Pass = &pass
	return r
}

// formatNumber prints large numbers whole with thousands separators and
// small ones with three significant digits.
func formatNumber(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Sprint(v)
	case math.Abs(v) >= 1000:
		s := fmt.Sprintf("%.0f", math.Abs(v))
		var b strings.Builder
		if v < 0 {
			b.WriteByte('-')
		}
		for i, ch := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(ch)
		}
		return b.String()
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

// rate is n per second over d.
func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile returns the p-th percentile (0..100) of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// median of a few measurements (they are sorted in place).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	return xs[len(xs)/2]
}
