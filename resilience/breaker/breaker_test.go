package breaker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/delay"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errDown = errors.New("down")

type fixture struct {
	t      *testing.T
	clk    *clocktest.Clock
	b      *breaker.Breaker
	events []resilience.Event
}

func newFixture(t *testing.T, c breaker.Config) *fixture {
	t.Helper()
	f := &fixture{t: t, clk: clocktest.New(time.Time{})}
	c.Clock = f.clk
	c.Listener = func(e resilience.Event) { f.events = append(f.events, e) }
	b, err := breaker.New(c)
	if err != nil {
		t.Fatal(err)
	}
	f.b = b
	return f
}

// call runs one call with outcome err, taking d; it returns the rejection,
// if any.
func (f *fixture) call(err error, d time.Duration) error {
	p, rej := f.b.Enter(context.Background())
	if rej != nil {
		return rej
	}
	f.clk.Advance(d)
	f.b.Exit(p, err)
	return nil
}

func (f *fixture) calls(n int, err error) {
	f.t.Helper()
	for i := range n {
		if rej := f.call(err, 0); rej != nil {
			f.t.Fatalf("call %d of %d rejected: %v", i+1, n, rej)
		}
	}
}

func (f *fixture) want(s breaker.State) {
	f.t.Helper()
	if got := f.b.State(); got != s {
		f.t.Fatalf("state %v; want %v", got, s)
	}
}

func (f *fixture) transitions() []string {
	var out []string
	for _, e := range f.events {
		if e.Kind == resilience.EventStateChange {
			out = append(out, e.From+">"+e.To)
		}
	}
	return out
}

func TestCountWindowOpensAtTheFailureRate(t *testing.T) {
	f := newFixture(t, breaker.Config{WindowSize: 10, MinimumCalls: 10, FailureRate: 0.5})
	f.calls(6, nil)
	f.calls(3, errDown) // 9 calls: under the minimum
	f.want(breaker.Closed)
	f.calls(1, nil) // 10 calls, 3 failures: 30%
	f.want(breaker.Closed)
	f.calls(2, errDown) // the window slides: 10 calls, 5 failures: 50%
	f.want(breaker.Open)
}

func TestCountWindowForgetsOldFailures(t *testing.T) {
	f := newFixture(t, breaker.Config{WindowSize: 4, FailureRate: 0.75})
	f.calls(2, errDown)
	f.calls(4, nil) // the failures slide out
	f.calls(2, errDown)
	f.want(breaker.Closed) // 2 of 4
	f.calls(1, errDown)
	f.want(breaker.Open) // 3 of 4
}

// TestOpenRejectsUntilHalfOpenTime checks the rejection: a RejectedError
// matching ErrOpen whose retry-after is the half-open time; and that the
// circuit half-opens exactly then.
func TestOpenRejectsUntilHalfOpenTime(t *testing.T) {
	f := newFixture(t, breaker.Config{WindowSize: 2, OpenDelay: delay.Constants(30 * time.Second)})
	f.calls(2, errDown)
	opened := f.clk.Now()
	f.clk.Advance(30*time.Second - 1)
	err := f.call(nil, 0)
	var rej *resilience.RejectedError
	if !errors.Is(err, breaker.ErrOpen) || !errors.Is(err, resilience.ErrRejected) || !errors.As(err, &rej) {
		t.Fatalf("err %v; want a RejectedError matching ErrOpen", err)
	}
	if at, ok := resilience.RetryAfter(err); !ok || !at.Equal(opened.Add(30*time.Second)) {
		t.Fatalf("retry-after %v; want opened+30s", at)
	}
	f.clk.Advance(1)
	f.want(breaker.HalfOpen)
	if s := f.b.Stats(); s.Rejected != 1 {
		t.Fatalf("Rejected %d; want 1", s.Rejected)
	}
}

func TestHalfOpenPermitsThenCloses(t *testing.T) {
	f := newFixture(t, breaker.Config{WindowSize: 2, HalfOpenCalls: 3, OpenDelay: delay.Constants(time.Second)})
	f.calls(2, errDown)
	f.clk.Advance(time.Second)
	var permits []resilience.Permit
	for range 3 {
		p, err := f.b.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		permits = append(permits, p)
	}
	_, err := f.b.Enter(context.Background())
	if !errors.Is(err, breaker.ErrHalfOpenFull) {
		t.Fatalf("4th half-open call: %v; want ErrHalfOpenFull", err)
	}
	if at, ok := resilience.RetryAfter(err); !ok || at.Sub(f.clk.Now()) != time.Second {
		t.Fatalf("retry-after %v; want now+open delay", at)
	}
	f.b.Exit(permits[0], nil)
	f.b.Exit(permits[1], nil)
	f.want(breaker.HalfOpen)
	f.b.Exit(permits[2], errDown) // 1 of 3 failed: under 50%
	f.want(breaker.Closed)
	if got := f.transitions(); len(got) != 3 || got[2] != "half_open>closed" {
		t.Fatalf("transitions %v", got)
	}
}

