package pool

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/clock/clocktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeObj is what fakeFactory makes.
type fakeObj struct {
	id     int64
	broken atomic.Bool  // Validate fails
	held   atomic.Int32 // callers holding it; the stress test checks it stays <= 1
}

// fakeFactory counts live objects and lets tests gate and fail creations.
type fakeFactory struct {
	nextID   atomic.Int64
	live     atomic.Int64
	maxLive  atomic.Int64
	attempts atomic.Int64 // calls of Create

	mu         sync.Mutex
	createErr  error                     // returned by Create when set
	gate       chan struct{}             // when set, Create waits for it (or ctx)
	createSeen func(ctx context.Context) // when set, Create calls it with its ctx first
	testFn     func(*fakeObj) error      // Test's verdict; nil passes
	testGate   chan struct{}             // when set, Test waits for it (or ctx)
	deafToCtx  bool                      // the gates ignore ctx, as a badly written factory would
	destroyed  []int64                   // ids, in order
}

// await waits for gate, and for ctx unless the factory is deaf to it.
func (f *fakeFactory) await(ctx context.Context, gate chan struct{}) error {
	f.mu.Lock()
	deaf := f.deafToCtx
	f.mu.Unlock()
	if deaf {
		<-gate
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeFactory) Create(ctx context.Context) (*fakeObj, error) {
	f.attempts.Add(1)
	f.mu.Lock()
	gate, err, seen := f.gate, f.createErr, f.createSeen
	f.mu.Unlock()
	if seen != nil {
		seen(ctx)
	}
	if gate != nil {
		if err := f.await(ctx, gate); err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	n := f.live.Add(1)
	for m := f.maxLive.Load(); n > m && !f.maxLive.CompareAndSwap(m, n); m = f.maxLive.Load() {
	}
	return &fakeObj{id: f.nextID.Add(1)}, nil
}

func (f *fakeFactory) Validate(o *fakeObj) error {
	if o.broken.Load() {
		return errors.New("broken")
	}
	return nil
}

func (f *fakeFactory) Test(ctx context.Context, o *fakeObj) error {
	f.mu.Lock()
	fn, gate := f.testFn, f.testGate
	f.mu.Unlock()
	if gate != nil {
		if err := f.await(ctx, gate); err != nil {
			return err
		}
	}
	if fn != nil {
		return fn(o)
	}
	return nil
}

func (f *fakeFactory) Destroy(o *fakeObj) error {
	f.live.Add(-1)
	f.mu.Lock()
	f.destroyed = append(f.destroyed, o.id)
	f.mu.Unlock()
	return nil
}

// factoryOf is the Factory of m's methods: a fake factory of these tests.
func factoryOf[T any](m interface {
	Create(ctx context.Context) (T, error)
	Validate(obj T) error
	Test(ctx context.Context, obj T) error
	Destroy(obj T) error
}) Factory[T] {
	return Factory[T]{Create: m.Create, Validate: m.Validate, Test: m.Test, Destroy: m.Destroy}
}

func (f *fakeFactory) set(fn func(f *fakeFactory)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// fakeClock is a clocktest.Clock whose ticker the test drives: Advance
// (clocktest's) moves time and fires the timers due, without a tick; Tick
// moves it and delivers one tick, whatever the interval, and returns once
// the actor has received it (its ticker channel is unbuffered).
type fakeClock struct {
	*clocktest.Clock
	tick chan time.Time
	late atomic.Int64 // see moveLate
}

func newFakeClock() *fakeClock {
	return &fakeClock{Clock: clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), tick: make(chan time.Time)}
}

func (c *fakeClock) NewTicker(time.Duration) clock.Ticker { return fakeTicker{c.tick} }

// Now is clocktest's time, moved on by moveLate.
func (c *fakeClock) Now() time.Time { return c.Clock.Now().Add(time.Duration(c.late.Load())) }

func (c *fakeClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// moveLate moves time on by d without firing the timers due, as timers
// whose goroutines have not run yet; fireLate fires them.
func (c *fakeClock) moveLate(d time.Duration) { c.late.Add(int64(d)) }

// fireLate fires the timers that moveLate left due.
func (c *fakeClock) fireLate() { c.Clock.Advance(time.Duration(c.late.Swap(0))) }

// Tick moves time on by d (see Advance) and delivers one tick to the actor.
func (c *fakeClock) Tick(t *testing.T, d time.Duration) {
	t.Helper()
	c.Advance(d)
	select {
	case c.tick <- c.Now():
	case <-time.After(5 * time.Second):
		t.Fatal("actor did not take the tick")
	}
}

// waitTimers waits until n timers are pending: a wait has started.
func (c *fakeClock) waitTimers(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.WaitTimers(ctx, n); err != nil {
		t.Fatalf("waiting for %d timers: %v", n, err)
	}
}

type fakeTicker struct{ c chan time.Time }

func (t fakeTicker) C() <-chan time.Time { return t.c }
func (fakeTicker) Stop()                 {}

// events records what the actor handled, for tests to wait on.
type events struct{ ch chan string }

func newEvents() *events { return &events{ch: make(chan string, 1<<16)} }

func (e *events) hook(ev string) { e.ch <- ev }

// wait blocks until the actor has handled n more events named ev.
func (e *events) wait(t *testing.T, ev string, n int) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for n > 0 {
		select {
		case got := <-e.ch:
			if got == ev {
				n--
			}
		case <-timeout:
			t.Fatalf("timed out waiting for %d more %q events", n, ev)
		}
	}
}

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// harness is a pool on a fake factory and clock.
type harness struct {
	t   *testing.T
	f   *fakeFactory
	clk *fakeClock
	ev  *events
	log *logBuffer
	p   *Pool[*fakeObj]
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	return newHarnessOf(t, cfg, func(f *fakeFactory) Factory[*fakeObj] { return factoryOf[*fakeObj](f) })
}

// newHarnessOf is newHarness with the factory that of makes of the fake one.
// When the test ends it closes the pool and waits until every object is
// destroyed (an object a bounded call gave up on is destroyed when that call
// returns).
func newHarnessOf(t *testing.T, cfg Config, of func(*fakeFactory) Factory[*fakeObj]) *harness {
	t.Helper()
	h := &harness{t: t, f: &fakeFactory{}, clk: newFakeClock(), ev: newEvents(), log: &logBuffer{}}
	cfg.Clock = h.clk
	if cfg.Logger == nil { // else the test reads its own
		cfg.Logger = slog.New(slog.NewTextHandler(h.log, nil))
	}
	p, err := newPool[*fakeObj](of(h.f), cfg, h.ev.hook)
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		waitUntil(t, "every object is destroyed after Close", func() bool { return h.f.live.Load() == 0 })
	})
	return h
}

