package resilience

import (
	"context"
	"testing"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/sony/gobreaker/v2"

	rresilience "github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
)

var breakers = []impl{
	{"respool", func(b *testing.B) func() error {
		cb, err := breaker.New(breaker.Config{})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		return func() error {
			_, err := rresilience.Do(ctx, cb, succeed)
			return err
		}
	}},
	{"gobreaker", func(*testing.B) func() error {
		cb := gobreaker.NewCircuitBreaker[int](gobreaker.Settings{Name: "bench"})
		return func() error {
			_, err := cb.Execute(succeedNoCtx)
			return err
		}
	}},
	{"failsafe", func(*testing.B) func() error {
		ex := failsafe.With[int](circuitbreaker.NewWithDefaults[int]())
		return func() error {
			_, err := ex.Get(succeedNoCtx)
			return err
		}
	}},
}

// BenchmarkBreaker measures a closed breaker's success path, serially.
func BenchmarkBreaker(b *testing.B) { run(b, breakers) }

// BenchmarkBreakerParallel measures it under b.RunParallel.
func BenchmarkBreakerParallel(b *testing.B) { runParallel(b, breakers) }
