package health

import (
	"context"
	"time"
)

// scriptContext is the context a script runs under: it ends, with Argo CD's error (context.DeadlineExceeded),
// once the script has been on a core for limit. Argo CD's controller times its scripts by the clock, on cores
// of its own; here the harness's other packages and API servers share the cores, and a script the clock stopped
// while it waited for one would fail the check for the machine's load, not for what it does. On an idle core
// the two agree. The caller holds its OS thread (runtime.LockOSThread) for as long as the script runs. Where
// the thread's CPU time cannot be read, the limit is the clock's, as Argo CD's.
func scriptContext(limit time.Duration) (context.Context, context.CancelFunc) {
	cpu, ok := threadCPU()
	if !ok {
		return context.WithTimeout(context.Background(), limit)
	}
	start, wallStart := cpu(), time.Now()
	used := func() time.Duration {
		if now := cpu(); now >= 0 {
			return now - start
		}
		return time.Since(wallStart) // the thread could not be read this once: the clock stands in
	}
	c := &cpuBudget{Context: context.Background(), spent: make(chan struct{})}
	finished := make(chan struct{})
	go func() {
		tick := time.NewTicker(limit / 100)
		defer tick.Stop()
		for {
			select {
			case <-finished:
				return
			case <-tick.C:
				if used() >= limit {
					close(c.spent)
					return
				}
			}
		}
	}()
	return c, func() { close(finished) }
}

// cpuBudget is a context with no deadline on the clock that ends, as a timed-out one does, when its budget
// is spent.
type cpuBudget struct {
	context.Context
	spent chan struct{}
}

func (c *cpuBudget) Done() <-chan struct{} { return c.spent }

func (c *cpuBudget) Err() error {
	select {
	case <-c.spent:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
