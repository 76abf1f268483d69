package bench

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Sizes of the scenarios.
const (
	uncontendedSize = 8  // objects in the uncontended pool
	parallelSize    = 64 // objects in the parallel pool: more than GOMAXPROCS
	oversubSize     = 4  // objects in the oversubscribed pool
	oversubCallers  = 64 // goroutines sharing it
	holdTime        = time.Microsecond
)

// TestMain fails the run if any goroutine outlives the tests and benchmarks:
// every pool must have stopped its goroutines once closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// BenchmarkUncontended measures one goroutine taking and giving back an
// object from a warm pool of 8: the fast path, with nobody else around.
func BenchmarkUncontended(b *testing.B) {
	for _, k := range withLeak {
		b.Run("pool="+k.name, func(b *testing.B) {
			ctx := context.Background()
			p := openPool(b, k, uncontendedSize)
			if err := warm(ctx, p, uncontendedSize); err != nil {
				b.Fatal(err)
			}
			w := p.worker()
			b.ReportAllocs()
			b.ResetTimer()
			err := takeLoop(ctx, w, countdown(b.N))
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkParallel measures GOMAXPROCS goroutines taking and giving back
// objects from a warm pool of 64, so that nobody ever waits: what the pool's
// shared state costs under concurrent use.
func BenchmarkParallel(b *testing.B) {
	for _, k := range poolKinds {
		b.Run("pool="+k.name, func(b *testing.B) {
			ctx := context.Background()
			p := openPool(b, k, parallelSize)
			if err := warm(ctx, p, parallelSize); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				if err := takeLoop(ctx, p.worker(), pb.Next); err != nil {
					b.Error(err)
				}
			})
			b.StopTimer()
		})
	}
}

// BenchmarkOversubscribed measures 64 goroutines sharing b.N operations on a
// pool of 4, each holding its object for about 1µs of busy work: how fairly
// and quickly the pool hands objects over to waiting callers. Besides ns/op
// it reports the 99th percentile of Take's wait (p99-wait-ns) and the
// throughput (ops/s).
func BenchmarkOversubscribed(b *testing.B) {
	iters := spinIters(holdTime)
	for _, k := range poolKinds {
		b.Run("pool="+k.name, func(b *testing.B) {
			ctx := context.Background()
			p := openPool(b, k, oversubSize)
			if err := warm(ctx, p, oversubSize); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			waits, err := oversubscribed(ctx, p, oversubCallers, b.N, iters, b.ResetTimer)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(quantile(waits, 0.99)), "p99-wait-ns")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

// TestScenarios runs each scenario briefly against every pool, so that
// `go test` (and -race) exercises the benchmark code without -bench.
func TestScenarios(t *testing.T) {
	ctx := context.Background()
	t.Logf("spin: %d iterations ≈ %v", spinIters(holdTime), holdTime)
	for _, k := range withLeak {
		t.Run("pool="+k.name, func(t *testing.T) {
			t.Run("uncontended", func(t *testing.T) {
				p := openPool(t, k, uncontendedSize)
				if err := warm(ctx, p, uncontendedSize); err != nil {
					t.Fatal(err)
				}
				if err := takeLoop(ctx, p.worker(), countdown(1000)); err != nil {
					t.Fatal(err)
				}
			})
			t.Run("parallel", func(t *testing.T) {
				p := openPool(t, k, parallelSize)
				if err := warm(ctx, p, parallelSize); err != nil {
					t.Fatal(err)
				}
				next := countdown(4000)
				errs := make(chan error, 4)
				for range cap(errs) {
					go func() { errs <- takeLoop(ctx, p.worker(), next) }()
				}
				for range cap(errs) {
					if err := <-errs; err != nil {
						t.Error(err)
					}
				}
			})
			t.Run("oversubscribed", func(t *testing.T) {
				const n = 20 * oversubCallers
				p := openPool(t, k, oversubSize)
				if err := warm(ctx, p, oversubSize); err != nil {
					t.Fatal(err)
				}
				waits, err := oversubscribed(ctx, p, oversubCallers, n, spinIters(holdTime), nil)
				if err != nil {
					t.Fatal(err)
				}
				total := 0
				for _, w := range waits {
					total += len(w)
				}
				if total != n {
					t.Fatalf("%d waits recorded, want %d", total, n)
				}
				t.Logf("p50 wait %v, p99 wait %v",
					time.Duration(quantile(waits, 0.5)), time.Duration(quantile(waits, 0.99)))
			})
		})
	}
}

func TestQuantile(t *testing.T) {
	waits := [][]int64{{5, 1, 3}, {}, {2, 4}, {10, 9, 8, 7, 6}}
	for _, c := range []struct {
		q    float64
		want int64
	}{{0, 1}, {0.5, 5}, {0.9, 9}, {0.99, 10}, {1, 10}} {
		if got := quantile(waits, c.q); got != c.want {
			t.Errorf("quantile(%v) = %d, want %d", c.q, got, c.want)
		}
	}
	if got := quantile(nil, 0.99); got != 0 {
		t.Errorf("quantile of nothing = %d, want 0", got)
	}
}
