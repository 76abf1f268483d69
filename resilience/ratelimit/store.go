package ratelimit

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// Store holds limiter state by key. Each method is one atomic operation on
// one key's state: a shared store implements it as one script or one
// conditional update, and holds nothing between calls. The limiter passes
// the Limit with every call and the time, so that a store needs no clock
// of its own (it may use its own). The Limit may change at run time
// (SetLimit): the permits a key has taken stay taken, counted in permits,
// not in time (a bucket's debt is converted to the new interval). Limiters
// with different limits may share a store: a key is judged by its own
// limit, in any clean-up too.
type Store interface {
	// Take takes n permits for key at now under lim if they can be had at
	// once, or, for LeakyBucket, within maxWait; otherwise it takes
	// nothing.
	Take(ctx context.Context, key string, n int64, lim Limit, now time.Time, maxWait time.Duration) (Decision, error)
	// Drain takes every permit key has at now, until they refill.
	Drain(ctx context.Context, key string, lim Limit, now time.Time) error
	// CancelSlot gives back the n permits that Take granted at now with a
	// Wait of wait (a LeakyBucket slot whose caller stopped waiting for
	// it), unless a later Take was scheduled after them. A store that
	// cannot returns nil, and the slot stays taken.
	CancelSlot(ctx context.Context, key string, n int64, lim Limit, now time.Time, wait time.Duration) error
}

// Decision is a Store's answer to Take.
type Decision struct {
	OK bool
	// Wait is, when OK, how long until the permits are the caller's
	// (a LeakyBucket slot); 0 otherwise.
	Wait time.Duration
	// RetryAfter is, when not OK, how long until the n permits could be
	// had if nobody else took any; negative when they never can at once
	// (n exceeds the limit).
	RetryAfter time.Duration
	// Remaining is the permits left after a Take that was OK.
	Remaining int64
}

// memoryStore is the in-memory Store, the default of a Keyed (and of
// limiters in tests that share one), safe for concurrent use. Keys whose
// state is back to a fresh key's under the limit they were last taken with
// are evicted as it goes, once per Period at most, so that idle keys cost
// nothing. A limiter's SetLimit converts the keys it took from last as of
// the change; a key taken under another Limit through Take converts then.
type memoryStore struct {
	base      timeBase
	seed      maphash.Seed
	lastSweep atomic.Int64             // when the fresh keys were last evicted
	last      atomic.Pointer[compiled] // the Limit the Store methods compiled last
	shards    [numShards]memShard
}

const numShards = 16

type memShard struct {
	mu     sync.Mutex // guards states
	states map[string]*state
}

// newMemoryStore returns an empty memoryStore.
func newMemoryStore() *memoryStore {
	m := &memoryStore{seed: maphash.MakeSeed()}
	for i := range m.shards {
		m.shards[i].states = make(map[string]*state)
	}
	return m
}

var _ Store = (*memoryStore)(nil)

// Take implements Store. It returns a *resilience.ConfigError if lim is
// not a valid Limit.
func (m *memoryStore) Take(_ context.Context, key string, n int64, lim Limit, now time.Time, maxWait time.Duration) (Decision, error) {
	r, err := m.compile(lim)
	if err != nil {
		return Decision{}, err
	}
	return m.take(nil, key, n, r, now, maxWait), nil
}

// Drain implements Store.
func (m *memoryStore) Drain(_ context.Context, key string, lim Limit, now time.Time) error {
	r, err := m.compile(lim)
	if err == nil {
		m.drain(nil, key, r, now)
	}
	return err
}

// CancelSlot implements Store.
func (m *memoryStore) CancelSlot(_ context.Context, key string, n int64, lim Limit, now time.Time, wait time.Duration) error {
	r, err := m.compile(lim)
	if err == nil {
		m.cancelSlot(nil, key, n, r, now, wait)
	}
	return err
}

// compile returns lim's rule: the last one compiled if it is lim's (a
// Limit is validated once, not at every call).
func (m *memoryStore) compile(lim Limit) (*rule, error) {
	if c := m.last.Load(); c != nil && c.lim == lim {
		return &c.rule, nil
	}
	if err := lim.validate(); err != nil {
		return nil, err
	}
	c := &compiled{lim: lim, rule: compile(lim.withDefaults())}
	m.last.Store(c)
	return &c.rule, nil
}

// compiled is a Limit as a Store method received it, and its rule.
type compiled struct {
	lim  Limit
	rule rule
}

