package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// errBenchFailed is returned when a benchmark could not measure; the records
// of the others are still printed and written.
var errBenchFailed = errors.New("bench: a benchmark failed")

// run is the whole program: parse flags, run the selected benchmarks, print
// the table to stdout and write the JSON file. Progress goes to stderr.
func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "small sizes and short durations (the whole run takes < 30s)")
	out := fs.String("out", "bench.json", "write the records as JSON to this file (\"\" to skip)")
	only := fs.String("only", "", "comma-separated benchmark names to run (default: all; see -list)")
	scale := fs.Float64("scale", 1, "multiply every size and duration (after -quick) by this factor")
	list := fs.Bool("list", false, "list the benchmarks and exit")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	memProfile := fs.String("memprofile", "", "write an allocation profile of the run to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *scale <= 0 {
		return fmt.Errorf("-scale must be > 0, got %v", *scale)
	}
	if *list {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, b := range benches() {
			fmt.Fprintf(tw, "%s\t%s\n", b.Name, b.Doc)
		}
		return tw.Flush()
	}
	selected, err := selectBenches(*only)
	if err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}

	if *memProfile != "" {
		defer writeAllocs(*memProfile, stderr)
	}
	c := &Config{Quick: *quick, Scale: *scale, TempRoot: os.TempDir(), Progress: stderr}
	loadBefore := loadAverage()
	start := time.Now()
	var records []Record
	var failed []string
	for _, b := range selected {
		c.Logf("== %s", b.Name)
		recs, err := b.Run(c)
		records = append(records, recs...)
		if err != nil {
			c.Logf("%s FAILED: %v", b.Name, err)
			failed = append(failed, fmt.Sprintf("%s: %v", b.Name, err))
		}
	}
	records = append(records, runRecord(c, time.Since(start), loadBefore, loadAverage()))

	printTable(stdout, records)
	if *out != "" {
		if err := writeJSON(*out, records); err != nil {
			return err
		}
		c.Logf("wrote %d records to %s", len(records), *out)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w: %s", errBenchFailed, strings.Join(failed, "; "))
	}
	return nil
}

// selectBenches returns the benchmarks named in a comma-separated list, in
// run order, or all of them for an empty list.
func selectBenches(only string) ([]Bench, error) {
	all := benches()
	if strings.TrimSpace(only) == "" {
		return all, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	var out []Bench
	var names []string
	for _, b := range all {
		names = append(names, b.Name)
		if want[b.Name] {
			out = append(out, b)
			delete(want, b.Name)
		}
	}
	if len(want) > 0 {
		var unknown []string
		for n := range want {
			unknown = append(unknown, n)
		}
		return nil, fmt.Errorf("unknown benchmark(s) %s (have %s)", strings.Join(unknown, ", "), strings.Join(names, ", "))
	}
	return out, nil
}

// runRecord describes the run itself, so that files from different machines
// or modes are not compared by mistake. The load averages tell whether
// other work shared the CPUs during the run.
func runRecord(c *Config, d time.Duration, loadBefore, loadAfter string) Record {
	mode := "full"
	if c.Quick {
		mode = "quick"
	}
	host, _ := os.Hostname()
	notes := fmt.Sprintf("mode=%s scale=%g %s %s/%s GOMAXPROCS=%d NumCPU=%d host=%s temp=%s at %s; load average before: %s, after: %s",
		mode, c.scale(), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU(),
		host, c.TempRoot, time.Now().UTC().Format(time.RFC3339), loadBefore, loadAfter)
	return newRecord("run.wall", d.Seconds(), "s", notes)
}

// printTable writes the records as an aligned table.
func printTable(w io.Writer, records []Record) {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	fmt.Fprintln(tw, "metric\t| value\t| unit\t| baseline\t| ratio\t| target\t| pass\t")
	for _, r := range records {
		base, ratio, pass := "-", "-", "-"
		if r.Baseline != nil {
			base = formatNumber(*r.Baseline)
		}
		if r.Ratio != nil {
			ratio = formatNumber(*r.Ratio) + "x"
		}
		if r.Pass != nil {
			pass = "yes"
			if !*r.Pass {
				pass = "NO"
			}
		}
		target := r.Target
		if target == "" {
			target = "-"
		}
		fmt.Fprintf(tw, "%s\t| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t\n", r.Name, formatNumber(r.Value), r.Unit, base, ratio, target, pass)
	}
	_ = tw.Flush()
}

// writeJSON writes the records as an indented JSON array.
func writeJSON(path string, records []Record) error {
	if records == nil {
		records = []Record{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep ">=" in targets readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(records); err != nil {
		return fmt.Errorf("encode records: %w", err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// loadAverage is the 1, 5 and 15 minute load averages, or "?" without /proc.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// writeAllocs writes the allocations made so far (pprof's allocs
// profile) to path; a failure is reported on stderr.
func writeAllocs(path string, stderr io.Writer) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "memory profile: %v\n", err)
	}
}
