// Command testtimes prints where a test run's time went: the slowest
// specs of a Ginkgo JSON report and the slowest packages of a `go test`
// log, and a table of a run's stages against their budgets. `make test`
// and `.ci/run` use it; it reads files only and exits 0 whatever it
// finds, so that it never hides the status of the run it reports on.
//
// # Usage
//
//	go run ./internal/testtimes -ginkgo .reports/e2e.json -gotest .reports/unit.log -n 10
//	go run ./internal/testtimes -stages .reports/stages.tsv
//
// A stages file has one line per stage: name, wall seconds, budget
// seconds, exit status, separated by tabs. A stage over its budget is a
// line marked "over" in the table, not a failure.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	ginkgo := flag.String("ginkgo", "", "a Ginkgo JSON report (--json-report): print its slowest specs")
	gotest := flag.String("gotest", "", "a `go test` log: print its slowest packages")
	stages := flag.String("stages", "", "a stages file (name, seconds, budget, status per line): print the table")
	n := flag.Int("n", 10, "how many of the slowest to print")
	flag.Parse()
	out := os.Stdout
	if *ginkgo != "" {
		if err := slowestSpecs(out, *ginkgo, *n); err != nil {
			fmt.Fprintf(out, "testtimes: %v\n", err)
		}
	}
	if *gotest != "" {
		if err := slowestPackages(out, *gotest, *n); err != nil {
			fmt.Fprintf(out, "testtimes: %v\n", err)
		}
	}
	if *stages != "" {
		if err := stageTable(out, *stages); err != nil {
			fmt.Fprintf(out, "testtimes: %v\n", err)
		}
	}
}

// suiteReport is the part of a Ginkgo JSON report read here.
type suiteReport struct {
	SuiteDescription string
	RunTime          time.Duration
	SpecReports      []struct {
		ContainerHierarchyTexts []string
		LeafNodeText            string
		LeafNodeType            string
		State                   string
		RunTime                 time.Duration
		ParallelProcess         int
	}
}

func slowestSpecs(w io.Writer, path string, n int) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read the Ginkgo report: %w", err)
	}
	var reports []suiteReport
	if err := json.Unmarshal(b, &reports); err != nil {
		return fmt.Errorf("decode the Ginkgo report %s: %w", path, err)
	}
	type spec struct {
		name  string
		state string
		proc  int
		took  time.Duration
	}
	var specs []spec
	var wall, sum time.Duration
	for _, r := range reports {
		wall += r.RunTime
		for _, s := range r.SpecReports {
			if s.LeafNodeType != "It" || s.State == "skipped" || s.State == "pending" {
				continue
			}
			name := strings.Join(append(append([]string{}, s.ContainerHierarchyTexts...), s.LeafNodeText), " › ")
			specs = append(specs, spec{name, s.State, s.ParallelProcess, s.RunTime})
			sum += s.RunTime
		}
	}
	sort.SliceStable(specs, func(i, j int) bool { return specs[i].took > specs[j].took })
	fmt.Fprintf(w, "--- the %d slowest e2e specs (%d specs, %s of spec time in %s of wall time)\n",
		min(n, len(specs)), len(specs), secs(sum), secs(wall))
	for _, s := range specs[:min(n, len(specs))] {
		mark := ""
		if s.state != "passed" {
			mark = " [" + s.state + "]"
		}
		fmt.Fprintf(w, "%8s  p%-2d %s%s\n", secs(s.took), s.proc, s.name, mark)
	}
	return nil
}

// A package's result line: "ok  \tpath\t12.345s" or "FAIL\tpath\t1.2s".
var packageLine = regexp.MustCompile(`^(ok|FAIL)\s+(\S+)\s+([0-9.]+)s`)

func slowestPackages(w io.Writer, path string, n int) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read the go test log: %w", err)
	}
	defer f.Close()
	type pkg struct {
		name, status string
		took         time.Duration
	}
	var pkgs []pkg
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := packageLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		s, _ := strconv.ParseFloat(m[3], 64)
		pkgs = append(pkgs, pkg{m[2], m[1], time.Duration(s * float64(time.Second))})
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	sort.SliceStable(pkgs, func(i, j int) bool { return pkgs[i].took > pkgs[j].took })
	fmt.Fprintf(w, "--- the %d slowest unit packages (of %d)\n", min(n, len(pkgs)), len(pkgs))
	for _, p := range pkgs[:min(n, len(pkgs))] {
		mark := ""
		if p.status != "ok" {
			mark = " [" + p.status + "]"
		}
		fmt.Fprintf(w, "%8s  %s%s\n", secs(p.took), p.name, mark)
	}
	return nil
}

func stageTable(w io.Writer, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read the stages: %w", err)
	}
	fmt.Fprintf(w, "--- stages (wall seconds against each stage's budget)\n")
	fmt.Fprintf(w, "%-12s %8s %8s  %s\n", "stage", "wall", "budget", "")
	var total, budgets float64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) < 4 {
			continue
		}
		took, _ := strconv.ParseFloat(f[1], 64)
		budget, _ := strconv.ParseFloat(f[2], 64)
		total += took
		budgets += budget
		note := ""
		if f[3] != "0" {
			note = "failed (exit " + f[3] + ")"
		}
		if budget > 0 && took > budget {
			note = strings.TrimSpace("over budget " + note)
		}
		fmt.Fprintf(w, "%-12s %8.0f %8.0f  %s\n", f[0], took, budget, note)
	}
	fmt.Fprintf(w, "%-12s %8.0f %8.0f\n", "total", total, budgets)
	return nil
}

// secs writes a duration in seconds with one decimal.
func secs(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
}
