package pool

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respool/respool/resilience"
)

// Reset destroys the idle objects at once, an object in use when it is
// given back, and the pool refills MinIdle with new ones.
func TestResetDestroysIdleNowAndInUseOnGiveBack(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 4, MinIdle: 1})
	h.ev.wait(t, "created", 1) // MinIdle
	a, b, c := h.take(), h.take(), h.take()
	h.giveBack(c) // idle: c's object
	old := map[int64]bool{a.Value().id: true, b.Value().id: true, c.Value().id: true}

	h.p.Reset()
	// c's object at once, and MinIdle refilled (its creation may start
	// before the destroy ends: the destroy is not waited for).
	waitUntil(t, "the idle object is destroyed and MinIdle refilled", func() bool {
		s := h.p.Stats()
		return s.Destroys.Reset == 1 && s.Idle == 1 && s.Total == 3
	})
	if s := h.p.Stats(); s.InUse != 2 || s.Creates != 4 {
		t.Fatalf("after Reset: %d in use, %d created; want 2, 4", s.InUse, s.Creates)
	}
	h.giveBack(a) // made before the Reset: destroyed, never idle
	waitUntil(t, "a's object is destroyed", func() bool { return h.p.Stats().Total == 2 })
	if s := h.p.Stats(); s.Destroys.Reset != 2 || s.Idle != 1 {
		t.Fatalf("after a give-back: %d destroyed as reset, %d idle; want 2, 1", s.Destroys.Reset, s.Idle)
	}
	d := h.take()
	if old[d.Value().id] {
		t.Fatalf("Take after Reset got object %d, made before it", d.Value().id)
	}
	h.giveBack(d) // made after: kept
	h.giveBack(b)
	waitUntil(t, "b's object is destroyed", func() bool { return h.p.Stats().Total == 1 })
	if s := h.p.Stats(); s.Destroys.Reset != 3 || s.Idle != 1 || s.Total != 1 {
		t.Fatalf("end: %d destroyed as reset, %d idle, %d alive; want 3, 1, 1", s.Destroys.Reset, s.Idle, s.Total)
	}
}

// An object whose creation was under way when Reset was called is
// destroyed when it arrives, and the caller that waited for it gets one
// made after the Reset.
func TestResetDestroysTheObjectOfACreationUnderWay(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2})
	gate := make(chan struct{})
	h.f.set(func(f *fakeFactory) { f.gate = gate })
	ch := h.takeAsync(context.Background())
	waitUntil(t, "the creation has started", func() bool { return h.f.attempts.Load() == 1 })
	h.p.Reset()
	h.ev.wait(t, "retire", 1)
	close(gate)
	r := h.result(ch)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if id := r.h.Value().id; id != 2 {
		t.Fatalf("the caller got object %d, want 2 (object 1 was being made at the Reset)", id)
	}
	waitUntil(t, "object 1 is destroyed", func() bool { return h.p.Stats().Total == 1 })
	if s := h.p.Stats(); s.Destroys.Reset != 1 || s.Creates != 2 {
		t.Fatalf("%d destroyed as reset, %d created; want 1, 2", s.Destroys.Reset, s.Creates)
	}
	h.giveBack(r.h)
}

// An idle object under its Test when Reset is called is destroyed when the
// Test ends, not made idle again.
func TestResetDestroysAnObjectUnderTest(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1})
	gate := make(chan struct{})
	h.f.set(func(f *fakeFactory) { f.testGate = gate })
	h.giveBack(h.take())
	h.clk.Tick(t, time.Second) // idle since before this tick's interval: not yet
	h.clk.Tick(t, time.Second) // idle through a whole interval: tested
	waitUntil(t, "the Test has started", func() bool { return h.p.Stats().Testing == 1 })
	h.p.Reset()
	h.ev.wait(t, "retire", 1)
	close(gate)
	h.ev.wait(t, "destroyed", 1)
	if s := h.p.Stats(); s.Destroys.Reset != 1 || s.Total != 0 {
		t.Fatalf("%d destroyed as reset, %d alive; want 1, 0", s.Destroys.Reset, s.Total)
	}
}

