package ratelimit

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
)

// core is what Limiter and Keyed share: the limit, the queues, the
// counters, and the way to acquire permits for a key.
type core struct {
	c     Config // validated, defaults filled in; read-only
	limit atomic.Pointer[rule]
	// local is a Limiter's state when Config.Store is nil. A bucket is
	// replaced whole (SetLimit, rebase: see bucket.go), under swapMu.
	local  atomic.Pointer[state]
	epoch  time.Time    // local's time origin: the UTC midnight before New
	mem    *MemoryStore // Config.Store when it is a *MemoryStore
	swapMu sync.Mutex   // serializes SetLimit and the replacement of local
	nwait  atomic.Int64 // callers waiting in every queue

	mu     sync.Mutex        // guards queues
	queues map[string]*queue // the keys that have waiters

	rejected, queueFull, queued, timedOut, drains atomic.Uint64
}

// queue is one key's waiters, in arrival order; the first is the head,
// the only one that takes permits.
type queue struct {
	waiters []*waiter
	kick    chan struct{} // wakes the head when the limit changes
}

type waiter struct {
	ready chan struct{} // closed when the waiter becomes the head
}

func newCore(c Config) (*core, error) {
	c, err := c.validate()
	if err != nil {
		return nil, err
	}
	co := &core{c: c, queues: make(map[string]*queue)}
	r := compile(c.Limit)
	co.limit.Store(&r)
	co.mem, _ = c.Store.(*MemoryStore)
	if c.Store == nil {
		co.local.Store(newState(&r, 0))
		co.epoch = midnight(c.Clock.Now())
	}
	return co, nil
}

// take asks the state of key for n permits at now.
func (co *core) take(ctx context.Context, key string, n int64, r *rule, now time.Time, maxWait time.Duration) (Decision, error) {
	switch {
	case co.c.Store == nil:
		t := int64(now.Sub(co.epoch))
		return co.takeLocal(r, n, t, int64(maxWait)).public(t), nil
	case co.mem != nil:
		return co.mem.take(co, key, n, r, now, maxWait), nil
	}
	return co.c.Store.Take(ctx, key, n, r.Limit, now, maxWait)
}

// takeLocal takes n permits of the local state at t (ns after epoch).
func (co *core) takeLocal(r *rule, n, t, maxWait int64) decision {
	for {
		s := co.local.Load()
		if !r.Algorithm.isBucket() {
			return s.take(r, n, t, maxWait) // the windows are never replaced
		}
		if d := s.takeBucket(n, t, maxWait); !d.stale {
			return d
		}
		co.renew(s, t)
	}
}

// withLocal runs op on the local state at t until op reports it done:
// false means the bucket was replaced, or must be rebased, first.
func (co *core) withLocal(t int64, op func(*state) bool) {
	for s := co.local.Load(); !op(s); s = co.local.Load() {
		co.renew(s, t)
	}
}

// renew replaces the local bucket s, which must be rebased at t, unless
// SetLimit or another caller has replaced it already; either way, when it
// returns the local bucket is not s.
func (co *core) renew(s *state, t int64) {
	co.swapMu.Lock()
	defer co.swapMu.Unlock()
	if co.local.Load() == s {
		co.replaceLocked(s, &s.rule, t)
	}
}

// replaceLocked replaces the local bucket s with one counting in r from at
// on, holding the debt s has at at. s is retired first, so that a take
// racing with the replacement lands either in s before (and is carried
// over) or in the new bucket.
func (co *core) replaceLocked(s *state, r *rule, at int64) {
	tat := s.tat.Swap(retired)
	next := newState(r, at)
	next.tat.Store(convertDebt(&s.rule, r, debtAt(&s.rule, s.base, tat, at)))
	co.local.Store(next)
}