// TestOpenDelayGrowsWhileTrialsFail checks the exponential open delay, its
// cap, and that closing resets it.
func TestOpenDelayGrowsWhileTrialsFail(t *testing.T) {
	f := newFixture(t, breaker.Config{WindowSize: 1, HalfOpenCalls: 1,
		OpenDelay: delay.Exponentials(time.Second, 3*time.Second)})
	f.calls(1, errDown)
	for _, want := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second} {
		s := f.b.Stats()
		if got := s.OpenUntil.Sub(f.clk.Now()); s.State != breaker.Open || got != want {
			t.Fatalf("open for %v (state %v); want %v", got, s.State, want)
		}
		f.clk.Advance(want)
		if err := f.call(errDown, 0); err != nil { // the trial fails
			t.Fatal(err)
		}
	}
	f.clk.Advance(3 * time.Second)
	f.calls(1, nil) // the trial succeeds: closed
	f.want(breaker.Closed)
	f.calls(1, errDown)
	if got := f.b.Stats().OpenUntil.Sub(f.clk.Now()); got != time.Second {
		t.Fatalf("open for %v after closing; want the first delay again", got)
	}
}

func TestHalfOpenMaxWait(t *testing.T) {
	f := newFixture(t, breaker.Config{WindowSize: 1, HalfOpenCalls: 2, HalfOpenMaxWait: 5 * time.Second,
		OpenDelay: delay.Constants(time.Second)})
	f.calls(1, errDown)
	f.clk.Advance(time.Second)
	p, err := f.b.Enter(context.Background()) // one trial, and the second never comes
	if err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(5*time.Second - 1)
	f.want(breaker.HalfOpen)
	f.clk.Advance(1)
	f.want(breaker.Open)
	f.b.Exit(p, nil) // a trial of an older generation: not recorded
	f.want(breaker.Open)
}

func TestSlowCallsOpen(t *testing.T) {
	f := newFixture(t, breaker.Config{WindowSize: 4, SlowCallDuration: time.Second, SlowCallRate: 0.5})
	for _, d := range []time.Duration{10 * time.Millisecond, time.Second - 1, time.Second} {
		if err := f.call(nil, d); err != nil {
			t.Fatal(err)
		}
	}
	f.want(breaker.Closed) // 1 slow of 3
	if err := f.call(nil, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	f.want(breaker.Open) // 2 slow of 4
	if s := f.b.Stats(); s.State != breaker.Open {
		t.Fatalf("stats %+v", s)
	}
}

func TestTimeWindow(t *testing.T) {
	f := newFixture(t, breaker.Config{Window: breaker.TimeWindow, WindowDuration: 10 * time.Second,
		WindowBuckets: 10, MinimumCalls: 4, FailureRate: 0.5})
	f.calls(2, errDown)
	f.clk.Advance(10 * time.Second) // both failures leave the window
	f.calls(3, nil)
	f.calls(1, errDown)
	f.want(breaker.Closed) // 1 of 4
	if s := f.b.Stats(); s.Calls != 4 || s.Failures != 1 {
		t.Fatalf("window %d calls, %d failures; want 4, 1", s.Calls, s.Failures)
	}
	f.clk.Advance(9 * time.Second) // those 4 are still inside: buckets of 1s
	f.calls(1, errDown)
	f.want(breaker.Closed) // 2 of 5
	f.calls(1, errDown)
	f.want(breaker.Open) // 3 of 6
}

func TestTimeWindowSlidesByBucket(t *testing.T) {
	f := newFixture(t, breaker.Config{Window: breaker.TimeWindow, WindowDuration: 10 * time.Second,
		WindowBuckets: 10, MinimumCalls: 1})
	f.calls(1, nil)
	f.clk.Advance(10*time.Second - 1)
	if s := f.b.Stats(); s.Calls != 1 {
		t.Fatalf("after 10s-1ns: %d calls; want 1", s.Calls)
	}
	f.clk.Advance(1)
	if s := f.b.Stats(); s.Calls != 0 {
		t.Fatalf("after 10s: %d calls; want 0", s.Calls)
	}
}

// TestHalfOpenMaxWaitAppliesToLateTrials: trial calls that end after
// HalfOpenMaxWait find the circuit already due to reopen; their successes
// must not close it, whether or not anyone looked at the state meanwhile.
func TestHalfOpenMaxWaitAppliesToLateTrials(t *testing.T) {
	f := newFixture(t, breaker.Config{WindowSize: 1, HalfOpenCalls: 1, HalfOpenMaxWait: 5 * time.Second,
		OpenDelay: delay.Constants(time.Second)})
	f.calls(1, errDown)
	f.clk.Advance(time.Second)
	p, err := f.b.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(5 * time.Second) // nobody calls State: the transition is due, not made
	f.b.Exit(p, nil)
	f.want(breaker.Open)
}

// TestHalfOpenMaxWaitReopensAtItsDueTime: HalfOpenMaxWait reopens the
// circuit when it is due, not when the next call happens to look. Open
// delay 5s, max wait 1s, a trial that hangs from 5s: the circuit reopens at
// 6s, so a call at 12s is the trial of the next half-open (a constant delay:
// open until 11s), or is refused until 16s (an exponential one: the second
// opening, 10s from 6s), whoever looked in between. (It reopened at 12s,
// when the call came, and refused it until 17s or 22s.)
func TestHalfOpenMaxWaitReopensAtItsDueTime(t *testing.T) {
	for _, tc := range []struct {
		name     string
		delay    delay.Strategy
		openedAt time.Duration // the reopening's end, from the start
	}{
		{"constant", delay.Constants(5 * time.Second), 11 * time.Second},
		{"exponential", delay.Exponentials(5*time.Second, time.Minute), 16 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, breaker.Config{WindowSize: 1, HalfOpenCalls: 1, HalfOpenMaxWait: time.Second,
				OpenDelay: tc.delay})
			start := f.clk.Now()
			f.calls(1, errDown) // open from 0s to 5s
			f.clk.Advance(5 * time.Second)
			hung, err := f.b.Enter(context.Background()) // the trial, which hangs
			if err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(7 * time.Second) // 12s; nobody looked since 5s
			p, err := f.b.Enter(context.Background())
			var reopen resilience.Event
			for _, e := range f.events {
				if e.Kind == resilience.EventStateChange && e.From == "half_open" {
					reopen = e
				}
			}
			if at := reopen.Time.Sub(start); reopen.To != "open" || at != 6*time.Second || !reopen.RetryAt.Equal(start.Add(tc.openedAt)) {
				t.Fatalf("reopened (%s>%s) at %v until %v; want at 6s until %v", reopen.From, reopen.To, at,
					reopen.RetryAt.Sub(start), tc.openedAt)
			}
			if tc.openedAt <= 12*time.Second {
				if err != nil {
					t.Fatalf("call at 12s: %v; want it admitted as the trial of the half-open after the reopening at 6s", err)
				}
				f.b.Exit(hung, errDown) // the old trial ends late: not recorded
				f.b.Exit(p, nil)
				f.want(breaker.Closed)
				return
			}
			at, ok := resilience.RetryAfter(err)
			if !errors.Is(err, breaker.ErrOpen) || !ok || at.Sub(start) != tc.openedAt {
				t.Fatalf("call at 12s: %v (retry at %v); want ErrOpen until %v", err, at.Sub(start), tc.openedAt)
			}
			if s := f.b.Stats(); s.Openings != 2 || s.OpenUntil.Sub(start) != tc.openedAt {
				t.Fatalf("stats %+v; want the second opening, until %v", s, tc.openedAt)
			}
			f.b.Exit(hung, nil)
		})
	}
}

