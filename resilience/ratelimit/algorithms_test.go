package ratelimit_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/internal/testctx"
	"github.com/respool/respool/resilience/ratelimit"
)

func TestTokenBucketBurstAndRefill(t *testing.T) {
	f := newFixture(t, ratelimit.Config{Limit: ratelimit.Limit{Permits: 10, Period: time.Second, Burst: 5}})
	f.allow(5) // the burst
	f.refused(100 * time.Millisecond)
	f.clk.Advance(99 * time.Millisecond)
	f.refused(time.Millisecond)
	f.clk.Advance(time.Millisecond)
	f.allow(1)
	f.clk.Advance(time.Hour) // refills to Burst, no more
	f.allow(5)
	f.refused(100 * time.Millisecond)
}

// TestTokenBucketMatchesXTimeRate runs the same random sequence of AllowN
// through x/time/rate's token bucket and ours, on the same times, and
// requires the same decisions.
func TestTokenBucketMatchesXTimeRate(t *testing.T) {
	clk := clocktest.New(time.Time{})
	ours, err := ratelimit.New(ratelimit.Config{Clock: clk, Limit: ratelimit.Limit{Permits: 50, Period: time.Second, Burst: 8}})
	if err != nil {
		t.Fatal(err)
	}
	theirs := rate.NewLimiter(50, 8)
	rng := rand.New(rand.NewPCG(1, 2))
	agreed, allowed := 0, 0
	for i := range 20000 {
		clk.Advance(time.Duration(rng.IntN(30)) * time.Millisecond)
		n := 1 + rng.IntN(3)
		want := theirs.AllowN(clk.Now(), n)
		got := ours.TryAcquire(int64(n)) == nil
		if got != want {
			t.Fatalf("step %d at %v, n=%d: ours %v, x/time/rate %v", i, clk.Now(), n, got, want)
		}
		agreed++
		if got {
			allowed++
		}
	}
	if allowed == 0 || allowed == agreed {
		t.Fatalf("%d of %d allowed: the sequence tests nothing", allowed, agreed)
	}
}

// TestFixedWindowEdgeBurst shows the fixed window's weakness: a full
// window's permits at its end and another full window's at the start of
// the next pass within an instant.
func TestFixedWindowEdgeBurst(t *testing.T) {
	f := newFixture(t, ratelimit.Config{Limit: ratelimit.Limit{Algorithm: ratelimit.FixedWindow, Permits: 5, Period: time.Second}})
	f.clk.Advance(999 * time.Millisecond)
	f.allow(5)
	f.refused(time.Millisecond) // the next window starts in 1ms
	f.clk.Advance(time.Millisecond)
	f.allow(5) // 10 permits within 1ms
	f.refused(time.Second)
}

// TestSlidingLogIsExact: the 6th permit comes back exactly a Period after
// the oldest in the log.
func TestSlidingLogIsExact(t *testing.T) {
	f := newFixture(t, ratelimit.Config{Limit: ratelimit.Limit{Algorithm: ratelimit.SlidingLog, Permits: 5, Period: time.Second}})
	for range 5 {
		f.allow(1)
		f.clk.Advance(100 * time.Millisecond)
	}
	// Permits at 0, 100, ..., 400ms; now 500ms.
	f.refused(500 * time.Millisecond)
	f.clk.Advance(500*time.Millisecond - 1)
	f.refused(1)
	f.clk.Advance(1) // 1s: the permit of 0ms leaves
	f.allow(1)
	f.refused(100 * time.Millisecond)
	// Asking for 3 needs the permits of 100, 200 and 300ms to leave.
	err := f.l.TryAcquire(3)
	if err == nil {
		t.Fatal("3 permits allowed with none free")
	}
}

