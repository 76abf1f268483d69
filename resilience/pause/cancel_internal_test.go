package pause

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/internal/testctx"
)

// TestCancelledProbeAfterRepauseKeepsThePause: a waiter is handed the
// probe role as its context ends; before it takes the lock to pass the role
// on, another signal pauses the gate again. The void role must not be
// passed on: that would reopen the gate in the middle of the new pause.
// The test holds the lock to order the steps: the cancelled waiter can only
// take it once the rest has happened.
func TestCancelledProbeAfterRepauseKeepsThePause(t *testing.T) {
	bound := testctx.New(t)
	clk := clocktest.New(time.Time{})
	queued := make(chan struct{}, 1)
	p, err := New(Config{Clock: clk, Escalation: 1, Listener: func(e resilience.Event) {
		if e.Kind == resilience.EventQueued {
			queued <- struct{}{}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	p.Hold(time.Second, errors.New("slow down"))
	ctx, cancel := context.WithCancel(bound)
	done := make(chan error, 1)
	go func() {
		_, err := p.Enter(ctx)
		done <- err
	}()
	<-queued

	p.mu.Lock()
	cancel()                                                                   // the waiter wakes on its context and blocks on the lock
	p.reopenLocked(clk.Now())                                                  // the pause ends (as its timer would): the waiter is handed the probe role...
	p.holdLocked(clk.Now(), time.Minute, errors.New("slow down again"), false) // ...made void by a new pause
	p.mu.Unlock()

	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Enter: %v; want context.Canceled", err)
	}
	if s := p.State(); s.Open || s.Probing || !s.Until.Equal(clk.Now().Add(time.Minute)) {
		t.Fatalf("state %+v; want paused for the new minute", s)
	}
	p.Stop()
}
