package pool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// newHookedHarness is a harness whose factory is the fake one with the hooks
// of hooks.
func newHookedHarness(t *testing.T, cfg Config, hooks Factory[*fakeObj]) *harness {
	t.Helper()
	return newHarnessOf(t, cfg, func(f *fakeFactory) Factory[*fakeObj] {
		ff := factoryOf[*fakeObj](f)
		ff.AfterCreate, ff.BeforeHandOut, ff.AfterGiveBack = hooks.AfterCreate, hooks.BeforeHandOut, hooks.AfterGiveBack
		return ff
	})
}

func TestAfterCreatePreparesEachNewObjectAndFailsTheCreation(t *testing.T) {
	var calls atomic.Int32
	fail := errors.New("SET search_path failed")
	var failNext atomic.Bool
	h := newHookedHarness(t, Config{MaxObjects: 1}, Factory[*fakeObj]{
		AfterCreate: func(ctx context.Context, o *fakeObj) error {
			calls.Add(1)
			if ctx.Value(ctxKey{}) != "caller" {
				return errors.New("AfterCreate lacks the caller's values")
			}
			if failNext.Load() {
				return fail
			}
			return nil
		},
	})
	ctx := context.WithValue(context.Background(), ctxKey{}, "caller")
	a, err := h.p.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.giveBack(a)
	h.giveBack(h.take()) // reused: no second AfterCreate
	if n := calls.Load(); n != 1 {
		t.Fatalf("AfterCreate ran %d times for one object", n)
	}
	if err := h.take().Discard(); err != nil {
		t.Fatal(err)
	}
	failNext.Store(true)
	_, err = h.p.Take(ctx)
	var ce *CreateError
	if !errors.As(err, &ce) || !errors.Is(err, fail) {
		t.Fatalf("Take = %v, want a *CreateError with the hook's error", err)
	}
	waitUntil(t, "the refused object is destroyed", func() bool { return h.f.live.Load() == 0 })
	if s := h.p.Stats(); s.CreateFailures != 1 || s.Total != 0 || s.Destroys.Rejected != 1 {
		t.Fatalf("stats = %+v, want 1 create failure, its object destroyed as rejected, the slot free", s)
	}
}

func TestBeforeHandOutRejectsAnIdleObjectAndTakeLooksAgain(t *testing.T) {
	var bad atomic.Pointer[fakeObj]
	var calls atomic.Int32
	h := newHookedHarness(t, Config{MaxObjects: 2, TestTimeout: time.Minute}, Factory[*fakeObj]{
		BeforeHandOut: func(ctx context.Context, o *fakeObj) error {
			calls.Add(1)
			if ctx.Value(ctxKey{}) != "caller" {
				return errors.New("BeforeHandOut lacks the caller's context")
			}
			if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > time.Minute {
				return errors.New("BeforeHandOut is not bounded by TestTimeout")
			}
			if bad.CompareAndSwap(nil, o) { // the first object checked is dead
				return errors.New("connection reset by peer")
			}
			return nil
		},
	})
	ctx := context.WithValue(context.Background(), ctxKey{}, "caller")
	a, b := h.take(), h.take() // created for these Takes: no hook
	if n := calls.Load(); n != 0 {
		t.Fatalf("BeforeHandOut ran %d times for new objects", n)
	}
	h.giveBack(a)
	h.giveBack(b)
	c, err := h.p.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Value() == bad.Load() || calls.Load() != 2 {
		t.Fatalf("Take handed out %v after %d checks; want another than the rejected %v, after 2", c.Value(), calls.Load(), bad.Load())
	}
	h.giveBack(c)
	waitUntil(t, "the rejected object is destroyed", func() bool { return h.p.Stats().Destroys.Rejected == 1 })
}

func TestAfterGiveBackRunsInTheBackgroundAndMayDiscard(t *testing.T) {
	gate := make(chan struct{})
	var verdict atomic.Pointer[error]
	h := newHookedHarness(t, Config{MaxObjects: 1, TestTimeout: time.Minute}, Factory[*fakeObj]{
		AfterGiveBack: func(ctx context.Context, o *fakeObj) error {
			<-gate
			if e := verdict.Load(); e != nil {
				return *e
			}
			return nil
		},
	})
	a := h.take()
	h.giveBack(a) // returns while the hook waits
	if s := h.p.Stats(); s.Testing != 1 || s.Idle != 0 {
		t.Fatalf("stats = %+v, want the object under its give-back hook", s)
	}
	gate <- struct{}{}
	waitUntil(t, "the object is idle again", func() bool { return h.p.Stats().Idle == 1 })
	boom := errors.New("DISCARD ALL failed")
	verdict.Store(&boom)
	b := h.take()
	h.giveBack(b)
	gate <- struct{}{}
	waitUntil(t, "the object is discarded", func() bool {
		s := h.p.Stats()
		return s.Destroys.Rejected == 1 && s.Total == 0
	})
	close(gate)
}

