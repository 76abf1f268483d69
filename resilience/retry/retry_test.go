package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/delay"
	"github.com/respool/respool/resilience/internal/testctx"
	"github.com/respool/respool/resilience/retry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errTransient = errors.New("transient")

// failing returns an op that fails n times, then returns v, counting calls.
func failing(n int, v int, calls *int) func(context.Context) (int, error) {
	return func(context.Context) (int, error) {
		*calls++
		if *calls <= n {
			return 0, errTransient
		}
		return v, nil
	}
}

func mustNew[T any](t *testing.T, c retry.Config[T]) *retry.Retry[T] {
	t.Helper()
	r, err := retry.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestFirstAttemptSucceeds(t *testing.T) {
	r := mustNew(t, retry.Config[int]{})
	calls := 0
	v, err := r.Do(context.Background(), failing(0, 7, &calls))
	if v != 7 || err != nil || calls != 1 {
		t.Fatalf("got %v, %v after %d calls; want 7, nil after 1", v, err, calls)
	}
}

// TestDelaysOnTheVirtualClock runs retries in a goroutine and moves the
// clock by each expected delay once the retry's timer is set.
func TestDelaysOnTheVirtualClock(t *testing.T) {
	ctx := testctx.New(t)
	clk := clocktest.New(time.Time{})
	var events []resilience.Event
	r := mustNew(t, retry.Config[int]{MaxAttempts: 4, Clock: clk,
		Delay:    delay.Exponentials(100*time.Millisecond, 250*time.Millisecond),
		Listener: func(e resilience.Event) { events = append(events, e) }})
	calls := 0
	type result struct {
		v   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := r.Do(ctx, failing(3, 9, &calls))
		done <- result{v, err}
	}()
	start := clk.Now()
	for _, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond} {
		if err := clk.WaitTimers(ctx, 1); err != nil {
			t.Fatal(err)
		}
		next, _ := clk.Next()
		if got := next.Sub(clk.Now()); got != want {
			t.Fatalf("delay %v; want %v", got, want)
		}
		clk.Advance(want)
	}
	res := <-done
	if res.v != 9 || res.err != nil || calls != 4 {
		t.Fatalf("got %v, %v after %d calls; want 9, nil after 4", res.v, res.err, calls)
	}
	if got := clk.Now().Sub(start); got != 550*time.Millisecond {
		t.Fatalf("elapsed %v; want 550ms", got)
	}
	if s := r.Stats(); s.Retries != 3 || s.GiveUps != 0 {
		t.Fatalf("stats %+v; want 3 retries", s)
	}
	if len(events) != 3 || events[0].Kind != resilience.EventRetry || events[2].Attempt != 3 {
		t.Fatalf("events %+v; want 3 retries", events)
	}
}

func TestGivesUpAfterMaxAttempts(t *testing.T) {
	var gaveUp int
	r := mustNew(t, retry.Config[int]{MaxAttempts: 3, Delay: delay.Strategy{Kind: delay.None},
		Listener: func(e resilience.Event) {
			if e.Kind == resilience.EventGiveUp {
				gaveUp = e.Attempt
			}
		}})
	calls := 0
	_, err := r.Do(context.Background(), failing(10, 0, &calls))
	if !errors.Is(err, errTransient) || calls != 3 || gaveUp != 3 {
		t.Fatalf("err %v after %d calls (give-up event at %d); want errTransient after 3", err, calls, gaveUp)
	}
}

func TestRetryOnPredicates(t *testing.T) {
	permanent := errors.New("permanent")
	r := mustNew(t, retry.Config[int]{Delay: delay.Strategy{Kind: delay.None},
		RetryOn: func(err error) bool { return !errors.Is(err, permanent) }})
	calls := 0
	_, err := r.Do(context.Background(), func(context.Context) (int, error) { calls++; return 0, permanent })
	if !errors.Is(err, permanent) || calls != 1 {
		t.Fatalf("err %v after %d calls; want permanent after 1", err, calls)
	}

	r = mustNew(t, retry.Config[int]{Delay: delay.Strategy{Kind: delay.None}, MaxAttempts: 5,
		RetryOnResult: func(v int) bool { return v < 3 }})
	calls = 0
	v, err := r.Do(context.Background(), func(context.Context) (int, error) { calls++; return calls, nil })
	if v != 3 || err != nil {
		t.Fatalf("got %v, %v; want 3, nil", v, err)
	}
}

func TestCallersContextErrorsAreNotRetried(t *testing.T) {
	r := mustNew(t, retry.Config[int]{Delay: delay.Strategy{Kind: delay.None}})
	calls := 0
	_, err := r.Do(context.Background(), func(context.Context) (int, error) { calls++; return 0, context.Canceled })
	if calls != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("%d calls, err %v; want 1 call", calls, err)
	}
}

func TestMapResult(t *testing.T) {
	r := mustNew(t, retry.Config[int]{Delay: delay.Strategy{Kind: delay.None}, MaxAttempts: 2,
		MapResult: func(v int, err error) (int, error) {
			if err != nil {
				return -1, nil // give a default instead of failing
			}
			return v * 10, nil
		}})
	calls := 0
	if v, err := r.Do(context.Background(), failing(5, 0, &calls)); v != -1 || err != nil {
		t.Fatalf("failure mapped to %v, %v; want -1, nil", v, err)
	}
	calls = 0
	if v, err := r.Do(context.Background(), failing(1, 4, &calls)); v != 40 || err != nil {
		t.Fatalf("success mapped to %v, %v; want 40, nil", v, err)
	}
}

