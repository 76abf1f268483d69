package pool

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

func TestTickDestroysObjectsIdlePastMaxIdleDownToMinIdle(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 3, MinIdle: 1, MaxIdle: time.Minute, ValidationInterval: time.Minute})
	a, b, c := h.take(), h.take(), h.take()
	h.giveBack(a)
	h.giveBack(b)
	h.giveBack(c)
	h.clk.Tick(t, 30*time.Second) // idle 30 s: kept, not yet tested
	h.ev.wait(t, "tick", 1)
	if s := h.p.Stats(); s.Idle != 3 {
		t.Fatalf("idle = %d after 30 s, want 3", s.Idle)
	}
	h.clk.Tick(t, 31*time.Second) // idle 61 s > MaxIdle
	h.ev.wait(t, "tick", 1)
	h.ev.wait(t, "destroyed", 2)
	s := h.p.Stats()
	if s.Destroys.Idle != 2 || s.Total != 1 {
		t.Fatalf("stats = %+v, want 2 idle destroys and MinIdle 1 object left", s)
	}
}

func TestTickTestsIdleObjectsAndDestroysFailures(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2, ValidationInterval: time.Second, MaxQueueSize: 4})
	a, b := h.take(), h.take()
	h.giveBack(a)
	h.giveBack(b)
	bad := b.Value()
	gate := make(chan struct{})
	h.f.set(func(f *fakeFactory) {
		f.testGate = gate
		f.testFn = func(o *fakeObj) error {
			if o == bad {
				return errors.New("ping failed")
			}
			return nil
		}
	})
	h.clk.Tick(t, time.Second)
	h.clk.Tick(t, time.Second) // both idle through a whole interval now
	h.ev.wait(t, "tick", 2)
	if s := h.p.Stats(); s.Testing != 2 || s.Idle != 0 {
		t.Fatalf("stats = %+v, want both objects under test, none idle", s)
	}
	// An object under test is not handed out: the pool is full, so Take waits.
	ctx, cancel := context.WithCancel(context.Background())
	w := h.waiting(ctx, 1)
	close(gate)
	r := <-w
	cancel()
	if r.err != nil {
		t.Fatalf("Take = %v", r.err)
	}
	defer h.giveBack(r.h)
	if r.h.Value() == bad {
		t.Fatal("Take got the object that failed its test")
	}
	h.ev.wait(t, "destroyed", 1)
	if s := h.p.Stats(); s.Destroys.TestFailed != 1 {
		t.Fatalf("test-failed destroys = %d, want 1", s.Destroys.TestFailed)
	}
}

func TestTickDoesNotTestObjectsUsedSinceTheLastTick(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, ValidationInterval: time.Second})
	tested := make(chan struct{}, 1)
	h.f.set(func(f *fakeFactory) {
		f.testFn = func(*fakeObj) error { tested <- struct{}{}; return nil }
	})
	h.giveBack(h.take())
	h.clk.Tick(t, time.Second)
	h.clk.Tick(t, time.Second)
	h.ev.wait(t, "tick", 2)
	<-tested // idle through the whole interval: tested
	h.ev.wait(t, "tested", 1)
	h.giveBack(h.take()) // used after that tick
	h.clk.Tick(t, time.Second)
	h.ev.wait(t, "tick", 1)
	select {
	case <-tested:
		t.Fatal("an object used since the last tick was tested")
	default:
	}
}

func TestTestTimeoutDestroysTheObject(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, ValidationInterval: time.Second, TestTimeout: 10 * time.Millisecond})
	h.giveBack(h.take())
	h.f.set(func(f *fakeFactory) { f.testGate = make(chan struct{}) }) // never answers
	h.clk.Tick(t, time.Second)
	h.clk.Tick(t, time.Second)
	h.ev.wait(t, "tested", 1)
	// Destroyed by the actor, or by the test's goroutine when the pool gave
	// up on the test first.
	waitUntil(t, "the timed-out object is destroyed", func() bool {
		s := h.p.Stats()
		return s.Destroys.TestFailed == 1 && s.Total == 0
	})
}