// acquire takes n permits for key; wait says whether the caller may wait
// (in the queue, or for a leaky bucket's slot).
func (co *core) acquire(ctx context.Context, key string, n int64, wait bool) error {
	if n < 0 {
		return fmt.Errorf("ratelimit: cannot acquire %d permits: want a count >= 0", n)
	}
	lim := co.limit.Load()
	queued := wait && co.c.QueueSize > 0 && lim.Algorithm != LeakyBucket
	if queued && co.nwait.Load() > 0 && co.hasWaiters(key) {
		return co.enqueue(ctx, key, n, co.c.Clock.Now()) // behind those who came first
	}
	var maxWait time.Duration
	if wait && lim.Algorithm == LeakyBucket {
		maxWait = co.waitBudget(ctx, co.c.Clock.Now())
	}
	var now time.Time
	var d Decision
	var err error
	if co.c.Store == nil {
		// The fast path: the cheaper clock reading, nanoseconds only.
		t := int64(co.c.Clock.Since(co.epoch))
		ld := co.takeLocal(lim, n, t, int64(maxWait))
		if ld.ok && ld.wait == 0 {
			return nil
		}
		now, d = co.epoch.Add(time.Duration(t)), ld.public(t)
	} else {
		now = co.c.Clock.Now()
		d, err = co.take(ctx, key, n, lim, now, maxWait)
	}
	switch {
	case err != nil:
		return err
	case d.OK:
		if d.Wait > 0 {
			if err := co.sleep(ctx, d.Wait); err != nil {
				co.cancelSlot(ctx, key, n, lim, now, d.Wait)
				return err
			}
		}
		return nil
	case d.RetryAfter < 0:
		return ErrTooMany
	case !queued:
		return co.reject(now, key, ErrLimited, d.RetryAfter)
	}
	return co.enqueue(ctx, key, n, now)
}

// waitBudget is how long a caller may wait from now: MaxWait, and the
// context's deadline on the real clock.
func (co *core) waitBudget(ctx context.Context, now time.Time) time.Duration {
	budget := co.c.MaxWait
	if dl, ok := ctx.Deadline(); ok && resil.IsSystem(co.c.Clock) {
		budget = min(budget, dl.Sub(now))
	}
	return max(budget, 0)
}

