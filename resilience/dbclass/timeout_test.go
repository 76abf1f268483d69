package dbclass_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/dbclass"
	"github.com/respool/respool/resilience/internal/testctx"
	"github.com/respool/respool/resilience/timeout"
)

// TestTimeoutMechanismError: the error of respool's own timeout mechanism
// (which hides the operation's context error so that a retry does retry
// it) is a timeout whose statement may have run: a failure for the breaker
// sitting outside the timeout, as any other statement timeout is.
func TestTimeoutMechanismError(t *testing.T) {
	_, err := pastTimeout(t, func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	})
	v := dbclass.Classify(err)
	if !v.Timeout || v.Class != dbclass.ClassAmbiguous || !v.IsFailure() || v.IsConnectRetryable() {
		t.Fatalf("%v: %v; want an ambiguous timeout that counts for the breaker", err, v)
	}
}

// pastTimeout runs op under a 1s timeout on a virtual clock, moves the
// clock to the deadline once op waits, and returns the number of timeout
// events and Do's error.
func pastTimeout(t *testing.T, op func(context.Context) (int, error)) (events int, err error) {
	t.Helper()
	bound := testctx.New(t)
	clk := clocktest.New(time.Time{})
	to, err := timeout.New(timeout.Config{Clock: clk, Timeout: time.Second,
		Listener: func(resilience.Event) { events++ }})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := timeout.Do(bound, to, op)
		done <- err
	}()
	if err := clk.WaitTimers(bound, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	err = <-done
	return events, err
}

// TestTimeoutKeepsTheServersCode: the server's code is read first, however
// wrapped, also when the timeout mechanism fires as the error arrives. A
// deadlock (40P01) returned as the timeout fires is transaction-retryable,
// whether the driver returns it alone or together with its context's error;
// a unique violation (23505) returned just after the deadline is the
// caller's error, not a timeout. (Both were ambiguous timeouts: breaker
// failures, never retried.)
func TestTimeoutKeepsTheServersCode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		code      string
		withCtx   bool // the driver joins its context's error
		want      dbclass.Class
		isTimeout bool // errors.Is(err, timeout.ErrTimeout)
	}{
		{"deadlock", "40P01", false, dbclass.ClassTxRetryable, false},
		{"deadlock with the context's error", "40P01", true, dbclass.ClassTxRetryable, true},
		{"unique violation after the deadline", "23505", false, dbclass.ClassCaller, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serverErr := &pgconn.PgError{Severity: "ERROR", Code: tc.code, Message: tc.name}
			events, err := pastTimeout(t, func(ctx context.Context) (int, error) {
				<-ctx.Done() // the server's answer arrives as the deadline passes
				if tc.withCtx {
					return 0, errors.Join(serverErr, ctx.Err())
				}
				return 0, serverErr
			})
			v := dbclass.Classify(err)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != tc.code || v.Class != tc.want || v.Code != tc.code || v.Timeout {
				t.Fatalf("%v: %v; want class %v from code %s, not a timeout", err, v, tc.want, tc.code)
			}
			if errors.Is(err, timeout.ErrTimeout) != tc.isTimeout || (events == 1) != tc.isTimeout {
				t.Fatalf("%v: matches ErrTimeout %v after %d timeout events; want %v", err,
					errors.Is(err, timeout.ErrTimeout), events, tc.isTimeout)
			}
		})
	}
}
