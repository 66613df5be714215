package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// cpuUse is CPU seconds used so far: by the api and worker -start ran, by
// the PostgreSQL backends connected to its database, by this process, and
// by the whole box (all cores).
type cpuUse struct {
	api, worker, postgres, load, box float64
	backends                         map[int]float64
}

// cpuNow reads the CPU used so far by s's processes and db's backends.
func cpuNow(ctx context.Context, s *stack, db string) cpuUse {
	u := cpuUse{backends: map[int]float64{}}
	if len(s.procs) == 2 {
		u.api, u.worker = procCPU(s.procs[0].Process.Pid), procCPU(s.procs[1].Process.Pid)
	}
	if conn, err := pgx.Connect(ctx, "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"); err == nil {
		rows, err := conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = $1", db)
		if err == nil {
			for rows.Next() {
				var pid int
				if rows.Scan(&pid) == nil {
					u.backends[pid] = procCPU(pid)
					u.postgres += u.backends[pid]
				}
			}
			rows.Close()
		}
		conn.Close(ctx)
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.load = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		for i, v := range f[1:] {
			if i == 3 || i == 4 { // idle, iowait
				continue
			}
			n, _ := strconv.ParseFloat(v, 64)
			u.box += n / 100
		}
	}
	return u
}

// procCPU is a process's user + system CPU seconds (0 when it is gone).
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// printCPU prints what was used between a and b over wall.
func printCPU(a, b cpuUse, wall time.Duration) {
	pg := 0.0
	for pid, t := range b.backends {
		pg += t - a.backends[pid] // a backend that came later started at 0
	}
	w := wall.Seconds()
	fmt.Printf("cpu (cores busy): api %.2f, worker %.2f, postgres backends %.2f, load %.2f; the whole box %.2f of %d\n",
		(b.api-a.api)/w, (b.worker-a.worker)/w, pg/w, (b.load-a.load)/w, (b.box-a.box)/w, runtime.NumCPU())
}