// TestSlidingWindowWeighting: with 10 permits taken in the previous
// window, a quarter into the next the estimate counts 7.5 of them, leaving
// room for 2 permits, not 3; the third comes when the weight has fallen to
// 0.7, 30% into the window.
func TestSlidingWindowWeighting(t *testing.T) {
	f := newFixture(t, ratelimit.Config{Limit: ratelimit.Limit{Algorithm: ratelimit.SlidingWindow, Permits: 10, Period: time.Second}})
	f.allow(10)
	// The next permit fits once the 10 weigh 9: 10% into the next window.
	f.refused(1100 * time.Millisecond)
	f.clk.Advance(1250 * time.Millisecond)
	f.allow(2)                       // 7.5 + 2
	f.refused(50 * time.Millisecond) // 7.5 + 3 > 10 until 1.3s
	f.clk.Advance(50 * time.Millisecond)
	f.allow(1) // 7 + 3
	f.clk.Advance(2 * time.Second)
	f.allow(10) // both windows faded
}

// TestLeakyBucketSmooths: callers arriving together leave one interval
// apart, each waiting for its slot; a caller that may not wait gets a slot
// only when the bucket has drained; slots past Burst are refused.
func TestLeakyBucketSmooths(t *testing.T) {
	ctx := testctx.New(t)
	f := newFixture(t, ratelimit.Config{Limit: ratelimit.Limit{Algorithm: ratelimit.LeakyBucket, Permits: 10, Period: time.Second, Burst: 3}})
	start := f.clk.Now()
	if err := f.l.Acquire(ctx, 1); err != nil { // slot at 0: no wait
		t.Fatal(err)
	}
	f.refused(100 * time.Millisecond) // TryAcquire may not wait for the slot at 100ms
	var done []<-chan error
	for i := range 2 { // slots at 100ms and 200ms
		done = append(done, f.acquireAsync(ctx, 1))
		if err := f.clk.WaitTimers(ctx, i+1); err != nil {
			t.Fatal(err)
		}
	}
	// The bucket holds 3 (0, 100, 200ms): a 4th slot would overflow it.
	if err := f.l.Acquire(ctx, 1); err == nil {
		t.Fatal("a 4th caller was given a slot past the burst")
	}
	for i, ch := range done {
		next, _ := f.clk.Next()
		if got := next.Sub(start); got != time.Duration(i+1)*100*time.Millisecond {
			t.Fatalf("caller %d leaves at %v; want %v", i+1, got, time.Duration(i+1)*100*time.Millisecond)
		}
		f.clk.Advance(next.Sub(f.clk.Now()))
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
}

func TestAcquireN(t *testing.T) {
	f := newFixture(t, ratelimit.Config{Limit: ratelimit.Limit{Permits: 10, Period: time.Second}})
	if err := f.l.TryAcquire(7); err != nil {
		t.Fatal(err)
	}
	err := f.l.TryAcquire(4)
	if at, ok := resilience.RetryAfter(err); !ok || at.Sub(f.clk.Now()) != 100*time.Millisecond {
		t.Fatalf("4 of 3 left: %v; want a retry after 100ms", err)
	}
	if err := f.l.TryAcquire(3); err != nil {
		t.Fatal(err)
	}
	for _, alg := range []ratelimit.Algorithm{ratelimit.TokenBucket, ratelimit.FixedWindow, ratelimit.SlidingLog,
		ratelimit.SlidingWindow, ratelimit.LeakyBucket} {
		g := newFixture(t, ratelimit.Config{Limit: ratelimit.Limit{Algorithm: alg, Permits: 10, Period: time.Second}})
		if err := g.l.TryAcquire(11); !errors.Is(err, ratelimit.ErrTooMany) {
			t.Errorf("%v: 11 of 10: %v; want ErrTooMany", alg, err)
		}
	}
}

// TestHugeBurst: a Burst meant as "no limit on bursts" must not overflow
// the bucket's depth in nanoseconds (Burst × Period/Permits) and refuse
// everything; it is either refused by New, naming the field, or works.
func TestHugeBurst(t *testing.T) {
	for _, alg := range []ratelimit.Algorithm{ratelimit.TokenBucket, ratelimit.LeakyBucket} {
		l, err := ratelimit.New(ratelimit.Config{Limit: ratelimit.Limit{Algorithm: alg, Permits: 10, Period: time.Second, Burst: math.MaxInt64}})
		var ce *resilience.ConfigError
		switch {
		case errors.As(err, &ce):
			if ce.Field != "Limit.Burst" {
				t.Errorf("%v: %v; want a ConfigError on Limit.Burst", alg, err)
			}
		case err != nil:
			t.Errorf("%v: %v", alg, err)
		case !l.Allow():
			t.Errorf("%v: the first permit of a huge burst was refused", alg)
		}
		// SetLimit checks the same.
		l, _ = ratelimit.New(ratelimit.Config{Limit: ratelimit.Limit{Algorithm: alg}})
		if err := l.SetLimit(ratelimit.Limit{Algorithm: alg, Permits: 10, Period: time.Second, Burst: math.MaxInt64}); err == nil && !l.Allow() {
			t.Errorf("%v: after SetLimit, the first permit of a huge burst was refused", alg)
		}
	}
}

// TestLeakyBucketCancelGivesTheSlotBack: a caller whose context ends while
// it waits for its leaky-bucket slot gives the slot back when nobody was
// scheduled after it (as x/time/rate's Wait cancels its reservation), so
// that the next caller gets that slot instead of a later one; with a
// caller scheduled after it, the slot cannot be given back.
func TestLeakyBucketCancelGivesTheSlotBack(t *testing.T) {
	bound := testctx.New(t)
	for _, keyed := range []bool{false, true} {
		clk := clocktest.New(time.Time{})
		l := newLimiter(t, clk, ratelimit.Config{Limit: ratelimit.Limit{Algorithm: ratelimit.LeakyBucket, Permits: 10, Period: time.Second, Burst: 5}}, keyed)
		if err := l.Acquire(bound, 1); err != nil { // the slot at 0
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(bound)
		done := make(chan error, 1)
		go func() { done <- l.Acquire(ctx, 1) }() // the slot at 100ms
		if err := clk.WaitTimers(bound, 1); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled caller: %v", err)
		}
		clk.Advance(50 * time.Millisecond)
		err := l.TryAcquire(1) // may not wait: refused, but told the slot at 100ms
		if at, ok := resilience.RetryAfter(err); !ok || at.Sub(clk.Now()) != 50*time.Millisecond {
			t.Fatalf("store %v: retry after %v; want 50ms: the cancelled slot given back", keyed, at.Sub(clk.Now()))
		}

		// Slots at 100ms (cancelled) and 200ms (kept): the first stays taken.
		ctx, cancel = context.WithCancel(bound)
		go func() { done <- l.Acquire(ctx, 1) }()
		if err := clk.WaitTimers(bound, 1); err != nil {
			t.Fatal(err)
		}
		kept := make(chan error, 1)
		go func() { kept <- l.Acquire(bound, 1) }()
		if err := clk.WaitTimers(bound, 2); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled caller: %v", err)
		}
		err = l.TryAcquire(1)
		if at, ok := resilience.RetryAfter(err); !ok || at.Sub(clk.Now()) != 250*time.Millisecond {
			t.Fatalf("store %v: retry after %v; want 250ms, after the kept slot", keyed, at.Sub(clk.Now()))
		}
		clk.Advance(150 * time.Millisecond)
		if err := <-kept; err != nil {
			t.Fatal(err)
		}
	}
}

