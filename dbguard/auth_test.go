package dbguard_test

import (
	"context"
	"errors"
	"testing"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
)

// errAccessDenied is MariaDB's refusal of a wrong password.
var errAccessDenied = mysqlError(1045, "28000", "Access denied for user 'respool'@'localhost' (using password: YES)")

// TestAuthFailureOpensTheCircuitAtOnce: a connection attempt whose
// credentials the server refused (PostgreSQL 28P01, MySQL 1045) is not
// retried and opens the circuit at once, with presets that would otherwise
// need 10 calls: the attempt's error matches breaker.ErrOpen with the
// half-open time, the transition's event carries the server's error (for
// the log), the next creation is rejected without an attempt, a probe
// refused again reopens the circuit without closing it, and a probe that
// succeeds (the password fixed) closes it.
func TestAuthFailureOpensTheCircuitAtOnce(t *testing.T) {
	for _, authErr := range []error{errPassword, errAccessDenied} {
		t.Run(authErr.Error(), func(t *testing.T) {
			f := newFixture(t, dbguard.Config{})
			ctx := context.Background()
			openDelay := dbguard.BreakerPreset().OpenDelay.Initial

			f.fail(authErr)
			_, err := f.connect(ctx)
			if !errors.Is(err, authErr) || !errors.Is(err, breaker.ErrOpen) || f.attempts() != 1 {
				t.Fatalf("creation refused for its credentials: %v after %d attempts; want the server's error, the circuit open, 1 attempt", err, f.attempts())
			}
			if at, ok := resilience.RetryAfter(err); !ok || !at.Equal(f.clk.Now().Add(openDelay)) {
				t.Fatalf("RetryAfter %v, %v; want the half-open time", at, ok)
			}
			if got := stateChanges(f); len(got) != 1 || got[0].To != "open" || !errors.Is(got[0].Err, authErr) {
				t.Fatalf("state changes %+v; want one, to open, carrying the server's error", got)
			}
			if _, err := f.connect(ctx); !isRejection(err, breaker.ErrOpen) || f.attempts() != 1 {
				t.Fatalf("creation while open: %v after %d attempts; want a rejection without an attempt", err, f.attempts())
			}

			f.clk.Advance(openDelay)
			f.fail(authErr)
			if _, err := f.connect(ctx); !errors.Is(err, breaker.ErrOpen) || f.attempts() != 2 {
				t.Fatalf("probe refused again: %v after %d attempts; want the circuit open again, 2 attempts", err, f.attempts())
			}
			for _, e := range stateChanges(f) {
				if e.To == "closed" {
					t.Fatalf("state changes %+v: the refused probe closed the circuit", stateChanges(f))
				}
			}

			f.clk.Advance(openDelay)
			if _, err := f.connect(ctx); err != nil {
				t.Fatalf("probe with the credentials fixed: %v", err)
			}
			if s := f.g.Breaker().State(); s != breaker.Closed {
				t.Fatalf("after the probe succeeded: %v; want closed", s)
			}
		})
	}
}

// TestAuthFailureWithFreshCredentialsIsTriedOnceMore: an authentication
// failure whose credentials a hook gives per attempt (marked
// resil.ErrFreshCredentials by respool) is made once more after the
// retry's delay, the hook asked again (a password rotated between the hook
// and the server's check); refused again, the circuit opens after 2
// attempts.
func TestAuthFailureWithFreshCredentialsIsTriedOnceMore(t *testing.T) {
	fresh := errors.Join(errPassword, resil.ErrFreshCredentials)
	t.Run("the second attempt succeeds", func(t *testing.T) {
		f := newFixture(t, dbguard.Config{})
		f.fail(fresh)
		if n, err := f.connectStepping(1); err != nil || n != 2 {
			t.Fatalf("creation: %d, %v; want the second attempt's connection", n, err)
		}
		if s := f.g.Breaker().State(); s != breaker.Closed {
			t.Fatalf("circuit %v; want closed", s)
		}
	})
	t.Run("refused twice", func(t *testing.T) {
		f := newFixture(t, dbguard.Config{})
		f.fail(fresh, fresh, fresh)
		if _, err := f.connectStepping(1); !errors.Is(err, errPassword) || !errors.Is(err, breaker.ErrOpen) || f.attempts() != 2 {
			t.Fatalf("creation: %v after %d attempts; want the refusal, the circuit open, 2 attempts", err, f.attempts())
		}
	})
}

// stateChanges returns the breaker's state-change events so far.
func stateChanges(f *fixture) []resilience.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []resilience.Event
	for _, e := range f.events {
		if e.Mechanism == "breaker" && e.Kind == resilience.EventStateChange {
			out = append(out, e)
		}
	}
	return out
}
