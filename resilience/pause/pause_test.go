package pause_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/internal/testctx"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/pause"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// slowDown is a server's "slow down for d".
type slowDown struct{ d time.Duration }

func (e slowDown) Error() string { return fmt.Sprintf("slow down for %v", e.d) }

func classify(err error) (time.Duration, bool) {
	var s slowDown
	if errors.As(err, &s) {
		return s.d, true
	}
	return 0, false
}

type fixture struct {
	t      *testing.T
	ctx    context.Context
	clk    *clocktest.Clock
	p      *pause.Pause
	events chan resilience.Event
}

func newFixture(t *testing.T, c pause.Config) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: testctx.New(t), clk: clocktest.New(time.Time{}), events: make(chan resilience.Event, 100)}
	c.Clock = f.clk
	c.Classify = classify
	c.Listener = func(e resilience.Event) { f.events <- e }
	p, err := pause.New(c)
	if err != nil {
		t.Fatal(err)
	}
	f.p = p
	return f
}

// await returns the next event of kind k, skipping others.
func (f *fixture) await(k resilience.EventKind) resilience.Event {
	f.t.Helper()
	for {
		select {
		case e := <-f.events:
			if e.Kind == k {
				return e
			}
		case <-f.ctx.Done():
			f.t.Fatalf("no %v event", k)
		}
	}
}

// call runs one call that ends with err; it fails the test if the gate
// does not let it through at once.
func (f *fixture) call(err error) {
	f.t.Helper()
	pm, e := f.p.Enter(f.ctx)
	if e != nil {
		f.t.Fatal(e)
	}
	f.p.Exit(pm, err)
}

type entered struct {
	pm  resilience.Permit
	err error
}

// enterAsync starts an Enter and waits until it waits behind the gate.
func (f *fixture) enterAsync(ctx context.Context) <-chan entered {
	ch := make(chan entered, 1)
	go func() {
		pm, err := f.p.Enter(ctx)
		ch <- entered{pm, err}
	}()
	f.await(resilience.EventQueued)
	return ch
}

func (f *fixture) state() pause.State { return f.p.State() }

func TestSignalClosesTheGate(t *testing.T) {
	f := newFixture(t, pause.Config{})
	f.call(errors.New("syntax error")) // not a signal
	if !f.state().Open {
		t.Fatal("a plain error closed the gate")
	}
	start := f.clk.Now()
	f.call(slowDown{5 * time.Second})
	s := f.state()
	if s.Open || !s.Until.Equal(start.Add(5*time.Second)) || !errors.As(s.Reason, new(slowDown)) {
		t.Fatalf("state %+v; want closed until +5s because of the signal", s)
	}
	if e := f.await(resilience.EventPaused); e.Delay != 5*time.Second {
		t.Fatalf("paused event %+v", e)
	}
}

// TestExtendedNeverShortened: a longer signal extends the pause; a shorter
// one leaves it.
func TestExtendedNeverShortened(t *testing.T) {
	f := newFixture(t, pause.Config{Escalation: 1})
	start := f.clk.Now()
	f.p.Hold(5*time.Second, errors.New("first"))
	f.clk.Advance(time.Second)
	f.p.Hold(10*time.Second, errors.New("longer"))
	if got := f.state().Until.Sub(start); got != 11*time.Second {
		t.Fatalf("until +%v; want +11s", got)
	}
	f.clk.Advance(time.Second)
	f.p.Hold(2*time.Second, errors.New("shorter"))
	if s := f.state(); s.Until.Sub(start) != 11*time.Second || s.Reason.Error() != "longer" {
		t.Fatalf("state %+v; want still +11s for the longer signal", s)
	}
	// The timer was moved: nothing reopens at +5s.
	f.clk.Advance(start.Add(11*time.Second - 1).Sub(f.clk.Now()))
	if f.state().Probing {
		t.Fatal("reopened before the extended end")
	}
	f.clk.Advance(start.Add(11 * time.Second).Sub(f.clk.Now()))
	if !f.state().Probing {
		t.Fatal("not reopened at the extended end")
	}
}

