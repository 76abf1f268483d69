package pause

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/resilience/internal/testctx"
)

// TestStressGate: many callers pass the gate while some meet the slow-down
// signal, some cancel while they wait, and the clock moves. Whatever the
// interleaving: each probe role is handed to one caller only; once the
// signals stop, every caller that did not cancel gets through (none is
// left behind the gate: a lost wake-up); and the gate ends open and empty.
func TestStressGate(t *testing.T) {
	bound := testctx.New(t)
	clk := clocktest.New(time.Time{})
	busy := errors.New("busy")
	var signals atomic.Bool
	signals.Store(true)
	p, err := New(Config{Clock: clk, MaxPause: 50 * time.Millisecond, Classify: func(err error) (time.Duration, bool) {
		return 10 * time.Millisecond, errors.Is(err, busy)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	var mu sync.Mutex
	probes := map[int64]int{} // probe generation → callers given it
	var passed, cancelled atomic.Int64
	var wg sync.WaitGroup
	const callers, calls = 16, 300
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 11))
			for range calls {
				ctx, cancel := context.WithCancel(bound)
				if rng.IntN(10) == 0 {
					cancel() // gives up at once if it has to wait
				}
				pm, err := p.Enter(ctx)
				cancel()
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						t.Errorf("Enter: %v", err)
					}
					cancelled.Add(1)
					continue
				}
				passed.Add(1)
				if pm.Token == probeToken {
					mu.Lock()
					probes[pm.Since]++
					if n := probes[pm.Since]; n > 1 {
						t.Errorf("probe generation %d handed out %d times", pm.Since, n)
					}
					mu.Unlock()
				}
				var out error
				if signals.Load() && rng.IntN(4) == 0 {
					out = busy
				}
				p.Exit(pm, out)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for {
		if passed.Load() > callers*calls/2 {
			signals.Store(false) // the server recovers: the rest must all get through
		}
		select {
		case <-done:
			if s := p.State(); !s.Open || s.Waiting != 0 {
				t.Fatalf("state %+v; want open with nobody waiting", s)
			}
			t.Logf("%d passed, %d cancelled, %d probes", passed.Load(), cancelled.Load(), len(probes))
			if passed.Load()+cancelled.Load() != callers*calls || len(probes) == 0 {
				t.Fatalf("%d passed, %d cancelled, %d probes", passed.Load(), cancelled.Load(), len(probes))
			}
			return
		case <-bound.Done():
			t.Fatalf("stuck: %+v, %d passed, %d cancelled", p.State(), passed.Load(), cancelled.Load())
		default:
			clk.Advance(time.Millisecond)
		}
	}
}
