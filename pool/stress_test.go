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
// returns; after Close, nothing is alive.
func TestStressInvariants(t *testing.T) {
	const (
		maxObjects = 4
		workers    = 16
		ops        = 2000
	)
	f := &fakeFactory{}
	var createCalls atomic.Int64
	f.testFn = func(o *fakeObj) error {
		if o.id%7 == 0 {
			return errors.New("test failed")
		}
		return nil
	}
	cf := &failingFactory{fakeFactory: f, calls: &createCalls}
	p, err := New[*fakeObj](cf, Config{
		MaxObjects:           maxObjects,
		MinIdle:              1,
		MaxQueueSize:         12,
		MaxConcurrentCreates: 2,
		AcquireTimeout:       1500 * time.Microsecond, // some waits end by the pool's bound, some by ctx
		ValidationInterval:   time.Millisecond,        // real ticks: tests run concurrently with everything
		MaxLifetime:          5 * time.Millisecond,
		TestTimeout:          time.Second,
		Logger:               slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	var closeOnce sync.Once
	closed := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range ops {
				if w == 0 && i == ops/2 {
					closeOnce.Do(func() { close(closed) })
				}
				stressStep(t, p, rng)
				if live := f.live.Load(); live > maxObjects {
					t.Errorf("%d objects alive, MaxObjects %d", live, maxObjects)
					return
				}
			}
		}()
	}
	<-closed
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	closeErr := make(chan error, 1)
	go func() { closeErr <- p.Close(ctx) }()

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
	if m := f.maxLive.Load(); m > maxObjects {
		t.Fatalf("%d objects were alive at once, MaxObjects %d", m, maxObjects)
	}
	s := p.Stats()
	t.Logf("takes %d, waits %d, queue full %d, cancelled %d, acquire timeouts %d, creates %d, create failures %d, destroys %v",
		s.Takes, s.Waits, s.QueueFull, s.CancelledWaits, s.AcquireTimeouts, s.Creates, s.CreateFailures, s.Destroys)
}

func stressStep(t *testing.T, p *Pool[*fakeObj], rng *rand.Rand) {
	var h Handle[*fakeObj]
	var err error
	if rng.IntN(5) == 0 {
		h, err = p.TryTake()
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(2000))*time.Microsecond)
		if rng.IntN(10) == 0 {
			cancel() // already cancelled
		}
		h, err = p.Take(ctx)
		cancel()
	}
	if err != nil {
		var ce *CreateError
		switch {
		case errors.Is(err, ErrClosed), errors.Is(err, ErrQueueFull), errors.Is(err, ErrNoIdleObject), errors.Is(err, ErrAcquireTimeout),
			errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.As(err, &ce):
		default:
			t.Errorf("Take: unexpected error %v", err)
		}
		return
	}
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
	if rng.IntN(10) == 0 {
		err = p.Discard(h)
	} else {
		err = p.GiveBack(h)
	}
	if err != nil {
		t.Errorf("give back: %v", err)
	}
	if err := p.GiveBack(h); !errors.Is(err, ErrAlreadyReturned) {
		t.Errorf("second give back = %v, want ErrAlreadyReturned", err)
	}
}

// failingFactory fails every fifth creation.
type failingFactory struct {
	*fakeFactory
	calls *atomic.Int64
}

func (f *failingFactory) Create(ctx context.Context) (*fakeObj, error) {
	if f.calls.Add(1)%5 == 0 {
		return nil, errors.New("create failed")
	}
	return f.fakeFactory.Create(ctx)
}
