package pool

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// keyedHarness is a Keyed on a fake clock whose keys share one fake factory
// (unless given their own), so that f.live counts the objects of every key.
type keyedHarness struct {
	t   *testing.T
	f   *fakeFactory
	clk *fakeClock
	ev  *events
	log *logBuffer
	k   *Keyed[string, *fakeObj]
}

// newKeyedHarness starts a Keyed with cfg on a fake clock. When the test
// ends it closes the Keyed and waits until every object is destroyed.
func newKeyedHarness(t *testing.T, cfg KeyedConfig[string, *fakeObj]) *keyedHarness {
	t.Helper()
	h := &keyedHarness{t: t, f: &fakeFactory{}, clk: newFakeClock(), ev: newEvents(), log: &logBuffer{}}
	cfg.Clock = h.clk
	cfg.Logger = slog.New(slog.NewTextHandler(h.log, nil))
	k, err := newKeyed(cfg, h.ev.hook)
	if err != nil {
		t.Fatal(err)
	}
	h.k = k
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := k.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		waitUntil(t, "every object is destroyed after Close", func() bool { return h.f.live.Load() == 0 })
	})
	return h
}

// add adds key on the shared factory.
func (h *keyedHarness) add(key string, cfg Config) *Pool[*fakeObj] {
	h.t.Helper()
	return h.addOf(key, factoryOf[*fakeObj](h.f), cfg)
}

// addOf adds key on factory f.
func (h *keyedHarness) addOf(key string, f Factory[*fakeObj], cfg Config) *Pool[*fakeObj] {
	h.t.Helper()
	p, err := h.k.Add(key, f, cfg)
	if err != nil {
		h.t.Fatalf("Add(%q): %v", key, err)
	}
	h.ev.wait(h.t, "add", 1)
	return p
}

func (h *keyedHarness) take(key string) Handle[*fakeObj] {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hd, err := h.k.Take(ctx, key)
	if err != nil {
		h.t.Fatalf("Take(%q): %v", key, err)
	}
	return hd
}

func (h *keyedHarness) giveBack(hd Handle[*fakeObj]) {
	h.t.Helper()
	if err := hd.GiveBack(); err != nil {
		h.t.Fatalf("GiveBack: %v", err)
	}
}

// takeAsync starts a Take of key with ctx and returns where its result
// arrives.
func (h *keyedHarness) takeAsync(ctx context.Context, key string) chan takeResult {
	ch := make(chan takeResult, 1)
	go func() {
		hd, err := h.k.Take(ctx, key)
		ch <- takeResult{hd, err}
	}()
	return ch
}

// claim starts a Take of key that waits for the budget, and returns once
// the loop holds its claim and has published it (give-backs from now on
// see it): n callers wait for the budget then.
func (h *keyedHarness) claim(key string, n int) chan takeResult {
	h.t.Helper()
	return h.claimWith(context.Background(), key, n)
}

// claimWith is claim with the Take's context.
func (h *keyedHarness) claimWith(ctx context.Context, key string, n int) chan takeResult {
	h.t.Helper()
	h.ev.drain()
	ch := h.takeAsync(ctx, key)
	h.ev.wait(h.t, "take", 1) // the loop has handled the request and settled
	if got := h.k.Stats().WaitingForBudget; got != n {
		h.t.Fatalf("%d callers wait for the budget, want %d", got, n)
	}
	return ch
}

// claimLeft starts a Take of key that waits for the budget, alone, and
// cancels it; it returns once the Take has returned context.Canceled.
func (h *keyedHarness) claimLeft(key string) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := h.claimWith(ctx, key, 1)
	cancel()
	if r := h.result(ch); !errors.Is(r.err, context.Canceled) {
		h.t.Fatalf("Take(%q) = %v, want context.Canceled", key, r.err)
	}
}

// queued starts a Take of key that queues for a give-back of its key (at
// its own MaxObjects), and returns once it waits: n callers of the key
// queued then.
func (h *keyedHarness) queued(key string, n int) chan takeResult {
	h.t.Helper()
	ch := h.takeAsync(context.Background(), key)
	waitUntil(h.t, "a Take queues", func() bool {
		// Every caller in a Take is parked: callers queue in the order
		// they came, and one queued after this one is behind it.
		return h.k.member(key).Stats().Queued == n && blockedInTake(h.k.Stats().Waiting)
	})
	return ch
}

// result waits for a Take's result.
func (h *keyedHarness) result(ch chan takeResult) takeResult {
	h.t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		h.t.Fatalf("Take did not return; stats %+v", h.k.Stats())
		return takeResult{}
	}
}

// served waits for a Take's result and fails the test unless it is an
// object.
func (h *keyedHarness) served(ch chan takeResult) Handle[*fakeObj] {
	h.t.Helper()
	r := h.result(ch)
	if r.err != nil {
		h.t.Fatalf("Take: %v", r.err)
	}
	return r.h
}

// destroyed waits until key has destroyed n objects for reason r.
func (h *keyedHarness) destroyed(key string, r destroyReason, n uint64) {
	h.t.Helper()
	waitUntil(h.t, "objects of "+key+" destroyed as "+r.String(), func() bool {
		return destroysOf(h.k.Stats().Keys[key].Destroys, r) == n
	})
}

// destroyedIDs returns the ids of the objects destroyed, in order.
func (f *fakeFactory) destroyedIDs() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.destroyed...)
}

// holdLoop holds the loop once, after its eviction scan and before it
// publishes what callers read, at the first settle where claims wait for
// the budget. held is closed once the loop is held; release lets it go on
// (it goes on by itself after 5 s, so that a failing test cannot hang it).
func (h *keyedHarness) holdLoop() (held <-chan struct{}, release func()) {
	heldC, releaseC := make(chan struct{}), make(chan struct{})
	done := false // the loop's
	f := func() {
		if done || len(h.k.b.claims) == 0 {
			return
		}
		done = true
		close(heldC)
		select {
		case <-releaseC:
		case <-time.After(5 * time.Second):
		}
	}
	h.k.b.afterEvict.Store(&f)
	var once sync.Once
	return heldC, func() { once.Do(func() { close(releaseC) }) }
}

// drain discards the events handled so far.
func (e *events) drain() {
	for {
		select {
		case <-e.ch:
		default:
			return
		}
	}
}
