package ratelimit_test

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
	"github.com/respool/respool/resilience/ratelimit"
)

// TestStressQueue: many callers queue for permits at once, some cancel at
// random moments, and the clock moves meanwhile. Every caller that does
// not cancel must be served (a lost wake-up leaves one waiting for ever,
// since MaxWait is far off), the rate must hold, and the queue must end
// empty.
func TestStressQueue(t *testing.T) {
	for _, alg := range []ratelimit.Algorithm{ratelimit.TokenBucket, ratelimit.FixedWindow, ratelimit.SlidingLog, ratelimit.SlidingWindow} {
		t.Run(alg.String(), func(t *testing.T) {
			bound := testctx.New(t)
			clk := clocktest.New(time.Time{})
			const interval = 10 * time.Millisecond
			l, err := ratelimit.New(ratelimit.Config{Clock: clk, QueueSize: 1000, MaxWait: time.Hour,
				Limit: ratelimit.Limit{Algorithm: alg, Permits: 2, Period: 2 * interval, Burst: 1}})
			if err != nil {
				t.Fatal(err)
			}
			start := clk.Now()
			const callers = 200
			var served, cancelled atomic.Int64
			var wg sync.WaitGroup
			cancels := make([]context.CancelFunc, callers)
			for i := range callers {
				ctx, cancel := context.WithCancel(bound)
				cancels[i] = cancel
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := l.Acquire(ctx, 1)
					switch {
					case err == nil:
						served.Add(1)
					case errors.Is(err, context.Canceled):
						cancelled.Add(1)
					default:
						t.Errorf("caller %d: %v", i, err)
					}
				}()
			}
			go func() {
				rng := rand.New(rand.NewPCG(3, 4))
				for _, i := range rng.Perm(callers)[:callers/5] {
					cancels[i]()
				}
			}()
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			for moving := true; moving; {
				select {
				case <-done:
					moving = false
				case <-bound.Done():
					t.Fatalf("%d served, %d cancelled, %d waiting: stuck", served.Load(), cancelled.Load(), l.Stats().Waiting)
				default:
					clk.Advance(interval / 4)
				}
			}
			for _, cancel := range cancels {
				cancel()
			}
			// Allowed by now: the first window's permits, then one an interval.
			elapsed := clk.Now().Sub(start)
			if most := 2 + int64(elapsed/interval); served.Load() > most {
				t.Fatalf("%d served in %v; want at most %d", served.Load(), elapsed, most)
			}
			if served.Load()+cancelled.Load() != callers || l.Stats().Waiting != 0 {
				t.Fatalf("%d served, %d cancelled, %d waiting; want %d in all, none waiting",
					served.Load(), cancelled.Load(), l.Stats().Waiting, callers)
			}
		})
	}
}

// TestStressKeyedExact: many goroutines take permits of a few keys while
// idle keys are swept; in each round (the clock still, then moved a whole
// Period so that every key is fresh and swept) every key admits exactly
// its Burst, whatever the interleaving with the sweep.
func TestStressKeyedExact(t *testing.T) {
	for _, alg := range []ratelimit.Algorithm{ratelimit.TokenBucket, ratelimit.FixedWindow, ratelimit.SlidingLog, ratelimit.SlidingWindow} {
		t.Run(alg.String(), func(t *testing.T) {
			clk := clocktest.New(time.Time{})
			k := newKeyed(t, clk, ratelimit.Config{Limit: ratelimit.Limit{Algorithm: alg, Permits: 5, Period: time.Second}})
			keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
			for round := range 5 {
				var allowed [8]atomic.Int64
				var wg sync.WaitGroup
				for g := range 16 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rng := rand.New(rand.NewPCG(uint64(g), uint64(round)))
						for range 100 {
							i := rng.IntN(len(keys))
							if k.TryAcquire(keys[i], 1) == nil {
								allowed[i].Add(1)
							}
						}
					}()
				}
				wg.Wait()
				for i := range allowed {
					if n := allowed[i].Load(); n != 5 {
						t.Fatalf("round %d, key %s: %d allowed; want 5", round, keys[i], n)
					}
				}
				clk.Advance(2 * time.Second) // every key fresh: the next take sweeps them
			}
		})
	}
}

// TestStressBucketReplaced: goroutines take permits while the clock moves
// (past the bucket's span now and then: it is rebased) and SetLimit flips
// between two limits of one rate (2³¹−1 permits per 2³²ns, or twice both;
// burst 4): a Limiter's bucket is replaced each time, a Keyed's converted.
// However the takes interleave with the replacements, no more permits pass
// than the rate and one Burst per refill allow.
func TestStressBucketReplaced(t *testing.T) {
	limits := [2]ratelimit.Limit{{Permits: 1<<31 - 1, Period: 1 << 32, Burst: 4}, {Permits: 1<<32 - 2, Period: 1 << 33, Burst: 4}}
	for _, keyed := range []bool{false, true} {
		bound := testctx.New(t)
		clk := clocktest.New(time.Time{})
		c := ratelimit.Config{Clock: clk, Limit: limits[0]}
		var take func() bool
		var setLimit func(ratelimit.Limit) error
		if keyed {
			k := newKeyed(t, clk, c)
			take, setLimit = func() bool { return k.TryAcquire("k", 1) == nil }, k.SetLimit
		} else {
			l := newLimiter(t, clk, c, false)
			take, setLimit = l.Allow, l.SetLimit
		}
		// Each round, every taker tries 4 takes while the clock moves and
		// the limit changes.
		const takers = 4
		var taken atomic.Int64
		rounds, done := make(chan struct{}), make(chan struct{})
		var wg sync.WaitGroup
		for range takers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds {
					for range 4 {
						if take() {
							taken.Add(1)
						}
					}
					done <- struct{}{}
				}
			}()
		}
		refills, steps := int64(1), int64(0) // the bucket starts full
		rng := rand.New(rand.NewPCG(11, 12))
		for i := range 2000 {
			for range takers {
				rounds <- struct{}{}
			}
			if rng.IntN(100) == 0 {
				clk.Advance(time.Duration(500+rng.IntN(1000)) * time.Millisecond) // full again
				refills++
			} else {
				d := rng.IntN(8)
				clk.Advance(time.Duration(d))
				steps += int64(d)
			}
			if i%3 == 0 {
				if err := setLimit(limits[rng.IntN(2)]); err != nil {
					t.Fatal(err)
				}
			}
			for range takers {
				select {
				case <-done:
				case <-bound.Done():
					t.Fatal("a taker is stuck")
				}
			}
		}
		close(rounds)
		wg.Wait()
		// Each refill gives Burst at most; the small steps, 1 permit per 2ns
		// (a little more), plus the fraction of one.
		most := refills*4 + steps*(1<<31-1)>>32 + 1
		if got := taken.Load(); got > most || got < most/2 {
			t.Errorf("keyed %v: %d taken; want at most %d (%d refills, %dns of small steps), and most of them",
				keyed, got, most, refills, steps)
		}
	}
}
