package timeout_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/clocktest"
	"github.com/respool/respool/resilience/internal/testctx"
	"github.com/respool/respool/resilience/timeout"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// blocking is an operation that waits for its context, as a query does.
func blocking(ctx context.Context) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

func TestFiresOnTheVirtualClock(t *testing.T) {
	bound := testctx.New(t)
	clk := clocktest.New(time.Time{})
	var fired []resilience.Event
	to, err := timeout.New(timeout.Config{Timeout: 2 * time.Second, Clock: clk,
		Listener: func(e resilience.Event) { fired = append(fired, e) }})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := timeout.Do(bound, to, blocking)
		done <- err
	}()
	if err := clk.WaitTimers(bound, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2*time.Second - 1)
	select {
	case err := <-done:
		t.Fatalf("returned before the deadline: %v", err)
	default:
	}
	clk.Advance(1)
	err = <-done
	var te *timeout.Error
	if !errors.Is(err, timeout.ErrTimeout) || !errors.As(err, &te) || te.Timeout != 2*time.Second {
		t.Fatalf("err %v; want a timeout.Error after 2s", err)
	}
	if errors.Is(err, context.DeadlineExceeded) || !errors.Is(te.Err, context.Canceled) {
		t.Fatalf("err %v must not look like the caller's deadline; its cause %v", err, te.Err)
	}
	if len(fired) != 1 || fired[0].Kind != resilience.EventTimeout {
		t.Fatalf("events %+v", fired)
	}
}

func TestSuccessAndCallerCancel(t *testing.T) {
	to, err := timeout.New(timeout.Config{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := timeout.Do(context.Background(), to, func(ctx context.Context) (int, error) {
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > timeout.DefaultTimeout {
			t.Errorf("deadline %v, %v; want within 10s", dl, ok)
		}
		return 3, nil
	})
	if v != 3 || err != nil {
		t.Fatalf("got %v, %v", v, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := timeout.Do(ctx, to, blocking); errors.Is(err, timeout.ErrTimeout) || !errors.Is(err, context.Canceled) {
		t.Fatalf("caller's cancel: %v; want context.Canceled, not a timeout", err)
	}
}

// TestSoonerCallerDeadlineKept: the caller's sooner deadline is used as it
// is, and its expiry is the caller's error, not a timeout.
func TestSoonerCallerDeadlineKept(t *testing.T) {
	to, err := timeout.New(timeout.Config{Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	_, err = timeout.Do(ctx, to, blocking)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, timeout.ErrTimeout) {
		t.Fatalf("err %v; want the caller's DeadlineExceeded", err)
	}
}

func TestConfigError(t *testing.T) {
	_, err := timeout.New(timeout.Config{Timeout: -1})
	var ce *resilience.ConfigError
	if !errors.As(err, &ce) || ce.Field != "Timeout" {
		t.Fatalf("err %v; want a ConfigError on Timeout", err)
	}
}
