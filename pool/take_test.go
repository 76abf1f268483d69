package pool

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTakeCreatesThenReusesIdle(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2})
	a := h.take()
	h.giveBack(a)
	b := h.take()
	if b.Value() != a.Value() {
		t.Fatalf("Take created object %d although %d was idle", b.Value().id, a.Value().id)
	}
	h.giveBack(b)
	if s := h.p.Stats(); s.Creates != 1 || s.Takes != 2 || s.Idle != 1 || s.Total != 1 {
		t.Fatalf("stats = %+v, want 1 create, 2 takes, 1 idle, 1 total", s)
	}
}

func TestTakeSkipsIdleObjectFailingValidate(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2})
	a := h.take()
	h.giveBack(a)
	a.Value().broken.Store(true)
	b := h.take()
	if b.Value() == a.Value() {
		t.Fatal("Take handed out an object that fails Validate")
	}
	h.ev.wait(t, "destroyed", 1)
	if s := h.p.Stats(); s.Destroys.Invalid != 1 {
		t.Fatalf("invalid destroys = %d, want 1", s.Destroys.Invalid)
	}
	h.giveBack(b)
}

func TestTakeNeverExceedsMaxObjects(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 3, MaxQueueSize: 10})
	var held []Handle[*fakeObj]
	for range 3 {
		held = append(held, h.take())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := h.p.Take(ctx)
		done <- err
	}()
	waitUntil(t, "the fourth Take waits", func() bool { return h.p.Stats().Waiting == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Take = %v, want context.Canceled", err)
	}
	if n := h.f.maxLive.Load(); n != 3 {
		t.Fatalf("max live objects = %d, want 3", n)
	}
	for _, hd := range held {
		h.giveBack(hd)
	}
}

// waiting starts a Take in a goroutine and returns once it is blocked.
func (h *harness) waiting(ctx context.Context, n int) chan takeResult {
	h.t.Helper()
	ch := make(chan takeResult, 1)
	go func() {
		hd, err := h.p.Take(ctx)
		ch <- takeResult{hd, err}
	}()
	waitUntil(h.t, "a Take waits", func() bool { return h.p.Stats().Waiting == n && blockedInTake(n) })
	return ch
}

type takeResult struct {
	h   Handle[*fakeObj]
	err error
}

func TestWaitersServedInFIFOOrder(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, MaxQueueSize: 10})
	a := h.take()
	var waiters []chan takeResult
	for i := range 4 {
		waiters = append(waiters, h.waiting(context.Background(), i+1))
	}
	cur := a
	for i, w := range waiters {
		h.giveBack(cur)
		r := <-w
		if r.err != nil {
			t.Fatalf("waiter %d: %v", i, r.err)
		}
		for j := i + 1; j < len(waiters); j++ {
			select {
			case <-waiters[j]:
				t.Fatalf("waiter %d served before waiter %d", j, i)
			default:
			}
		}
		cur = r.h
	}
	h.giveBack(cur)
}

func TestQueueFullFailsAtOnceWithLimits(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, MaxQueueSize: 2})
	a := h.take()
	ctx, cancel := context.WithCancel(context.Background())
	w1 := h.waiting(ctx, 1)
	w2 := h.waiting(ctx, 2)
	_, err := h.p.Take(context.Background())
	if !errors.Is(err, ErrQueueFull) {
		t.Fatalf("Take = %v, want ErrQueueFull", err)
	}
	var qf *queueFullError
	if !errors.As(err, &qf) || qf.Waiting != 2 || qf.MaxQueueSize != 2 || qf.MaxObjects != 1 {
		t.Fatalf("error = %#v, want Waiting 2, MaxQueueSize 2, MaxObjects 1", qf)
	}
	for _, want := range []string{"2 callers already waiting", "MaxQueueSize 2", "MaxObjects 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not say %q", err, want)
		}
	}
	cancel()
	<-w1
	<-w2
	if s := h.p.Stats(); s.QueueFull != 1 || s.CancelledWaits != 2 || s.Waiting != 0 {
		t.Fatalf("stats = %+v, want 1 queue-full, 2 cancelled, 0 waiting", s)
	}
	h.giveBack(a)
}

func TestCancelledWaiterLosesNoObject(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1})
	a := h.take()
	ctx, cancel := context.WithCancel(context.Background())
	w := h.waiting(ctx, 1)
	cancel()
	if r := <-w; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled Take = %v", r.err)
	}
	h.giveBack(a)
	b := h.take()
	if b.Value() != a.Value() {
		t.Fatal("the object given back after the cancelled wait was lost")
	}
	h.giveBack(b)
}

func TestCreationOutlivesTheCallerWhoAsked(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1})
	gate := make(chan struct{})
	h.f.set(func(f *fakeFactory) { f.gate = gate })
	ctx, cancel := context.WithCancel(context.Background())
	w := h.waiting(ctx, 1)
	// The caller leaves only once its creation has begun (Waiting counts it
	// before the actor has seen its request).
	waitUntil(t, "the creation begins", func() bool { return h.f.attempts.Load() == 1 })
	cancel()
	if r := <-w; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Take = %v, want context.Canceled", r.err)
	}
	close(gate)
	h.ev.wait(t, "created", 1)
	if s := h.p.Stats(); s.Idle != 1 || s.Creates != 1 {
		t.Fatalf("stats = %+v, want the created object idle", s)
	}
	a := h.take()
	if s := h.p.Stats(); s.Creates != 1 {
		t.Fatalf("creates = %d, want 1: the next Take must get the object made for the caller who left", s.Creates)
	}
	h.giveBack(a)
}

