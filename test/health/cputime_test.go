package health

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// A script that needs less than Argo CD's limit is not stopped for waiting on a busy machine: here its one
// core is shared with goroutines that never wait, so it takes longer than the limit by the clock; by the time
// it is on the core it finishes well within it. (The endless script of TestVMLimitsAndMessagesAreArgoCDs is
// still stopped at the limit.)
func TestABusyMachineDoesNotStopAScript(t *testing.T) {
	if _, ok := threadCPU(); !ok {
		t.Skip("NOT CHECKED: this system gives no thread's CPU time; the VM stops scripts by the clock, as Argo CD does")
	}
	loop := func(n int) string {
		return fmt.Sprintf(`local x = 0 for i = 1, %d do x = x + i end return {status = "Healthy"}`, n)
	}
	// A loop that takes about 0.4 of the limit on a core, measured in the thread's own CPU time.
	n := 100_000
	for {
		if took := onCore(t, func() { _, _ = Run(loop(n), anyObject, false) }); took >= TimeLimit/20 {
			n = int(float64(n) * float64(TimeLimit*4/10) / float64(took))
			break
		}
		n *= 4
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	stop := make(chan struct{})
	for range 3 {
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	start := time.Now()
	var h Health
	var err error
	cpu := onCore(t, func() { h, err = Run(loop(n), anyObject, false) })
	took := time.Since(start)
	close(stop)
	if err != nil || h.Status != "Healthy" {
		t.Errorf("a script that was on a core for %v (the limit is %v) ended with %+v, %v after %v", cpu, TimeLimit, h, err, took)
	}
	if took <= TimeLimit {
		t.Errorf("the script took %v with its core shared four ways: it never waited past the limit, so this shows nothing", took)
	}
}

// onCore is how long run keeps the calling goroutine's thread on a core.
func onCore(t *testing.T, run func()) time.Duration {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu, _ := threadCPU()
	before := cpu()
	run()
	return cpu() - before
}
