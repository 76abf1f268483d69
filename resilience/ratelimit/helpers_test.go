package ratelimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/ratelimit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fixture struct {
	t      *testing.T
	clk    *clocktest.Clock
	l      *ratelimit.Limiter
	events []resilience.Event
}

func newFixture(t *testing.T, c ratelimit.Config) *fixture {
	t.Helper()
	f := &fixture{t: t, clk: clocktest.New(time.Time{})}
	c.Clock = f.clk
	c.Listener = func(e resilience.Event) { f.events = append(f.events, e) }
	l, err := ratelimit.New(c)
	if err != nil {
		t.Fatal(err)
	}
	f.l = l
	return f
}

// allow takes n single permits, failing the test at the first refusal.
func (f *fixture) allow(n int) {
	f.t.Helper()
	for i := range n {
		if err := f.l.TryAcquire(1); err != nil {
			f.t.Fatalf("permit %d of %d: %v", i+1, n, err)
		}
	}
}

// refused checks that one permit is refused now with a retry-after of d.
func (f *fixture) refused(d time.Duration) {
	f.t.Helper()
	err := f.l.TryAcquire(1)
	if !errors.Is(err, ratelimit.ErrLimited) || !errors.Is(err, resilience.ErrRejected) {
		f.t.Fatalf("err %v; want ErrLimited", err)
	}
	at, ok := resilience.RetryAfter(err)
	if !ok || at.Sub(f.clk.Now()) != d {
		f.t.Fatalf("retry after %v (%v); want %v", at.Sub(f.clk.Now()), ok, d)
	}
}

// acquireAsync starts Acquire(n) in a goroutine; the result arrives on the
// returned channel.
func (f *fixture) acquireAsync(ctx context.Context, n int64) <-chan error {
	done := make(chan error, 1)
	go func() { done <- f.l.Acquire(ctx, n) }()
	return done
}

// waitQueued waits until n callers are parked in the queue: each has set
// its MaxWait timer, and the head its timer for the next permit.
func (f *fixture) waitQueued(ctx context.Context, n int) {
	f.t.Helper()
	if err := f.clk.WaitTimers(ctx, n+1); err != nil {
		f.t.Fatalf("waiting for %d queued callers: %v", n, err)
	}
}

// newLimiter returns a Limiter configured by c on clk, on a MemoryStore of
// its own when store is set.
func newLimiter(t *testing.T, clk *clocktest.Clock, c ratelimit.Config, store bool) *ratelimit.Limiter {
	t.Helper()
	c.Clock = clk
	if store {
		c.Store = ratelimit.NewMemoryStore()
	}
	l, err := ratelimit.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