func (co *core) sleep(ctx context.Context, d time.Duration) error {
	t := co.c.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// cancelSlot gives back a LeakyBucket slot taken at now that the caller
// stopped waiting for, when no later caller was scheduled after it.
func (co *core) cancelSlot(ctx context.Context, key string, n int64, lim *rule, now time.Time, wait time.Duration) {
	switch sc, ok := co.c.Store.(SlotCanceler); {
	case co.c.Store == nil:
		t := int64(now.Sub(co.epoch))
		co.withLocal(t, func(s *state) bool { return s.cancelBucketSlot(n, t, int64(wait)) })
	case co.mem != nil:
		co.mem.cancelSlot(co, key, n, lim, now, wait)
	case ok:
		_ = sc.CancelSlot(context.WithoutCancel(ctx), key, n, lim.Limit, now, wait)
	}
}

func (co *core) hasWaiters(key string) bool {
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.queues[key] != nil
}

// enqueue waits in key's queue until the caller is the head and the
// permits are there, the wait would pass MaxWait (the caller is rejected
// as soon as that is known), or ctx ends.
func (co *core) enqueue(ctx context.Context, key string, n int64, now time.Time) error {
	co.mu.Lock()
	q := co.queues[key]
	if q == nil {
		q = &queue{kick: make(chan struct{}, 1)}
		co.queues[key] = q
	}
	if len(q.waiters) >= co.c.QueueSize {
		co.mu.Unlock()
		co.queueFull.Add(1)
		return co.reject(now, key, ErrQueueFull, 0)
	}
	w := &waiter{ready: make(chan struct{})}
	q.waiters = append(q.waiters, w)
	waiting := len(q.waiters)
	if waiting == 1 {
		close(w.ready)
	}
	co.nwait.Add(1)
	co.mu.Unlock()
	co.queued.Add(1)
	resil.Emit(co.c.Listener, resilience.Event{Time: now, Mechanism: mechanism, Name: co.c.Name,
		Kind: resilience.EventQueued, Waiting: waiting})
	defer co.leave(key, q, w)

	budget := co.waitBudget(ctx, now)
	deadline := now.Add(budget)
	timeout := co.c.Clock.NewTimer(budget)
	defer timeout.Stop()
	select {
	case <-w.ready:
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-timeout.C():
		co.timedOut.Add(1)
		return co.reject(co.c.Clock.Now(), key, ErrLimited, 0)
	}
	for {
		now = co.c.Clock.Now()
		d, err := co.take(ctx, key, n, co.limit.Load(), now, 0)
		switch {
		case err != nil:
			return err
		case d.OK:
			return nil
		case d.RetryAfter < 0:
			return ErrTooMany
		case now.Add(d.RetryAfter).After(deadline):
			co.timedOut.Add(1)
			return co.reject(now, key, ErrLimited, d.RetryAfter)
		}
		t := co.c.Clock.NewTimer(max(d.RetryAfter, 1))
		select {
		case <-t.C():
		case <-q.kick:
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		}
		t.Stop()
	}
}

// leave takes w out of q, making the next waiter the head if w was.
func (co *core) leave(key string, q *queue, w *waiter) {
	co.mu.Lock()
	defer co.mu.Unlock()
	i := slices.Index(q.waiters, w)
	if i < 0 {
		return
	}
	q.waiters = slices.Delete(q.waiters, i, i+1)
	co.nwait.Add(-1)
	if i == 0 && len(q.waiters) > 0 {
		close(q.waiters[0].ready)
	}
	if len(q.waiters) == 0 {
		delete(co.queues, key)
	}
}

// reject counts and reports a rejection that can be retried after d (0:
// unknown).
func (co *core) reject(now time.Time, key string, reason error, d time.Duration) error {
	co.rejected.Add(1)
	var at time.Time
	if d > 0 {
		at = now.Add(d)
	}
	err := resil.Reject(mechanism, nameKey(co.c.Name, key), reason, now, at)
	if co.c.Listener != nil {
		co.c.Listener(resilience.Event{Time: now, Mechanism: mechanism, Name: err.Name,
			Kind: resilience.EventRejected, RetryAt: at, Err: err})
	}
	return err
}

func nameKey(name, key string) string {
	if key == "" {
		return name
	}
	return name + "[" + key + "]"
}

// exit drains key's permits when DrainOn says err means the quota is gone.
func (co *core) exit(key string, err error) {
	if err != nil && co.c.DrainOn != nil && co.c.DrainOn(err) {
		_ = co.drain(context.Background(), key, err)
	}
}

// drain empties key's permits.
func (co *core) drain(ctx context.Context, key string, cause error) error {
	now := co.c.Clock.Now()
	lim := co.limit.Load()
	var err error
	switch {
	case co.c.Store == nil:
		t := int64(now.Sub(co.epoch))
		co.withLocal(t, func(s *state) bool { return s.drain(lim, t) })
	case co.mem != nil:
		co.mem.drain(co, key, lim, now)
	default:
		err = co.c.Store.Drain(ctx, key, lim.Limit, now)
	}
	co.drains.Add(1)
	resil.Emit(co.c.Listener, resilience.Event{Time: now, Mechanism: mechanism, Name: nameKey(co.c.Name, key),
		Kind: resilience.EventDrained, Err: cause})
	return err
}

// setLimit changes the limit and wakes every queue's head to look again.
func (co *core) setLimit(l Limit) error {
	if err := l.validate(); err != nil {
		return err
	}
	l = l.withDefaults()
	co.swapMu.Lock()
	if old := co.limit.Load(); l.Algorithm != old.Algorithm {
		co.swapMu.Unlock()
		return &resilience.ConfigError{Mechanism: mechanism, Field: "Limit.Algorithm", Value: l.Algorithm,
			Accepted: old.Algorithm.String() + " (the algorithm cannot change at run time)"}
	}
	now := co.c.Clock.Now()
	r := compile(l)
	co.limit.Store(&r)
	if l.Algorithm.isBucket() {
		// The permits taken stay taken, and come back at the new rate from
		// now on (the windows carry theirs over at their next take).
		switch {
		case co.c.Store == nil:
			co.replaceLocked(co.local.Load(), &r, int64(now.Sub(co.epoch)))
		case co.mem != nil:
			co.mem.convertOwned(co, &r, now)
		}
	}
	co.swapMu.Unlock()
	co.mu.Lock()
	for _, q := range co.queues {
		select {
		case q.kick <- struct{}{}:
		default:
		}
	}
	co.mu.Unlock()
	resil.Emit(co.c.Listener, resilience.Event{Time: now, Mechanism: mechanism, Name: co.c.Name,
		Kind: resilience.EventLimitChanged})
	return nil
}

// Stats is a snapshot of a limiter.
type Stats struct {
	Limit     Limit
	Waiting   int    // callers in the queues now
	Rejected  uint64 // rejections, ever (queue full and timed out included)
	QueueFull uint64 // rejected because the queue was full
	Queued    uint64 // callers that waited in a queue
	TimedOut  uint64 // waiters rejected at MaxWait, or once they could not be served in time
	Drains    uint64
}

func (co *core) stats() Stats {
	return Stats{Limit: co.limit.Load().Limit, Waiting: int(co.nwait.Load()), Rejected: co.rejected.Load(),
		QueueFull: co.queueFull.Load(), Queued: co.queued.Load(), TimedOut: co.timedOut.Load(), Drains: co.drains.Load()}
}
