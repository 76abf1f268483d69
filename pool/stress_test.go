package pool

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestStressInvariants runs many goroutines doing random takes, try-takes,
// give-backs, discards and cancellations against a small pool whose factory
// fails now and then, with ticks testing idle objects, then closes the pool
// while they run. After every step it checks what can be observed: never
// more than MaxObjects alive, no object held by two callers, every Take
// returns; after Close, nothing is alive. Each variant drives the pool
// through other states: creations backing off after failures, paused by
// errors carrying a retry time, held down by back-pressure, and each
// overload policy.
func TestStressInvariants(t *testing.T) {
	const maxObjects = 4
	const fastInitial, fastMax = 100 * time.Microsecond, 2 * time.Millisecond
	for _, v := range []struct {
		name   string
		cfg    Config
		failer func(call int64, live int64) error
	}{
		{"backoff", Config{BackoffInitial: fastInitial, BackoffMax: fastMax}, everyFifth},
		{"backoff-off", Config{BackoffDisabled: true}, everyFifth},
		{"retry-after", Config{BackoffInitial: fastInitial, BackoffMax: fastMax}, func(call, _ int64) error {
			if call%5 == 0 {
				return &retryAfterErr{at: time.Now().Add(500 * time.Microsecond)}
			}
			return nil
		}},
		{"back-pressure", Config{BackoffInitial: fastInitial, BackoffMax: fastMax, BackPressure: stressBackPressure}, func(call, live int64) error {
			if live >= maxObjects-1 || call%7 == 0 { // the server takes 3 at most
				return errServerFull
			}
			return nil
		}},
		{"codel", Config{BackoffInitial: fastInitial, BackoffMax: fastMax, Overload: OverloadCoDel, CoDelTarget: 200 * time.Microsecond, CoDelInterval: time.Millisecond}, everyFifth},
		{"fifo", Config{BackoffInitial: fastInitial, BackoffMax: fastMax, Overload: OverloadFIFO}, everyFifth},
	} {
		t.Run(v.name, func(t *testing.T) { stressInvariants(t, maxObjects, v.cfg, v.failer) })
	}
}

func everyFifth(call, _ int64) error {
	if call%5 == 0 {
		return errors.New("create failed")
	}
	return nil
}

var errServerFull = errors.New("server full")

func stressBackPressure(err error) (time.Duration, bool) {
	return time.Millisecond, errors.Is(err, errServerFull)
}

// retryAfterErr is an error carrying a retry time, as a breaker's
// rejection does.
type retryAfterErr struct{ at time.Time }

func (e *retryAfterErr) Error() string         { return "rejected until " + e.at.String() }
func (e *retryAfterErr) RetryAfter() time.Time { return e.at }

func stressInvariants(t *testing.T, maxObjects int, cfg Config, failer func(call, live int64) error) {
	f, cf := stressFactory(failer)
	cfg.MaxObjects = maxObjects
	cfg.MinIdle = 1
	cfg.MaxQueueSize = 12
	cfg.MaxConcurrentCreates = 2
	cfg.AcquireTimeout = 1500 * time.Microsecond // some waits end by the pool's bound, some by ctx
	cfg.ValidationInterval = time.Millisecond    // real ticks: tests run concurrently with everything
	cfg.MaxLifetime = 5 * time.Millisecond
	cfg.TestTimeout = time.Second
	cfg.Logger = slog.New(slog.DiscardHandler)
	p, err := New[*fakeObj](factoryOf[*fakeObj](cf), cfg)
	if err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	stressWorkers(&wg, 1, func(_, _ int, rng *rand.Rand) bool {
		stressStep(t, p, rng)
		if live := f.live.Load(); live > int64(maxObjects) {
			t.Errorf("%d objects alive, MaxObjects %d", live, maxObjects)
			return false
		}
		if s := p.Stats(); s.EffectiveMaxObjects < 0 || s.EffectiveMaxObjects > maxObjects || s.Total > maxObjects {
			t.Errorf("stats out of bounds: effective max %d, total %d, MaxObjects %d", s.EffectiveMaxObjects, s.Total, maxObjects)
			return false
		}
		return true
	})
	closeAfterStress(t, p.Close, &wg, f, maxObjects)
	s := p.Stats()
	t.Logf("takes %d, waits %d, queue full %d, cancelled %d, acquire timeouts %d, creates %d, create failures %d (failed fast %d, back-pressure %d), overloaded %d, destroys %v",
		s.Takes, s.Waits, s.QueueFull, s.CancelledWaits, s.AcquireTimeouts, s.Creates, s.CreateFailures, s.FailedFast, s.BackPressureEvents, s.Overloaded, s.Destroys)
}

// stressOps is the number of steps of each stress worker.
const stressOps = 2000

