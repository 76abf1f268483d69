package pool

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A Create that ignores its context cannot hold its caller, its slot or its
// late object past CreateTimeout.
func TestCreateTimeoutIsEnforcedOnACreateDeafToItsContext(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, CreateTimeout: 20 * time.Millisecond})
	gate := make(chan struct{})
	h.f.set(func(f *fakeFactory) { f.gate, f.deafToCtx = gate, true })
	_, err := h.p.Take(context.Background()) // returns while Create still runs
	var ce *CreateError
	if !errors.As(err, &ce) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Take = %v, want a *CreateError with the deadline", err)
	}
	waitUntil(t, "the slot is freed", func() bool { return h.p.Stats().Total == 0 })
	h.f.set(func(f *fakeFactory) { f.gate = nil })
	h.afterBackoff()
	a := h.take() // MaxObjects 1: only possible with the slot freed
	close(gate)   // the late object arrives...
	waitUntil(t, "the late object is destroyed", func() bool { return h.p.Stats().Destroyed(DestroyLate) == 1 })
	if n := h.f.live.Load(); n != 1 {
		t.Fatalf("%d objects alive, want only the one in use", n)
	}
	h.giveBack(a)
	b := h.take()
	if b.Value() != a.Value() {
		t.Fatal("the late object was used")
	}
	h.giveBack(b)
}

// A Test that ignores its context cannot hold its slot, or Close, past
// TestTimeout; its object is destroyed when it returns.
func TestTestTimeoutIsEnforcedOnATestDeafToItsContext(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, ValidationInterval: time.Second, TestTimeout: 10 * time.Millisecond})
	h.giveBack(h.take())
	gate := make(chan struct{})
	h.f.set(func(f *fakeFactory) { f.testGate, f.deafToCtx = gate, true })
	h.clk.Advance(t, time.Second)
	h.clk.Advance(t, time.Second) // idle through a whole interval: tested
	waitUntil(t, "the test's slot is freed", func() bool {
		s := h.p.Stats()
		return s.Total == 0 && s.Testing == 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.p.Close(ctx); err != nil { // while Test still runs
		t.Fatalf("Close = %v", err)
	}
	if n := h.f.live.Load(); n != 1 {
		t.Fatalf("live = %d, want the object under test still alive", n)
	}
	close(gate)
	waitUntil(t, "the tested object is destroyed", func() bool { return h.f.live.Load() == 0 })
}

type ctxKey struct{}

// A creation runs with the values of the caller who asked for it, under
// CreateTimeout's deadline, not the caller's.
func TestCreateSeesTheCallersValuesUnderItsOwnDeadline(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, CreateTimeout: 10 * time.Second})
	type seen struct {
		v        string
		deadline time.Time
	}
	got := make(chan seen, 1)
	h.f.set(func(f *fakeFactory) {
		f.createSeen = func(ctx context.Context) {
			v, _ := ctx.Value(ctxKey{}).(string) // a dialer asserting its value
			dl, _ := ctx.Deadline()
			got <- seen{v, dl}
		}
	})
	callerDeadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.WithValue(context.Background(), ctxKey{}, "trace-42"), callerDeadline)
	defer cancel()
	hd, err := h.p.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h.giveBack(hd)
	s := <-got
	if s.v != "trace-42" {
		t.Fatalf("Create saw value %q, want the caller's", s.v)
	}
	if s.deadline.IsZero() || !s.deadline.Before(time.Now().Add(11*time.Second)) {
		t.Fatalf("Create's deadline %v, want CreateTimeout's (about 10s), not the caller's %v", s.deadline, callerDeadline)
	}
}
