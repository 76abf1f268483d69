package compose_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/bulkhead"
	"github.com/respool/respool/resilience/compose"
	"github.com/respool/respool/resilience/delay"
	"github.com/respool/respool/resilience/fallback"
	"github.com/respool/respool/resilience/internal/testctx"
	"github.com/respool/respool/resilience/pause"
	"github.com/respool/respool/resilience/ratelimit"
	"github.com/respool/respool/resilience/retry"
	"github.com/respool/respool/resilience/timeout"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a guard that writes what happens to it into a shared log and
// rejects when told to.
type recorder struct {
	name   string
	log    *[]string
	reject int // reject the next n Enters
}

func (r *recorder) Enter(ctx context.Context) (resilience.Permit, error) {
	if _, ok := ctx.Deadline(); ok {
		*r.log = append(*r.log, r.name+" sees a deadline")
	}
	if r.reject > 0 {
		r.reject--
		*r.log = append(*r.log, r.name+" rejects")
		return resilience.Permit{}, resil.Reject(r.name, "", errors.New("no"), time.Time{}, time.Time{})
	}
	*r.log = append(*r.log, "enter "+r.name)
	return resilience.Permit{}, nil
}

func (r *recorder) Exit(_ resilience.Permit, err error) {
	what := "ok"
	switch {
	case errors.Is(err, resilience.ErrRejected):
		what = "not run"
	case err != nil:
		what = "failed"
	}
	*r.log = append(*r.log, "exit "+r.name+" "+what)
}

