package metrics

import (
	"os"
	"runtime/pprof"
	"sync"
)

// StartCPUProfile writes a CPU profile of the process's whole run to the
// file CPU_PROFILE names (nothing when it is unset or the file cannot be
// made): the send benchmark profiles the worker so, cmd/load -start the
// API. The returned stop ends the profile and closes the file; calling it
// again does nothing, so a main defers it and also calls it before
// os.Exit.
func StartCPUProfile(getenv func(string) string) (stop func()) {
	path := getenv("CPU_PROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		return func() {}
	}
	if pprof.StartCPUProfile(f) != nil {
		f.Close()
		return func() {}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}
}
