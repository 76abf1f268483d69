package pool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respool/respool/resilience"
)

func TestGiveBackTwiceIsAnErrorAndHarmsNothing(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1})
	a := h.take()
	h.giveBack(a)
	b := h.take() // the same object, now someone else's
	if err := a.GiveBack(); !errors.Is(err, ErrAlreadyReturned) {
		t.Fatalf("second GiveBack = %v, want ErrAlreadyReturned", err)
	}
	if err := a.Discard(); !errors.Is(err, ErrAlreadyReturned) {
		t.Fatalf("Discard after GiveBack = %v, want ErrAlreadyReturned", err)
	}
	if s := h.p.Stats(); s.Idle != 0 || s.InUse != 1 {
		t.Fatalf("stats = %+v: a stale handle changed the pool", s)
	}
	h.giveBack(b)
}

// A Handle goes back to the pool it came from, whichever pool the code
// giving it back holds; the zero Handle is refused.
func TestHandleGoesBackToItsOwnPool(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1})
	other := newHarness(t, Config{MaxObjects: 1})
	o := other.take()
	if err := o.GiveBack(); err != nil {
		t.Fatal(err)
	}
	if s, so := h.p.Stats(), other.p.Stats(); s.Total != 0 || so.Idle != 1 || so.InUse != 0 {
		t.Fatalf("stats %+v and %+v; want the object idle in its own pool, none in the other", s, so)
	}
	var zero Handle[*fakeObj]
	if err := zero.GiveBack(); !errors.Is(err, ErrAlreadyReturned) {
		t.Fatalf("GiveBack of the zero Handle = %v, want ErrAlreadyReturned", err)
	}
	if err := zero.Discard(); !errors.Is(err, ErrAlreadyReturned) {
		t.Fatalf("Discard of the zero Handle = %v, want ErrAlreadyReturned", err)
	}
}

func TestGiveBackDestroysAnInvalidObject(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1})
	a := h.take()
	a.Value().broken.Store(true)
	h.giveBack(a)
	h.ev.wait(t, "destroyed", 1)
	if s := h.p.Stats(); s.Destroys.Invalid != 1 || s.Total != 0 {
		t.Fatalf("stats = %+v, want the invalid object destroyed", s)
	}
}

func TestDiscardFreesTheSlotForAWaiter(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1})
	a := h.take()
	w := h.waiting(context.Background(), 1)
	if err := a.Discard(); err != nil {
		t.Fatal(err)
	}
	r := <-w
	if r.err != nil || r.h.Value() == a.Value() {
		t.Fatalf("waiter got %v, %v; want a new object", r.h, r.err)
	}
	h.giveBack(r.h)
	if s := h.p.Stats(); s.Destroys.Discarded != 1 {
		t.Fatalf("discarded = %d", s.Destroys.Discarded)
	}
}

func TestStatsCountWaitsInTheHistogram(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1})
	a := h.take()
	w := h.waiting(context.Background(), 1)
	h.clk.Tick(t, 3*time.Millisecond)
	h.giveBack(a)
	r := <-w
	h.giveBack(r.h)
	s := h.p.Stats()
	// The first Take waited for the creation (0 on the fake clock).
	if s.Takes != 2 || s.Waits != 2 || s.WaitTime != 3*time.Millisecond {
		t.Fatalf("stats = %+v, want 2 takes, both waited, 3ms in all", s)
	}
	if got := s.WaitHistogram.total(); got != 2 {
		t.Fatalf("histogram counts %d takes, want 2", got)
	}
	if q, ok := s.WaitHistogram.Quantile(0.99); !ok || q != 4096*time.Microsecond {
		t.Fatalf("p99 = %v, want the 4.096ms bucket", q)
	}
	if q, ok := s.WaitHistogram.Quantile(0.25); !ok || q != time.Microsecond {
		t.Fatalf("p25 = %v, want the first bucket", q)
	}
}

// newPoolErr is New's error for cfg, the pool closed when there is none.
func newPoolErr(t *testing.T, cfg Config) error {
	t.Helper()
	p, err := New(factoryOf[*fakeObj](&fakeFactory{}), cfg)
	if err == nil {
		if err := p.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return err
}

func TestNewNamesTheFieldItRefuses(t *testing.T) {
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{MaxObjects: -1}, "MaxObjects"},
		{Config{MaxObjects: maxObjectsLimit + 1}, "MaxObjects"},
		{Config{MaxQueueSize: -5}, "MaxQueueSize"},
		{Config{MaxObjects: 2, MinIdle: 3}, "MinIdle"},
		{Config{CreateTimeout: -time.Second}, "CreateTimeout"},
		{Config{ValidationInterval: -1}, "ValidationInterval"},
		{Config{BackoffInitial: -1}, "BackoffInitial"},
		{Config{BackoffInitial: 2 * time.Second, BackoffMax: time.Second}, "BackoffMax"},
		{Config{FailureLogInterval: -1}, "FailureLogInterval"},
		{Config{HoldThreshold: -1}, "HoldThreshold"},
		{Config{Overload: OverloadCoDel + 1}, "Overload"},
		{Config{CoDelTarget: 200 * time.Millisecond, CoDelInterval: 100 * time.Millisecond}, "CoDelInterval"},
	} {
		err := newPoolErr(t, tc.cfg)
		var ce *resilience.ConfigError
		if !errors.As(err, &ce) || ce.Mechanism != "pool" || ce.Field != tc.field {
			t.Errorf("New(%+v) = %v, want a *resilience.ConfigError of the pool for %s", tc.cfg, err, tc.field)
		}
	}
	if err := newPoolErr(t, Config{}); err != nil {
		t.Errorf("zero Config: %v", err)
	}
	// A long BackoffInitial alone raises the default BackoffMax to it; a
	// long CoDelTarget raises the default CoDelInterval.
	if err := newPoolErr(t, Config{BackoffInitial: 5 * time.Second, CoDelTarget: time.Second}); err != nil {
		t.Errorf("BackoffInitial above the default BackoffMax: %v", err)
	}
	if _, err := New[*fakeObj](Factory[*fakeObj]{}, Config{}); err == nil {
		t.Error("New with a nil factory succeeded")
	}
}