func TestLifetimeEndsOnGiveBackAndWhenIdle(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2, MaxLifetime: time.Hour, ValidationInterval: time.Minute})
	a, b := h.take(), h.take()
	h.giveBack(b)
	h.clk.Tick(t, time.Hour)
	h.ev.wait(t, "tick", 1) // b, idle, expires here
	h.giveBack(a)           // a expires on its way back
	h.ev.wait(t, "destroyed", 2)
	if s := h.p.Stats(); s.Destroys.Lifetime != 2 || s.Total != 0 {
		t.Fatalf("stats = %+v, want both objects destroyed for their lifetime", s)
	}
}

func TestLifetimeJitterSpreadsExpiry(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 50, MaxLifetime: time.Hour, MaxLifetimeJitter: time.Hour})
	var hs []Handle[*fakeObj]
	for range 50 {
		hs = append(hs, h.take())
	}
	seen := map[int64]bool{}
	for _, hd := range hs {
		exp := hd.e.expiresAt - h.p.now.Load()
		if exp < int64(time.Hour) || exp >= int64(2*time.Hour) {
			t.Fatalf("lifetime %v outside [1h, 2h)", time.Duration(exp))
		}
		seen[exp] = true
	}
	if len(seen) < 40 {
		t.Fatalf("only %d distinct lifetimes among 50: jitter not applied", len(seen))
	}
	for _, hd := range hs {
		h.giveBack(hd)
	}
}

func TestMinIdleIsFilledAtStartAndRefilled(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 4, MinIdle: 2, ValidationInterval: time.Second})
	h.ev.wait(t, "created", 2)
	if s := h.p.Stats(); s.Idle != 2 {
		t.Fatalf("idle = %d at start, want MinIdle 2", s.Idle)
	}
	a := h.take()
	if err := a.Discard(); err != nil {
		t.Fatal(err)
	}
	h.ev.wait(t, "destroyed", 1)
	h.ev.wait(t, "created", 1) // refilled after the destroy
	if s := h.p.Stats(); s.Idle != 2 || s.Total != 2 {
		t.Fatalf("stats = %+v, want 2 idle again", s)
	}
}

// With idle objects kept as stacks, a light load keeps reusing the objects
// given back last, so the surplus idles out (a FIFO would rotate through all
// of them and keep every one alive).
func TestSurplusObjectsIdleOutUnderLightLoad(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 4, MaxIdle: time.Minute, ValidationInterval: 20 * time.Second})
	var hs []Handle[*fakeObj]
	for range 4 {
		hs = append(hs, h.take())
	}
	for _, hd := range hs {
		h.giveBack(hd)
	}
	for range 6 { // two minutes of one caller at a time
		for range 10 {
			h.giveBack(h.take())
		}
		h.clk.Tick(t, 20*time.Second)
		h.ev.wait(t, "tick", 1)
		// Tests started by the tick run in goroutines that need not have
		// run before the next tick: wait for them, so that each tick sees
		// the objects idle.
		waitUntil(t, "the idle tests end", func() bool { return h.p.Stats().Testing == 0 })
	}
	// Destroys finish in the background: wait for them to be counted.
	waitUntil(t, "the objects a single caller does not need are destroyed as idle", func() bool {
		s := h.p.Stats()
		return s.Destroys.Idle >= 2 && s.Total <= 2
	})
}

func TestMaxLifetimeOfMaxInt64MeansForever(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, MaxIdle: -1, MaxLifetime: math.MaxInt64, MaxLifetimeJitter: math.MaxInt64})
	for range 5 {
		h.giveBack(h.take())
	}
	h.clk.Tick(t, 24*time.Hour)
	h.ev.wait(t, "tick", 1)
	h.giveBack(h.take())
	if s := h.p.Stats(); s.Creates != 1 || s.Destroys.Lifetime != 0 {
		t.Fatalf("stats = %+v, want 1 create and no lifetime destroy", s)
	}
}