// TestSingleProbeThenEveryone: callers wait behind the gate; at its end the
// first waiter alone goes as the probe; newcomers wait too; when the probe
// succeeds everyone passes and the gate is open.
func TestSingleProbeThenEveryone(t *testing.T) {
	f := newFixture(t, pause.Config{})
	f.p.Hold(time.Second, slowDown{time.Second})
	first := f.enterAsync(f.ctx)
	second := f.enterAsync(f.ctx)
	if s := f.state(); s.Waiting != 2 {
		t.Fatalf("%d waiting; want 2", s.Waiting)
	}
	f.clk.Advance(time.Second)
	probe := <-first
	if probe.err != nil || probe.pm.Token != 1 {
		t.Fatalf("first waiter: %+v; want the probe", probe)
	}
	third := f.enterAsync(f.ctx) // arrives while the probe runs
	select {
	case e := <-second:
		t.Fatalf("second passed before the probe ended: %+v", e)
	default:
	}
	f.p.Exit(probe.pm, nil)
	for _, ch := range []<-chan entered{second, third} {
		if e := <-ch; e.err != nil || e.pm.Token != 0 {
			t.Fatalf("waiter after the probe: %+v", e)
		}
	}
	if s := f.state(); !s.Open || s.Waiting != 0 {
		t.Fatalf("state %+v; want open", s)
	}
}

// TestProbesInFIFOOrderAndEscalation: each failed probe pauses again,
// longer (escalation), and the next probe is the next waiter in arrival
// order; a signal long after reopening is not escalated; MaxPause caps.
func TestProbesInFIFOOrderAndEscalation(t *testing.T) {
	f := newFixture(t, pause.Config{MaxPause: 7 * time.Second})
	f.p.Hold(time.Second, slowDown{time.Second})
	var waiters []<-chan entered
	for range 3 {
		waiters = append(waiters, f.enterAsync(f.ctx))
	}
	for i, wantNext := range []time.Duration{2 * time.Second, 4 * time.Second, 7 * time.Second} {
		next, _ := f.clk.Next()
		f.clk.Advance(next.Sub(f.clk.Now()))
		probe := <-waiters[i]
		if probe.pm.Token != 1 {
			t.Fatalf("waiter %d: %+v; want the probe", i, probe)
		}
		f.p.Exit(probe.pm, slowDown{time.Second}) // the server still says 1s
		if got := f.state().LastPause; got != wantNext {
			t.Fatalf("after failed probe %d: pause %v; want %v", i, got, wantNext)
		}
	}
	if s := f.state(); s.Escalations != 3 {
		t.Fatalf("%d escalations; want 3", s.Escalations)
	}
	next, _ := f.clk.Next()
	f.clk.Advance(next.Sub(f.clk.Now()))
	f.call(nil) // the probe (no waiter left) succeeds: open
	f.clk.Advance(8 * time.Second)
	f.call(slowDown{time.Second}) // long after reopening: not escalated
	if got := f.state().LastPause; got != time.Second {
		t.Fatalf("pause %v; want 1s", got)
	}
}

func TestSignalRightAfterReopeningEscalates(t *testing.T) {
	f := newFixture(t, pause.Config{})
	f.p.Hold(2*time.Second, slowDown{2 * time.Second})
	f.clk.Advance(2 * time.Second)
	f.call(nil) // the probe succeeds: open
	f.clk.Advance(time.Second)
	f.call(slowDown{time.Second}) // within 2s of reopening
	if got := f.state().LastPause; got != 4*time.Second {
		t.Fatalf("pause %v; want 4s (2s × 2)", got)
	}
}

