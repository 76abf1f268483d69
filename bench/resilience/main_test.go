package resilience

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a goroutine outlives the benchmarks.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// impl is one implementation of a scenario: newOp builds it (once per
// sub-benchmark) and returns the call to measure.
type impl struct {
	name  string
	newOp func(b *testing.B) func() error
}

// run runs each impl as BenchmarkX/impl=name, serially.
func run(b *testing.B, impls []impl) {
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			op := im.newOp(b)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := op(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// runParallel runs each impl as BenchmarkX/impl=name under b.RunParallel.
func runParallel(b *testing.B, impls []impl) {
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			op := im.newOp(b)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := op(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// succeed is the operation every benchmark protects: it succeeds at once.
func succeed(context.Context) (int, error) { return 1, nil }

// succeedNoCtx is succeed for libraries whose operations take no context.
func succeedNoCtx() (int, error) { return 1, nil }

// errNoPermit is a limiter's refusal in a benchmark, where none is expected.
var errNoPermit = errors.New("no permit")
