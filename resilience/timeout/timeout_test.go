package timeout_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/resilience"
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
	r := startTimeout(t, 2*time.Second, blocking)
	r.clk.Advance(2*time.Second - 1)
	select {
	case err := <-r.done:
		t.Fatalf("returned before the deadline: %v", err)
	default:
	}
	r.clk.Advance(1)
	err := <-r.done
	var te *timeout.Error
	if !errors.Is(err, timeout.ErrTimeout) || !errors.As(err, &te) || te.Timeout != 2*time.Second {
		t.Fatalf("err %v; want a timeout.Error after 2s", err)
	}
	if errors.Is(err, context.DeadlineExceeded) || !errors.Is(te.Err, context.Canceled) {
		t.Fatalf("err %v must not look like the caller's deadline; its cause %v", err, te.Err)
	}
	if len(*r.events) != 1 || (*r.events)[0].Kind != resilience.EventTimeout {
		t.Fatalf("events %+v", *r.events)
	}
}

// started is a timeout.Do running in a goroutine on a virtual clock.
type started struct {
	clk    *clocktest.Clock
	done   chan error          // Do's error
	events *[]resilience.Event // read once done has been received from
}

// startTimeout runs op under a timeout of d on a virtual clock and returns
// once the deadline's timer is set.
func startTimeout(t *testing.T, d time.Duration, op func(context.Context) (int, error)) started {
	t.Helper()
	bound := testctx.New(t)
	r := started{clk: clocktest.New(time.Time{}), done: make(chan error, 1), events: new([]resilience.Event)}
	to, err := timeout.New(timeout.Config{Timeout: d, Clock: r.clk,
		Listener: func(e resilience.Event) { *r.events = append(*r.events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := timeout.Do(bound, to, op)
		r.done <- err
	}()
	if err := r.clk.WaitTimers(bound, 1); err != nil {
		t.Fatal(err)
	}
	return r
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

// queryError is a driver's error that carries its context's error.
type queryError struct {
	query string
	err   error
}

func (e *queryError) Error() string { return e.query + ": " + e.err.Error() }
func (e *queryError) Unwrap() error { return e.err }

// runPastDeadline runs op under a 1s timeout on a virtual clock, moves the
// clock to the deadline once op waits, and returns the number of timeout
// events and Do's error.
func runPastDeadline(t *testing.T, op func(context.Context) (int, error)) (events int, err error) {
	t.Helper()
	r := startTimeout(t, time.Second, op)
	r.clk.Advance(time.Second)
	err = <-r.done
	return len(*r.events), err
}

// TestTimeoutShowsTheOperationsError: the operation's error is within
// reach of errors.As (and errors.Is) through the timeout's Error, all but
// the context's own errors, which stay hidden: the timeout is not the
// caller's deadline or cancellation.
func TestTimeoutShowsTheOperationsError(t *testing.T) {
	events, err := runPastDeadline(t, func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 0, &queryError{query: "SELECT 1", err: ctx.Err()}
	})
	var te *timeout.Error
	var qe *queryError
	if !errors.As(err, &te) || !errors.Is(err, timeout.ErrTimeout) || events != 1 {
		t.Fatalf("err %v after %d events; want a timeout.Error", err, events)
	}
	if !errors.As(err, &qe) || qe.query != "SELECT 1" || !errors.Is(err, error(qe)) {
		t.Fatalf("err %v: the operation's *queryError is out of reach", err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v matches a context error: it would pass for the caller's", err)
	}
}

// TestLateErrorOfItsOwnIsNotATimeout: an operation that fails of its own,
// not of the deadline, is not reported as a timeout because its error came
// back after the deadline: its error is returned as it is.
func TestLateErrorOfItsOwnIsNotATimeout(t *testing.T) {
	errDuplicate := errors.New("duplicate key")
	events, err := runPastDeadline(t, func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 0, errDuplicate
	})
	if err != errDuplicate || events != 0 {
		t.Fatalf("err %v after %d timeout events; want the operation's own error as it is", err, events)
	}
}
