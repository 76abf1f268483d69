package resilience

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	fbulkhead "github.com/failsafe-go/failsafe-go/bulkhead"

	rresilience "github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/bulkhead"
	"github.com/respool/respool/resilience/compose"
	"github.com/respool/respool/resilience/fallback"
	"github.com/respool/respool/resilience/pause"
	"github.com/respool/respool/resilience/ratelimit"
	"github.com/respool/respool/resilience/retry"
	"github.com/respool/respool/resilience/timeout"
)

var bulkheads = []impl{
	{"respool", func(b *testing.B) func() error {
		bh, err := bulkhead.New(bulkhead.Config{MaxConcurrent: 64})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		return func() error {
			_, err := rresilience.Do(ctx, bh, succeed)
			return err
		}
	}},
	{"failsafe", func(*testing.B) func() error {
		ex := failsafe.With[int](fbulkhead.New[int](64))
		return func() error {
			_, err := ex.Get(succeedNoCtx)
			return err
		}
	}},
}

// BenchmarkBulkhead measures a bulkhead with free slots, serially.
func BenchmarkBulkhead(b *testing.B) { run(b, bulkheads) }

// BenchmarkBulkheadParallel measures it under b.RunParallel.
func BenchmarkBulkheadParallel(b *testing.B) { runParallel(b, bulkheads) }

// fullStack is every respool mechanism stacked, in the default order;
// failsafe-go has no pause, so there is nothing to compare it with.
var fullStack = []impl{
	{"respool", func(b *testing.B) func() error {
		must := func(err error) {
			if err != nil {
				b.Fatal(err)
			}
		}
		fb, err := fallback.New(fallback.Config[int]{Value: -1})
		must(err)
		r, err := retry.New(retry.Config[int]{})
		must(err)
		cb, err := breaker.New(breaker.Config{})
		must(err)
		p, err := pause.New(pause.Config{})
		must(err)
		l, err := ratelimit.New(ratelimit.Config{Limit: ratelimit.Limit{Permits: limiterRate, Period: time.Hour}})
		must(err)
		bh, err := bulkhead.New(bulkhead.Config{MaxConcurrent: math.MaxInt32})
		must(err)
		to, err := timeout.New(timeout.Config{})
		must(err)
		s := &compose.Stack[int]{Fallback: fb, Retry: r, Breaker: cb, Pause: p, Limiter: l, Bulkhead: bh, Timeout: to}
		ctx := context.Background()
		return func() error {
			_, err := s.Do(ctx, succeed)
			return err
		}
	}},
}

// BenchmarkFullStack measures all seven mechanisms stacked on the success
// path; the timeout's context is the context package's allocation.
func BenchmarkFullStack(b *testing.B) { run(b, fullStack) }

// BenchmarkFullStackParallel measures it under b.RunParallel.
func BenchmarkFullStackParallel(b *testing.B) { runParallel(b, fullStack) }
