package dbguard_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/pause"
	"github.com/respool/respool/resilience/retry"
)

// TestRetryOnlyWhenNothingReachedTheServer checks which failed attempts
// are made again: a refused dial, up to Attempts; not back-pressure, a
// wrong password or a connection lost during the attempt.
func TestRetryOnlyWhenNothingReachedTheServer(t *testing.T) {
	noBreaker := dbguard.Config{BreakerDisabled: true, PauseDisabled: true}
	t.Run("refused, then made", func(t *testing.T) {
		f := newFixture(t, noBreaker)
		f.fail(errRefused, errRefused)
		n, err := f.connectStepping(2)
		if err != nil || n != 3 {
			t.Fatalf("Connect = %d, %v; want the third attempt's connection", n, err)
		}
	})
	t.Run("refused every time", func(t *testing.T) {
		f := newFixture(t, noBreaker)
		f.fail(errRefused, errRefused, errRefused, errRefused)
		_, err := f.connectStepping(2)
		if !errors.Is(err, errRefused) || f.attempts() != dbguard.RetryPreset().MaxAttempts {
			t.Fatalf("Connect: %v after %d attempts; want the refusal after %d", err, f.attempts(), dbguard.RetryPreset().MaxAttempts)
		}
		if s := f.g.Stats(); s.ConnectAttempts != 3 || s.ConnectFailures != 3 || s.Retry.Retries != 2 || s.Retry.GiveUps != 1 {
			t.Fatalf("stats %+v", s)
		}
	})
	for _, err := range []error{errFull, errPassword, errLost} {
		t.Run(err.Error(), func(t *testing.T) {
			f := newFixture(t, noBreaker)
			f.fail(err)
			if _, got := f.connect(context.Background()); !errors.Is(got, err) || f.attempts() != 1 {
				t.Fatalf("Connect: %v after %d attempts; want %v after 1", got, f.attempts(), err)
			}
		})
	}
	t.Run("one attempt", func(t *testing.T) {
		f := newFixture(t, dbguard.Config{Retry: retry.Config[struct{}]{MaxAttempts: 1}, BreakerDisabled: true})
		f.fail(errRefused)
		if _, err := f.connect(context.Background()); !errors.Is(err, errRefused) || f.attempts() != 1 {
			t.Fatalf("Connect: %v after %d attempts; want the refusal after 1", err, f.attempts())
		}
	})
}

// TestCircuitOpensOnFailedAttempts checks the creation path with the
// breaker: failed attempts open the circuit; the attempt that opened it
// returns the driver's error matching breaker.ErrOpen, with the half-open
// time; attempts are then rejected without reaching the factory;
// after the open delay one probe goes through, and its success closes the
// circuit.
func TestCircuitOpensOnFailedAttempts(t *testing.T) {
	f := newFixture(t, dbguard.Config{Retry: retry.Config[struct{}]{MaxAttempts: 1},
		Breaker: breaker.Config{WindowSize: 4, MinimumCalls: 4}})
	ctx := context.Background()
	f.fail(errRefused, errRefused, errRefused)
	for range 3 {
		if _, err := f.connect(ctx); !errors.Is(err, errRefused) || errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("attempt before the circuit opens: %v; want the refusal alone", err)
		}
	}
	f.fail(errRefused)
	_, err := f.connect(ctx)
	if !errors.Is(err, errRefused) || !errors.Is(err, breaker.ErrOpen) || errors.Is(err, resilience.ErrRejected) {
		t.Fatalf("the attempt that opened the circuit: %v; want the refusal, matching breaker.ErrOpen, not a rejection", err)
	}
	halfOpen := f.clk.Now().Add(dbguard.BreakerPreset().OpenDelay.Initial)
	if at, ok := resilience.RetryAfter(err); !ok || !at.Equal(halfOpen) {
		t.Fatalf("RetryAfter %v; want the half-open time %v", at, halfOpen)
	}

	_, err = f.connect(ctx)
	if !isRejection(err, breaker.ErrOpen) || f.attempts() != 4 {
		t.Fatalf("attempt while open: %v after %d attempts; want a rejection without an attempt", err, f.attempts())
	}
	if _, err := f.g.Admit(); !isRejection(err, breaker.ErrOpen) {
		t.Fatalf("Admit while open: %v", err)
	}

	f.clk.Advance(halfOpen.Sub(f.clk.Now()))
	done, err := f.g.Admit()
	if err != nil {
		t.Fatalf("Admit when half-open: %v; want nil (the probe is free)", err)
	}
	n, err := f.connect(ctx)
	done()
	if err != nil || n != 5 {
		t.Fatalf("the probe: %d, %v; want a connection", n, err)
	}
	if s := f.g.Breaker().State(); s != breaker.Closed {
		t.Fatalf("after the probe succeeded: %v; want closed", s)
	}
}

// TestFailedProbeOpensAgainAndIsNotRetried checks that the probe's failure
// opens the circuit again at once: it is not retried (the next attempt
// would only be rejected), and its error carries the next half-open time.
func TestFailedProbeOpensAgainAndIsNotRetried(t *testing.T) {
	f := newFixture(t, dbguard.Config{Breaker: breaker.Config{WindowSize: 2, MinimumCalls: 2}})
	ctx := context.Background()
	f.fail(errRefused, errRefused) // one creation, retried once: two failures open it
	if _, err := f.connectStepping(1); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("creation: %v; want the circuit open", err)
	}
	f.clk.Advance(dbguard.BreakerPreset().OpenDelay.Initial)
	f.fail(errRefused)
	_, err := f.connect(ctx)
	if !errors.Is(err, errRefused) || !errors.Is(err, breaker.ErrOpen) || f.attempts() != 3 {
		t.Fatalf("the probe: %v after %d attempts; want its refusal, the circuit open, 3 attempts", err, f.attempts())
	}
	if at, _ := resilience.RetryAfter(err); !at.Equal(f.clk.Now().Add(dbguard.BreakerPreset().OpenDelay.Initial)) {
		t.Fatalf("RetryAfter %v; want now + the open delay", at)
	}
}

