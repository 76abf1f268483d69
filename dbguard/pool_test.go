package dbguard_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/delay"
	"github.com/respool/respool/resilience/retry"
)

// TestPoolFailsFastWhileOpen checks a pool on a guarded factory whose
// server is down: once the attempts have opened the circuit, a Take fails
// at once with a *pool.CreateError (FailedFast) that matches
// breaker.ErrOpen, reaches the driver's error and carries the half-open
// time, and no attempt is made before then. The pool and the guard share
// one virtual clock: the pool's backoff and the breaker's open delay pass
// when the test moves it, and a Take that waited for either would wait until
// the test's bound instead of failing fast.
func TestPoolFailsFastWhileOpen(t *testing.T) {
	clk := clocktest.New(time.Time{})
	g, err := dbguard.New(dbguard.Config{Clock: clk, Retry: retry.Config[struct{}]{MaxAttempts: 1},
		Breaker: breaker.Config{WindowSize: 2, MinimumCalls: 2, OpenDelay: delay.Strategy{Kind: delay.Constant, Initial: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var attempts atomic.Int64
	f := pool.Factory[int]{Create: func(context.Context) (int, error) {
		attempts.Add(1)
		return 0, errRefused
	}}
	p, err := pool.New(dbguard.Factory[int](g, f), pool.Config{MaxObjects: 4, BackPressure: dbguard.BackPressure,
		Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.StartClose()
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()

	// The first Take gets the first refusal at once (nothing alive, nothing
	// else being created); the pool's next attempt, made once its backoff
	// has passed on the shared clock, opens the circuit.
	_, err = p.Take(ctx)
	if !errors.Is(err, errRefused) || errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("first Take: %v; want the refusal, the circuit still closed", err)
	}
	for errors.Is(err, errRefused) && !errors.Is(err, breaker.ErrOpen) {
		var ce *pool.CreateError
		if errors.As(err, &ce) && ce.FailedFast {
			clk.Advance(ce.RetryAfter().Sub(clk.Now()))
		}
		_, err = p.Take(ctx)
	}
	if !errors.Is(err, breaker.ErrOpen) || !errors.Is(err, errRefused) {
		t.Fatalf("Take after the backoff: %v; want the refusal that opened the circuit", err)
	}
	if n := attempts.Load(); n != 2 {
		t.Fatalf("%d attempts; want 2", n)
	}
	for range 3 {
		_, err := p.Take(ctx)
		var ce *pool.CreateError
		if !errors.As(err, &ce) || !ce.FailedFast || !errors.Is(err, breaker.ErrOpen) || !errors.Is(err, errRefused) {
			t.Fatalf("Take while open: %v; want a failed-fast *pool.CreateError of the opened circuit", err)
		}
		if until := ce.RetryAfter().Sub(clk.Now()); until != time.Hour {
			t.Fatalf("RetryAfter in %v on the shared clock; want the half-open time, an hour away", until)
		}
	}
	if n := attempts.Load(); n != 2 {
		t.Fatalf("%d attempts; want still 2", n)
	}
	if _, err := g.Admit(); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("Admit: %v; want ErrOpen", err)
	}
}

// TestFactoryKeepsHooks checks that the wrapped factory keeps the funcs
// and hooks of the one it wraps, its Create going through the guard.
func TestFactoryKeepsHooks(t *testing.T) {
	g, err := dbguard.New(dbguard.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	called := false
	f := pool.Factory[int]{Create: func(context.Context) (int, error) { return 1, nil },
		AfterCreate: func(context.Context, int) error { called = true; return nil }}
	gf := dbguard.Factory(g, f)
	if gf.AfterCreate == nil {
		t.Fatal("the wrapped factory lost its hooks")
	}
	_ = gf.AfterCreate(context.Background(), 1)
	if !called {
		t.Fatal("AfterCreate is not the wrapped factory's")
	}
	if v, err := gf.Create(context.Background()); v != 1 || err != nil {
		t.Fatalf("Create = %v, %v; want the wrapped factory's 1", v, err)
	}
	if n := g.Stats().ConnectAttempts; n != 1 {
		t.Fatalf("%d attempts through the guard; want 1", n)
	}
	if dbguard.Factory(g, pool.Factory[int]{}).Create != nil {
		t.Fatal("a nil Create became a guarded one")
	}
}