// TestWaitEndsWithTheContext cancels the context while a retry waits: Do
// returns at once with both the context's error and the last failure.
func TestWaitEndsWithTheContext(t *testing.T) {
	bound := testctx.New(t)
	clk := clocktest.New(time.Time{})
	r := mustNew(t, retry.Config[int]{Clock: clk, Delay: delay.Constants(time.Hour)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		calls := 0
		_, err := r.Do(ctx, failing(10, 0, &calls))
		done <- err
	}()
	if err := clk.WaitTimers(bound, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errTransient) {
		t.Fatalf("err %v; want both context.Canceled and the last failure", err)
	}
}

// serverBusy is a server's error that says when to come back.
type serverBusy struct{ d time.Duration }

func (e serverBusy) Error() string { return "busy" }

// TestRetryAfterHonoured shows both sources of a retry-after: an error that
// implements resilience.RetryAfterer (absolute), and Config.RetryAfter
// reading a server's duration. Each replaces the strategy's delay.
func TestRetryAfterHonoured(t *testing.T) {
	ctx := testctx.New(t)
	clk := clocktest.New(time.Time{})
	until := clk.Now().Add(7 * time.Second)
	rejected := resil.Reject("test", "", errTransient, clk.Now(), until)
	r := mustNew(t, retry.Config[int]{Clock: clk, MaxAttempts: 3, Delay: delay.Constants(time.Millisecond),
		RetryAfter: func(err error) (time.Duration, bool) {
			var b serverBusy
			if errors.As(err, &b) {
				return b.d, true
			}
			return 0, false
		}})
	calls := 0
	done := make(chan error, 1)
	go func() {
		_, err := r.Do(ctx, func(context.Context) (int, error) {
			calls++
			switch calls {
			case 1:
				return 0, rejected
			case 2:
				return 0, serverBusy{3 * time.Second}
			}
			return 1, nil
		})
		done <- err
	}()
	for _, want := range []time.Time{until, until.Add(3 * time.Second)} {
		if err := clk.WaitTimers(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if next, _ := clk.Next(); !next.Equal(want) {
			t.Fatalf("retry set for %v; want %v", next, want)
		}
		clk.Advance(want.Sub(clk.Now()))
	}
	if err := <-done; err != nil || calls != 3 {
		t.Fatalf("err %v after %d calls; want nil after 3", err, calls)
	}
}

func TestRetryAfterPastMaxElapsedGivesUpAtOnce(t *testing.T) {
	clk := clocktest.New(time.Time{})
	r := mustNew(t, retry.Config[int]{Clock: clk, MaxElapsed: time.Second})
	rejected := resil.Reject("test", "", errTransient, clk.Now(), clk.Now().Add(time.Minute))
	calls := 0
	_, err := r.Do(context.Background(), func(context.Context) (int, error) { calls++; return 0, rejected })
	if _, waiting := clk.Next(); calls != 1 || !errors.Is(err, errTransient) || waiting {
		t.Fatalf("%d calls, err %v; want 1 call and no wait", calls, err)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for field, c := range map[string]retry.Config[int]{
		"MaxAttempts":   {MaxAttempts: -1},
		"MaxElapsed":    {MaxElapsed: -time.Second},
		"Delay.Initial": {Delay: delay.Strategy{Kind: delay.Linear}},
	} {
		_, err := retry.New(c)
		var ce *resilience.ConfigError
		if !errors.As(err, &ce) || ce.Field != field || ce.Mechanism != "retry" {
			t.Errorf("error %v; want a retry ConfigError on %s", err, field)
		}
	}
}

// TestEndedContextRunsNothing: a Do whose context has already ended
// (cancelled, or past its deadline) does not run its first attempt; it
// returns the context's error.
func TestEndedContextRunsNothing(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	past, cancelPast := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelPast()
	var events []resilience.Event
	r := mustNew(t, retry.Config[int]{Listener: func(e resilience.Event) { events = append(events, e) }})
	for _, tc := range []struct {
		ctx  context.Context
		want error
	}{{canceled, context.Canceled}, {past, context.DeadlineExceeded}} {
		calls := 0
		v, err := r.Do(tc.ctx, failing(0, 7, &calls))
		if calls != 0 || v != 0 || !errors.Is(err, tc.want) {
			t.Fatalf("ended context: %v, %v after %d calls; want no call and %v", v, err, calls, tc.want)
		}
	}
	if len(events) != 0 || r.Stats() != (retry.Stats{}) {
		t.Fatalf("events %v, stats %+v; want none", events, r.Stats())
	}
}

// firedClock's timers have fired by the time they are set, and setting one
// ends the caller's context: the retry's wait then finds both ready.
type firedClock struct {
	*clocktest.Clock
	cancel context.CancelFunc
}

func (c firedClock) NewTimer(time.Duration) clock.Timer {
	c.cancel()
	return c.Clock.NewTimer(0)
}

// TestNoAttemptAfterTheContextEnds: when a retry's delay and the caller's
// context end together, the next attempt is not started with the ended
// context (a select between the two picks either).
func TestNoAttemptAfterTheContextEnds(t *testing.T) {
	for i := range 64 {
		ctx, cancel := context.WithCancel(context.Background())
		r := mustNew(t, retry.Config[int]{Clock: firedClock{clocktest.New(time.Time{}), cancel},
			Delay: delay.Constants(time.Second)})
		calls, late := 0, 0
		_, err := r.Do(ctx, func(ctx context.Context) (int, error) {
			calls++
			if ctx.Err() != nil {
				late++
			}
			return 0, errTransient
		})
		cancel()
		if late != 0 || calls != 1 || !errors.Is(err, context.Canceled) || !errors.Is(err, errTransient) {
			t.Fatalf("run %d: %d attempts, %d of them with the context ended, err %v; want 1 and none, and both errors", i, calls, late, err)
		}
	}
}
