package delay_test

import (
	"math"
	"testing"
	"time"

	"github.com/respool/respool/resilience/delay"
)

// TestJitterAtSaturation: a delay that saturated at the largest duration
// (an uncapped exponential after many attempts) stays huge under every
// jitter; it must not wrap to zero or collapse to Initial, which would turn
// the retries into a hot loop.
func TestJitterAtSaturation(t *testing.T) {
	half := func() float64 { return 0.5 }
	for _, j := range []delay.Jitter{delay.Full, delay.Equal, delay.Decorrelated} {
		s := delay.Strategy{Kind: delay.Exponential, Initial: time.Hour, Jitter: j, Rand: half}
		prev := time.Duration(math.MaxInt64 / 2)
		if got := s.Delay(200, prev, nil); got < math.MaxInt64/8 {
			t.Errorf("%v jitter at attempt 200 (prev %v): %v; want about half the largest duration", j, prev, got)
		}
	}
	// Decorrelated jitter from a large previous delay: 3×prev must not wrap.
	s := delay.Strategy{Kind: delay.Constant, Initial: time.Second, Jitter: delay.Decorrelated, Rand: half}
	if got := s.Delay(2, math.MaxInt64/2, nil); got < math.MaxInt64/4 {
		t.Errorf("decorrelated after %v: %v; want at least a quarter of the largest duration", time.Duration(math.MaxInt64/2), got)
	}
	// Rand's largest draws at the largest duration stay in range.
	top := func() float64 { return math.Nextafter(1, 0) }
	for _, j := range []delay.Jitter{delay.Full, delay.Equal, delay.Decorrelated} {
		s := delay.Strategy{Kind: delay.Exponential, Initial: time.Hour, Jitter: j, Rand: top}
		if got := s.Delay(200, math.MaxInt64, nil); got < math.MaxInt64/2 {
			t.Errorf("%v jitter, top draw: %v; want near the largest duration", j, got)
		}
	}
}