func TestCreateFailureReachesTheWaitingCaller(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1})
	boom := errors.New("connection refused")
	h.f.set(func(f *fakeFactory) { f.createErr = boom })
	_, err := h.p.Take(context.Background())
	if !errors.Is(err, boom) {
		t.Fatalf("Take = %v, want the factory's error", err)
	}
	var ce *CreateError
	if !errors.As(err, &ce) {
		t.Fatalf("Take = %T, want *CreateError", err)
	}
	h.f.set(func(f *fakeFactory) { f.createErr = nil })
	h.afterBackoff()
	a := h.take() // the failed creation freed its slot
	h.giveBack(a)
	if s := h.p.Stats(); s.CreateFailures != 1 || s.Creates != 1 {
		t.Fatalf("stats = %+v, want 1 failure then 1 create", s)
	}
}

func TestCreateTimeoutBoundsCreation(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, CreateTimeout: 20 * time.Millisecond})
	h.f.set(func(f *fakeFactory) { f.gate = make(chan struct{}) }) // never opens
	_, err := h.p.Take(context.Background())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Take = %v, want the creation's deadline", err)
	}
}

// Callers without a deadline each get the failure of the next attempt made
// after they asked: a Take against a failing factory always ends.
func TestEveryWaiterOfAFailingFactoryGetsAnError(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2, MaxQueueSize: 50})
	h.f.set(func(f *fakeFactory) { f.createErr = errors.New("down") })
	errs := make(chan error, 20)
	for range 20 {
		go func() {
			_, err := h.p.Take(context.Background())
			errs <- err
		}()
	}
	for got := 0; got < 20; {
		select {
		case err := <-errs:
			if err == nil {
				t.Fatal("Take succeeded against a failing factory")
			}
			got++
			continue
		default:
		}
		// Those still waiting wait for the next attempt: let it come.
		waitUntil(t, "a failure arrives or creations are held back", func() bool {
			return len(errs) > 0 || h.p.Stats().NextCreateAttempt.After(h.clk.Now())
		})
		if len(errs) == 0 {
			h.clk.Advance(h.p.cfg.BackoffMax)
		}
	}
}

func TestTryTake(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1})
	if _, err := h.p.TryTake(); !errors.Is(err, ErrNoIdleObject) {
		t.Fatalf("TryTake on an empty pool = %v, want ErrNoIdleObject", err)
	}
	h.ev.wait(t, "created", 1) // the first TryTake asked for one
	a, err := h.p.TryTake()
	if err != nil {
		t.Fatalf("TryTake = %v", err)
	}
	if _, err := h.p.TryTake(); !errors.Is(err, ErrNoIdleObject) {
		t.Fatalf("TryTake on a full pool = %v", err)
	}
	h.giveBack(a)
}

func TestTakeHonoursAnEndedContext(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.p.Take(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Take on an empty pool = %v", err)
	}
	// The same with an idle object ready: an ended context fails alike.
	h.giveBack(h.take())
	if hd, err := h.p.Take(ctx); !errors.Is(err, context.Canceled) {
		if err == nil {
			h.giveBack(hd)
		}
		t.Fatalf("Take with an idle object = %v, want context.Canceled", err)
	}
	if s := h.p.Stats(); s.Idle != 1 || s.Takes != 1 {
		t.Fatalf("stats = %+v, want the idle object untouched", s)
	}
}

func TestEverySlotFreedUnderAFullPoolGoesToAWaiter(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2, MaxQueueSize: 10})
	a, b := h.take(), h.take()
	served := make(chan takeResult, 6)
	for i := range 6 {
		w := h.waiting(context.Background(), i+1)
		go func() { served <- <-w }()
	}
	next := func() Handle[*fakeObj] {
		t.Helper()
		select {
		case r := <-served:
			if r.err != nil {
				t.Fatalf("waiter: %v", r.err)
			}
			return r.h
		case <-time.After(5 * time.Second):
			t.Fatalf("no waiter served: stats %+v", h.p.Stats())
			return Handle[*fakeObj]{}
		}
	}
	for _, hd := range []Handle[*fakeObj]{a, b} {
		if err := hd.Discard(); err != nil {
			t.Fatal(err)
		}
	}
	// Each slot freed goes to a caller waiting for the full pool, which
	// gets a new object; then the others are served as objects come back.
	got := []Handle[*fakeObj]{next(), next()}
	for range 4 {
		h.giveBack(got[0])
		got = append(got[1:], next())
	}
	for _, hd := range got {
		h.giveBack(hd)
	}
	if s := h.p.Stats(); s.Creates != 4 || s.Total != 2 || s.Idle != 2 || s.Waiting != 0 {
		t.Fatalf("stats = %+v, want 4 creates, 2 idle", s)
	}
}
