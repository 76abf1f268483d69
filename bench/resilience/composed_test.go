package resilience

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/ratelimiter"
	"github.com/failsafe-go/failsafe-go/retrypolicy"

	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/compose"
	"github.com/respool/respool/resilience/ratelimit"
	"github.com/respool/respool/resilience/retry"
)

var composed = []impl{
	{"respool", func(b *testing.B) func() error {
		r, err := retry.New(retry.Config[int]{})
		if err != nil {
			b.Fatal(err)
		}
		cb, err := breaker.New(breaker.Config{})
		if err != nil {
			b.Fatal(err)
		}
		l, err := ratelimit.New(ratelimit.Config{Limit: ratelimit.Limit{Permits: limiterRate, Period: time.Hour}})
		if err != nil {
			b.Fatal(err)
		}
		s := &compose.Stack[int]{Retry: r, Breaker: cb, Limiter: l}
		ctx := context.Background()
		return func() error {
			_, err := s.Do(ctx, succeed)
			return err
		}
	}},
	{"failsafe", func(*testing.B) func() error {
		ex := failsafe.With[int](retrypolicy.NewWithDefaults[int](), circuitbreaker.NewWithDefaults[int](),
			ratelimiter.NewBursty[int](math.MaxUint32, time.Hour))
		return func() error {
			_, err := ex.Get(succeedNoCtx)
			return err
		}
	}},
}

// BenchmarkComposed measures retry, breaker and rate limiter stacked, in
// that order, on the success path.
func BenchmarkComposed(b *testing.B) { run(b, composed) }

// BenchmarkComposedParallel measures it under b.RunParallel.
func BenchmarkComposedParallel(b *testing.B) { runParallel(b, composed) }
