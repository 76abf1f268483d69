package pool

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestAcquireTimeoutBoundsTheWaitForAGiveBack(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, AcquireTimeout: 2 * time.Second})
	a := h.take()
	w := h.waiting(context.Background(), 1)
	h.clk.waitTimers(t, 1) // the wait's timer
	h.clk.Advance(time.Second)
	select {
	case r := <-w:
		t.Fatalf("Take returned %v after 1s of a 2s AcquireTimeout", r.err)
	default:
	}
	h.clk.Advance(time.Second)
	r := <-w
	if !errors.Is(r.err, ErrAcquireTimeout) || errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("Take = %v, want ErrAcquireTimeout (and not the context's error)", r.err)
	}
	var ae *acquireTimeoutError
	if !errors.As(r.err, &ae) || ae.Bound != 2*time.Second || !strings.Contains(r.err.Error(), "AcquireTimeout 2s") {
		t.Fatalf("error = %v, want an *acquireTimeoutError naming the 2s bound", r.err)
	}
	if s := h.p.Stats(); s.AcquireTimeouts != 1 || s.Waiting != 0 || s.Queued != 0 {
		t.Fatalf("stats = %+v, want 1 acquire timeout and nobody waiting", s)
	}
	h.giveBack(a)
}

func TestAcquireTimeoutBoundsTheWaitForACreation(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, AcquireTimeout: time.Second})
	gate := make(chan struct{})
	h.f.set(func(f *fakeFactory) { f.gate = gate })
	w := h.waiting(context.Background(), 1)
	h.clk.waitTimers(t, 1) // the wait's timer
	h.clk.Advance(time.Second)
	if r := <-w; !errors.Is(r.err, ErrAcquireTimeout) {
		t.Fatalf("Take = %v, want ErrAcquireTimeout", r.err)
	}
	close(gate) // the creation outlives the caller; its object serves the next one
	h.ev.wait(t, "created", 1)
	h.giveBack(h.take())
	if s := h.p.Stats(); s.Creates != 1 {
		t.Fatalf("creates = %d, want 1", s.Creates)
	}
}

// The caller's context keeps its own error: a cancelled or expired ctx is
// reported as such, not as the pool's bound.
func TestAcquireTimeoutLeavesTheContextsErrorAlone(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, AcquireTimeout: time.Hour})
	a := h.take()
	ctx, cancel := context.WithCancel(context.Background())
	w := h.waiting(ctx, 1)
	cancel()
	if r := <-w; !errors.Is(r.err, context.Canceled) || errors.Is(r.err, ErrAcquireTimeout) {
		t.Fatalf("Take = %v, want context.Canceled only", r.err)
	}
	if next, ok := h.clk.Next(); ok {
		t.Fatalf("a timer due at %v left running", next)
	}
	h.giveBack(a)
}
