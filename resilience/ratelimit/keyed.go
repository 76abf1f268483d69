package ratelimit

import (
	"context"

	"github.com/respool/respool/resilience"
)

// Keyed keeps one rate limit per key (a tenant, a user, a host), each with
// its own state and queue, and the same Limit. Make one with NewKeyed.
type Keyed struct {
	co  *core
	mem *memoryStore // the default store, nil when Config.Store is set
}

// NewKeyed returns a Keyed configured by c (Config.Key is unused), or a
// *resilience.ConfigError. Its default Store is in memory, and evicts keys
// whose state is back to a fresh key's.
func NewKeyed(c Config) (*Keyed, error) {
	k := &Keyed{}
	if c.Store == nil {
		k.mem = newMemoryStore()
		c.Store = k.mem
	}
	co, err := newCore(c)
	if err != nil {
		return nil, err
	}
	k.co = co
	return k, nil
}

// TryAcquire takes n permits of key if they are there now.
func (k *Keyed) TryAcquire(key string, n int64) error {
	return k.co.acquire(context.Background(), key, n, false)
}

// Acquire takes n permits of key, waiting as Limiter.Acquire does.
func (k *Keyed) Acquire(ctx context.Context, key string, n int64) error {
	return k.co.acquire(ctx, key, n, true)
}

// Drain empties key's permits until they refill.
func (k *Keyed) Drain(ctx context.Context, key string) error { return k.co.drain(ctx, key, nil) }

// SetLimit changes every key's limit, as Limiter.SetLimit does.
func (k *Keyed) SetLimit(lim Limit) error { return k.co.setLimit(lim) }

// Stats returns a snapshot of the counters, over every key, and the keys
// held in the default Store.
func (k *Keyed) Stats() Stats {
	s := k.co.stats()
	if k.mem != nil {
		s.Keys = k.mem.len()
	}
	return s
}

// Guard returns a resilience.Guard that acquires Config.Cost permits of key
// (and drains key on DrainOn).
func (k *Keyed) Guard(key string) resilience.Guard { return &keyGuard{k: k, key: key} }

type keyGuard struct {
	k   *Keyed
	key string
}

func (g *keyGuard) Enter(ctx context.Context) (resilience.Permit, error) {
	return resilience.Permit{}, g.k.co.acquire(ctx, g.key, g.k.co.c.Cost, true)
}

func (g *keyGuard) Exit(_ resilience.Permit, err error) { g.k.co.exit(g.key, err) }
