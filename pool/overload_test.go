package pool

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// overloadHarness is a pool of 2 whose objects are both out, with a hold
// time of 100ms measured as many times as the policy needs to judge (an
// object lent to a waiting caller came back 100ms later), and two callers
// without deadlines queued for give-backs. It returns the handles out and
// the queued callers.
func overloadHarness(t *testing.T, cfg Config) (h *harness, out []Handle[*fakeObj], queued []chan takeResult) {
	cfg.MaxObjects, cfg.MaxQueueSize = 2, 100
	h = newHarness(t, cfg)
	a, b := h.take(), h.take() // each made for a caller that waited: measured
	a = h.holds(a, holdWeight, 100*time.Millisecond)
	if s := h.p.Stats(); cfg.Overload == OverloadDeadline && s.MeanHold != 100*time.Millisecond {
		t.Fatalf("MeanHold = %v, want the 100ms measured", s.MeanHold)
	}
	queued = []chan takeResult{h.waiting(context.Background(), 1), h.waiting(context.Background(), 2)}
	return h, []Handle[*fakeObj]{a, b}, queued
}

// holds measures n holds of d, one after the other, on a, the handle of an
// object lent to a caller that waited, while the pool's other objects are
// out: each time a caller queues, a is given back d later and goes to that
// caller. It returns the handle of the last.
func (h *harness) holds(a Handle[*fakeObj], n int, d time.Duration) Handle[*fakeObj] {
	h.t.Helper()
	for range n {
		w := h.waiting(context.Background(), 1)
		h.clk.Advance(d)
		h.giveBack(a)
		a = h.result(w).h
	}
	return a
}

// drain gives back the handles and serves the queued callers in turn.
func (h *harness) drain(out []Handle[*fakeObj], queued ...chan takeResult) {
	h.t.Helper()
	for _, q := range queued {
		h.giveBack(out[0])
		r := h.result(q)
		if r.err != nil {
			h.t.Fatalf("queued caller: %v", r.err)
		}
		out = append(out[1:], r.h)
	}
	for _, hd := range out {
		h.giveBack(hd)
	}
}

// Under overload (as many callers queued as objects in use), a caller whose
// deadline comes before its expected turn plus a mean hold fails at once;
// one who can make it waits, in FIFO order.
func TestOverloadDeadlineFailsTheHopelessAtOnce(t *testing.T) {
	h, out, queued := overloadHarness(t, Config{})
	// 2 ahead, 2 in use, 100ms holds: served after 3·100/2 = 150ms, done
	// 100ms later.
	_, err := h.p.Take(h.withDeadline(200 * time.Millisecond))
	var oe *OverloadError
	if !errors.As(err, &oe) || !errors.Is(err, ErrOverloaded) || oe.AtTurn {
		t.Fatalf("Take = %v, want an *OverloadError at once", err)
	}
	if oe.Ahead != 2 || oe.InUse != 2 || oe.Wait != 150*time.Millisecond || oe.Hold != 100*time.Millisecond || oe.Left != 200*time.Millisecond {
		t.Fatalf("verdict %+v, want 2 ahead, 2 in use, wait 150ms, hold 100ms, 200ms left", oe)
	}
	ok := h.takeAsync(h.withDeadline(300 * time.Millisecond))
	waitUntil(t, "the caller who can make it queues", func() bool { return h.p.Stats().Queued == 3 })
	if s := h.p.Stats(); s.Overloaded != 1 {
		t.Fatalf("Overloaded = %d, want 1", s.Overloaded)
	}
	h.drain(out, append(queued, ok)...)
}

