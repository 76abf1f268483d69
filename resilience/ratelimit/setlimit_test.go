package ratelimit_test

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/internal/testctx"
	"github.com/respool/respool/resilience/ratelimit"
)

// setLimiter is the part of Limiter and Keyed the SetLimit tests use, on
// one key.
type setLimiter struct {
	tryAcquire func(n int64) error
	setLimit   func(ratelimit.Limit) error
}

// setLimiters returns a Limiter, a Limiter on a MemoryStore and a Keyed
// (one key), each configured by c on clk: the three places state lives.
func setLimiters(t *testing.T, clk *clocktest.Clock, c ratelimit.Config) map[string]setLimiter {
	t.Helper()
	ls := map[string]setLimiter{}
	for name, store := range map[string]bool{"local": false, "store": true} {
		l := newLimiter(t, clk, c, store)
		ls[name] = setLimiter{l.TryAcquire, l.SetLimit}
	}
	k := newKeyed(t, clk, c)
	ls["keyed"] = setLimiter{func(n int64) error { return k.TryAcquire("k", n) }, k.SetLimit}
	return ls
}

// retryIn returns how long after now err says to retry, failing the test
// unless err is a rate-limit rejection.
func retryIn(t *testing.T, err error, now time.Time) time.Duration {
	t.Helper()
	at, ok := resilience.RetryAfter(err)
	if !errors.Is(err, ratelimit.ErrLimited) || !ok {
		t.Fatalf("%v; want a rejection with a retry-after", err)
	}
	return at.Sub(now)
}

// TestSetLimitTakesEffectAtOnce: from 1 permit per 10s to 100/s (burst 1)
// just after a permit, the permit taken stays taken but comes back at the
// new rate: 10ms later, as with x/time/rate's SetLimitAt, not 10s later.
// The leaky bucket refuses a caller that may not wait just as long.
func TestSetLimitTakesEffectAtOnce(t *testing.T) {
	for _, alg := range []ratelimit.Algorithm{ratelimit.TokenBucket, ratelimit.LeakyBucket} {
		clk := clocktest.New(time.Time{})
		slow := ratelimit.Limit{Algorithm: alg, Permits: 1, Period: 10 * time.Second, Burst: 1}
		fast := ratelimit.Limit{Algorithm: alg, Permits: 100, Period: time.Second, Burst: 1}
		for name, l := range setLimiters(t, clk, ratelimit.Config{Limit: slow}) {
			x := rate.NewLimiter(rate.Every(10*time.Second), 1)
			now := clk.Now()
			if err := l.tryAcquire(1); err != nil || !x.AllowN(now, 1) {
				t.Fatalf("%v %s: the first permit: %v", alg, name, err)
			}
			if err := l.setLimit(fast); err != nil {
				t.Fatal(err)
			}
			x.SetLimitAt(now, 100)
			r := x.ReserveN(now, 1)
			want := r.DelayFrom(now)
			r.CancelAt(now)
			if got := retryIn(t, l.tryAcquire(1), now); got != want || want != 10*time.Millisecond {
				t.Errorf("%v %s: retry after %v; want %v, as x/time/rate", alg, name, got, want)
			}
		}
		clk.Advance(10 * time.Millisecond)
	}
}

