package ratelimit

import (
	"context"

	"github.com/respool/respool/resilience"
)

// Limiter is one rate limit; it is a resilience.Guard. Make one with New.
type Limiter struct {
	co *core
}

// New returns a Limiter configured by c, or a *resilience.ConfigError.
func New(c Config) (*Limiter, error) {
	co, err := newCore(c)
	if err != nil {
		return nil, err
	}
	return &Limiter{co: co}, nil
}

var _ resilience.Guard = (*Limiter)(nil)

// TryAcquire takes n permits if they are there now (TryAcquire(1) == nil
// is x/time/rate's Allow); otherwise it returns a rejection at once (a *resilience.RejectedError matching ErrLimited, with
// the retry-after), whatever the queue.
func (l *Limiter) TryAcquire(n int64) error {
	return l.co.acquire(context.Background(), l.co.c.Key, n, false)
}

// Acquire takes n permits, waiting in the queue (when QueueSize > 0) or
// for a leaky bucket's slot, at most MaxWait and until ctx ends.
func (l *Limiter) Acquire(ctx context.Context, n int64) error {
	return l.co.acquire(ctx, l.co.c.Key, n, true)
}

// Enter acquires Config.Cost permits.
func (l *Limiter) Enter(ctx context.Context) (resilience.Permit, error) {
	return resilience.Permit{}, l.co.acquire(ctx, l.co.c.Key, l.co.c.Cost, true)
}

// Exit drains the permits when DrainOn says err means the quota is gone.
func (l *Limiter) Exit(_ resilience.Permit, err error) { l.co.exit(l.co.c.Key, err) }

// Drain empties the permits until they refill.
func (l *Limiter) Drain(ctx context.Context) error { return l.co.drain(ctx, l.co.c.Key, nil) }

// SetLimit changes the limit now. Permits already taken stay taken:
//   - the buckets' permits taken and not yet back (at most the new Burst)
//     come back at the new rate from now on, as with x/time/rate's
//     SetLimit: from 1 per 10s to 100/s just after a permit, the next is
//     there 10ms later, not 10s (a caller already given a LeakyBucket slot
//     keeps it);
//   - a window keeps its count; with a new Period it ends at the new
//     Period's first window boundary after its start.
//
// Waiting callers look again at once. With a Store of your own, the store
// converts a key's state when it sees the new Limit. The Algorithm cannot
// change. Stats().Limit is the limit in force.
func (l *Limiter) SetLimit(lim Limit) error { return l.co.setLimit(lim) }

// Stats returns a snapshot of the counters.
func (l *Limiter) Stats() Stats { return l.co.stats() }
