package ratelimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respool/respool/internal/testctx"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/ratelimit"
)

// queued is a fixture whose bucket of 1 permit a second is empty and whose
// queue takes 3 callers for up to 10s.
func queued(t *testing.T) *fixture {
	f := newFixture(t, ratelimit.Config{QueueSize: 3, MaxWait: 10 * time.Second,
		Limit: ratelimit.Limit{Permits: 1, Period: time.Second}})
	f.allow(1)
	return f
}

// TestQueueIsFIFO: three callers queue in order and are served in that
// order, one a second, as the permits come back.
func TestQueueIsFIFO(t *testing.T) {
	ctx := testctx.New(t)
	f := queued(t)
	var done []<-chan error
	for i := range 3 {
		done = append(done, f.acquireAsync(ctx, 1))
		f.waitQueued(ctx, i+1)
	}
	for i := range 3 {
		f.clk.Advance(time.Second)
		if err := <-done[i]; err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
		for _, later := range done[i+1:] {
			select {
			case err := <-later:
				t.Fatalf("a later caller was served before its turn: %v", err)
			default:
			}
		}
		if i < 2 {
			f.waitQueued(ctx, 2-i) // the next head waits for the next permit
		}
	}
	if s := f.l.Stats(); s.Queued != 3 || s.Waiting != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestQueueFull(t *testing.T) {
	ctx := testctx.New(t)
	f := queued(t)
	var done []<-chan error
	for i := range 3 {
		done = append(done, f.acquireAsync(ctx, 1))
		f.waitQueued(ctx, i+1)
	}
	if err := f.l.Acquire(ctx, 1); !errors.Is(err, ratelimit.ErrQueueFull) {
		t.Fatalf("4th waiter: %v; want ErrQueueFull", err)
	}
	for i, ch := range done {
		f.clk.Advance(time.Second)
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			f.waitQueued(ctx, 2-i)
		}
	}
}

// TestQueueTimeout: a caller behind the head gives up at MaxWait; a head
// that cannot be served before its MaxWait is rejected as soon as that is
// known, with the retry-after.
func TestQueueTimeout(t *testing.T) {
	ctx := testctx.New(t)
	f := newFixture(t, ratelimit.Config{QueueSize: 3, MaxWait: 1500 * time.Millisecond,
		Limit: ratelimit.Limit{Permits: 1, Period: time.Second}})
	f.allow(1)
	head := f.acquireAsync(ctx, 1)
	f.waitQueued(ctx, 1)
	second := f.acquireAsync(ctx, 1)
	f.waitQueued(ctx, 2)
	f.clk.Advance(time.Second) // the head is served; the second needs 2s > 1.5s
	if err := <-head; err != nil {
		t.Fatal(err)
	}
	err := <-second
	if !errors.Is(err, ratelimit.ErrLimited) {
		t.Fatalf("second: %v; want ErrLimited", err)
	}
	if at, ok := resilience.RetryAfter(err); !ok || at.Sub(f.clk.Now()) != time.Second {
		t.Fatalf("retry-after %v; want 1s", at.Sub(f.clk.Now()))
	}
	if s := f.l.Stats(); s.TimedOut != 1 {
		t.Fatalf("TimedOut %d; want 1", s.TimedOut)
	}
}

func TestQueueWaiterBehindHeadTimesOut(t *testing.T) {
	ctx := testctx.New(t)
	f := newFixture(t, ratelimit.Config{QueueSize: 3, MaxWait: 1500 * time.Millisecond,
		Limit: ratelimit.Limit{Permits: 2, Period: 2 * time.Second}})
	f.allow(2)
	head := f.acquireAsync(ctx, 1) // needs 1s
	f.waitQueued(ctx, 1)
	f.clk.Advance(900 * time.Millisecond)
	behind := f.acquireAsync(ctx, 2) // queued at 0.9s, may wait until 2.4s
	f.waitQueued(ctx, 2)
	f.clk.Advance(100 * time.Millisecond) // 1s: the head is served
	if err := <-head; err != nil {
		t.Fatal(err)
	}
	// The new head needs 2 permits: at 3s, past its 2.4s: rejected now.
	if err := <-behind; !errors.Is(err, ratelimit.ErrLimited) {
		t.Fatalf("behind: %v; want ErrLimited", err)
	}
}

