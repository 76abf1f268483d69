package resilience

import (
	"math"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/ratelimiter"
	"golang.org/x/time/rate"

	"github.com/respool/respool/resilience/ratelimit"
)

// limiterRate is high enough that no benchmark ever runs out of permits.
const limiterRate = 1 << 40

var limiters = []impl{
	{"respool", func(b *testing.B) func() error {
		l, err := ratelimit.New(ratelimit.Config{Limit: ratelimit.Limit{Permits: limiterRate, Period: time.Hour}})
		if err != nil {
			b.Fatal(err)
		}
		return func() error { return l.TryAcquire(1) }
	}},
	{"rate", func(*testing.B) func() error {
		l := rate.NewLimiter(rate.Limit(float64(limiterRate)/3600), math.MaxInt32)
		return func() error {
			if !l.Allow() {
				return errNoPermit
			}
			return nil
		}
	}},
	{"failsafe", func(*testing.B) func() error {
		l := ratelimiter.NewBursty[int](math.MaxUint32, time.Hour)
		return func() error {
			if !l.TryAcquirePermit() {
				return errNoPermit
			}
			return nil
		}
	}},
}

// BenchmarkLimiter measures taking a permit from a token bucket that has
// plenty, serially.
func BenchmarkLimiter(b *testing.B) { run(b, limiters) }

// BenchmarkLimiterParallel measures it under b.RunParallel.
func BenchmarkLimiterParallel(b *testing.B) { runParallel(b, limiters) }