// An AfterGiveBack hook past TestTimeout is given up on, but its object is
// alive until the hook returns: its slot stays taken until then, and is
// freed once the object is destroyed.
func TestAfterGiveBackPastTestTimeoutKeepsTheSlotUntilItReturns(t *testing.T) {
	gate := make(chan struct{})
	h := newHookedHarness(t, Config{MaxObjects: 1, TestTimeout: 10 * time.Millisecond}, Factory[*fakeObj]{
		AfterGiveBack: func(context.Context, *fakeObj) error { <-gate; return nil }, // deaf to ctx
	})
	h.giveBack(h.take())
	h.ev.wait(t, "abandoned", 1) // given up on
	if s := h.p.Stats(); s.Total != 1 || s.Testing != 1 {
		t.Fatalf("stats %+v; want the object under the hook counted (Total 1, Testing 1)", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	next := h.takeAsync(ctx)
	waitUntil(t, "the next caller waits or is served", func() bool { return !pending(next) || blockedInTake(1) })
	if !pending(next) {
		t.Fatal("a new object was made while the hook's object was alive: MaxObjects 1")
	}
	close(gate)
	r := h.result(next)
	if r.err != nil {
		t.Fatalf("next Take = %v", r.err)
	}
	if s := h.p.Stats(); s.Destroys.Rejected != 1 || h.f.maxLive.Load() != 1 {
		t.Fatalf("stats %+v, %d alive at once; want the hook's object destroyed, 1 alive at once", s, h.f.maxLive.Load())
	}
	h.giveBack(r.h)
}

// A caller whose context cannot end (context.Background, or values on it)
// gets a BeforeHandOut bounded by TestTimeout without a timer of its own: a
// Take from idle with the hook allocates nothing more than one without it.
// The bound still ends with Close.
func TestBeforeHandOutBoundAllocatesNothingForAContextThatCannotEnd(t *testing.T) {
	var mu sync.Mutex
	var last context.Context // guarded by mu
	lastCtx := func() context.Context {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
	h := newHookedHarness(t, Config{MaxObjects: 1, TestTimeout: time.Minute}, Factory[*fakeObj]{
		BeforeHandOut: func(ctx context.Context, _ *fakeObj) error {
			mu.Lock()
			last = ctx
			mu.Unlock()
			return nil
		},
	})
	h.giveBack(h.take())
	for _, tc := range []struct {
		name string
		ctx  context.Context
	}{
		{"Background", context.Background()},
		{"values", context.WithValue(context.Background(), ctxKey{}, "caller")},
	} {
		allocs := testing.AllocsPerRun(100, func() {
			o, err := h.p.Take(tc.ctx)
			if err != nil {
				t.Fatal(err)
			}
			h.giveBack(o)
		})
		// The leak token is the one allocation of a take (leak tracking
		// is on); a context that carries values costs one more, the
		// value wrapper.
		want := 1.0
		if tc.name == "values" {
			want = 2
		}
		if allocs > want {
			t.Errorf("%s: a take with BeforeHandOut allocates %v times; want at most %v", tc.name, allocs, want)
		}
		ctx := lastCtx()
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > time.Minute {
			t.Errorf("%s: BeforeHandOut's deadline %v, %v; want within TestTimeout", tc.name, dl, ok)
		}
		if tc.name == "values" && ctx.Value(ctxKey{}) != "caller" {
			t.Errorf("%s: BeforeHandOut's context lost the caller's value", tc.name)
		}
	}
	ctx := lastCtx()
	h.p.StartClose()
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("the shared bound did not end with Close")
	}
}

// When BeforeHandOut rejects every idle object (a server that ended every
// idle session), one Take goes through them all and then makes one object:
// it does not ask for creations while idle objects are still to be checked.
// The caller is slowed after each rejection until the rejected object is
// destroyed and its slot free (as a check that goes to the network gives it
// time to be), and creations wait until every object has been checked.
func TestBeforeHandOutRejectingEveryIdleObjectMakesOneNew(t *testing.T) {
	const n = 3
	var rejectAll atomic.Bool
	var rejected atomic.Int64
	gate := make(chan struct{})
	h := newHookedHarness(t, Config{MaxObjects: n}, Factory[*fakeObj]{
		BeforeHandOut: func(context.Context, *fakeObj) error {
			if !rejectAll.Load() {
				return nil
			}
			if rejected.Add(1) == n {
				close(gate)
			}
			return errors.New("terminating connection due to administrator command")
		},
	})
	var held []Handle[*fakeObj]
	for range n {
		held = append(held, h.take())
	}
	for _, o := range held {
		h.giveBack(o)
	}
	h.f.set(func(f *fakeFactory) { f.gate = gate })
	rejectAll.Store(true)
	// The pool reads ctx.Err after a rejection: wait there until the pool
	// has taken the rejected objects off its count.
	ctx := errHookCtx{Context: context.Background(), onErr: func() {
		waitUntil(t, "the rejected objects are off the count", func() bool {
			s := h.p.Stats()
			return s.Total-s.Creating <= n-int(rejected.Load())
		})
	}}
	o, err := h.p.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.giveBack(o)
	waitUntil(t, "the rejected objects are destroyed", func() bool {
		s := h.p.Stats()
		return s.Destroys.Rejected == n && s.Creating == 0 && s.Total == s.Idle
	})
	if s := h.p.Stats(); s.Creates != n+1 || s.Total != 1 {
		t.Fatalf("stats = %+v; want %d creations (one after the %d rejections) and 1 object", s, n+1, n)
	}
}

// errHookCtx is a context that cannot end whose Err calls onErr first.
type errHookCtx struct {
	context.Context
	onErr func()
}

func (c errHookCtx) Err() error {
	c.onErr()
	return nil
}
