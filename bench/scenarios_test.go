package bench

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The scenarios, written against benchPool so that the benchmarks and
// TestScenarios run the same code. None of them reads the clock or
// allocates per operation except where noted.

// openPool makes a pool of kind k and size objects, closes it when tb's
// test or benchmark run ends, and fails tb if closing reports an error.
func openPool(tb testing.TB, k poolKind, size int) benchPool {
	tb.Helper()
	p, err := k.new(size)
	if err != nil {
		tb.Fatalf("%s: new: %v", k.name, err)
	}
	tb.Cleanup(func() {
		if err := p.close(); err != nil {
			tb.Errorf("%s: close: %v", k.name, err)
		}
	})
	return p
}

// warm takes n objects at once and gives them back, so that a pool that
// creates objects on demand holds n idle ones before it is measured.
func warm(ctx context.Context, p benchPool, n int) error {
	ws := make([]worker, n)
	for i := range ws {
		ws[i] = p.worker()
		if err := ws[i].take(ctx); err != nil {
			return err
		}
	}
	for _, w := range ws {
		if err := w.giveBack(); err != nil {
			return err
		}
	}
	return nil
}

// takeLoop takes and gives back an object for as long as next says so.
func takeLoop(ctx context.Context, w worker, next func() bool) error {
	for next() {
		if err := w.take(ctx); err != nil {
			return err
		}
		if err := w.giveBack(); err != nil {
			return err
		}
	}
	return nil
}

// countdown returns a next function for takeLoop that says yes n times.
// It is safe for concurrent use.
func countdown(n int) func() bool {
	var left atomic.Int64
	left.Store(int64(n))
	return func() bool { return left.Add(-1) >= 0 }
}

// oversubscribed runs n operations shared among goroutines goroutines: each
// operation takes an object, does iters iterations of busy work with it and
// gives it back. The time each Take waited is measured with time.Now around
// it. started, if not nil, is called once every goroutine is ready and just
// before they are let go (the benchmark resets its timer there).
//
// It returns each goroutine's waits in nanoseconds, unmerged, so that the
// caller can stop its timer before merging them.
func oversubscribed(ctx context.Context, p benchPool, goroutines, n, iters int, started func()) ([][]int64, error) {
	var (
		waits = make([][]int64, goroutines)
		errs  = make([]error, goroutines)
		next  atomic.Int64
		ready sync.WaitGroup
		done  sync.WaitGroup
		start = make(chan struct{})
	)
	ready.Add(goroutines)
	done.Add(goroutines)
	for g := range goroutines {
		// Twice a fair share, so that appending rarely allocates while
		// the clock runs.
		waits[g] = make([]int64, 0, 2*n/goroutines+64)
		w := p.worker()
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			for next.Add(1) <= int64(n) {
				t0 := time.Now()
				if err := w.take(ctx); err != nil {
					errs[g] = err
					return
				}
				waits[g] = append(waits[g], int64(time.Since(t0)))
				w.use(iters)
				if err := w.giveBack(); err != nil {
					errs[g] = err
					return
				}
			}
		}()
	}
	ready.Wait()
	if started != nil {
		started()
	}
	close(start)
	done.Wait()
	return waits, errors.Join(errs...)
}

// quantile merges per-goroutine waits and returns their q-quantile (0..1)
// by the nearest-rank method, or 0 when there are none.
func quantile(waits [][]int64, q float64) int64 {
	all := slices.Concat(waits...)
	if len(all) == 0 {
		return 0
	}
	slices.Sort(all)
	rank := int(math.Ceil(q*float64(len(all)))) - 1
	return all[min(max(rank, 0), len(all)-1)]
}

// spinSink keeps the result of calibration spins alive.
var spinSink atomic.Uint64

// spin is busy work that takes time proportional to iters and touches no
// memory (so -race does not slow it down). It returns a value that depends
// on every iteration, so that it cannot be optimised away.
//
//go:noinline
func spin(iters int) uint64 {
	x := uint64(iters)
	for range iters {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// spinIters returns how many iterations of spin take about d on this
// machine, measured once (the fastest of several timings, so that a
// preempted run does not skew it).
func spinIters(d time.Duration) int {
	perSecond := spinRate()
	return max(1, int(perSecond*d.Seconds()))
}

// spinRate is spin's iterations per second.
var spinRate = sync.OnceValue(func() float64 {
	n := 1 << 12
	for {
		t0 := time.Now()
		spinSink.Add(spin(n))
		if time.Since(t0) >= 2*time.Millisecond {
			break
		}
		n *= 2
	}
	best := time.Duration(1<<63 - 1)
	for range 7 {
		t0 := time.Now()
		spinSink.Add(spin(n))
		best = min(best, time.Since(t0))
	}
	return float64(n) / best.Seconds()
})