// TestMinimumCallsAboveWindowSize: a count window can never hold more
// than WindowSize calls, so a larger MinimumCalls would keep the circuit
// closed for ever; it is refused.
func TestMinimumCallsAboveWindowSize(t *testing.T) {
	_, err := breaker.New(breaker.Config{WindowSize: 5, MinimumCalls: 10})
	var ce *resilience.ConfigError
	if !errors.As(err, &ce) || ce.Field != "MinimumCalls" {
		t.Fatalf("err %v; want a ConfigError on MinimumCalls", err)
	}
	// A time window may hold any number of calls.
	if _, err := breaker.New(breaker.Config{Window: breaker.TimeWindow, WindowSize: 5, MinimumCalls: 10}); err != nil {
		t.Fatal(err)
	}
}

// TestCheckTakesNoPermit checks that Check answers as Enter would without
// admitting: it admits while Closed, rejects with Enter's error while Open,
// and in HalfOpen admits while a trial permit is free but leaves it to
// the next Enter, then rejects once it is taken.
func TestCheckTakesNoPermit(t *testing.T) {
	f := newFixture(t, breaker.Config{WindowSize: 2, HalfOpenCalls: 1, OpenDelay: delay.Constants(time.Second)})
	if err := f.b.Check(); err != nil {
		t.Fatalf("Check while closed: %v", err)
	}
	f.calls(2, errDown)
	err := f.b.Check()
	if !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("Check while open: %v; want ErrOpen", err)
	}
	if at, ok := resilience.RetryAfter(err); !ok || !at.Equal(f.clk.Now().Add(time.Second)) {
		t.Fatalf("retry-after %v; want the half-open time", at)
	}
	f.clk.Advance(time.Second)
	for range 3 {
		if err := f.b.Check(); err != nil {
			t.Fatalf("Check while half-open with the trial free: %v", err)
		}
	}
	p, err := f.b.Enter(context.Background())
	if err != nil {
		t.Fatalf("the trial after Checks: %v", err)
	}
	if err := f.b.Check(); !errors.Is(err, breaker.ErrHalfOpenFull) {
		t.Fatalf("Check with the trial taken: %v; want ErrHalfOpenFull", err)
	}
	f.b.Exit(p, nil)
	f.want(breaker.Closed)
	if s := f.b.Stats(); s.Rejected != 2 {
		t.Fatalf("Rejected %d; want 2 (each rejecting Check counts)", s.Rejected)
	}
}
