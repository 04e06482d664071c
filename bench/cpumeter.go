package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuMeter tells, for a measured phase, how much CPU this process used and
// how busy the whole machine was. On a shared machine the second number
// says whether a phase was short of CPU (others' jobs took the cores) or
// waited on something else (the disk, a lock).
type cpuMeter struct {
	wall        time.Time
	proc        time.Duration
	busy, total uint64
}

func startCPU() cpuMeter {
	m := cpuMeter{wall: time.Now(), proc: processCPU()}
	m.busy, m.total = machineTicks()
	return m
}

// String reports the phase since startCPU, e.g. "process 1.42 CPUs,
// machine 98% busy".
func (m cpuMeter) String() string {
	wall := time.Since(m.wall)
	if wall <= 0 {
		return "cpu: ?"
	}
	s := fmt.Sprintf("process %.2f CPUs", float64(processCPU()-m.proc)/float64(wall))
	busy, total := machineTicks()
	if total > m.total {
		s += fmt.Sprintf(", machine %.0f%% busy", 100*float64(busy-m.busy)/float64(total-m.total))
	}
	return s
}

// processCPU is the user + system CPU time this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineTicks reads the busy and total CPU ticks of all cores from
// /proc/stat; both are 0 where it does not exist.
func machineTicks() (busy, total uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	var idle uint64
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0
		}
		total += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	return total - idle, total
}
