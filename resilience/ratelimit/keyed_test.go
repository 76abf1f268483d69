package ratelimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/ratelimit"
)

func newKeyed(t *testing.T, clk *clocktest.Clock, c ratelimit.Config) *ratelimit.Keyed {
	t.Helper()
	c.Clock = clk
	k, err := ratelimit.NewKeyed(c)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestKeysAreIndependent(t *testing.T) {
	clk := clocktest.New(time.Time{})
	k := newKeyed(t, clk, ratelimit.Config{Limit: ratelimit.Limit{Permits: 2, Period: time.Second}})
	for range 2 {
		if err := k.TryAcquire("a", 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.TryAcquire("a", 1); !errors.Is(err, ratelimit.ErrLimited) {
		t.Fatalf("a's third: %v; want ErrLimited", err)
	}
	if err := k.TryAcquire("b", 2); err != nil {
		t.Fatalf("b: %v", err)
	}
	var rej interface{ Error() string } = k.TryAcquire("b", 1)
	if rej == nil || rej.Error() != "ratelimit [b]: rate limited (retry after 500ms)" {
		t.Fatalf("b's rejection %v; want it to name the key", rej)
	}
}

// TestIdleKeysEvicted: keys whose state is back to a fresh key's are
// evicted at the next sweep (at most one per Period); a key still short of
// permits is kept, so eviction never lets more through.
func TestIdleKeysEvicted(t *testing.T) {
	clk := clocktest.New(time.Time{})
	k := newKeyed(t, clk, ratelimit.Config{Limit: ratelimit.Limit{Permits: 10, Period: time.Second}})
	start := clk.Now()
	if err := k.TryAcquire("a", 10); err != nil { // full again at 1s
		t.Fatal(err)
	}
	clk.Advance(start.Add(500 * time.Millisecond).Sub(clk.Now()))
	if err := k.TryAcquire("b", 1); err != nil { // full again at 0.6s
		t.Fatal(err)
	}
	clk.Advance(start.Add(900 * time.Millisecond).Sub(clk.Now()))
	if err := k.TryAcquire("d", 10); err != nil { // full again at 1.9s
		t.Fatal(err)
	}
	if n := k.Keys(); n != 3 {
		t.Fatalf("%d keys; want 3", n)
	}
	clk.Advance(start.Add(time.Second).Sub(clk.Now()))
	if err := k.TryAcquire("c", 1); err != nil { // sweeps: a and b are fresh
		t.Fatal(err)
	}
	if n := k.Keys(); n != 2 {
		t.Fatalf("%d keys after the sweep; want 2 (c, d)", n)
	}
	if err := k.TryAcquire("d", 2); !errors.Is(err, ratelimit.ErrLimited) { // 1 permit back since 0.9s
		t.Fatalf("d after the sweep: %v; want still limited", err)
	}
}

func TestKeyedGuardDrainsItsKey(t *testing.T) {
	clk := clocktest.New(time.Time{})
	quota := errors.New("quota")
	k := newKeyed(t, clk, ratelimit.Config{Limit: ratelimit.Limit{Permits: 10, Period: time.Second},
		DrainOn: func(err error) bool { return errors.Is(err, quota) }})
	g := k.Guard("tenant-1")
	p, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g.Exit(p, quota)
	if err := k.TryAcquire("tenant-1", 1); !errors.Is(err, ratelimit.ErrLimited) {
		t.Fatalf("after drain: %v; want ErrLimited", err)
	}
	if err := k.TryAcquire("tenant-2", 1); err != nil {
		t.Fatalf("another key: %v", err)
	}
}

// countingStore is a Store that counts the atomic operations a limiter
// asks of it, over a MemoryStore: what a shared store sees.
type countingStore struct {
	*ratelimit.MemoryStore
	takes, drains int
}

func (s *countingStore) Take(ctx context.Context, key string, n int64, lim ratelimit.Limit, now time.Time, maxWait time.Duration) (ratelimit.Decision, error) {
	s.takes++
	return s.MemoryStore.Take(ctx, key, n, lim, now, maxWait)
}

func (s *countingStore) Drain(ctx context.Context, key string, lim ratelimit.Limit, now time.Time) error {
	s.drains++
	return s.MemoryStore.Drain(ctx, key, lim, now)
}

// TestSharedStore: two limiters on one store and key share one limit, as
// two processes on one Redis would; each call is one store operation.
func TestSharedStore(t *testing.T) {
	clk := clocktest.New(time.Time{})
	store := &countingStore{MemoryStore: ratelimit.NewMemoryStore()}
	var ls []*ratelimit.Limiter
	for range 2 {
		l, err := ratelimit.New(ratelimit.Config{Clock: clk, Store: store, Key: "api",
			Limit: ratelimit.Limit{Permits: 3, Period: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	allowed := 0
	for i := range 6 {
		if ls[i%2].Allow() {
			allowed++
		}
	}
	if err := ls[0].Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if allowed != 3 || store.takes != 6 || store.drains != 1 {
		t.Fatalf("allowed %d, %d takes, %d drains; want 3, 6, 1", allowed, store.takes, store.drains)
	}
}

// TestSharedStoreKeysKeepTheirOwnLimit: two limiters with different limits
// share a MemoryStore. B's clean-up of fresh keys (due every one of B's
// Periods) must judge A's key by A's limit: A (1 an hour), 3s after its
// permit, must refuse the next exactly as A alone on its own store does.
func TestSharedStoreKeysKeepTheirOwnLimit(t *testing.T) {
	algs := []ratelimit.Algorithm{ratelimit.TokenBucket, ratelimit.FixedWindow, ratelimit.SlidingLog,
		ratelimit.SlidingWindow, ratelimit.LeakyBucket}
	for _, alg := range algs {
		for _, balg := range []ratelimit.Algorithm{alg, ratelimit.TokenBucket} {
			t.Run(alg.String()+"/b="+balg.String(), func(t *testing.T) {
				clk := clocktest.New(time.Time{})
				store := ratelimit.NewMemoryStore()
				hourly := ratelimit.Limit{Algorithm: alg, Permits: 1, Period: time.Hour}
				newLimiter := func(key string, store ratelimit.Store, lim ratelimit.Limit) *ratelimit.Limiter {
					l, err := ratelimit.New(ratelimit.Config{Clock: clk, Store: store, Key: key, Limit: lim})
					if err != nil {
						t.Fatal(err)
					}
					return l
				}
				a := newLimiter("a", store, hourly)
				b := newLimiter("b", store, ratelimit.Limit{Algorithm: balg, Permits: 1000, Period: time.Second})
				alone := newLimiter("a", ratelimit.NewMemoryStore(), hourly)
				if !a.Allow() || !alone.Allow() {
					t.Fatal("the first permit of the hour was refused")
				}
				clk.Advance(3 * time.Second)
				if !b.Allow() { // B's clean-up is due
					t.Fatal("b refused")
				}
				err, want := a.TryAcquire(1), alone.TryAcquire(1)
				got, _ := resilience.RetryAfter(err)
				wantAt, _ := resilience.RetryAfter(want)
				if !errors.Is(err, ratelimit.ErrLimited) || !got.Equal(wantAt) {
					t.Fatalf("a beside b: %v; want as alone: %v", err, want)
				}
			})
		}
	}
}

// TestStoreDecisionRemaining: a MemoryStore's Decision counts the permits
// left, whole, with intervals of a fraction of a nanosecond (333⅓ns).
func TestStoreDecisionRemaining(t *testing.T) {
	m := ratelimit.NewMemoryStore()
	lim := ratelimit.Limit{Permits: 3, Period: time.Microsecond, Burst: 4}
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, step := range []struct {
		after  time.Duration
		n      int64
		remain int64
	}{{0, 1, 3}, {0, 2, 1}, {333, 1, 0}, {1, 1, 0}, {666, 2, 0}} {
		now = now.Add(step.after)
		d, err := m.Take(context.Background(), "k", step.n, lim, now, 0)
		if err != nil || !d.OK || d.Remaining != step.remain {
			t.Fatalf("%+v: %+v, %v; want %d remaining", step, d, err, step.remain)
		}
	}
	if _, err := m.Take(context.Background(), "k", 1, ratelimit.Limit{Permits: -1}, now, 0); err == nil {
		t.Fatal("a Limit of -1 permits was taken from")
	}
}
