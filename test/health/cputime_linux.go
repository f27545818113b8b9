package health

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// threadCPU reads how long the calling OS thread has been on a core, from any thread: the first field of
// /proc/self/task/<tid>/schedstat, in nanoseconds (proc(5)); -1 when a read fails.
func threadCPU() (func() time.Duration, bool) {
	path := fmt.Sprintf("/proc/self/task/%d/schedstat", syscall.Gettid())
	read := func() time.Duration {
		raw, err := os.ReadFile(path)
		if err != nil {
			return -1
		}
		fields := strings.Fields(string(raw))
		if len(fields) == 0 {
			return -1
		}
		ns, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return -1
		}
		return time.Duration(ns)
	}
	return read, read() >= 0
}