// The policy judges nobody on the first holds it measures, those of the
// pool's start: it waits for holdWeight of them and takes their plain mean.
// The first hold of a pool is often many times the steady ones (new
// connections, every caller arriving at once on a busy machine): judged on
// it alone, a caller that would be served well within its deadline was
// refused.
func TestOverloadDeadlineWaitsForHoldsBeforeJudging(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, MaxQueueSize: 100})
	a := h.holds(h.take(), 1, time.Second) // the start: a hold of 1s
	first := h.waiting(context.Background(), 1)
	// 1 ahead, 1 in use: judged on the 1s hold alone, it would expect to be
	// served after 2s and be refused; the 10ms holds that follow serve it
	// after 20ms.
	soon := h.takeAsync(h.withDeadline(time.Second))
	waitUntil(t, "the caller with a deadline queues, or fails", func() bool {
		return !pending(soon) || h.p.Stats().Queued == 2 && blockedInTake(2)
	})
	if !pending(soon) {
		t.Fatalf("Take = %v with one hold measured; want it queued", h.result(soon).err)
	}
	for _, w := range []chan takeResult{first, soon} {
		h.clk.Advance(10 * time.Millisecond)
		h.giveBack(a)
		r := h.result(w)
		if r.err != nil {
			t.Fatalf("queued caller: %v", r.err)
		}
		a = r.h
	}
	a = h.holds(a, holdWeight-3, 10*time.Millisecond)
	want := (time.Second + (holdWeight-1)*10*time.Millisecond) / holdWeight
	if s := h.p.Stats(); s.MeanHold < want-time.Microsecond || s.MeanHold > want+time.Microsecond || s.Overloaded != 0 {
		t.Fatalf("MeanHold %v, Overloaded %d; want the plain mean of the %d holds, %v, and nobody refused", s.MeanHold, s.Overloaded, holdWeight, want)
	}
	// Measured enough: it judges. With 1 ahead, a caller with 100ms left
	// cannot be served in time.
	queued := h.waiting(context.Background(), 1)
	if _, err := h.p.Take(h.withDeadline(100 * time.Millisecond)); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("Take = %v after %d holds; want ErrOverloaded", err, holdWeight)
	}
	h.drain([]Handle[*fakeObj]{a}, queued)
}

// A caller the policy refuses yields its processor before it returns, so
// that a goroutine ready to run (a caller holding an object, woken by the
// network) runs before the refused caller can call again. Refused callers
// often call again at once, and each ran until the scheduler preempted it
// (10ms): with dozens of them, a holder waited hundreds of milliseconds to
// run, its hold lengthened, and the policy, measuring it, refused more
// (on 2 busy cores, holds of 15ms became 200-600ms, and the pool served
// a third of what a plain FIFO pool serves). On one processor the
// goroutine readied before the refusal runs only if the refused caller
// yields; the scheduler serves the caller that yielded first once in 61
// schedules, so the caller may call twice.
func TestOverloadDeadlineRefusedCallerYields(t *testing.T) {
	h, out, queued := overloadHarness(t, Config{})
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ready := make(chan struct{})
	var ran atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ready
		ran.Store(true)
	}()
	waitUntil(t, "the goroutine waits", func() bool { return blockedOn("chan receive", "TestOverloadDeadlineRefusedCallerYields.func") })
	close(ready) // it is ready to run: on one processor, it runs when this goroutine yields
	var errs [2]error
	for i := range errs {
		if _, errs[i] = h.p.Take(h.withDeadline(200 * time.Millisecond)); ran.Load() {
			break
		}
	}
	yielded := ran.Load()
	if !errors.Is(errs[0], ErrOverloaded) || errs[1] != nil && !errors.Is(errs[1], ErrOverloaded) {
		t.Fatalf("Takes = %v, want ErrOverloaded", errs)
	}
	if !yielded {
		t.Fatal("a caller refused twice returned without letting a ready goroutine run")
	}
	<-done
	h.drain(out, queued...)
}

// blockedOn reports whether a goroutine whose stack mentions fn is parked
// in state ("chan receive", "select").
func blockedOn(state, fn string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "["+state) && strings.Contains(g, fn) {
			return true
		}
	}
	return false
}

// AcquireTimeout bounds the wait only: a caller whose AcquireTimeout comes
// before its expected turn fails at once.
func TestOverloadDeadlineHonoursAcquireTimeout(t *testing.T) {
	h, out, queued := overloadHarness(t, Config{AcquireTimeout: 120 * time.Millisecond})
	_, err := h.p.Take(context.Background())
	var oe *OverloadError
	if !errors.As(err, &oe) || oe.Wait != 150*time.Millisecond {
		t.Fatalf("Take = %v, want an *OverloadError expecting a 150ms wait", err)
	}
	h.drain(out, queued...)
}