// TestSetLimitMatchesXTimeRate runs one random sequence of takes and rate
// changes (the burst kept) through x/time/rate and through each of ours,
// on the same times, and requires the same decisions.
func TestSetLimitMatchesXTimeRate(t *testing.T) {
	rates := []struct {
		permits int64
		period  time.Duration
	}{{1, 10 * time.Second}, {1, time.Second}, {10, time.Second}, {50, time.Second}, {100, time.Second}, {1000, time.Second}}
	const burst = 4
	limit := func(i int) ratelimit.Limit {
		return ratelimit.Limit{Permits: rates[i].permits, Period: rates[i].period, Burst: burst}
	}
	clk := clocktest.New(time.Time{})
	ours := setLimiters(t, clk, ratelimit.Config{Limit: limit(2)})
	theirs := rate.NewLimiter(10, burst)
	rng := rand.New(rand.NewPCG(5, 6))
	changes, allowed, steps := 0, 0, 0
	for i := range 20000 {
		clk.Advance(time.Duration(rng.IntN(40)) * time.Millisecond)
		now := clk.Now()
		if rng.IntN(15) == 0 {
			r := rng.IntN(len(rates))
			theirs.SetLimitAt(now, rate.Limit(float64(rates[r].permits)/rates[r].period.Seconds()))
			for _, l := range ours {
				if err := l.setLimit(limit(r)); err != nil {
					t.Fatal(err)
				}
			}
			changes++
			continue
		}
		n := 1 + rng.IntN(2)
		want := theirs.AllowN(now, n)
		for name, l := range ours {
			if got := l.tryAcquire(int64(n)) == nil; got != want {
				t.Fatalf("%s: step %d at %v, n=%d, limit %v: ours %v, x/time/rate %v",
					name, i, now.Sub(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)), n, theirs.Limit(), got, want)
			}
		}
		steps++
		if want {
			allowed++
		}
	}
	if changes < 100 || allowed == 0 || allowed == steps {
		t.Fatalf("%d changes, %d of %d allowed: the sequence tests little", changes, allowed, steps)
	}
}

// TestSetLimitServesTheQueue: a caller queued for the permit of a bucket of
// 1 per 10s is served at the new rate once the limit is raised to 100/s:
// 250ms in, 0.975 of a permit is missing, back 9.75ms later (x/time/rate's
// reservation would be), not at 10s.
func TestSetLimitServesTheQueue(t *testing.T) {
	ctx := testctx.New(t)
	f := newFixture(t, ratelimit.Config{QueueSize: 1, MaxWait: time.Minute,
		Limit: ratelimit.Limit{Permits: 1, Period: 10 * time.Second, Burst: 1}})
	f.allow(1)
	done := f.acquireAsync(ctx, 1)
	f.waitQueued(ctx, 1)
	f.clk.Advance(250 * time.Millisecond)
	if err := f.l.SetLimit(ratelimit.Limit{Permits: 100, Period: time.Second, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	// Whether or not the head has set its new timer yet, it is served by
	// 259.75ms: by that timer, or by reading the clock.
	f.clk.Advance(9750 * time.Microsecond)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		next, _ := f.clk.Next()
		t.Fatalf("the queued caller was not served at the new rate; it waits until %v", next.Sub(f.clk.Now()))
	}
}

// TestSetLimitPeriodKeepsTheWindow: a window's Period changed from 1s to
// 1min, 300.5s in, with the permits of the current window taken: they stay
// taken, in the window of the new Period that holds the current one's
// start ([300s, 360s)), and come back as they would have in it; the windows
// are not counted in the old Period's numbers (window 300 of a minute is 5
// hours away).
func TestSetLimitPeriodKeepsTheWindow(t *testing.T) {
	for alg, want := range map[ratelimit.Algorithm]time.Duration{
		ratelimit.FixedWindow:   59500 * time.Millisecond, // the new window at 360s
		ratelimit.SlidingLog:    60 * time.Second,         // the permits of 300.5s a minute old
		ratelimit.SlidingWindow: 89500 * time.Millisecond, // at 390s the two weigh 1
	} {
		clk := clocktest.New(time.Time{})
		clk.Advance(300500 * time.Millisecond)
		ls := setLimiters(t, clk, ratelimit.Config{Limit: ratelimit.Limit{Algorithm: alg, Permits: 2, Period: time.Second}})
		for name, l := range ls {
			if err := l.tryAcquire(2); err != nil {
				t.Fatal(err)
			}
			if err := l.setLimit(ratelimit.Limit{Algorithm: alg, Permits: 2, Period: time.Minute}); err != nil {
				t.Fatal(err)
			}
			if got := retryIn(t, l.tryAcquire(1), clk.Now()); got != want {
				t.Errorf("%v %s: retry after %v; want %v", alg, name, got, want)
			}
		}
		clk.Advance(want)
		for name, l := range ls {
			if err := l.tryAcquire(1); err != nil {
				t.Errorf("%v %s: at the retry-after: %v", alg, name, err)
			}
		}
	}
}