func (h *harness) take() Handle[*fakeObj] {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hd, err := h.p.Take(ctx)
	if err != nil {
		h.t.Fatalf("Take: %v", err)
	}
	return hd
}

func (h *harness) giveBack(hd Handle[*fakeObj]) {
	h.t.Helper()
	if err := hd.GiveBack(); err != nil {
		h.t.Fatalf("GiveBack: %v", err)
	}
}

// waitUntil waits, yielding, until cond holds: for conditions that no event
// announces, such as a goroutine having entered its wait. It fails after 5 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		runtime.Gosched()
	}
}

// blockedInTake reports whether at least n goroutines are parked in takeSlow's
// wait (a select, or a receive on queue alone), that is, queued on the idle
// channel.
func blockedInTake(n int) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if (strings.Contains(g, "[select") || strings.Contains(g, "[chan receive")) && strings.Contains(g, ").takeSlow(") {
			count++
		}
	}
	return count >= n
}

// heldBack waits until a failure has held creations back.
func (h *harness) heldBack() {
	h.t.Helper()
	waitUntil(h.t, "creations are held back", func() bool { return h.p.Stats().NextCreateAttempt.After(h.clk.Now()) })
}

// afterBackoff moves the clock past the backoff that a failed creation
// started, once the gate's timer is set, and waits until the actor has
// opened the gate.
func (h *harness) afterBackoff() {
	h.t.Helper()
	h.heldBack()
	h.clk.Advance(h.p.cfg.BackoffMax)
	h.ev.wait(h.t, "retry", 1)
}

// deadlineCtx is a context with a deadline on the fake clock that never
// ends by itself: the pool reads the deadline for its decisions, and the
// test decides when (if ever) the wait ends.
type deadlineCtx struct {
	context.Context
	dl time.Time
}

func (c deadlineCtx) Deadline() (time.Time, bool) { return c.dl, true }

// withDeadline returns a context whose deadline is d from the fake clock's
// now.
func (h *harness) withDeadline(d time.Duration) context.Context {
	return deadlineCtx{Context: context.Background(), dl: h.clk.Now().Add(d)}
}

// takeAsync starts a Take with ctx and returns where its result arrives.
func (h *harness) takeAsync(ctx context.Context) chan takeResult {
	ch := make(chan takeResult, 1)
	go func() {
		hd, err := h.p.Take(ctx)
		ch <- takeResult{hd, err}
	}()
	return ch
}

// result waits for a Take's result.
func (h *harness) result(ch chan takeResult) takeResult {
	h.t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		h.t.Fatalf("Take did not return; stats %+v", h.p.Stats())
		return takeResult{}
	}
}

// pending reports whether ch has no result yet.
func pending(ch chan takeResult) bool { return len(ch) == 0 }