// Under load, a Take that starts after Reset returned never gets an object
// whose creation started before it.
func TestResetHandsOutNothingMadeBeforeIt(t *testing.T) {
	f := &fakeFactory{}
	var resets atomic.Int64 // moved on before each Reset
	type obj struct {
		*fakeObj
		epoch int64
	}
	fac := Factory[*obj]{
		Create: func(ctx context.Context) (*obj, error) {
			epoch := resets.Load()
			o, err := f.Create(ctx)
			return &obj{o, epoch}, err
		},
		Destroy: func(o *obj) error { return f.Destroy(o.fakeObj) },
	}
	p, err := New(fac, Config{MaxObjects: 4, MinIdle: 2, LeakTrackingDisabled: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	// resets is odd while a Reset runs, even once it has returned: a
	// creation that read a count below returned-1 started before a Reset
	// that had returned when the Take began.
	done := churn(p, 6, func() int64 { return resets.Load() &^ 1 }, func(o *obj, returned int64) string {
		if o.epoch < returned-1 {
			return "handed out an object made before a Reset"
		}
		return ""
	})
	for range 200 {
		takes := p.Stats().Takes
		waitUntil(t, "callers take objects", func() bool { return p.Stats().Takes > takes+2 })
		resets.Add(1)
		p.Reset()
		resets.Add(1) // Reset has returned
	}
	if err := done(); err != "" {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Destroys.Reset == 0 {
		t.Fatalf("no object destroyed as reset: %+v", s.Destroys)
	}
}

// Resize down destroys idle objects first, then objects given back while
// the pool holds more than the new size; Resize up serves a waiting caller
// at once.
func TestResizeShrinksIdleFirstThenOnGiveBack(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 4})
	a, b, c, d := h.take(), h.take(), h.take(), h.take()
	h.giveBack(c)
	h.giveBack(d)
	if err := h.p.Resize(1, 0); err != nil {
		t.Fatal(err)
	}
	if s := h.p.Stats(); s.MaxObjects != 1 {
		t.Fatalf("Stats.MaxObjects = %d after Resize(1, 0), want 1", s.MaxObjects)
	}
	h.ev.wait(t, "destroyed", 2) // both idle ones
	if s := h.p.Stats(); s.Destroys.Resized != 2 || s.InUse != 2 || s.EffectiveMaxObjects != 1 {
		t.Fatalf("%d destroyed as resized, %d in use, effective size %d; want 2, 2, 1", s.Destroys.Resized, s.InUse, s.EffectiveMaxObjects)
	}
	h.giveBack(a) // the pool holds 2 for 1: destroyed
	waitUntil(t, "a's object is destroyed", func() bool { return h.p.Stats().Total == 1 })
	h.giveBack(b) // back within its size: kept
	if s := h.p.Stats(); s.Destroys.Resized != 3 || s.Idle != 1 || s.Total != 1 {
		t.Fatalf("%d destroyed as resized, %d idle, %d alive; want 3, 1, 1", s.Destroys.Resized, s.Idle, s.Total)
	}

	e := h.take()
	ch := h.takeAsync(h.withDeadline(time.Hour))
	waitUntil(t, "the second Take waits", func() bool { return blockedInTake(1) })
	if !pending(ch) {
		t.Fatal("a second Take did not wait at size 1")
	}
	if err := h.p.Resize(2, 0); err != nil {
		t.Fatal(err)
	}
	r := h.result(ch) // served by a creation in the new slot
	if r.err != nil {
		t.Fatal(r.err)
	}
	h.giveBack(r.h)
	h.giveBack(e)
	h.giveBack(h.take()) // the fast path is back: nothing to the actor
	if s := h.p.Stats(); s.Total != 2 || s.Idle != 2 || s.Destroys.Resized != 3 {
		t.Fatalf("%d alive, %d idle, %d destroyed as resized; want 2, 2, 3", s.Total, s.Idle, s.Destroys.Resized)
	}
}

// Resize raises MinIdle: the pool refills at once.
func TestResizeMinIdleRefills(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 4})
	if err := h.p.Resize(4, 3); err != nil {
		t.Fatal(err)
	}
	h.ev.wait(t, "created", 3)
	if s := h.p.Stats(); s.Idle != 3 {
		t.Fatalf("%d idle, want 3", s.Idle)
	}
	// MinIdle 3 > the new size 2 is refused; 2 and 2 holds 2 idle.
	if err := h.p.Resize(2, 3); err == nil {
		t.Fatal("Resize(2, 3) accepted")
	}
	if err := h.p.Resize(2, 2); err != nil {
		t.Fatal(err)
	}
	h.ev.wait(t, "destroyed", 1)
	if s := h.p.Stats(); s.Idle != 2 || s.Destroys.Resized != 1 {
		t.Fatalf("%d idle, %d destroyed as resized; want 2, 1", s.Idle, s.Destroys.Resized)
	}
}

