package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// cpuUse is the CPU time a send cost, by process: a measure the other
// work on a shared machine disturbs less than mails/s (it slows the run,
// not the work each mail takes).
type cpuUse struct {
	worker, api, postgres, sink, bench float64 // seconds
}

// cpuNow reads the CPU time used so far by the workers, the api, the
// PostgreSQL backends of database db (those still connected: the pools'
// connections), the SMTP sink's process (sink; 0: it is this one) and this
// process (the in-process sink, the webhook receiver).
func cpuNow(workers []int, api, sink int, db string) cpuUse {
	var u cpuUse
	for _, pid := range workers {
		u.worker += procCPU(pid)
	}
	u.api = procCPU(api)
	if sink != 0 {
		u.sink = procCPU(sink)
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		cmd, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || !strings.HasPrefix(string(cmd), "postgres: ") || !strings.Contains(string(cmd), " "+db+" ") {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(dir))
		u.postgres += procCPU(pid)
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.bench = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	return u
}

// procCPU is a process's user and system time, in seconds.
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's closing parenthesis: utime and stime
	// are the 12th and 13th, in clock ticks (100 a second on Linux).
	rest := string(b)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100
}

func (u cpuUse) minus(o cpuUse) cpuUse {
	return cpuUse{u.worker - o.worker, u.api - o.api, u.postgres - o.postgres, u.sink - o.sink, u.bench - o.bench}
}

// total is the service's processes and the receiving side's.
func (u cpuUse) total() float64 { return u.worker + u.api + u.postgres + u.sink + u.bench }

func (u cpuUse) String() string {
	return fmt.Sprintf("%.2f s (worker %.2f, api %.2f, postgres %.2f, smtp-sink %.2f, bench process: in-process sink and receiver %.2f)",
		u.total(), u.worker, u.api, u.postgres, u.sink, u.bench)
}
