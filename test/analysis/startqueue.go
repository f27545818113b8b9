package analysis

import (
	"context"
	"runtime"
	"sync"
)

// starting bounds how many node processes start at once, so that a run's Jobs do not wait on this machine
// behind every other test's (the Jobs' deadlines are on their own clock, which starts once node has loaded).
var starting = newStartQueue(4 * runtime.NumCPU())

// startQueue hands out the slots to start node, first to the Jobs of a test that already started one (the
// other metrics' Jobs of a run in progress: in a cluster a run's pods start together), then in arrival
// order. Without it, on a loaded machine one metric's Job of a run could wait behind every other test's
// for longer than its sibling's whole timeout.
type startQueue struct {
	mu      sync.Mutex
	free    int
	waiting []*startWaiter
}

type startWaiter struct {
	group   *jobController
	granted chan struct{}
}

func newStartQueue(slots int) *startQueue { return &startQueue{free: slots} }

// acquire waits for a slot for one of group's Jobs; false when ctx ended first.
func (q *startQueue) acquire(ctx context.Context, group *jobController) bool {
	q.mu.Lock()
	if q.free > 0 && len(q.waiting) == 0 {
		q.free--
		group.started = true
		q.mu.Unlock()
		return true
	}
	w := &startWaiter{group: group, granted: make(chan struct{})}
	q.waiting = append(q.waiting, w)
	q.mu.Unlock()
	select {
	case <-w.granted:
		return true
	case <-ctx.Done():
		q.mu.Lock()
		defer q.mu.Unlock()
		for i, x := range q.waiting {
			if x == w {
				q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
				return false
			}
		}
		// Granted meanwhile: hand the slot on.
		q.releaseLocked()
		return false
	}
}

func (q *startQueue) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.releaseLocked()
}

func (q *startQueue) releaseLocked() {
	if len(q.waiting) == 0 {
		q.free++
		return
	}
	next := 0
	for i, w := range q.waiting {
		if w.group.started {
			next = i
			break
		}
	}
	w := q.waiting[next]
	q.waiting = append(q.waiting[:next], q.waiting[next+1:]...)
	w.group.started = true
	close(w.granted)
}
