package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// fakeBudget is a shared budget of max slots (the other processes' share
// taken already), counting its calls.
type fakeBudget struct {
	mu                 sync.Mutex
	max, held          int
	acquires, releases int
	refusals           int
}

func (b *fakeBudget) Acquire(context.Context) (func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held >= b.max {
		b.refusals++
		return nil, fmt.Errorf("budget orders: %d of %d slots taken: %w", b.held, b.max, ErrBudgetExhausted)
	}
	b.held++
	b.acquires++
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.held--
			b.releases++
			b.mu.Unlock()
		})
	}, nil
}

func (b *fakeBudget) counts() (held, acquires, releases, refusals int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held, b.acquires, b.releases, b.refusals
}

func (b *fakeBudget) setMax(n int) {
	b.mu.Lock()
	b.max = n
	b.mu.Unlock()
}

// A shared budget bounds creations, not takes: with 2 slots free anywhere a
// pool of 5 creates 2 objects, a third caller waits for a give-back (no
// creation is attempted: the factory is not called) instead of failing;
// takes of idle objects do not ask the budget; a destroyed object's slot
// is given back.
func TestBudgetBoundsCreationsNotTakes(t *testing.T) {
	b := &fakeBudget{max: 2}
	h := newHarness(t, Config{MaxObjects: 5, AcquireTimeout: time.Hour, Budget: b})
	first, second := h.take(), h.take()
	third := h.takeAsync(h.withDeadline(time.Hour))
	waitUntil(t, "the third caller waits for a give-back", func() bool {
		s := h.p.Stats()
		return s.Queued == 1 && s.EffectiveMaxObjects == 2
	})
	if _, acquires, _, refusals := b.counts(); acquires != 2 || refusals != 1 || h.f.attempts.Load() != 2 {
		t.Fatalf("%d slots taken, %d refusals, %d creations attempted; want 2, 1, 2 (none without a slot)",
			acquires, refusals, h.f.attempts.Load())
	}
	h.giveBack(first)
	r := h.result(third)
	if r.err != nil {
		t.Fatalf("third Take = %v; want the object given back", r.err)
	}
	h.giveBack(r.h)
	for range 10 { // an idle object: the budget is not asked
		h.giveBack(h.take())
	}
	if _, acquires, _, _ := b.counts(); acquires != 2 {
		t.Errorf("%d slots taken after takes of idle objects; want still 2", acquires)
	}
	if err := h.take().Discard(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the discarded object's slot is back", func() bool { held, _, _, _ := b.counts(); return held == 1 })

	h.giveBack(second)
	if err := h.p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if held, acquires, releases, _ := b.counts(); held != 0 || acquires != releases {
		t.Errorf("after Close: %d held, %d taken, %d given back; want every slot back", held, acquires, releases)
	}
}

// When other processes free slots, the pool held at its objects grows
// again at its next probe (100 ms on its clock).
func TestBudgetFreedElsewhereIsTakenAtTheNextProbe(t *testing.T) {
	b := &fakeBudget{max: 1}
	h := newHarness(t, Config{MaxObjects: 3, AcquireTimeout: time.Hour, Budget: b})
	first := h.take()
	second := h.takeAsync(h.withDeadline(time.Hour))
	waitUntil(t, "the second waits", func() bool { return h.p.Stats().Queued == 1 })
	b.setMax(2) // another process gave a slot back
	h.clk.Advance(budgetProbe)
	r := h.result(second)
	if r.err != nil {
		t.Fatalf("second Take = %v; want a new object once the budget had room", r.err)
	}
	if s := h.p.Stats(); s.Total != 2 {
		t.Errorf("%d objects; want 2", s.Total)
	}
	h.giveBack(r.h)
	h.giveBack(first)
}

// A creation that fails gives its slot back at once, and one refused by
// AfterCreate too.
func TestBudgetSlotOfAFailedCreationIsGivenBack(t *testing.T) {
	b := &fakeBudget{max: 5}
	h := newHarnessOf(t, Config{MaxObjects: 2, Budget: b}, func(f *fakeFactory) Factory[*fakeObj] {
		fac := factoryOf[*fakeObj](f)
		fac.AfterCreate = func(context.Context, *fakeObj) error { return errors.New("SET refused") }
		return fac
	})
	if _, err := h.p.Take(context.Background()); err == nil {
		t.Fatal("Take succeeded; want AfterCreate's refusal")
	}
	h.f.set(func(f *fakeFactory) { f.createErr = errors.New("refused") })
	h.afterBackoff()
	if _, err := h.p.Take(context.Background()); err == nil {
		t.Fatal("Take succeeded; want the creation's failure")
	}
	waitUntil(t, "both slots are back", func() bool {
		held, acquires, releases, _ := b.counts()
		return acquires == 2 && releases == 2 && held == 0
	})
}

// With no slot free anywhere and no object alive, a caller waits for the
// next probe (every 100 ms) instead of failing at once, and the refusal is
// not a creation failure.
func TestBudgetExhaustedWithNothingAliveWaitsForAProbe(t *testing.T) {
	b := &fakeBudget{max: 0}
	h := newHarness(t, Config{MaxObjects: 3, AcquireTimeout: time.Hour, Budget: b})
	first := h.takeAsync(h.withDeadline(time.Hour))
	waitUntil(t, "the caller waits for the next probe", func() bool {
		_, _, _, refusals := b.counts()
		s := h.p.Stats()
		return refusals == 1 && s.Queued == 1 && s.NextCreateAttempt.After(h.clk.Now())
	})
	if !pending(first) {
		t.Fatalf("Take = %+v; want it waiting", h.result(first))
	}
	h.clk.Advance(budgetProbe) // a probe, still refused
	waitUntil(t, "the second probe, and its hold", func() bool {
		_, _, _, refusals := b.counts()
		return refusals == 2 && h.p.Stats().NextCreateAttempt.After(h.clk.Now())
	})
	b.setMax(1) // another process gave a slot back
	h.clk.Advance(budgetProbe)
	r := h.result(first)
	if r.err != nil {
		t.Fatalf("Take = %v; want an object once a slot was free", r.err)
	}
	if s := h.p.Stats(); s.CreateFailures != 0 || h.f.attempts.Load() != 1 {
		t.Errorf("%d creation failures, %d creations attempted; want 0, 1 (refusals are not failures)", s.CreateFailures, h.f.attempts.Load())
	}
	h.giveBack(r.h)
}

// fakeReclaimer is a fakeBudget that is a Reclaimer: it keeps the reclaim
// func of the pool attached to it.
type fakeReclaimer struct {
	fakeBudget
	reclaim  func(n int, inUse bool)
	detached bool
}

func (r *fakeReclaimer) Attach(reclaim func(n int, inUse bool)) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reclaim = reclaim
	return func() {
		r.mu.Lock()
		r.detached = true
		r.mu.Unlock()
	}
}