// take, drain and cancelSlot are Take, Drain and CancelSlot for a limiter
// (owner; nil from the Store methods), which passes its compiled rule.
func (m *memoryStore) take(owner *core, key string, n int64, r *rule, now time.Time, maxWait time.Duration) Decision {
	t := m.base.nanos(now)
	m.sweep(r, t)
	sh := m.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := m.stateLocked(sh, owner, key, r, t)
	d := s.take(r, n, t, int64(maxWait))
	if d.ok && r.Algorithm.isBucket() {
		d.remaining = s.bucketRemaining(t)
	}
	return d.public(t)
}

func (m *memoryStore) drain(owner *core, key string, r *rule, now time.Time) {
	t := m.base.nanos(now)
	sh := m.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	m.stateLocked(sh, owner, key, r, t).drain(r, t)
}

func (m *memoryStore) cancelSlot(owner *core, key string, n int64, r *rule, now time.Time, wait time.Duration) {
	t := m.base.nanos(now)
	sh := m.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s := m.stateLocked(sh, owner, key, r, t); r.Algorithm.isBucket() {
		s.cancelBucketSlot(n, t, int64(wait))
	}
}

// len returns the number of keys held.
func (m *memoryStore) len() int {
	n := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		n += len(sh.states)
		sh.mu.Unlock()
	}
	return n
}

// stateLocked returns key's state at t for owner, adding a fresh one if
// there is none. A bucket counting in another rule converts to r as of t
// (its owner's SetLimit converts it as of the change: convertOwned); one
// whose base t has passed by its span is rebased.
func (m *memoryStore) stateLocked(sh *memShard, owner *core, key string, r *rule, t int64) *state {
	s := sh.states[key]
	switch {
	case s == nil:
		s = newState(r, t)
		sh.states[key] = s
	case !r.Algorithm.isBucket(): // the windows adopt r under their lock
	case s.rule.Limit != r.Limit:
		s.rebucket(r, t)
	default:
		if _, ok := s.nowUnits(t); !ok {
			s.rebucket(r, t)
		}
	}
	s.owner = owner
	return s
}

// convertOwned converts the buckets owner took from last to r as of now:
// the permits they have taken stay taken, and come back at r's rate from
// now on (Limiter.SetLimit).
func (m *memoryStore) convertOwned(owner *core, r *rule, now time.Time) {
	t := m.base.nanos(now)
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		for _, s := range sh.states {
			if s.owner == owner && s.rule.Algorithm.isBucket() && s.rule.Limit != r.Limit {
				s.rebucket(r, t)
			}
		}
		sh.mu.Unlock()
	}
}

func (m *memoryStore) shard(key string) *memShard {
	return &m.shards[maphash.String(m.seed, key)%numShards]
}

// sweep evicts the fresh keys of every shard, at most once per l's Period;
// the caller that moves lastSweep does it. Each key is judged by the limit
// it counts in, not l: limiters with different limits may share the store.
func (m *memoryStore) sweep(l *rule, now int64) {
	last := m.lastSweep.Load()
	if now-last < int64(l.Period) || !m.lastSweep.CompareAndSwap(last, now) {
		return
	}
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		for k, s := range sh.states {
			if s.fresh(now) {
				delete(sh.states, k)
			}
		}
		sh.mu.Unlock()
	}
}

// public converts d, decided at now, to a Decision.
func (d decision) public(now int64) Decision {
	switch {
	case d.ok:
		return Decision{OK: true, Wait: time.Duration(d.wait), Remaining: d.remaining}
	case d.never:
		return Decision{RetryAfter: -1}
	}
	return Decision{RetryAfter: time.Duration(max(d.retryAt-now, 0))}
}

// timeBase turns times into nanoseconds since the UTC midnight before the
// first time it saw, so that states count in int64, windows of a second, a
// minute or an hour start on the wall clock's, and the monotonic clock is
// kept where there is one.
type timeBase struct {
	epoch atomic.Pointer[time.Time]
}

func (b *timeBase) nanos(t time.Time) int64 {
	e := b.epoch.Load()
	if e == nil {
		m := midnight(t)
		b.epoch.CompareAndSwap(nil, &m)
		e = b.epoch.Load()
	}
	return int64(t.Sub(*e))
}

// midnight returns the UTC midnight before t, keeping t's monotonic clock.
func midnight(t time.Time) time.Time {
	return t.Add(-time.Duration(t.UnixNano() % int64(24*time.Hour)))
}