func TestResizeRefusesBadValues(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 4})
	for _, c := range []struct {
		max, minIdle int
		field        string
		want         string
	}{
		{0, 0, "MaxObjects", "Config.MaxObjects = 0: want between 1 and 4"},
		{5, 0, "MaxObjects", "Config.MaxObjects = 5: want between 1 and 4 (the pool's Config.MaxObjects"},
		{-1, 0, "MaxObjects", "= -1"},
		{2, 3, "MinIdle", "Config.MinIdle = 3: want between 0 and 2 (maxObjects)"},
		{2, -1, "MinIdle", "Config.MinIdle = -1"},
	} {
		err := h.p.Resize(c.max, c.minIdle)
		var ce *resilience.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Resize(%d, %d) = %v; want a ConfigError on %s saying %q", c.max, c.minIdle, err, c.field, c.want)
		}
	}
	if s := h.p.Stats(); s.MaxObjects != 4 {
		t.Fatalf("a refused Resize changed MaxObjects to %d", s.MaxObjects)
	}
	h.p.StartClose()
	if err := h.p.Resize(2, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Resize on a closed pool = %v, want ErrClosed", err)
	}
	h.p.Reset() // nothing to do, and no panic
}

// A key of a Keyed resizes within the budget; its MinIdle may not grow past
// its Config's, which the budget was checked against.
func TestResizeKeyOfAKeyed(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 4})
	a := h.add("a", Config{MinIdle: 1})
	h.ev.wait(t, "created", 1)
	err := a.Resize(2, 2)
	if err == nil || !strings.Contains(err.Error(), "the key's Config.MinIdle") {
		t.Fatalf("Resize(2, 2) of a key with MinIdle 1 = %v, want refused naming the key's MinIdle", err)
	}
	x, y := h.take("a"), h.take("a")
	if err := a.Resize(1, 0); err != nil {
		t.Fatal(err)
	}
	h.giveBack(x)
	waitUntil(t, "x's object is destroyed", func() bool { return a.Stats().Total == 1 })
	h.giveBack(y)
	a.Reset()
	waitUntil(t, "y's object is destroyed", func() bool { return a.Stats().Total == 0 })
	if s := a.Stats(); s.Destroys.Resized != 1 || s.Destroys.Reset != 1 || s.Total != 0 || s.MaxObjects != 1 {
		t.Fatalf("key a: %d resized, %d reset, %d alive, size %d; want 1, 1, 0, 1", s.Destroys.Resized, s.Destroys.Reset, s.Total, s.MaxObjects)
	}
}

// Random Takes and give-backs while the pool is reset and resized: never
// more objects alive than the largest size (the queue's capacity), nobody
// held by two callers, and in the end the pool at its last size.
func TestResizeAndResetUnderLoad(t *testing.T) {
	f := &fakeFactory{}
	p, err := New(factoryOf[*fakeObj](f), Config{MaxObjects: 6, MinIdle: 1, LeakTrackingDisabled: true})
	if err != nil {
		t.Fatal(err)
	}
	done := churn(p, 8, func() int { return 0 }, func(o *fakeObj, _ int) string {
		defer o.held.Add(-1)
		if o.held.Add(1) != 1 {
			return "an object held by two callers"
		}
		return ""
	})
	for i := range 300 {
		if i%3 == 0 {
			p.Reset()
		} else if err := p.Resize(1+i%6, i%2); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Resize(3, 0); err != nil {
		t.Fatal(err)
	}
	if err := done(); err != "" {
		t.Fatal(err)
	}
	if m := f.maxLive.Load(); m > 6 {
		t.Fatalf("%d objects alive at once, more than 6", m)
	}
	waitUntil(t, "the pool holds at most its last size", func() bool { return p.Stats().Total <= 3 && f.live.Load() <= 3 })
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.live.Load() != 0 {
		t.Fatalf("%d objects alive after Close", f.live.Load())
	}
}

// churn starts n callers that take an object and give it back until the
// function it returns is called; before runs before each Take, check on
// each object taken, with what before returned (a message: something
// wrong). That function stops them
// and returns the first thing wrong, or "".
func churn[T, S any](p *Pool[T], n int, before func() S, check func(T, S) string) func() string {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var bad atomic.Value
	fail := func(msg string) {
		if msg != "" {
			bad.CompareAndSwap(nil, msg)
		}
	}
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				state := before()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				hd, err := p.Take(ctx)
				cancel()
				if err != nil {
					fail(err.Error())
					return
				}
				fail(check(hd.Value(), state))
				if err := hd.GiveBack(); err != nil {
					fail(err.Error())
				}
			}
		}()
	}
	return func() string {
		close(stop)
		wg.Wait()
		msg, _ := bad.Load().(string)
		return msg
	}
}