func (r *fakeReclaimer) ask(n int, inUse bool) {
	r.mu.Lock()
	f := r.reclaim
	r.mu.Unlock()
	f(n, inUse)
}

// reclaim asks h's pool for n objects back and waits until its actor has
// taken the ask in.
func (h *harness) reclaim(b *fakeReclaimer, n int, inUse bool) {
	h.t.Helper()
	h.ev.drain()
	b.ask(n, inUse)
	h.ev.wait(h.t, "reclaim", 1)
}

// A Reclaimer asking for idle objects back gets them, oldest first, down to
// MinIdle and no further; objects in use are left alone, and so are those
// given back after it asked.
func TestReclaimDestroysIdleObjectsDownToMinIdle(t *testing.T) {
	b := &fakeReclaimer{fakeBudget: fakeBudget{max: 5}}
	h := newHarness(t, Config{MaxObjects: 5, Budget: b})
	hs := []Handle[*fakeObj]{h.take(), h.take(), h.take(), h.take()}
	out := hs[3]
	for _, x := range hs[:3] {
		h.giveBack(x)
	}
	if err := h.p.Resize(5, 1); err != nil { // MinIdle 1 now, with 3 idle: nothing to create
		t.Fatal(err)
	}
	waitUntil(t, "4 objects, 3 idle", func() bool { s := h.p.Stats(); return s.Total == 4 && s.Idle == 3 })
	h.reclaim(b, 2, false)
	waitUntil(t, "2 idle objects destroyed", func() bool { s := h.p.Stats(); return s.Total == 2 && s.Destroys.Yielded == 2 })
	if s := h.p.Stats(); s.Idle != 1 {
		t.Fatalf("%d idle; want 1 (the one in use left alone)", s.Idle)
	}
	h.giveBack(out) // idle only: a give-back after the ask is not destroyed
	waitUntil(t, "2 idle", func() bool { return h.p.Stats().Idle == 2 })
	h.reclaim(b, 5, false)
	waitUntil(t, "down to MinIdle", func() bool { s := h.p.Stats(); return s.Total == 1 && s.Destroys.Yielded == 3 })
	if held, _, _, _ := b.counts(); held != 1 {
		t.Fatalf("%d slots held; want 1 (MinIdle's object)", held)
	}
}

