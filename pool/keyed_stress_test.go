package pool

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestKeyedStressInvariants is TestStressInvariants for a Keyed: many
// goroutines take, try-take, give back, discard and cancel on three keys
// whose caps add up to more than the budget, on one factory that fails now
// and then, while one key is closed and added again, then close the Keyed
// while they run. After every step: never more objects alive than the
// budget, no object held by two callers, every Take returns; after Close,
// nothing is alive.
func TestKeyedStressInvariants(t *testing.T) {
	const fastInitial, fastMax = 100 * time.Microsecond, 2 * time.Millisecond
	for _, v := range []struct {
		name   string
		cfg    Config
		failer func(call, live int64) error
	}{
		{"backoff", Config{BackoffInitial: fastInitial, BackoffMax: fastMax}, everyFifth},
		{"backoff-off", Config{BackoffDisabled: true}, everyFifth},
		{"back-pressure", Config{BackoffInitial: fastInitial, BackoffMax: fastMax, BackPressure: stressBackPressure}, func(call, live int64) error {
			if live >= keyedStressBudget-1 || call%7 == 0 { // the server takes 3 at most
				return errServerFull
			}
			return nil
		}},
		{"codel", Config{BackoffInitial: fastInitial, BackoffMax: fastMax, Overload: OverloadCoDel, CoDelTarget: 200 * time.Microsecond, CoDelInterval: time.Millisecond}, everyFifth},
	} {
		t.Run(v.name, func(t *testing.T) { keyedStressInvariants(t, v.cfg, v.failer) })
	}
}

const keyedStressBudget = 4

var keyedStressKeys = []struct {
	key               string
	maxObjects, idles int
}{{"a", 3, 1}, {"b", 4, 0}, {"c", 2, 0}}

func keyedStressInvariants(t *testing.T, cfg Config, failer func(call, live int64) error) {
	f, cf := stressFactory(failer)
	k, err := NewKeyed(KeyedConfig[string, *fakeObj]{
		MaxObjects:         keyedStressBudget,
		MaxQueueSize:       12,
		ValidationInterval: time.Millisecond, // real ticks: tests run concurrently with everything
		Logger:             slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConcurrentCreates = 2
	cfg.AcquireTimeout = 1500 * time.Microsecond
	cfg.MaxLifetime = 5 * time.Millisecond
	cfg.TestTimeout = time.Second
	add := func(i int) {
		c := cfg
		c.MaxObjects, c.MinIdle = keyedStressKeys[i].maxObjects, keyedStressKeys[i].idles
		if _, err := k.Add(keyedStressKeys[i].key, factoryOf[*fakeObj](cf), c); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Add: %v", err)
		}
	}
	for i := range keyedStressKeys {
		add(i)
	}

	var wg sync.WaitGroup
	stressWorkers(&wg, 2, func(w, i int, rng *rand.Rand) bool {
		if w == 1 && i == stressOps/4 { // close c and add it again
			if p := k.member("c"); p != nil {
				p.StartClose()
			}
			add(2)
		}
		keyedStressStep(t, k, rng)
		if live := f.live.Load(); live > keyedStressBudget {
			t.Errorf("%d objects alive, budget %d", live, keyedStressBudget)
			return false
		}
		if s := k.Stats(); s.Total > keyedStressBudget {
			t.Errorf("stats: total %d, budget %d", s.Total, keyedStressBudget)
			return false
		}
		return true
	})
	closeAfterStress(t, k.Close, &wg, f, keyedStressBudget)
	s := k.Stats()
	t.Logf("takes %d, waits %d, queue full %d, cancelled %d, acquire timeouts %d, creates %d, create failures %d, overloaded %d, destroys %v",
		s.Takes, s.Waits, s.QueueFull, s.CancelledWaits, s.AcquireTimeouts, s.Creates, s.CreateFailures, s.Overloaded, s.Destroys)
}

func keyedStressStep(t *testing.T, k *Keyed[string, *fakeObj], rng *rand.Rand) {
	key := keyedStressKeys[rng.IntN(len(keyedStressKeys))].key
	take := func(ctx context.Context) (Handle[*fakeObj], error) { return k.Take(ctx, key) }
	tryTake := func() (Handle[*fakeObj], error) { return k.TryTake(key) }
	h, ok := stressTake(t, rng, take, tryTake, ErrUnknownKey) // ErrUnknownKey: c between its close and its return
	if !ok {
		return
	}
	if h.e.pool != k.member(key) && h.e.pool.cfg.Name != "keyed["+key+"]" {
		t.Errorf("Take(%q) handed out an object of %s", key, h.e.pool.cfg.Name)
	}
	holdAndReturn(t, rng, h)
}