// TestQueueCancelPromotesTheNext: the head's context ends; the caller
// behind it becomes the head and is served.
func TestQueueCancelPromotesTheNext(t *testing.T) {
	bound := testctx.New(t)
	f := queued(t)
	ctx, cancel := context.WithCancel(bound)
	head := f.acquireAsync(ctx, 1)
	f.waitQueued(bound, 1)
	next := f.acquireAsync(bound, 1)
	f.waitQueued(bound, 2)
	cancel()
	if err := <-head; !errors.Is(err, context.Canceled) {
		t.Fatalf("head: %v; want context.Canceled", err)
	}
	// The new head has read the clock and waits for the refill: its
	// MaxWait timer and its refill timer (moving the clock before the
	// second is set would leave it waiting a period more).
	if err := f.clk.WaitTimers(bound, 2); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Second)
	if err := <-next; err != nil {
		t.Fatal(err)
	}
}

// TestDrainOnResult: an operation's error that says the quota is gone
// empties the bucket; the next call is refused until it refills.
func TestDrainOnResult(t *testing.T) {
	quota := errors.New("quota exhausted")
	f := newFixture(t, ratelimit.Config{Limit: ratelimit.Limit{Permits: 10, Period: time.Second},
		DrainOn: func(err error) bool { return errors.Is(err, quota) }})
	p, err := f.l.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.l.Exit(p, errors.New("other"))
	f.allow(1) // not drained by another error
	p, _ = f.l.Enter(context.Background())
	f.l.Exit(p, quota)
	f.refused(100 * time.Millisecond)
	if s := f.l.Stats(); s.Drains != 1 {
		t.Fatalf("Drains %d; want 1", s.Drains)
	}
	for _, alg := range []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.SlidingLog, ratelimit.SlidingWindow, ratelimit.LeakyBucket} {
		g := newFixture(t, ratelimit.Config{Limit: ratelimit.Limit{Algorithm: alg, Permits: 10, Period: time.Second}})
		if err := g.l.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if g.l.TryAcquire(1) == nil {
			t.Errorf("%v: allowed after a drain", alg)
		}
	}
}

// TestSetLimitWakesTheQueue: raising a fixed window's limit serves the
// waiting head at once, without waiting for the next window.
func TestSetLimitWakesTheQueue(t *testing.T) {
	ctx := testctx.New(t)
	f := newFixture(t, ratelimit.Config{QueueSize: 1, MaxWait: 2 * time.Minute,
		Limit: ratelimit.Limit{Algorithm: ratelimit.FixedWindow, Permits: 1, Period: time.Minute}})
	f.allow(1)
	done := f.acquireAsync(ctx, 1)
	f.waitQueued(ctx, 1)
	if err := f.l.SetLimit(ratelimit.Limit{Algorithm: ratelimit.FixedWindow, Permits: 2, Period: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := f.l.Stats().Limit; got.Permits != 2 || got.Burst != 2 {
		t.Fatalf("limit %+v", got)
	}
	err := f.l.SetLimit(ratelimit.Limit{Algorithm: ratelimit.TokenBucket})
	var ce *resilience.ConfigError
	if !errors.As(err, &ce) || ce.Field != "Limit.Algorithm" {
		t.Fatalf("changing the algorithm: %v; want a ConfigError on Limit.Algorithm", err)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for field, c := range map[string]ratelimit.Config{
		"Limit.Permits":   {Limit: ratelimit.Limit{Permits: -1}},
		"Limit.Period":    {Limit: ratelimit.Limit{Period: -1}},
		"Limit.Algorithm": {Limit: ratelimit.Limit{Algorithm: 99}},
		"QueueSize":       {QueueSize: -1},
		"MaxWait":         {MaxWait: -1},
	} {
		_, err := ratelimit.New(c)
		var ce *resilience.ConfigError
		if !errors.As(err, &ce) || ce.Field != field {
			t.Errorf("error %v; want a ConfigError on %s", err, field)
		}
	}
}