// Asked for objects in use too, the pool destroys those given back, even
// with its own callers waiting, until it has given as many as asked; then
// give-backs serve its callers again.
func TestReclaimInUseDestroysGiveBacksBeforeServingWaiters(t *testing.T) {
	b := &fakeReclaimer{fakeBudget: fakeBudget{max: 3}}
	h := newHarness(t, Config{MaxObjects: 5, AcquireTimeout: time.Hour, Budget: b})
	x, y, z := h.take(), h.take(), h.take()
	w := h.takeAsync(h.withDeadline(time.Hour))
	waitUntil(t, "a caller waits", func() bool { return h.p.Stats().Queued == 1 })
	b.setMax(1) // another process wants its share: 2 slots go to it
	h.reclaim(b, 2, true)
	h.giveBack(x)
	h.giveBack(y)
	waitUntil(t, "two give-backs destroyed", func() bool { held, _, _, _ := b.counts(); return held == 1 })
	if !pending(w) {
		t.Fatalf("Take = %+v; want it still waiting: the give-backs were reclaimed", h.result(w))
	}
	h.giveBack(z) // reclaimed enough: z serves the caller
	r := h.result(w)
	if r.err != nil {
		t.Fatalf("Take = %v; want the third give-back", r.err)
	}
	if s := h.p.Stats(); s.Destroys.Yielded != 2 {
		t.Errorf("yielded %d; want 2", s.Destroys.Yielded)
	}
	h.giveBack(r.h)
}

// A later ask replaces an earlier one: asking for 0 ends a reclaim of
// objects in use; after Close the pool is detached and asking does nothing.
func TestReclaimEndsWhenAskedAgainAndAtClose(t *testing.T) {
	b := &fakeReclaimer{fakeBudget: fakeBudget{max: 2}}
	h := newHarness(t, Config{MaxObjects: 2, Budget: b})
	x := h.take()
	h.reclaim(b, 1, true)
	h.reclaim(b, 0, false)
	h.giveBack(x)
	waitUntil(t, "the give-back is idle", func() bool { return h.p.Stats().Idle == 1 })
	if s := h.p.Stats(); s.Destroys.Yielded != 0 {
		t.Fatalf("yielded %d; want 0: the ask was withdrawn", s.Destroys.Yielded)
	}
	if err := h.p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	detached := b.detached
	b.mu.Unlock()
	if !detached {
		t.Fatal("Close did not detach the pool from its Reclaimer")
	}
	b.ask(1, true) // returns: the pool is closed
}

// Once a probe gets a slot, the pool goes on creating for its waiting
// callers (each creation asking the Budget) without waiting for the next
// probes: slots freed elsewhere serve them all at once, not one a probe.
func TestBudgetProbeThatGetsASlotOpensTheWholeSize(t *testing.T) {
	b := &fakeBudget{max: 1}
	h := newHarness(t, Config{MaxObjects: 5, AcquireTimeout: time.Hour, Budget: b})
	first := h.take()
	var waiting []chan takeResult
	for range 3 {
		waiting = append(waiting, h.takeAsync(h.withDeadline(time.Hour)))
	}
	waitUntil(t, "3 callers wait", func() bool { return h.p.Stats().Queued == 3 })
	b.setMax(4) // other processes gave 3 slots back
	h.clk.Advance(budgetProbe)
	for i, w := range waiting {
		r := h.result(w)
		if r.err != nil {
			t.Fatalf("caller %d: Take = %v; want a new object", i, r.err)
		}
		defer h.giveBack(r.h)
	}
	if s := h.p.Stats(); s.Total != 4 {
		t.Errorf("%d objects; want 4", s.Total)
	}
	h.giveBack(first)
}
