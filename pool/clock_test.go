package pool

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/resilience"
)

// Holds shorter than the threshold are never reported, however the ticks
// fall: hold time is measured from the real take time, not the last tick.
func TestShortHoldsAreNeverReportedHeldTooLong(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2, ValidationInterval: 300 * time.Millisecond,
		HoldThreshold: 50 * time.Millisecond})
	for range 20 {
		h.clk.Advance(290 * time.Millisecond) // just before the next tick
		a := h.take()
		h.clk.Tick(t, 10*time.Millisecond) // a tick while a is held for 10ms
		h.ev.wait(t, "tick", 1)
		h.giveBack(a)
	}
	if n := h.p.Stats().HeldTooLong; n != 0 {
		t.Fatalf("%d holds of 10ms reported past a 50ms threshold: %s", n, h.log)
	}
	// A hold past the threshold is reported at the first tick after it,
	// with its true length.
	a := h.take()
	h.clk.Tick(t, 40*time.Millisecond)
	h.ev.wait(t, "tick", 1)
	if n := h.p.Stats().HeldTooLong; n != 0 {
		t.Fatalf("a 40ms hold reported")
	}
	h.clk.Tick(t, 20*time.Millisecond)
	h.ev.wait(t, "tick", 1)
	if n := h.p.Stats().HeldTooLong; n != 1 || !strings.Contains(h.log.String(), "held=60ms") {
		t.Fatalf("HeldTooLong = %d, log %q; want one report saying held=60ms", n, h.log)
	}
	h.giveBack(a)
}

// An idle object past its lifetime is never handed out, whenever the tick
// comes: Take checks the lifetime with a clock read.
func TestTakeNeverHandsOutAnObjectPastItsLifetime(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, MaxLifetime: time.Second}) // ValidationInterval 30s
	a := h.take()
	h.giveBack(a)
	h.clk.Advance(time.Second) // no tick
	b := h.take()
	if b.Value() == a.Value() {
		t.Fatal("Take handed out an object 1s old, MaxLifetime 1s")
	}
	h.giveBack(b)
	waitUntil(t, "the expired object is destroyed", func() bool { return h.p.Stats().Destroys.Lifetime == 1 })
}

// Jitter shorter than the tick interval still spreads expiry: each object
// expires at its own time when taken.
func TestLifetimeJitterTakesEffectBetweenTicks(t *testing.T) {
	const n = 20
	h := newHarness(t, Config{MaxObjects: n, MaxLifetime: 10 * time.Second, MaxLifetimeJitter: 10 * time.Second})
	var hs []Handle[*fakeObj]
	for range n {
		hs = append(hs, h.take())
	}
	start := h.p.clock()
	expired := 0
	for _, hd := range hs {
		if hd.e.expiresAt-start <= int64(15*time.Second) {
			expired++
		}
		h.giveBack(hd)
	}
	if expired == 0 || expired == n {
		t.Skipf("jitter put all %d lifetimes on one side of 15s; nothing to see", n)
	}
	h.clk.Advance(15 * time.Second) // between ticks
	hs = hs[:0]
	for range n {
		hs = append(hs, h.take())
	}
	for _, hd := range hs {
		h.giveBack(hd)
	}
	waitUntil(t, "the expired objects are destroyed", func() bool {
		return h.p.Stats().Destroys.Lifetime == uint64(expired)
	})
}

func TestNewRefusesAnIdleLimitShorterThanTheInterval(t *testing.T) {
	err := newPoolErr(t, Config{MaxIdle: 10 * time.Second, ValidationInterval: 30 * time.Second})
	var ce *resilience.ConfigError
	if !errors.As(err, &ce) || ce.Field != "MaxIdle" || !strings.Contains(err.Error(), "ValidationInterval") {
		t.Fatalf("New = %v, want a ConfigError for MaxIdle naming ValidationInterval", err)
	}
	// Left to its default, the interval follows a short MaxIdle.
	if got := (Config{MaxIdle: 10 * time.Second}).withDefaults().ValidationInterval; got != 10*time.Second {
		t.Fatalf("default ValidationInterval with MaxIdle 10s = %v, want 10s", got)
	}
	if err := newPoolErr(t, Config{MaxIdle: 10 * time.Second}); err != nil {
		t.Fatalf("New = %v", err)
	}
}

// A lifetime starts when the object is created, not at the last tick: an
// object created long after a tick is not born expired.
func TestLifetimeStartsAtTheCreation(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, MaxLifetime: time.Second}) // ValidationInterval 30s
	h.clk.Advance(20 * time.Second)                                     // no tick: the coarse clock stays behind
	a := h.take()
	h.giveBack(a)
	b := h.take()
	if b.Value() != a.Value() {
		t.Fatal("a new object was destroyed as expired")
	}
	h.giveBack(b)
}

// A pool on the system clock, named (clock.System()) or left nil, takes the
// fast path: it reads only the monotonic clock and recycles the timers of
// its bounded waits, so that neither allocates. Any other Clock is read
// through its interface.
func TestSystemClockTakesTheFastPath(t *testing.T) {
	for _, c := range []struct {
		name string
		clk  clock.Clock
		fast bool
	}{
		{"nil", nil, true},
		{"clock.System()", clock.System(), true},
		{"clocktest", clocktest.New(time.Time{}), false},
	} {
		p, err := New[*fakeObj](factoryOf[*fakeObj](&fakeFactory{}), Config{MaxObjects: 1, Clock: c.clk, LeakTrackingDisabled: true})
		if err != nil {
			t.Fatal(err)
		}
		if p.sysClock != c.fast {
			t.Errorf("%s: fast path %v; want %v", c.name, p.sysClock, c.fast)
		}
		if c.fast && !raceEnabled {
			allocs := testing.AllocsPerRun(100, func() {
				_ = p.clock()
				tm := p.startTimer(time.Hour) // the timer of a bounded wait
				tm.stop()
			})
			if allocs != 0 {
				t.Errorf("%s: a bounded wait's clock and timer allocate %v times; want 0", c.name, allocs)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := p.Close(ctx); err != nil {
			t.Errorf("%s: Close: %v", c.name, err)
		}
		cancel()
	}
}

// A Take that waits for a give-back, bounded by AcquireTimeout and by its
// context's deadline, allocates nothing on the system clock (leak tracking
// off): the wait's timer is recycled and its clock readings are monotonic.
func TestBoundedWaitOnTheSystemClockAllocatesNothing(t *testing.T) {
	p, err := New[*fakeObj](factoryOf[*fakeObj](&fakeFactory{}), Config{MaxObjects: 1, AcquireTimeout: time.Hour,
		Clock: clock.System(), LeakTrackingDisabled: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	h, err := p.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	back, done := make(chan Handle[*fakeObj]), make(chan error)
	go func() { // gives h back once the Take waits for it
		var err error
		for h := range back {
			for p.queued.Load() == 0 {
				runtime.Gosched()
			}
			if e := h.GiveBack(); err == nil {
				err = e
			}
		}
		done <- err
	}()
	allocs := testing.AllocsPerRun(50, func() {
		back <- h
		if h, err = p.Take(ctx); err != nil {
			t.Fatal(err)
		}
	})
	close(back)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := h.GiveBack(); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Creates != 1 || s.Waits < 50 {
		t.Fatalf("stats %+v; want 1 creation and every Take waiting", s)
	}
	if allocs != 0 && !raceEnabled {
		t.Errorf("a bounded wait allocates %v times; want 0", allocs)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