func TestWaitEndsWithTheContext(t *testing.T) {
	f := newFixture(t, pause.Config{})
	f.p.Hold(time.Minute, slowDown{time.Minute})
	ctx, cancel := context.WithCancel(f.ctx)
	ch := f.enterAsync(ctx)
	cancel()
	if e := <-ch; !errors.Is(e.err, context.Canceled) {
		t.Fatalf("%+v; want context.Canceled", e)
	}
	if s := f.state(); s.Waiting != 0 {
		t.Fatalf("%d waiting; want 0", s.Waiting)
	}
}

// TestInconclusiveProbePassesOn: a probe that never reached the server (an
// inner guard rejected it) hands the probe role to the next waiter.
func TestInconclusiveProbePassesOn(t *testing.T) {
	f := newFixture(t, pause.Config{})
	f.p.Hold(time.Second, slowDown{time.Second})
	first := f.enterAsync(f.ctx)
	second := f.enterAsync(f.ctx)
	f.clk.Advance(time.Second)
	probe := <-first
	f.p.Exit(probe.pm, resil.Reject("ratelimit", "", errors.New("limited"), f.clk.Now(), time.Time{}))
	if e := <-second; e.pm.Token != 1 {
		t.Fatalf("second: %+v; want the probe role", e)
	}
}