// stressWorkers starts 16 workers, counted in wg, that each call step
// (with its number w, the step's i and its own rng, seeded by w and seed)
// stressOps times or until step returns false. It returns, for the test to
// close what they work on, once worker 0 is halfway or a worker stopped
// early; the others run on.
func stressWorkers(wg *sync.WaitGroup, seed uint64, step func(w, i int, rng *rand.Rand) bool) {
	const workers = 16
	var closeOnce sync.Once
	closed := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer closeOnce.Do(func() { close(closed) }) // should the worker stop early
			rng := rand.New(rand.NewPCG(uint64(w), seed))
			for i := range stressOps {
				if w == 0 && i == stressOps/2 {
					closeOnce.Do(func() { close(closed) })
				}
				if !step(w, i, rng) {
					return
				}
			}
		}()
	}
	<-closed
}

// closeAfterStress closes a pool under stress with closeFn, and checks what
// every stress test wants at the end: every worker of wg returned, Close
// returned nil, no object of f is alive, and never more than budget were at
// once.
func closeAfterStress(t *testing.T, closeFn func(context.Context) error, wg *sync.WaitGroup, f *fakeFactory, budget int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	closeErr := make(chan error, 1)
	go func() { closeErr <- closeFn(ctx) }()

	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(20 * time.Second):
		t.Fatal("a Take never returned")
	}
	if err := <-closeErr; err != nil {
		t.Fatalf("Close = %v", err)
	}
	if live := f.live.Load(); live != 0 {
		t.Fatalf("%d objects alive after Close", live)
	}
	if m := f.maxLive.Load(); m > int64(budget) {
		t.Fatalf("%d objects were alive at once, budget %d", m, budget)
	}
}

// stressFactory returns a fake factory whose tests fail for every seventh
// object, and a failingFactory on it that fails the creations failer picks.
func stressFactory(failer func(call, live int64) error) (*fakeFactory, *failingFactory) {
	f := &fakeFactory{}
	f.testFn = func(o *fakeObj) error {
		if o.id%7 == 0 {
			return errors.New("test failed")
		}
		return nil
	}
	return f, &failingFactory{fakeFactory: f, fail: failer}
}

func stressStep(t *testing.T, p *Pool[*fakeObj], rng *rand.Rand) {
	if h, ok := stressTake(t, rng, p.Take, p.TryTake, nil); ok {
		holdAndReturn(t, rng, h)
	}
}

// stressTake takes with tryTake or, with a random bound (or a context
// already cancelled), with take, and reports whether it got an object. An
// error is one a stress test expects (or is also), or the test fails.
func stressTake(t *testing.T, rng *rand.Rand, take func(context.Context) (Handle[*fakeObj], error),
	tryTake func() (Handle[*fakeObj], error), also error) (Handle[*fakeObj], bool) {
	var h Handle[*fakeObj]
	var err error
	if rng.IntN(5) == 0 {
		h, err = tryTake()
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(2000))*time.Microsecond)
		if rng.IntN(10) == 0 {
			cancel() // already cancelled
		}
		h, err = take(ctx)
		cancel()
	}
	if err != nil {
		var ce *CreateError
		switch {
		case errors.Is(err, ErrClosed), errors.Is(err, ErrQueueFull), errors.Is(err, ErrNoIdleObject), errors.Is(err, ErrAcquireTimeout),
			errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.As(err, &ce), errors.Is(err, ErrOverloaded),
			also != nil && errors.Is(err, also):
		default:
			t.Errorf("Take: unexpected error %v", err)
		}
		return Handle[*fakeObj]{}, false
	}
	return h, true
}

// holdAndReturn holds h, taken in a stress test, a little (checking that
// nobody else holds its object), may break its object, and gives it back or
// discards it with giveBack and discard, checking that a second give-back
// is refused.
func holdAndReturn(t *testing.T, rng *rand.Rand, h Handle[*fakeObj]) {
	o := h.Value()
	if !o.held.CompareAndSwap(0, 1) {
		t.Errorf("object %d handed to two callers", o.id)
		return
	}
	for range rng.IntN(200) { // hold it a little
		_ = rng.Uint64()
	}
	if rng.IntN(20) == 0 {
		o.broken.Store(true)
	}
	o.held.Store(0)
	var err error
	if rng.IntN(10) == 0 {
		err = h.Discard()
	} else {
		err = h.GiveBack()
	}
	if err != nil {
		t.Errorf("give back: %v", err)
	}
	if err := h.GiveBack(); !errors.Is(err, ErrAlreadyReturned) {
		t.Errorf("second give back = %v, want ErrAlreadyReturned", err)
	}
}

// failingFactory fails the creations fail picks, by their number (from 1)
// and the objects alive.
type failingFactory struct {
	*fakeFactory
	calls atomic.Int64
	fail  func(call, live int64) error
}

func (f *failingFactory) Create(ctx context.Context) (*fakeObj, error) {
	if err := f.fail(f.calls.Add(1), f.live.Load()); err != nil {
		return nil, err
	}
	return f.fakeFactory.Create(ctx)
}
