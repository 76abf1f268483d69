package delay_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/resilience/delay"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStrategies(t *testing.T) {
	custom := func(attempt int, _ error) time.Duration { return time.Duration(attempt*attempt) * time.Second }
	for _, tc := range []struct {
		name string
		s    delay.Strategy
		want []time.Duration // attempts 1, 2, 3, 4
	}{
		{"none", delay.Strategy{Kind: delay.None, Initial: time.Second}, []time.Duration{0, 0, 0, 0}},
		{"constant", delay.Constants(time.Second), []time.Duration{time.Second, time.Second, time.Second, time.Second}},
		{"linear", delay.Strategy{Kind: delay.Linear, Initial: time.Second}, []time.Duration{1 * time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second}},
		{"linear capped", delay.Strategy{Kind: delay.Linear, Initial: time.Second, Max: 2500 * time.Millisecond}, []time.Duration{1 * time.Second, 2 * time.Second, 2500 * time.Millisecond, 2500 * time.Millisecond}},
		{"exponential", delay.Exponentials(time.Second, 0), []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}},
		{"exponential x3 capped", delay.Strategy{Kind: delay.Exponential, Initial: time.Second, Multiplier: 3, Max: 10 * time.Second}, []time.Duration{1 * time.Second, 3 * time.Second, 9 * time.Second, 10 * time.Second}},
		{"custom capped", delay.Strategy{Kind: delay.Custom, Func: custom, Max: 10 * time.Second}, []time.Duration{1 * time.Second, 4 * time.Second, 9 * time.Second, 10 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, want := range tc.want {
				if got := tc.s.Delay(i+1, 0, nil); got != want {
					t.Errorf("attempt %d: %v; want %v", i+1, got, want)
				}
			}
		})
	}
}

func TestExponentialSaturates(t *testing.T) {
	s := delay.Exponentials(time.Hour, 0)
	if got := s.Delay(200, 0, nil); got <= 0 {
		t.Fatalf("attempt 200: %v; want a huge positive delay", got)
	}
}

// TestJitterBounds draws many delays and checks each stays inside the
// jitter's bounds, and that the draws spread over them.
func TestJitterBounds(t *testing.T) {
	const d = time.Second
	for _, tc := range []struct {
		jitter delay.Jitter
		lo, hi time.Duration
	}{
		{delay.Full, 0, d},
		{delay.Equal, d / 2, d},
	} {
		t.Run(tc.jitter.String(), func(t *testing.T) {
			s := delay.Strategy{Kind: delay.Constant, Initial: d, Jitter: tc.jitter}
			seenLow, seenHigh := false, false
			for range 2000 {
				got := s.Delay(1, 0, nil)
				if got < tc.lo || got > tc.hi {
					t.Fatalf("delay %v outside [%v, %v]", got, tc.lo, tc.hi)
				}
				mid := tc.lo + (tc.hi-tc.lo)/2
				seenLow = seenLow || got < mid
				seenHigh = seenHigh || got > mid
			}
			if !seenLow || !seenHigh {
				t.Fatal("draws did not spread over both halves of the range")
			}
		})
	}
	t.Run("decorrelated", func(t *testing.T) {
		s := delay.Strategy{Kind: delay.Exponential, Initial: 100 * time.Millisecond, Max: 5 * time.Second, Jitter: delay.Decorrelated}
		prev := time.Duration(0)
		for i := range 2000 {
			got := s.Delay(i+1, prev, nil)
			hi := min(max(3*prev, s.Initial), s.Max)
			if got < s.Initial || got > hi {
				t.Fatalf("draw %d: %v outside [%v, %v] (prev %v)", i, got, s.Initial, hi, prev)
			}
			prev = got
		}
	})
	t.Run("fixed rand", func(t *testing.T) {
		s := delay.Strategy{Kind: delay.Constant, Initial: d, Jitter: delay.Full, Rand: func() float64 { return 0.5 }}
		if got := s.Delay(1, 0, nil); got != d/2 {
			t.Fatalf("full jitter at 0.5: %v; want %v", got, d/2)
		}
	})
}
