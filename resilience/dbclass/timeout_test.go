package dbclass_test

import (
	"context"
	"testing"
	"time"

	"github.com/respool/respool/resilience/clocktest"
	"github.com/respool/respool/resilience/dbclass"
	"github.com/respool/respool/resilience/internal/testctx"
	"github.com/respool/respool/resilience/timeout"
)

// TestTimeoutMechanismError: the error of respool's own timeout mechanism
// (which hides the operation's context error so that a retry does retry
// it) is a timeout whose statement may have run: a failure for the breaker
// sitting outside the timeout, as any other statement timeout is.
func TestTimeoutMechanismError(t *testing.T) {
	bound := testctx.New(t)
	clk := clocktest.New(time.Time{})
	to, err := timeout.New(timeout.Config{Clock: clk, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := timeout.Do(bound, to, func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		})
		done <- err
	}()
	if err := clk.WaitTimers(bound, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	err = <-done
	v := dbclass.Classify(err)
	if !v.Timeout || v.Class != dbclass.ClassAmbiguous || !v.IsFailure() || v.IsConnectRetryable() {
		t.Fatalf("%v: %v; want an ambiguous timeout that counts for the breaker", err, v)
	}
}