// A caller admitted but left with less than a mean hold when its turn
// comes passes the object to the next caller and fails.
func TestOverloadDeadlineAtTurnPassesTheObjectOn(t *testing.T) {
	h, out, queued := overloadHarness(t, Config{})
	late := h.takeAsync(h.withDeadline(300 * time.Millisecond))
	waitUntil(t, "it queues", func() bool { return h.p.Stats().Queued == 3 && blockedInTake(3) })
	next := h.waiting(context.Background(), 4)
	h.clk.Advance(250 * time.Millisecond) // late has 50ms left
	h.giveBack(out[0])
	h.giveBack(out[1])
	first, second := h.result(queued[0]), h.result(queued[1])
	h.giveBack(first.h) // late's turn: it passes the object on
	r := h.result(late)
	var oe *OverloadError
	if !errors.As(r.err, &oe) || !oe.AtTurn || oe.Left != 50*time.Millisecond {
		t.Fatalf("Take = %v, want an *OverloadError at its turn with 50ms left", r.err)
	}
	n := h.result(next)
	if n.err != nil {
		t.Fatalf("the next caller: %v, want the object passed on", n.err)
	}
	h.giveBack(n.h)
	h.giveBack(second.h)
	if s := h.p.Stats(); s.Overloaded != 1 {
		t.Fatalf("Overloaded = %d, want 1", s.Overloaded)
	}
}

// Below overload (fewer callers queued than objects in use) nothing
// changes: even a caller with a deadline too short to be served waits in
// FIFO order until its own deadline; and callers without a deadline are
// never refused.
func TestOverloadDeadlineKeepsFIFOBelowOverload(t *testing.T) {
	h, out, queued := overloadHarness(t, Config{})
	h.giveBack(out[0]) // served to the first queued: 2 in use, 1 queued
	out[0] = h.result(queued[0]).h
	short := h.takeAsync(h.withDeadline(time.Millisecond))
	waitUntil(t, "the short-deadline caller queues", func() bool { return h.p.Stats().Queued == 2 && blockedInTake(2) })
	more := make(chan takeResult, 5)
	for range 5 { // callers without deadlines, far beyond overload
		go func() { more <- <-h.takeAsync(context.Background()) }()
	}
	waitUntil(t, "they queue", func() bool { return h.p.Stats().Queued == 7 })
	if s := h.p.Stats(); s.Overloaded != 0 {
		t.Fatalf("Overloaded = %d, want 0", s.Overloaded)
	}
	h.drain(out, queued[1], short, more, more, more, more, more)
}

// OverloadFIFO turns the policy off: the hopeless caller waits.
func TestOverloadFIFO(t *testing.T) {
	h, out, queued := overloadHarness(t, Config{Overload: OverloadFIFO})
	hopeless := h.takeAsync(h.withDeadline(200 * time.Millisecond))
	waitUntil(t, "it queues", func() bool { return h.p.Stats().Queued == 3 })
	h.drain(out, append(queued, hopeless)...)
	if s := h.p.Stats(); s.Overloaded != 0 || s.MeanHold != 0 {
		t.Fatalf("Overloaded %d, MeanHold %v; want neither", s.Overloaded, s.MeanHold)
	}
}

// Under OverloadCoDel a caller joining the queue waits at most Interval,
// or at most Target once the queue has not been empty for Interval.
func TestOverloadCoDel(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, Overload: OverloadCoDel, CoDelTarget: 5 * time.Millisecond, CoDelInterval: 100 * time.Millisecond})
	a := h.take()
	w1 := h.waiting(context.Background(), 1) // the queue stops being empty: bounded by Interval
	h.clk.Advance(50 * time.Millisecond)
	w2 := h.waiting(context.Background(), 2) // 50ms later: not overload yet
	h.clk.Advance(50 * time.Millisecond)
	shed := func(w chan takeResult, after time.Duration) {
		t.Helper()
		r := h.result(w)
		var oe *OverloadError
		if !errors.As(r.err, &oe) || oe.Policy != OverloadCoDel || oe.Wait != after {
			t.Fatalf("Take = %v, want CoDel's *OverloadError after %v", r.err, after)
		}
	}
	shed(w1, 100*time.Millisecond)
	w3 := h.waiting(context.Background(), 2) // the queue has not been empty for 100ms: overload
	h.clk.Advance(5 * time.Millisecond)
	shed(w3, 5*time.Millisecond)
	if !pending(w2) {
		t.Fatal("a caller that joined before overload was shed at Target")
	}
	h.clk.Advance(45 * time.Millisecond)
	shed(w2, 100*time.Millisecond)
	if s := h.p.Stats(); s.Overloaded != 3 {
		t.Fatalf("Overloaded = %d, want 3", s.Overloaded)
	}
	w4 := h.waiting(context.Background(), 1) // the queue was empty: not overload
	h.drain([]Handle[*fakeObj]{a}, w4)
}
