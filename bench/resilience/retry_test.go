package resilience

import (
	"context"
	"testing"

	"github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"

	"github.com/respool/respool/resilience/retry"
)

var retries = []impl{
	{"respool", func(b *testing.B) func() error {
		r, err := retry.New(retry.Config[int]{})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		return func() error {
			_, err := r.Do(ctx, succeed)
			return err
		}
	}},
	{"failsafe", func(*testing.B) func() error {
		ex := failsafe.With[int](retrypolicy.NewWithDefaults[int]())
		return func() error {
			_, err := ex.Get(succeedNoCtx)
			return err
		}
	}},
	{"backoff", func(*testing.B) func() error {
		ctx := context.Background()
		return func() error {
			_, err := backoff.Retry(ctx, succeedNoCtx, backoff.WithMaxTries(3))
			return err
		}
	}},
}

// BenchmarkRetry measures a retry whose first attempt succeeds, serially.
func BenchmarkRetry(b *testing.B) { run(b, retries) }

// BenchmarkRetryParallel measures it under b.RunParallel.
func BenchmarkRetryParallel(b *testing.B) { runParallel(b, retries) }
