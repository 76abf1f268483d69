package pool

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestCloseReleasesWaitersAndDestroysObjectsAsTheyComeBack(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1})
	a := h.take()
	w := h.waiting(context.Background(), 1)
	if h.p.Stats().Closed {
		t.Fatal("Stats.Closed before Close")
	}

	closed := make(chan error, 1)
	go func() { closed <- h.p.Close(context.Background()) }()
	if r := <-w; !errors.Is(r.err, ErrClosed) {
		t.Fatalf("waiter got %v, want ErrClosed", r.err)
	}
	if !h.p.Stats().Closed {
		t.Fatal("Stats.Closed false once Close has released the waiters")
	}
	if _, err := h.p.Take(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Take after Close = %v, want ErrClosed", err)
	}
	if _, err := h.p.TryTake(); !errors.Is(err, ErrClosed) {
		t.Fatalf("TryTake after Close = %v, want ErrClosed", err)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v while an object was still out", err)
	default:
	}
	h.giveBack(a) // destroyed on its way back
	if err := <-closed; err != nil {
		t.Fatalf("Close = %v", err)
	}
	if s := h.p.Stats(); s.Total != 0 || s.Destroys.Closed != 1 || h.f.live.Load() != 0 {
		t.Fatalf("after Close: stats %+v, live %d; want everything destroyed", s, h.f.live.Load())
	}
}

func TestCloseDestroysIdleObjectsAtOnce(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2})
	a, b := h.take(), h.take()
	h.giveBack(b)
	closed := make(chan error, 1)
	go func() { closed <- h.p.Close(context.Background()) }()
	h.ev.wait(t, "destroyed", 1)
	if got := h.f.live.Load(); got != 1 {
		t.Fatalf("live = %d after Close, want only the object still out", got)
	}
	h.giveBack(a)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

func TestCloseReturnsContextErrorWhileObjectsAreOut(t *testing.T) {
	f := &fakeFactory{}
	p, err := New[*fakeObj](factoryOf[*fakeObj](f), Config{MaxObjects: 1, Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = p.Close(ctx)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "1 object still alive (1 in use)") {
		t.Fatalf("Close = %v, want context.Canceled naming 1 object in use", err)
	}
	if err := a.GiveBack(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if f.live.Load() != 0 {
		t.Fatal("object alive after Close")
	}
}

func TestCloseCancelsCreationsInFlight(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1})
	h.f.set(func(f *fakeFactory) { f.gate = make(chan struct{}) }) // never opens
	w := h.waiting(context.Background(), 1)
	if err := h.p.Close(context.Background()); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if r := <-w; !errors.Is(r.err, ErrClosed) {
		t.Fatalf("waiter = %v, want ErrClosed", r.err)
	}
}

func TestCloseReleasesEveryWaiter(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, MaxQueueSize: 10})
	a := h.take()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var waiters []chan takeResult
	for i := range 6 {
		wctx := context.Background() // waits on queue alone
		if i%2 == 1 {
			wctx = ctx // waits in a select
		}
		waiters = append(waiters, h.waiting(wctx, i+1))
	}
	closed := make(chan error, 1)
	go func() { closed <- h.p.Close(context.Background()) }()
	for i, w := range waiters {
		if r := <-w; !errors.Is(r.err, ErrClosed) {
			t.Fatalf("waiter %d got %v, want ErrClosed", i, r.err)
		}
	}
	h.giveBack(a)
	if err := <-closed; err != nil {
		t.Fatalf("Close = %v", err)
	}
}

// After StartClose, which returns at once, objects given back are destroyed,
// a lost Handle is still found and its object destroyed, and the actor ends
// once the last object is gone, leaving no goroutine behind.
func TestStartCloseEndsAsObjectsComeBackOrAreFoundLost(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	f := &fakeFactory{}
	p, err := New[*fakeObj](factoryOf[*fakeObj](f), Config{MaxObjects: 3, Clock: newFakeClock(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	loseAHandle(p)
	c, err := p.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.GiveBack(); err != nil { // idle
		t.Fatal(err)
	}
	p.StartClose()
	if _, err := p.Take(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Take after StartClose = %v", err)
	}
	waitUntil(t, "the idle object is destroyed", func() bool { return p.Stats().Destroys.Closed == 1 })
	if err := a.GiveBack(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the object given back is destroyed", func() bool { return p.Stats().Destroys.Closed == 2 })
	done := func() bool {
		select {
		case <-p.done:
			return true
		default:
			return false
		}
	}
	if done() {
		t.Fatal("the pool finished closing with a lost object still out")
	}
	waitUntil(t, "the lost Handle is found and the pool done", func() bool {
		runtime.GC()
		return done()
	})
	if s := p.Stats(); s.LeaksDetected != 1 || s.Destroys.Leaked != 1 || s.Total != 0 || f.live.Load() != 0 {
		t.Fatalf("stats = %+v, live %d; want the lost object destroyed and nothing left", s, f.live.Load())
	}
	goleak.VerifyNone(t, ignore)
}