// TestNegativePermits: asking for a negative number of permits is a
// mistake, reported as such; it must not hand permits back to the bucket.
func TestNegativePermits(t *testing.T) {
	for _, alg := range []ratelimit.Algorithm{ratelimit.TokenBucket, ratelimit.FixedWindow, ratelimit.SlidingLog,
		ratelimit.SlidingWindow, ratelimit.LeakyBucket} {
		f := newFixture(t, ratelimit.Config{Limit: ratelimit.Limit{Algorithm: alg, Permits: 1, Period: time.Second}})
		f.allow(1)
		if err := f.l.TryAcquire(-2); err == nil || errors.Is(err, resilience.ErrRejected) || !strings.Contains(err.Error(), "-2") {
			t.Errorf("%v: TryAcquire(-2): %v; want an error naming the count", alg, err)
		}
		if err := f.l.Acquire(context.Background(), -1); err == nil {
			t.Errorf("%v: Acquire(-1) succeeded", alg)
		}
		if f.l.Allow() {
			t.Errorf("%v: a permit appeared after a negative take", alg)
		}
	}
}

// exactBucket is a token bucket in exact integers: it holds tokens ×
// Period, and gains Permits of those a nanosecond.
type exactBucket struct{ permits, period, burst, tokens, last int64 }