// TestDefaultOrder shows the stack's order: guards are entered outermost
// first (breaker, pause, limiter, bulkhead), exited in reverse with the
// outcome; an inner rejection reaches outer guards as "not run"; the retry
// goes through every guard again.
func TestDefaultOrder(t *testing.T) {
	var log []string
	g := func(name string) *recorder { return &recorder{name: name, log: &log} }
	limiter := g("limiter")
	limiter.reject = 1
	r, err := retry.New(retry.Config[string]{MaxAttempts: 3, Delay: delay.Strategy{Kind: delay.None},
		Listener: func(e resilience.Event) { log = append(log, fmt.Sprintf("%v %d", e.Kind, e.Attempt)) }})
	if err != nil {
		t.Fatal(err)
	}
	s := &compose.Stack[string]{Retry: r, Breaker: g("breaker"), Pause: g("pause"), Limiter: limiter, Bulkhead: g("bulkhead")}
	calls := 0
	v, err := s.Do(context.Background(), func(context.Context) (string, error) {
		calls++
		log = append(log, "op")
		if calls == 1 {
			return "", errors.New("boom")
		}
		return "done", nil
	})
	if v != "done" || err != nil {
		t.Fatalf("got %q, %v", v, err)
	}
	want := []string{
		"enter breaker", "enter pause", "limiter rejects", "exit pause not run", "exit breaker not run", "retry 1",
		"enter breaker", "enter pause", "enter limiter", "enter bulkhead", "op",
		"exit bulkhead failed", "exit limiter failed", "exit pause failed", "exit breaker failed", "retry 2",
		"enter breaker", "enter pause", "enter limiter", "enter bulkhead", "op",
		"exit bulkhead ok", "exit limiter ok", "exit pause ok", "exit breaker ok",
	}
	if strings.Join(log, "\n") != strings.Join(want, "\n") {
		t.Fatalf("order:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
}

// TestBreakerRejectionMakesRetryWaitUntilHalfOpen runs end to end on the
// virtual clock: failures open the breaker; the retry's next attempt is
// rejected with the half-open time as its retry-after; the retry waits
// exactly until then (not its own 1ms delay), and the trial call that
// follows succeeds and closes the circuit.
func TestBreakerRejectionMakesRetryWaitUntilHalfOpen(t *testing.T) {
	ctx := testctx.New(t)
	clk := clocktest.New(time.Time{})
	b, err := breaker.New(breaker.Config{Clock: clk, WindowSize: 2, HalfOpenCalls: 1,
		OpenDelay: delay.Constants(42 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := retry.New(retry.Config[int]{Clock: clk, MaxAttempts: 5, Delay: delay.Constants(time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	s := &compose.Stack[int]{Retry: r, Breaker: b}
	calls := 0
	var attemptsAt []time.Time
	type result struct {
		v   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := s.Do(ctx, func(context.Context) (int, error) {
			calls++
			attemptsAt = append(attemptsAt, clk.Now())
			if calls <= 2 {
				return 0, errors.New("down")
			}
			return 42, nil
		})
		done <- result{v, err}
	}()
	start := clk.Now()
	// Attempt 1 fails; the retry waits its 1ms.
	if err := clk.WaitTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Millisecond)
	// Attempt 2 fails and opens the circuit (2 of 2); the retry waits 1ms.
	if err := clk.WaitTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	openedAt := clk.Now()
	halfOpenAt := openedAt.Add(42 * time.Second)
	clk.Advance(time.Millisecond)
	// Attempt 3 is rejected by the open circuit: the retry waits until the
	// half-open time.
	if err := clk.WaitTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if next, _ := clk.Next(); !next.Equal(halfOpenAt) {
		t.Fatalf("retry waits until %v; want the half-open time %v", next.Sub(start), halfOpenAt.Sub(start))
	}
	clk.Advance(halfOpenAt.Sub(clk.Now()))
	res := <-done
	if res.v != 42 || res.err != nil {
		t.Fatalf("got %v, %v", res.v, res.err)
	}
	if calls != 3 || !attemptsAt[2].Equal(halfOpenAt) {
		t.Fatalf("%d calls, the last at %v; want 3, the last at the half-open time", calls, attemptsAt[len(attemptsAt)-1].Sub(start))
	}
	if b.State() != breaker.Closed {
		t.Fatalf("breaker %v; want closed after the trial succeeded", b.State())
	}
}

// TestFullStackOrder adds the fallback and the timeout: the timeout bounds
// the operation alone (the guards see no deadline), each attempt has its
// own, and the fallback replaces the failure that remains after the last
// retry.
func TestFullStackOrder(t *testing.T) {
	var log []string
	g := func(name string) *recorder { return &recorder{name: name, log: &log} }
	r, err := retry.New(retry.Config[string]{MaxAttempts: 2, Delay: delay.Strategy{Kind: delay.None},
		Listener: func(e resilience.Event) { log = append(log, fmt.Sprintf("%v %d", e.Kind, e.Attempt)) }})
	if err != nil {
		t.Fatal(err)
	}
	to, err := timeout.New(timeout.Config{Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	fb, err := fallback.New(fallback.Config[string]{Value: "fallback value",
		Listener: func(e resilience.Event) { log = append(log, "fallback after: "+e.Err.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	s := &compose.Stack[string]{Fallback: fb, Retry: r, Breaker: g("breaker"), Pause: g("pause"),
		Limiter: g("limiter"), Bulkhead: g("bulkhead"), Timeout: to}
	v, err := s.Do(context.Background(), func(ctx context.Context) (string, error) {
		if _, ok := ctx.Deadline(); ok {
			log = append(log, "op within its timeout")
		}
		return "", errors.New("boom")
	})
	if v != "fallback value" || err != nil {
		t.Fatalf("got %q, %v", v, err)
	}
	attempt := []string{"enter breaker", "enter pause", "enter limiter", "enter bulkhead", "op within its timeout",
		"exit bulkhead failed", "exit limiter failed", "exit pause failed", "exit breaker failed"}
	want := append(append(append(append([]string{}, attempt...), "retry 1"), attempt...), "give_up 2", "fallback after: boom")
	if strings.Join(log, "\n") != strings.Join(want, "\n") {
		t.Fatalf("order:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
}

func TestEmptyStackRunsTheOperation(t *testing.T) {
	var s compose.Stack[int]
	v, err := s.Do(context.Background(), func(context.Context) (int, error) { return 5, nil })
	if v != 5 || err != nil {
		t.Fatalf("got %v, %v", v, err)
	}
}

// TestPauseInTheStack: a slow-down signal from the operation closes the
// pause; the retry's next attempt waits behind the gate, goes as the probe
// when it opens, and succeeds.
func TestPauseInTheStack(t *testing.T) {
	ctx := testctx.New(t)
	clk := clocktest.New(time.Time{})
	busy := errors.New("too many connections")
	p, err := pause.New(pause.Config{Clock: clk, Classify: func(err error) (time.Duration, bool) {
		return 3 * time.Second, errors.Is(err, busy)
	}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := retry.New(retry.Config[int]{Clock: clk, Delay: delay.Strategy{Kind: delay.None}})
	if err != nil {
		t.Fatal(err)
	}
	s := &compose.Stack[int]{Retry: r, Pause: p}
	calls := 0
	done := make(chan error, 1)
	go func() {
		_, err := s.Do(ctx, func(context.Context) (int, error) {
			calls++
			if calls == 1 {
				return 0, busy
			}
			return 1, nil
		})
		done <- err
	}()
	if err := clk.WaitTimers(ctx, 1); err != nil { // the pause's reopening timer
		t.Fatal(err)
	}
	clk.Advance(3 * time.Second)
	if err := <-done; err != nil || calls != 2 {
		t.Fatalf("err %v after %d calls; want success on the 2nd", err, calls)
	}
	if !p.State().Open {
		t.Fatal("gate not open after the probe succeeded")
	}
}

// TestInnerWaitEndedByContextIsNotAFailure: a call whose deadline passes
// while it waits in an inner guard's queue (here the bulkhead's) never ran;
// the breaker outside must not count it as a failure of the service, or
// queued callers' deadlines would open the circuit of a healthy service.
func TestInnerWaitEndedByContextIsNotAFailure(t *testing.T) {
	bound := testctx.New(t)
	clk := clocktest.New(time.Time{})
	b, err := breaker.New(breaker.Config{Clock: clk, WindowSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	queued := make(chan struct{}, 2)
	bh, err := bulkhead.New(bulkhead.Config{Clock: clk, MaxConcurrent: 1, QueueSize: 10,
		Listener: func(e resilience.Event) {
			if e.Kind == resilience.EventQueued {
				queued <- struct{}{}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	busy, err := bh.Enter(context.Background()) // the only slot, held
	if err != nil {
		t.Fatal(err)
	}
	defer bh.Exit(busy, nil)
	s := &compose.Stack[int]{Breaker: b, Bulkhead: bh}
	for range 2 {
		ctx := testctx.NewDeadline(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := s.Do(ctx, func(context.Context) (int, error) { return 1, nil })
			done <- err
		}()
		select {
		case <-queued:
		case <-bound.Done():
			t.Fatal("the call never queued in the bulkhead")
		}
		ctx.Expire()
		if err := <-done; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v; want the caller's deadline", err)
		}
	}
	if st := b.Stats(); st.State != breaker.Closed || st.Calls != 0 {
		t.Fatalf("breaker %+v; want closed with nothing recorded", st)
	}
}

// TestFallbackLeavesTheCallersEnd: the fallback of a Stack does not turn the
// caller's own cancellation or deadline into a success; a timeout of the
// Stack's own is an attempt's failure, which it does replace.
func TestFallbackLeavesTheCallersEnd(t *testing.T) {
	fb, err := fallback.New(fallback.Config[string]{Value: "fallback value"})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktest.New(time.Time{})
	to, err := timeout.New(timeout.Config{Clock: clk, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := &compose.Stack[string]{Fallback: fb, Timeout: to}

	ctx, cancel := context.WithCancel(context.Background())
	v, err := s.Do(ctx, func(ctx context.Context) (string, error) {
		cancel() // the caller gives up while the operation runs
		<-ctx.Done()
		return "", ctx.Err()
	})
	if v != "" || !errors.Is(err, context.Canceled) {
		t.Fatalf("caller cancelled during the call: %q, %v; want context.Canceled", v, err)
	}
	past, cancelPast := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelPast()
	v, err = s.Do(past, func(ctx context.Context) (string, error) { return "", ctx.Err() })
	if v != "" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("caller's deadline passed: %q, %v; want context.DeadlineExceeded", v, err)
	}

	bound := testctx.New(t)
	done := make(chan string, 1)
	go func() {
		v, _ := s.Do(bound, func(ctx context.Context) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		})
		done <- v
	}()
	if err := clk.WaitTimers(bound, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if v := <-done; v != "fallback value" {
		t.Fatalf("the stack's own timeout: %q; want the fallback value", v)
	}
}

// TestEndedCallerSpendsNothing: a Stack called with a context that has
// already ended runs nothing and returns the context's error: no attempt,
// no guard entered, so the limiter's only permit is still there for the
// next caller; with or without a retry.
func TestEndedCallerSpendsNothing(t *testing.T) {
	r, err := retry.New(retry.Config[int]{Delay: delay.Strategy{Kind: delay.None}})
	if err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, withRetry := range []bool{true, false} {
		l, err := ratelimit.New(ratelimit.Config{Clock: clocktest.New(time.Time{}),
			Limit: ratelimit.Limit{Permits: 1, Period: time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		s := &compose.Stack[int]{Limiter: l}
		if withRetry {
			s.Retry = r
		}
		calls := 0
		op := func(context.Context) (int, error) { calls++; return 1, nil }
		if _, err := s.Do(canceled, op); !errors.Is(err, context.Canceled) || calls != 0 {
			t.Fatalf("retry %v: ended caller: %v after %d calls; want context.Canceled and no call", withRetry, err, calls)
		}
		if v, err := s.Do(context.Background(), op); v != 1 || err != nil {
			t.Fatalf("retry %v: the next caller: %v, %v; want the permit the ended caller left", withRetry, v, err)
		}
	}
}
