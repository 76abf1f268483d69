package bulkhead_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/resilience/bulkhead"
	"github.com/respool/respool/resilience/internal/testctx"
)

// TestStressSlotsNeverLeak: many callers queue for few slots; some cancel
// at random moments, some time out as the clock moves. Whatever the
// interleaving (a slot granted just as its waiter gives up included), at
// most MaxConcurrent calls run at once, nobody waits for ever, and every
// slot is back at the end.
func TestStressSlotsNeverLeak(t *testing.T) {
	bound := testctx.New(t)
	clk := clocktest.New(time.Time{})
	b, err := bulkhead.New(bulkhead.Config{Clock: clk, MaxConcurrent: 3, QueueSize: 20, MaxWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var inside, peak, ran, gaveUp atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 5))
			for range 150 {
				ctx, cancel := context.WithCancel(bound)
				if rng.IntN(8) == 0 {
					go cancel() // at some moment of the wait, or none
				}
				p, err := b.Enter(ctx)
				cancel()
				if err != nil {
					if !errors.Is(err, context.Canceled) && !errors.Is(err, bulkhead.ErrFull) {
						t.Errorf("Enter: %v", err)
					}
					gaveUp.Add(1)
					continue
				}
				n := inside.Add(1)
				for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
				}
				ran.Add(1)
				if d := time.Duration(rng.IntN(3)) * time.Millisecond; d > 0 {
					tm := clk.NewTimer(d) // the call takes a while
					select {
					case <-tm.C():
					case <-bound.Done():
					}
				}
				inside.Add(-1)
				b.Exit(p, nil)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for moving := true; moving; {
		select {
		case <-done:
			moving = false
		case <-bound.Done():
			t.Fatalf("stuck: %+v", b.Stats())
		default:
			clk.Advance(time.Millisecond)
		}
	}
	s := b.Stats()
	if peak.Load() > 3 || s.InUse != 0 || s.Waiting != 0 || ran.Load()+gaveUp.Load() != 16*150 {
		t.Fatalf("peak %d, stats %+v, %d ran, %d gave up", peak.Load(), s, ran.Load(), gaveUp.Load())
	}
	t.Logf("%d ran, %d gave up, %+v", ran.Load(), gaveUp.Load(), s)
	if ran.Load() == 0 || s.Queued == 0 {
		t.Fatalf("stats %+v: the test exercised little", s)
	}
}
