package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/respool/respool/resilience/ratelimit"
)

// TestStoreTimesOutOfOrder: callers read the clock before the store's lock,
// so a store sees times slightly out of order, and a shared store sees the
// clocks of several processes. A time from the window before the current
// one must count in the current window; it must not reset the counts and
// let a second window's worth through.
func TestStoreTimesOutOfOrder(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, alg := range []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.SlidingWindow, ratelimit.SlidingLog} {
		t.Run(alg.String(), func(t *testing.T) {
			m := ratelimit.NewMemoryStore()
			lim := ratelimit.Limit{Algorithm: alg, Permits: 4, Period: time.Second}
			late := base.Add(time.Second + time.Millisecond) // in the second window
			early := base.Add(999 * time.Millisecond)        // in the first, read before late
			take := func(now time.Time) bool {
				d, err := m.Take(ctx, "k", 1, lim, now, 0)
				if err != nil {
					t.Fatal(err)
				}
				return d.OK
			}
			allowed := 0
			for range 4 {
				if take(late) {
					allowed++
				}
			}
			take(early) // a straggler
			for range 4 {
				if take(late) {
					allowed++
				}
			}
			if allowed != 4 {
				t.Fatalf("%d permits at one instant; want 4", allowed)
			}
		})
	}
}