// A Reset ends a hold of creations (a backoff, a retry-after): whatever
// made every object stale may have made the failure stale too (a
// failover), and the next Take creates at once instead of failing fast
// until the retry time.
func TestResetEndsAHoldOfCreations(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2, AcquireTimeout: time.Hour})
	rejected := &retryAfterErr{at: h.clk.Now().Add(time.Hour)}
	h.f.set(func(f *fakeFactory) { f.createErr = rejected })
	if _, err := h.p.Take(context.Background()); !errors.Is(err, rejected) {
		t.Fatalf("Take = %v; want the rejection", err)
	}
	h.f.set(func(f *fakeFactory) { f.createErr = nil })
	h.p.Reset()
	waitUntil(t, "the hold ended", func() bool { return !h.p.Stats().NextCreateAttempt.After(h.clk.Now()) })
	h.giveBack(h.take())
}

// A Reset that ends a hold of creations starts the creation a caller waits
// for: a caller who asked while the gate was held waits for the next
// attempt (objects are alive to be given back, so it does not fail fast),
// and the Reset that opens the gate, stopping its timer, is that attempt's
// start. (Found in the failover suite: a Take waited its whole deadline
// after the Reset of a promotion while nothing was dialed.)
func TestResetStartsTheCreationACallerWaitsFor(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2, AcquireTimeout: time.Hour})
	first := h.take() // alive: the caller below waits rather than fail fast
	h.f.set(func(f *fakeFactory) { f.createErr = errors.New("refused") })
	ch := h.takeAsync(h.withDeadline(time.Hour))
	h.heldBack()
	waitUntil(t, "the caller waits for the next attempt", func() bool {
		s := h.p.Stats()
		return s.Waiting == 1 && h.f.attempts.Load() == 2
	})
	h.f.set(func(f *fakeFactory) { f.createErr = nil })
	h.p.Reset()
	r := h.result(ch) // the clock stands still: only the Reset can start the attempt
	if r.err != nil {
		t.Fatalf("Take = %v; want an object made after the Reset", r.err)
	}
	h.giveBack(r.h)
	h.giveBack(first)
}

// A creation that started before a Reset and fails after it brings no news
// of what the Reset was for (a failover, new credentials): its failure,
// even one with a retry time, holds no creation, and the caller it was
// made for waits on for a new one.
func TestAFailureFromBeforeAResetHoldsNoCreations(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2, AcquireTimeout: time.Hour})
	gate := make(chan struct{})
	rejected := &retryAfterErr{at: h.clk.Now().Add(time.Hour)}
	h.f.set(func(f *fakeFactory) { f.gate, f.createErr = gate, rejected })
	ch := h.takeAsync(context.Background())
	waitUntil(t, "the creation has started", func() bool { return h.f.attempts.Load() == 1 })
	h.f.set(func(f *fakeFactory) { f.gate, f.createErr = nil, nil })
	h.p.Reset()
	h.ev.wait(t, "retire", 1)
	close(gate) // the creation from before the Reset fails now
	r := h.result(ch)
	if r.err != nil {
		t.Fatalf("Take = %v; want an object made after the Reset (the failure of the creation from before it held creations)", r.err)
	}
	if s := h.p.Stats(); s.NextCreateAttempt.After(h.clk.Now()) || h.f.attempts.Load() != 2 {
		t.Errorf("next attempt %v, %d attempts; want no hold, 2 attempts", s.NextCreateAttempt, h.f.attempts.Load())
	}
	h.giveBack(r.h)
}

// Reset ends back-pressure too: whatever made every object stale (a
// failover to another server) may have made the server's "too many
// connections" stale, and the pool grows again to its size at once. (A
// server still full says so again at the next creation.)
func TestResetEndsBackPressure(t *testing.T) {
	h, srv := newFullServerHarness(t, Config{MaxObjects: 10, AcquireTimeout: time.Hour, BackPressure: backPressureFor(time.Hour)}, 4)
	var held []Handle[*fakeObj]
	for range 4 {
		held = append(held, h.take())
	}
	fifth := h.takeAsync(context.Background())
	waitUntil(t, "back-pressure lowers the pool to the 4 alive", func() bool {
		s := h.p.Stats()
		return s.EffectiveMaxObjects == 4 && s.Queued == 1
	})
	srv.setLimit(10) // the new server has room
	h.p.Reset()
	r := h.result(fifth) // a new object: none of the 4 is given back
	if r.err != nil {
		t.Fatalf("the fifth Take = %v; want a new object after the Reset", r.err)
	}
	if s := h.p.Stats(); s.EffectiveMaxObjects != 10 || s.NextCreateAttempt.After(h.clk.Now()) {
		t.Errorf("after Reset: effective max %d, next attempt %v; want 10, no hold", s.EffectiveMaxObjects, s.NextCreateAttempt)
	}
	h.giveBack(r.h)
	for _, hd := range held {
		h.giveBack(hd)
	}
}