func (b *exactBucket) allowN(t, n int64) bool {
	b.tokens, b.last = min(b.tokens+(t-b.last)*b.permits, b.burst*b.period), t
	if b.tokens < n*b.period {
		return false
	}
	b.tokens -= n * b.period
	return true
}

// TestTokenBucketExactAboveItsRate: at rates where a permit's interval is
// not a whole number of nanoseconds (333⅓ns at 3,000,000/s, 1⅔ns at
// 600,000,000/s), a random sequence of takes on nanosecond times gets the
// decisions of an exact token bucket, and a caller taking all it can at
// every step gets Burst + rate × time, as from x/time/rate: the interval is
// not truncated. (Step by step, x/time/rate grants a permit less than 1ns
// early: it truncates the wait to whole nanoseconds, then owes the tokens.)
func TestTokenBucketExactAboveItsRate(t *testing.T) {
	for _, perSecond := range []int64{3_000_000, 600_000_000} {
		const burst = 5
		clk := clocktest.New(time.Time{})
		start := clk.Now()
		ours, err := ratelimit.New(ratelimit.Config{Clock: clk, Limit: ratelimit.Limit{Permits: perSecond, Period: time.Second, Burst: burst}})
		if err != nil {
			t.Fatal(err)
		}
		exact := &exactBucket{permits: perSecond, period: int64(time.Second), burst: burst, tokens: burst * int64(time.Second)}
		step := int(2 * time.Second / time.Duration(perSecond)) // about two permits
		rng := rand.New(rand.NewPCG(7, uint64(perSecond)))
		allowed := 0
		for i := range 20000 {
			clk.Advance(time.Duration(rng.IntN(step + 1)))
			n := 1 + rng.IntN(2)
			want := exact.allowN(int64(clk.Since(start)), int64(n))
			if got := ours.TryAcquire(int64(n)) == nil; got != want {
				t.Fatalf("%d/s: step %d at %v, n=%d: ours %v, exact %v", perSecond, i, clk.Since(start), n, got, want)
			}
			if want {
				allowed++
			}
		}
		if allowed < 1000 {
			t.Fatalf("%d/s: %d allowed: the sequence tests little", perSecond, allowed)
		}

		// Greedy, on ours and x/time/rate: empty the bucket, then take all
		// there is at every step (before it holds Burst). Between the first
		// and the last step, rate × time come back, give or take the
		// fraction of a permit that was back at the first.
		theirs := rate.NewLimiter(rate.Limit(perSecond), burst)
		for ours.TryAcquire(1) == nil {
		}
		for theirs.AllowN(clk.Now(), 1) {
		}
		from := clk.Now()
		var taken, theirTaken int64
		for range 5000 {
			clk.Advance(time.Duration(step))
			for ours.TryAcquire(1) == nil {
				taken++
			}
			for theirs.AllowN(clk.Now(), 1) {
				theirTaken++
			}
		}
		elapsed := clk.Now().Sub(from)
		want := int64(elapsed) * perSecond / int64(time.Second)
		if taken < want || taken > want+1 || theirTaken < want || theirTaken > want+1 {
			t.Errorf("%d/s: %d taken in %v (x/time/rate %d); want %d (%+.3f%%)", perSecond, taken, elapsed, theirTaken, want,
				100*float64(taken-want)/float64(want))
		}
	}
}

