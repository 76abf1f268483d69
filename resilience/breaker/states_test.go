package breaker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/delay"
)

func TestForcedOpen(t *testing.T) {
	f := newFixture(t, breaker.Config{})
	if err := f.b.TransitionTo(breaker.ForcedOpen); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Hour) // forced states do not time out
	err := f.call(nil, 0)
	if !errors.Is(err, breaker.ErrForcedOpen) {
		t.Fatalf("err %v; want ErrForcedOpen", err)
	}
	if _, ok := resilience.RetryAfter(err); ok {
		t.Fatal("a forced-open rejection has no retry-after")
	}
}

func TestForcedClosedRecordsButNeverOpens(t *testing.T) {
	f := newFixture(t, breaker.Config{WindowSize: 4})
	if err := f.b.TransitionTo(breaker.ForcedClosed); err != nil {
		t.Fatal(err)
	}
	f.calls(10, errDown)
	f.want(breaker.ForcedClosed)
	if s := f.b.Stats(); s.Calls != 4 || s.Failures != 4 {
		t.Fatalf("window %d/%d; want 4 failures of 4", s.Failures, s.Calls)
	}
}

func TestMetricsOnlyEmitsThreshold(t *testing.T) {
	f := newFixture(t, breaker.Config{WindowSize: 4})
	if err := f.b.TransitionTo(breaker.MetricsOnly); err != nil {
		t.Fatal(err)
	}
	f.calls(10, errDown)
	f.want(breaker.MetricsOnly)
	n := 0
	for _, e := range f.events {
		if e.Kind == resilience.EventThreshold {
			n++
		}
	}
	if n != 2 { // at 4 and 8 calls: the window starts afresh after each
		t.Fatalf("%d threshold events; want 2", n)
	}
}

func TestDisabledRecordsNothing(t *testing.T) {
	f := newFixture(t, breaker.Config{WindowSize: 4})
	if err := f.b.TransitionTo(breaker.Disabled); err != nil {
		t.Fatal(err)
	}
	f.calls(10, errDown)
	if s := f.b.Stats(); s.State != breaker.Disabled || s.Calls != 0 {
		t.Fatalf("stats %+v; want disabled with nothing recorded", s)
	}
	if err := f.b.TransitionTo(breaker.Closed); err != nil {
		t.Fatal(err)
	}
	f.calls(3, errDown)
	f.want(breaker.Closed)
}

func TestManualTransitionsAndReset(t *testing.T) {
	f := newFixture(t, breaker.Config{WindowSize: 2, OpenDelay: delay.Exponentials(time.Second, time.Minute)})
	if err := f.b.TransitionTo(breaker.Open); err != nil {
		t.Fatal(err)
	}
	if err := f.b.TransitionTo(breaker.HalfOpen); err != nil {
		t.Fatal(err)
	}
	if err := f.b.TransitionTo(breaker.Open); err != nil { // the second opening in a row
		t.Fatal(err)
	}
	if got := f.b.Stats().OpenUntil.Sub(f.clk.Now()); got != 2*time.Second {
		t.Fatalf("open for %v; want 2s (second opening)", got)
	}
	f.b.Reset()
	f.want(breaker.Closed)
	f.calls(1, errDown)
	if s := f.b.Stats(); s.Calls != 1 || s.Openings != 0 {
		t.Fatalf("after reset: %+v; want a fresh window", s)
	}
	f.calls(1, errDown)
	if got := f.b.Stats().OpenUntil.Sub(f.clk.Now()); got != time.Second {
		t.Fatalf("open for %v after reset; want 1s", got)
	}
	if err := f.b.TransitionTo(breaker.State(99)); !errors.Is(err, breaker.ErrState) {
		t.Fatalf("unknown state: %v; want ErrState", err)
	}
}

func TestIgnoredAndInnerRejectionsAreNotRecorded(t *testing.T) {
	notMine := errors.New("caller's mistake")
	f := newFixture(t, breaker.Config{WindowSize: 2,
		IsFailure: func(err error) bool { return !errors.Is(err, notMine) }})
	inner := resil.Reject("ratelimit", "", errors.New("limited"), f.clk.Now(), time.Time{})
	f.calls(5, context.Canceled)
	f.calls(5, inner)
	if s := f.b.Stats(); s.Calls != 0 {
		t.Fatalf("%d calls recorded; want none", s.Calls)
	}
	f.calls(5, notMine) // recorded, as successes
	if s := f.b.Stats(); s.Calls != 2 || s.Failures != 0 {
		t.Fatalf("window %d/%d; want 2 calls, no failure", s.Failures, s.Calls)
	}
}

// TestHalfOpenInnerRejectionGivesThePermitBack: a trial call that an inner
// guard rejected never ran, so another caller may take its place.
func TestHalfOpenInnerRejectionGivesThePermitBack(t *testing.T) {
	f := newFixture(t, breaker.Config{WindowSize: 1, HalfOpenCalls: 1, OpenDelay: delay.Constants(time.Second)})
	f.calls(1, errDown)
	f.clk.Advance(time.Second)
	p, err := f.b.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.b.Exit(p, resil.Reject("ratelimit", "", errors.New("limited"), f.clk.Now(), time.Time{}))
	f.calls(1, nil)
	f.want(breaker.Closed)
}

func TestStaleOutcomeIsIgnored(t *testing.T) {
	f := newFixture(t, breaker.Config{WindowSize: 2})
	p, err := f.b.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.b.Reset()
	f.b.Exit(p, errDown)
	if s := f.b.Stats(); s.Calls != 0 {
		t.Fatalf("a call admitted before Reset was recorded: %+v", s)
	}
}

