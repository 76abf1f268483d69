package pool

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// observed records what an Observer is told.
type observed struct {
	mu                   sync.Mutex
	waits, creates, uses []time.Duration
}

func (o *observed) observer() *Observer {
	add := func(to *[]time.Duration) func(time.Duration) {
		return func(d time.Duration) {
			o.mu.Lock()
			*to = append(*to, d)
			o.mu.Unlock()
		}
	}
	return &Observer{Wait: add(&o.waits), Create: add(&o.creates), Use: add(&o.uses)}
}

func (o *observed) get() (waits, creates, uses []time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]time.Duration(nil), o.waits...), append([]time.Duration(nil), o.creates...), append([]time.Duration(nil), o.uses...)
}

// The Observer is told each Take's wait (a creation's run included, or
// nothing for an idle object), each creation's run and each hold, on the
// pool's clock; after Observe(nil), nothing.
func TestObserverIsToldWaitsCreationsAndHolds(t *testing.T) {
	for _, threshold := range []time.Duration{0, time.Hour} { // takenAt stored by Take, or by lend for HoldThreshold
		h := newHarness(t, Config{MaxObjects: 2, HoldThreshold: threshold})
		o := &observed{}
		h.p.Observe(o.observer())
		h.f.set(func(f *fakeFactory) { f.createSeen = func(context.Context) { h.clk.moveLate(30 * time.Millisecond) } })
		first := h.take() // created: 30 ms
		h.clk.moveLate(5 * time.Millisecond)
		h.giveBack(first) // held 5 ms
		again := h.take() // idle: at once
		h.clk.moveLate(7 * time.Millisecond)
		if err := again.Discard(); err != nil { // held 7 ms
			t.Fatal(err)
		}
		waitUntil(t, "the creation is told", func() bool { _, c, _ := o.get(); return len(c) == 1 })
		waits, creates, uses := o.get()
		want := func(what string, got []time.Duration, w ...time.Duration) {
			t.Helper()
			if len(got) != len(w) {
				t.Fatalf("HoldThreshold %v: %s %v; want %v", threshold, what, got, w)
			}
			for i := range w {
				if got[i] != w[i] {
					t.Errorf("HoldThreshold %v: %s %v; want %v", threshold, what, got, w)
				}
			}
		}
		want("waits", waits, 30*time.Millisecond, 0)
		want("creations", creates, 30*time.Millisecond)
		want("holds", uses, 5*time.Millisecond, 7*time.Millisecond)

		h.p.Observe(nil)
		h.giveBack(h.take())
		if w, c, u := o.get(); len(w) != 2 || len(c) != 1 || len(u) != 2 {
			t.Errorf("after Observe(nil): %v %v %v; want nothing more told", w, c, u)
		}
	}
}

type spanKey struct{}

// Taking's context reaches the creation made for the Take (Creating, then
// Create), each is ended with its outcome, and Taking is told how many
// callers wait before it.
func TestObserverTakingAndCreating(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, AcquireTimeout: time.Hour})
	var mu sync.Mutex
	var events []string
	note := func(e string) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}
	told := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), events...)
	}
	outcome := func(err error) string {
		if err != nil {
			return "failed"
		}
		return "ok"
	}
	h.p.Observe(&Observer{
		Taking: func(ctx context.Context, waiting int) (context.Context, func(error)) {
			note(fmt.Sprintf("take behind %d", waiting))
			return context.WithValue(ctx, spanKey{}, "take-span"), func(err error) { note("take " + outcome(err)) }
		},
		Creating: func(ctx context.Context) (context.Context, func(error)) {
			note(fmt.Sprintf("create under %v", ctx.Value(spanKey{})))
			return context.WithValue(ctx, spanKey{}, "create-span"), func(err error) { note("create " + outcome(err)) }
		},
	})
	var seen atomic.Value
	h.f.set(func(f *fakeFactory) { f.createSeen = func(ctx context.Context) { seen.Store(ctx.Value(spanKey{})) } })
	first := h.take()
	if got := seen.Load(); got != "create-span" {
		t.Errorf("Create saw %v; want the context Creating returned", got)
	}
	want := []string{"take behind 0", "create under take-span", "create ok", "take ok"}
	if got := told(); !slices.Equal(got, want) {
		t.Fatalf("a take that creates: told %q; want %q", got, want)
	}
	// Each waiter parked before the next comes (blockedInTake: Waiting
	// counts a caller before it parks), so that the first given back is
	// the second's.
	second := h.takeAsync(context.Background())
	waitUntil(t, "the second waits", func() bool { return blockedInTake(1) })
	third := h.takeAsync(context.Background())
	waitUntil(t, "the third waits", func() bool { return blockedInTake(2) })
	h.giveBack(first)
	h.giveBack(h.result(second).h)
	h.giveBack(h.result(third).h)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.p.Take(gone); err == nil {
		t.Fatal("Take with an ended context succeeded")
	}
	want = append(want, "take behind 0", "take behind 1", "take ok", "take ok", "take behind 0", "take failed")
	if got := told(); !slices.Equal(got, want) {
		t.Errorf("told %q; want %q", got, want)
	}
}

// Only a lease taken under an Observer is told when it ends: one taken
// before Observe is not (whatever an older lease left behind), and one
// taken by TryTake is (its wait: none).
func TestObserverIsToldOnlyOfLeasesTakenUnderIt(t *testing.T) {
	for _, threshold := range []time.Duration{0, time.Hour} {
		h := newHarness(t, Config{MaxObjects: 1, HoldThreshold: threshold})
		o := &observed{}
		h.p.Observe(o.observer())
		h.giveBack(h.take()) // an observed lease: told
		h.p.Observe(nil)
		before := h.take() // taken before Observe
		h.p.Observe(o.observer())
		h.clk.moveLate(time.Hour)
		h.giveBack(before) // not told: neither its hold nor the old lease's time
		tried, err := h.p.TryTake()
		if err != nil {
			t.Fatal(err)
		}
		h.clk.moveLate(3 * time.Millisecond)
		h.giveBack(tried)
		waits, _, uses := o.get()
		if len(uses) != 2 || uses[0] != 0 || uses[1] != 3*time.Millisecond || len(waits) != 2 || waits[1] != 0 {
			t.Errorf("HoldThreshold %v: holds %v, waits %v; want holds [0s 3ms] (not the lease taken before Observe), waits ending with TryTake's 0",
				threshold, uses, waits)
		}
	}
}