// TestLeakyBucketFractionalSlots: at 3 permits a microsecond the slots are
// 333⅓ns apart; callers wait until the nanosecond their slot starts in (0,
// 334ns, 667ns), not a truncated 333ns each. The last caller's slot, given
// back when its context ends, is the next caller's.
func TestLeakyBucketFractionalSlots(t *testing.T) {
	bound := testctx.New(t)
	for _, keyed := range []bool{false, true} {
		clk := clocktest.New(time.Time{})
		l := newLimiter(t, clk, ratelimit.Config{Limit: ratelimit.Limit{Algorithm: ratelimit.LeakyBucket, Permits: 3, Period: time.Microsecond, Burst: 4}}, keyed)
		if err := l.Acquire(bound, 1); err != nil { // the slot at 0
			t.Fatal(err)
		}
		start := clk.Now()
		var done []<-chan error
		for i := range 2 {
			ch := make(chan error, 1)
			go func() { ch <- l.Acquire(bound, 1) }()
			done = append(done, ch)
			if err := clk.WaitTimers(bound, i+1); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(bound)
		cancelled := make(chan error, 1)
		go func() { cancelled <- l.Acquire(ctx, 1) }() // the slot at 1000ns
		if err := clk.WaitTimers(bound, 3); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := <-cancelled; !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		if at, ok := resilience.RetryAfter(l.TryAcquire(1)); !ok || at.Sub(start) != 1000 {
			t.Errorf("store %v: the next slot at %v; want 1µs, the one given back", keyed, at.Sub(start))
		}
		for i, want := range []time.Duration{334, 667} {
			next, _ := clk.Next()
			if got := next.Sub(start); got != want {
				t.Errorf("store %v: caller %d leaves at %v; want %v", keyed, i+1, got, want)
			}
			clk.Advance(next.Sub(clk.Now()))
			if err := <-done[i]; err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestTokenBucketCoarseUnits: a limit whose depth in exact units would not
// fit int64 (2⁴⁰ permits an hour, the benchmarks' limit; 1,234,567 an
// hour) has its interval rounded up: never a permit more than an exact
// token bucket, and fewer by at most Burst/2⁶⁰ of them.
func TestTokenBucketCoarseUnits(t *testing.T) {
	for _, permits := range []int64{1 << 40, 1_234_567} {
		for _, after := range []time.Duration{time.Second, time.Minute, 59 * time.Minute} {
			clk := clocktest.New(time.Time{})
			l, err := ratelimit.New(ratelimit.Config{Clock: clk, Limit: ratelimit.Limit{Permits: permits, Period: time.Hour}})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.TryAcquire(permits); err != nil {
				t.Fatal(err)
			}
			clk.Advance(after)
			back := permits * int64(after/time.Second) / 3600 // exact: these are whole numbers
			slack := int64(float64(back)*float64(permits)/(1<<60)) + 1
			if err := l.TryAcquire(back + 1); err == nil {
				t.Errorf("%d/h after %v: %d permits; want at most %d", permits, after, back+1, back)
			}
			if err := l.TryAcquire(back - slack); err != nil {
				t.Errorf("%d/h after %v: %d permits refused (%d back): %v", permits, after, back-slack, back, err)
			}
		}
	}
}

// TestTokenBucketRebased: a limit of fine units (2³¹−1 permits per 2³²ns)
// can count only about a second past its state's base in int64; the state
// is moved on as time passes, exactly: a random sequence with jumps of up
// to 1.5s gets the decisions of an exact token bucket, in a Limiter and in
// a MemoryStore.
func TestTokenBucketRebased(t *testing.T) {
	lim := ratelimit.Limit{Permits: 1<<31 - 1, Period: 1 << 32, Burst: 4}
	for _, store := range []bool{false, true} {
		clk := clocktest.New(time.Time{})
		start := clk.Now()
		l := newLimiter(t, clk, ratelimit.Config{Limit: lim}, store)
		exact := &exactBucket{permits: lim.Permits, period: int64(lim.Period), burst: lim.Burst, tokens: lim.Burst * int64(lim.Period)}
		rng := rand.New(rand.NewPCG(9, 10))
		jumps := 0
		for i := range 20000 {
			d := time.Duration(rng.IntN(5))
			if rng.IntN(200) == 0 {
				d = time.Duration(300+rng.IntN(1200)) * time.Millisecond
				jumps++
			}
			clk.Advance(d)
			n := 1 + rng.IntN(2)
			want := exact.allowN(int64(clk.Since(start)), int64(n))
			if got := l.TryAcquire(int64(n)) == nil; got != want {
				t.Fatalf("store %v: step %d at %v, n=%d: ours %v, exact %v", store, i, clk.Since(start), n, got, want)
			}
		}
		if elapsed := clk.Since(start); jumps < 50 || elapsed < time.Minute {
			t.Fatalf("%d jumps in %v: the sequence tests little", jumps, elapsed)
		}
	}
}