// TestDeadlineBeforeReopeningRejectsAtOnce uses the real clock: a caller
// whose deadline falls before the gate opens is rejected without waiting,
// with the opening as its retry-after.
func TestDeadlineBeforeReopeningRejectsAtOnce(t *testing.T) {
	p, err := pause.New(pause.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	p.Hold(time.Hour, errors.New("too many connections"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = p.Enter(ctx)
	at, ok := resilience.RetryAfter(err)
	if !errors.Is(err, pause.ErrPaused) || !ok || !at.Equal(p.State().Until) {
		t.Fatalf("err %v (retry at %v); want ErrPaused until the gate opens", err, at)
	}
}

// TestNoWaitRejectsAtTheGateAndBehindAPausedProbe: with NoWait, a caller
// that meets the closed gate is rejected at once with the opening time
// (whatever the clock); callers that arrive while the probe runs wait for
// its outcome, and when the probe meets the signal again they are rejected
// at once with the new, escalated opening instead of waiting it out.
func TestNoWaitRejectsAtTheGateAndBehindAPausedProbe(t *testing.T) {
	f := newFixture(t, pause.Config{Name: "db", NoWait: true})
	f.p.Hold(time.Second, slowDown{time.Second})
	_, err := f.p.Enter(f.ctx)
	var re *resilience.RejectedError
	if !errors.Is(err, pause.ErrPaused) || !errors.As(err, &re) || re.Name != "db" || !re.RetryAt.Equal(f.state().Until) {
		t.Fatalf("Enter while paused: %v; want a rejection by db until the opening", err)
	}
	f.clk.Advance(time.Second)
	probe, err := f.p.Enter(f.ctx)
	if err != nil || probe.Token != 1 {
		t.Fatalf("Enter once the pause is over: %+v, %v; want the probe", probe, err)
	}
	first, second := f.enterAsync(f.ctx), f.enterAsync(f.ctx)
	f.p.Exit(probe, slowDown{time.Second}) // paused again: 1s × 2
	s := f.state()
	if s.LastPause != 2*time.Second || s.Waiting != 0 {
		t.Fatalf("state %+v; want paused 2s, nobody waiting", s)
	}
	for i, ch := range []<-chan entered{first, second} {
		e := <-ch
		if at, _ := resilience.RetryAfter(e.err); !errors.Is(e.err, pause.ErrPaused) || !at.Equal(s.Until) {
			t.Fatalf("caller %d behind the probe: %+v; want a rejection until %v", i+1, e, s.Until)
		}
	}
	f.clk.Advance(2 * time.Second)
	probe, _ = f.p.Enter(f.ctx)
	third := f.enterAsync(f.ctx)
	f.p.Exit(probe, nil) // the server answered: open
	if e := <-third; e.err != nil || e.pm.Token != 0 {
		t.Fatalf("caller behind a probe that succeeded: %+v; want it through", e)
	}
}

// TestRepauseRejectsWaitersWhoseDeadlineComesFirst uses the real clock:
// callers wait behind the running probe; when it meets the signal again,
// one whose deadline falls before the new opening is rejected at once
// (as it would be on arriving at the closed gate), one without a deadline
// keeps waiting.
func TestRepauseRejectsWaitersWhoseDeadlineComesFirst(t *testing.T) {
	queued := make(chan error, 2)
	p, err := pause.New(pause.Config{Classify: classify, Listener: func(e resilience.Event) {
		if e.Kind == resilience.EventQueued {
			queued <- nil
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	bound := testctx.New(t)
	p.Hold(time.Nanosecond, slowDown{time.Nanosecond})
	probe, err := p.Enter(bound) // the pause is over by now: the probe
	if err != nil || probe.Token != 1 {
		t.Fatalf("Enter: %+v, %v; want the probe", probe, err)
	}
	short, cancelShort := context.WithTimeout(bound, time.Minute)
	defer cancelShort()
	long, cancelLong := context.WithCancel(context.Background()) // no deadline: the test cancels it
	defer cancelLong()
	shortDone, longDone := make(chan error, 1), make(chan error, 1)
	wait := func(ch <-chan error, what string) error {
		t.Helper()
		select {
		case err := <-ch:
			return err
		case <-bound.Done():
			t.Fatalf("%s: still waiting", what)
			return nil
		}
	}
	go func() { _, err := p.Enter(short); shortDone <- err }()
	wait(queued, "the waiter with a minute left did not queue")
	go func() { _, err := p.Enter(long); longDone <- err }()
	wait(queued, "the waiter without a deadline did not queue")
	p.Exit(probe, slowDown{time.Hour}) // paused again for MaxPause, 15m
	if s := p.State(); s.Waiting != 1 {
		t.Fatalf("%d waiting behind a 15m pause; want only the one without a deadline", s.Waiting)
	}
	err = wait(shortDone, "the waiter with a minute left")
	if at, _ := resilience.RetryAfter(err); !errors.Is(err, pause.ErrPaused) || !at.Equal(p.State().Until) {
		t.Fatalf("waiter with a minute left: %v; want a rejection until the opening in 15m", err)
	}
	cancelLong()
	if err := wait(longDone, "the waiter without a deadline, cancelled"); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter without a deadline: %v; want it waiting until cancelled", err)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for field, c := range map[string]pause.Config{
		"Escalation":   {Escalation: 0.5},
		"MaxPause":     {MaxPause: -1},
		"DefaultPause": {DefaultPause: -1},
	} {
		_, err := pause.New(c)
		var ce *resilience.ConfigError
		if !errors.As(err, &ce) || ce.Field != field {
			t.Errorf("error %v; want a ConfigError on %s", err, field)
		}
	}
}

// End ends a pause before its time, as if its time had come: the next
// caller is the probe. On an open gate it does nothing.
func TestEndEndsAPauseBeforeItsTime(t *testing.T) {
	f := newFixture(t, pause.Config{})
	f.p.End() // open: nothing
	if s := f.p.State(); !s.Open || s.Pauses != 0 {
		t.Fatalf("End on an open gate: %+v; want open, no pause", s)
	}
	f.p.Hold(time.Hour, slowDown{time.Hour})
	if !f.p.State().Holding() {
		t.Fatal("not holding after Hold")
	}
	f.p.End()
	if s := f.p.State(); s.Holding() || !s.Probing {
		t.Fatalf("after End: %+v; want its probe about to run", s)
	}
	pm, err := f.p.Enter(f.ctx)
	if err != nil {
		t.Fatalf("Enter after End = %v; want the probe through", err)
	}
	f.p.Exit(pm, nil)
	if s := f.p.State(); !s.Open {
		t.Fatalf("after the probe succeeded: %+v; want open", s)
	}
}