// TestPauseOnBackPressure checks that "too many connections" closes the
// pause for every creation: the next one is rejected at once, without an
// attempt, with the reopening time; once the pause is over, the next
// creation is its probe.
func TestPauseOnBackPressure(t *testing.T) {
	f := newFixture(t, dbguard.Config{Name: "db1"})
	ctx := context.Background()
	f.fail(errFull)
	if _, err := f.connect(ctx); !errors.Is(err, errFull) {
		t.Fatalf("creation: %v; want the server's error", err)
	}
	_, err := f.connect(ctx)
	if !isRejection(err, pause.ErrPaused) || f.attempts() != 1 {
		t.Fatalf("creation while paused: %v after %d attempts; want a rejection without an attempt", err, f.attempts())
	}
	if re := (*resilience.RejectedError)(nil); !errors.As(err, &re) || re.Name != "db1" {
		t.Fatalf("rejection %v; want one naming the guard db1", err)
	}
	until, ok := resilience.RetryAfter(err)
	if !ok || until.Sub(f.clk.Now()) != time.Second {
		t.Fatalf("RetryAfter %v; want now + dbguard's 1s", until)
	}
	if s := f.g.Breaker().State(); s != breaker.Closed {
		t.Fatalf("breaker %v; want closed: back-pressure is not a failure", s)
	}
	f.clk.Advance(until.Sub(f.clk.Now()))
	if n, err := f.connect(ctx); err != nil || n != 2 {
		t.Fatalf("the probe: %d, %v; want a connection", n, err)
	}
	if st := f.g.Pause().State(); !st.Open {
		t.Fatalf("pause %+v; want open after the probe", st)
	}
}

// TestCreationsBehindTheProbeFailFastWhenItPausesAgain checks the
// creations that arrive while the pause's probe runs: they wait for its
// outcome, and when the probe meets "too many connections" again, they
// fail at once, without an attempt, with the escalated pause's reopening
// time (as a creation that meets the closed gate does), instead of waiting
// behind the gate for the whole new pause.
func TestCreationsBehindTheProbeFailFastWhenItPausesAgain(t *testing.T) {
	f := newFixture(t, dbguard.Config{Name: "db1"})
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	f.fail(errFull)
	if _, err := f.connect(ctx); !errors.Is(err, errFull) {
		t.Fatalf("creation: %v; want the server's error", err)
	}
	f.clk.Advance(f.g.Pause().State().Until.Sub(f.clk.Now())) // the pause is over: the next creation is its probe

	inProbe, release := make(chan struct{}), make(chan struct{})
	probeDone := make(chan error, 1)
	go func() {
		_, err := guarded(f.g, func(context.Context) (int, error) {
			close(inProbe)
			<-release
			return 0, errFull
		})(ctx)
		probeDone <- err
	}()
	select {
	case <-inProbe:
	case err := <-probeDone:
		t.Fatalf("the probe: %v; want an attempt", err)
	}
	queuedDone := make(chan error, 1)
	go func() {
		_, err := f.connect(ctx)
		queuedDone <- err
	}()
	if err := f.awaitEvent(ctx, "pause", resilience.EventQueued, 1); err != nil {
		t.Fatalf("the second creation did not queue behind the probe: %v", err)
	}

	close(release) // the probe meets "too many connections" again
	if err := <-probeDone; !errors.Is(err, errFull) {
		t.Fatalf("the probe: %v; want the server's error", err)
	}
	st := f.g.Pause().State()
	if st.Open || st.Probing || st.LastPause != 2*time.Second {
		t.Fatalf("pause %+v; want closed again for 2s (1s escalated)", st)
	}
	if st.Waiting != 0 {
		cancel() // let it go: it would wait behind the gate for the whole new pause
		t.Fatalf("%d creation(s) still waiting behind the gate paused again (until %v); want them failed at once", st.Waiting, st.Until)
	}
	err := <-queuedDone
	if n := f.g.Stats().ConnectAttempts; !isRejection(err, pause.ErrPaused) || n != 2 {
		t.Fatalf("the creation queued behind the probe: %v after %d attempts in all; want a pause rejection without an attempt (2: the first creation's and the probe's)", err, n)
	}
	if at, ok := resilience.RetryAfter(err); !ok || !at.Equal(st.Until) {
		t.Fatalf("RetryAfter %v; want the new reopening time %v", at, st.Until)
	}
	if re := (*resilience.RejectedError)(nil); !errors.As(err, &re) || re.Name != "db1" {
		t.Fatalf("rejection %v; want one naming the guard db1", err)
	}
}

// TestConnectRateLimit checks that attempts beyond the rate wait for the
// next permit instead of failing.
func TestConnectRateLimit(t *testing.T) {
	f := newFixture(t, dbguard.Config{ConnectRate: 2})
	ctx := context.Background()
	for range 2 {
		if _, err := f.connect(ctx); err != nil {
			t.Fatal(err)
		}
	}
	start := f.clk.Now()
	if _, err := f.connectStepping(1); err != nil {
		t.Fatalf("third attempt in a second: %v; want it made after a wait", err)
	}
	if waited := f.clk.Now().Sub(start); waited != 500*time.Millisecond {
		t.Fatalf("waited %v; want 500ms (2 a second)", waited)
	}
	if s := f.g.Stats(); !s.ConnectRateOn || s.Limiter.Queued != 1 {
		t.Fatalf("stats %+v", s)
	}
}