// TestAdaptiveThrottling checks the SRE formula with a fixed random draw:
// with K=2, rejections start once requests exceed twice the accepts, with
// probability (requests − 2·accepts)/(requests + 1) over the requests
// before the one being decided.
func TestAdaptiveThrottling(t *testing.T) {
	draw := 0.5
	f := newFixture(t, breaker.Config{Mode: breaker.Adaptive, Rand: func() float64 { return draw }})
	f.calls(10, nil) // 10 requests, 10 accepts
	f.calls(10, errDown)
	s := f.b.Stats()
	if s.Calls != 20 || s.Accepts != 10 || s.RejectProbability != 0 {
		t.Fatalf("stats %+v; want 20 requests, 10 accepts, p=0", s)
	}
	f.calls(9, errDown) // the 29th request: p = (28-20)/29 ≈ 0.28 < 0.5
	err := f.call(nil, 0)
	if err != nil { // the 30th request: p = (29-20)/30 = 0.3, draw 0.5: admitted
		t.Fatal(err)
	}
	draw = 0.3
	err = f.call(nil, 0) // request 31 after 11 accepts: p = (30-22)/31 ≈ 0.26 < 0.3
	if err != nil {
		t.Fatal(err)
	}
	draw = 0.1
	err = f.call(nil, 0) // request 32 after 12 accepts: p = (31-24)/32 ≈ 0.22 > 0.1
	if !errors.Is(err, breaker.ErrThrottled) {
		t.Fatalf("err %v; want ErrThrottled", err)
	}
	f.clk.Advance(2 * time.Minute) // the window passes
	if s := f.b.Stats(); s.Calls != 0 || s.RejectProbability != 0 {
		t.Fatalf("after the window: %+v", s)
	}
	if err := f.b.TransitionTo(breaker.Open); !errors.Is(err, breaker.ErrState) {
		t.Fatalf("adaptive TransitionTo(Open): %v; want ErrState", err)
	}
}

func TestConcurrentCallsKeepCountsExact(t *testing.T) {
	f := newFixture(t, breaker.Config{WindowSize: 64, MinimumCalls: 64, FailureRate: 1})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				p, err := f.b.Enter(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				var out error
				if (g+i)%4 == 0 {
					out = errDown
				}
				f.b.Exit(p, out)
			}
		}()
	}
	wg.Wait()
	s := f.b.Stats()
	if s.Calls != 64 || s.Failures < 0 || s.Failures > 64 {
		t.Fatalf("window %+v", s)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for field, c := range map[string]breaker.Config{
		"FailureRate":    {FailureRate: 1.5},
		"SlowCallRate":   {SlowCallRate: -1},
		"WindowSize":     {WindowSize: -1},
		"OpenDelay.Kind": {OpenDelay: delay.Strategy{Kind: delay.Linear, Initial: time.Second}},
		"WindowBuckets":  {WindowDuration: 5, WindowBuckets: 10},
		"ThrottleK":      {Mode: breaker.Adaptive, ThrottleK: 0.5}, // would throttle a healthy service
	} {
		_, err := breaker.New(c)
		var ce *resilience.ConfigError
		if !errors.As(err, &ce) || ce.Field != field {
			t.Errorf("error %v; want a ConfigError on %s", err, field)
		}
	}
}

// TestAdaptiveIgnoresWhatItDoesNotRecord: calls that an inner guard
// rejected, or whose caller cancelled, say nothing about the service: in
// adaptive mode they must not count as requests without an accept, or
// the breaker would throttle because a local rate limiter rejects.
func TestAdaptiveIgnoresWhatItDoesNotRecord(t *testing.T) {
	f := newFixture(t, breaker.Config{Mode: breaker.Adaptive, Rand: func() float64 { return 0 }})
	f.calls(10, nil)
	inner := resil.Reject("ratelimit", "", errors.New("limited"), f.clk.Now(), time.Time{})
	for range 100 {
		if err := f.call(inner, 0); err != nil {
			t.Fatalf("rejected: %v", err)
		}
		if err := f.call(context.Canceled, 0); err != nil {
			t.Fatalf("rejected: %v", err)
		}
	}
	if s := f.b.Stats(); s.Calls != 10 || s.Accepts != 10 || s.RejectProbability != 0 {
		t.Fatalf("stats %+v; want 10 requests, 10 accepts", s)
	}
}

// TestAdaptiveColdStartAdmits: with no history there is nothing to throttle
// on; the probability is computed over the calls before this one, so a
// fresh breaker (or one whose window emptied while idle) admits the first
// call even with the lowest draw.
func TestAdaptiveColdStartAdmits(t *testing.T) {
	f := newFixture(t, breaker.Config{Mode: breaker.Adaptive, Rand: func() float64 { return 0 }})
	if err := f.call(nil, 0); err != nil {
		t.Fatalf("first call: %v", err)
	}
	f.clk.Advance(3 * time.Minute) // the window empties
	if err := f.call(nil, 0); err != nil {
		t.Fatalf("first call after an idle window: %v", err)
	}
}

// TestHalfOpenFullRetryAfterIsNeverNow: a rejection for taken trial calls
// says to come back after an open delay; when there was no opening yet (a
// manual move to HalfOpen) it must not say "now", which would make a retry
// spend its attempts at once.
func TestHalfOpenFullRetryAfterIsNeverNow(t *testing.T) {
	f := newFixture(t, breaker.Config{HalfOpenCalls: 1})
	if err := f.b.TransitionTo(breaker.HalfOpen); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := f.b.Enter(context.Background())
	if !errors.Is(err, breaker.ErrHalfOpenFull) {
		t.Fatalf("err %v; want ErrHalfOpenFull", err)
	}
	if at, ok := resilience.RetryAfter(err); ok && !at.After(f.clk.Now()) {
		t.Fatalf("retry after %v: now", at)
	}
}
