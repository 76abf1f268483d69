package pool

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A Create that ignores its context cannot hold its caller past
// CreateTimeout, but its slot stays taken until it returns and its late
// object is destroyed: MaxObjects bounds the objects that exist, those made
// late included.
func TestCreateTimeoutIsEnforcedOnACreateDeafToItsContext(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, CreateTimeout: 20 * time.Millisecond})
	gate := make(chan struct{})
	h.f.set(func(f *fakeFactory) { f.gate, f.deafToCtx = gate, true })
	_, err := h.p.Take(context.Background()) // returns while Create still runs
	var ce *CreateError
	if !errors.As(err, &ce) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Take = %v, want a *CreateError with the deadline", err)
	}
	h.f.set(func(f *fakeFactory) { f.gate = nil })
	h.afterBackoff()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	next := h.takeAsync(ctx)
	waitUntil(t, "the next caller waits or is served", func() bool { return !pending(next) || blockedInTake(1) })
	if s := h.p.Stats(); s.Total != 1 || s.Creating != 1 || !pending(next) {
		t.Fatalf("stats %+v, next served %v; want the late creation's slot taken (1 creating) and the next caller waiting for it", s, !pending(next))
	}
	close(gate) // the late object arrives, is destroyed, and frees the slot
	r := h.result(next)
	if r.err != nil {
		t.Fatalf("next Take = %v", r.err)
	}
	if m := h.f.maxLive.Load(); m != 1 {
		t.Fatalf("%d objects alive at once, MaxObjects 1", m)
	}
	if s := h.p.Stats(); s.Destroys.Late != 1 || s.Creating != 0 {
		t.Fatalf("stats %+v; want the late object destroyed, nothing creating", s)
	}
	h.giveBack(r.h)
}

// A Test that ignores its context is given up on at TestTimeout, but its
// object is alive until Test returns: it keeps its slot, and Close waits for
// it, until then.
func TestTestTimeoutIsEnforcedOnATestDeafToItsContext(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, ValidationInterval: time.Second, TestTimeout: 10 * time.Millisecond})
	h.giveBack(h.take())
	gate := make(chan struct{})
	h.f.set(func(f *fakeFactory) { f.testGate, f.deafToCtx = gate, true })
	h.clk.Tick(t, time.Second)
	h.clk.Tick(t, time.Second) // idle through a whole interval: tested
	h.ev.wait(t, "tested", 1)  // given up on
	if s := h.p.Stats(); s.Total != 1 || s.Testing != 1 {
		t.Fatalf("stats %+v; want the object under test counted (Total 1, Testing 1)", s)
	}
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := h.p.Close(short); !errors.Is(err, context.DeadlineExceeded) { // while Test still runs
		t.Fatalf("Close = %v, want its context's deadline: the object under test is alive", err)
	}
	close(gate)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.p.Close(ctx); err != nil {
		t.Fatalf("Close once Test returned = %v", err)
	}
	if n := h.f.live.Load(); n != 0 {
		t.Fatalf("live = %d after Close", n)
	}
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
