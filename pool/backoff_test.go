package pool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// After a failure, creations back off for the pool as a whole: 64 callers
// share the outcome of the burst of creations made for them, callers that
// come while creations are held back fail at once without an attempt, and
// each backoff delay lets one attempt through, not one per caller.
func TestCreationsBackOffForThePoolAsAWhole(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 10, AcquireTimeout: time.Hour})
	boom := errors.New("connection refused")
	h.f.set(func(f *fakeFactory) { f.createErr = boom })
	results := make(chan takeResult, 64)
	for range 64 {
		go func() {
			hd, err := h.p.Take(context.Background())
			results <- takeResult{hd, err}
		}()
	}
	for range 64 { // an hour to go, yet nothing can serve them: each gets the failure
		if r := h.result(results); !errors.Is(r.err, boom) {
			t.Fatalf("Take = %v, want the factory's error", r.err)
		}
	}
	burst := h.f.attempts.Load() // made before the first failure was known
	if burst < 1 || burst > 10 {
		t.Fatalf("%d attempts before the first failure, want 1 to MaxObjects", burst)
	}
	h.ev.wait(t, "created", int(burst))
	s := h.p.Stats()
	if d := s.NextCreateAttempt.Sub(h.clk.Now()); d < defaultBackoffInitial/2 || d > defaultBackoffInitial {
		t.Fatalf("next attempt in %v, want within [Initial/2, Initial] = [%v, %v]", d, defaultBackoffInitial/2, defaultBackoffInitial)
	}
	if !errors.Is(s.LastCreateError, boom) || int64(s.CreateFailuresInARow) != burst {
		t.Fatalf("stats: last error %v, %d in a row; want %v, %d", s.LastCreateError, s.CreateFailuresInARow, boom, burst)
	}
	var ce *CreateError
	for i := range 8 {
		before := h.f.attempts.Load()
		if _, err := h.p.Take(context.Background()); !errors.As(err, &ce) || !ce.FailedFast || !errors.Is(err, boom) {
			t.Fatalf("Take while held back = %v, want the last failure, failed fast", err)
		}
		if h.f.attempts.Load() != before {
			t.Fatal("a Take while creations are held back made an attempt")
		}
		h.clk.Advance(defaultBackoffMax)
		h.ev.wait(t, "retry", 1)
		if _, err := h.p.Take(context.Background()); !errors.As(err, &ce) || ce.FailedFast || !errors.Is(err, boom) {
			t.Fatalf("Take after the delay = %v, want its attempt's failure", err)
		}
		h.ev.wait(t, "created", 1)
		if got, want := h.f.attempts.Load(), burst+int64(i)+1; got != want {
			t.Fatalf("after %d delays: %d attempts, want %d (one per delay)", i+1, got, want)
		}
	}
	h.f.set(func(f *fakeFactory) { f.createErr = nil })
	h.clk.Advance(defaultBackoffMax)
	h.ev.wait(t, "retry", 1)
	var held []Handle[*fakeObj]
	for range 10 { // a success ends the backoff: the pool fills at once
		held = append(held, h.take())
	}
	if s := h.p.Stats(); s.CreateFailuresInARow != 0 || !s.NextCreateAttempt.IsZero() || !errors.Is(s.LastCreateError, boom) {
		t.Fatalf("stats after recovery: %d in a row, next attempt %v, last error %v; want 0, none, the last failure kept",
			s.CreateFailuresInARow, s.NextCreateAttempt, s.LastCreateError)
	}
	if n := h.f.attempts.Load(); n != burst+8+10 {
		t.Fatalf("%d attempts, want %d: the burst, 8 probes, 10 successes", n, burst+8+10)
	}
	for _, hd := range held {
		h.giveBack(hd)
	}
}

// A caller whose creation fails while nothing is alive and nothing else is
// being created gets that failure at once, whatever its deadline, as a
// plain driver's caller gets its dial's error: a wrong password or a server
// that is down must not hold a request for its whole deadline. A caller
// that comes next, while creations are held back, fails at once too, with
// no attempt.
func TestFailureWithNothingAliveReachesTheCallerAtOnce(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		ctx  func(h *harness) context.Context
	}{
		{"long context deadline", Config{}, func(h *harness) context.Context { return h.withDeadline(time.Hour) }},
		{"long acquire timeout", Config{AcquireTimeout: time.Hour}, func(*harness) context.Context { return context.Background() }},
		{"no deadline", Config{}, func(*harness) context.Context { return context.Background() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.MaxObjects = 4
			h := newHarness(t, c.cfg)
			boom := errors.New("password authentication failed")
			h.f.set(func(f *fakeFactory) { f.createErr = boom })
			r := h.result(h.takeAsync(c.ctx(h)))
			var ce *CreateError
			if !errors.As(r.err, &ce) || ce.FailedFast || !errors.Is(r.err, boom) {
				t.Fatalf("Take = %v, want its own attempt's *CreateError at once", r.err)
			}
			attempts := h.f.attempts.Load()
			r = h.result(h.takeAsync(c.ctx(h)))
			if !errors.As(r.err, &ce) || !ce.FailedFast || !errors.Is(r.err, boom) {
				t.Fatalf("next Take = %v, want the last failure, failed fast", r.err)
			}
			if h.f.attempts.Load() != attempts {
				t.Fatal("the caller that failed fast caused an attempt")
			}
		})
	}
}

// failOnce makes the factory fail with err and has a Take see it (a Take
// that cannot wait for another attempt).
func (h *harness) failOnce(err error) {
	h.t.Helper()
	h.f.set(func(f *fakeFactory) { f.createErr = err })
	if _, gotErr := h.p.Take(h.withDeadline(time.Millisecond)); !errors.Is(gotErr, err) {
		h.t.Fatalf("Take = %v, want the factory's error", gotErr)
	}
}

// While creations are held back with nothing alive, a caller fails at once
// with the last failure and when to retry, and causes no attempt.
func TestCallerFailsFastWhileCreationsAreHeldBack(t *testing.T) {
	boom := errors.New("connection refused")
	for _, c := range []struct {
		name string
		cfg  Config
		ctx  func(h *harness) context.Context
	}{
		{"context deadline", Config{}, func(h *harness) context.Context { return h.withDeadline(400 * time.Millisecond) }},
		{"acquire timeout", Config{AcquireTimeout: 400 * time.Millisecond}, func(*harness) context.Context { return context.Background() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.MaxObjects, c.cfg.BackoffInitial, c.cfg.BackoffMax = 4, time.Second, time.Second
			h := newHarness(t, c.cfg)
			h.failOnce(boom)
			next := h.p.Stats().NextCreateAttempt // at least 500ms away
			attempts := h.f.attempts.Load()
			_, err := h.p.Take(c.ctx(h))
			var ce *CreateError
			if !errors.As(err, &ce) || !ce.FailedFast || !errors.Is(err, boom) || ce.Failures != 1 {
				t.Fatalf("Take = %v, want a *CreateError failed fast with the factory's error", err)
			}
			var ra interface{ RetryAfter() time.Time }
			if !errors.As(err, &ra) || !ra.RetryAfter().Equal(next) {
				t.Fatalf("RetryAfter = %v, want the next attempt %v", ra.RetryAfter(), next)
			}
			if !strings.Contains(err.Error(), "failed fast") || !strings.Contains(err.Error(), boom.Error()) {
				t.Fatalf("error %q does not say it failed fast and why", err)
			}
			if h.f.attempts.Load() != attempts {
				t.Fatal("a caller that failed fast caused an attempt")
			}
			if s := h.p.Stats(); s.FailedFast != 1 {
				t.Fatalf("FailedFast = %d, want 1", s.FailedFast)
			}
		})
	}
}

// keepOneAndFail takes an object and keeps it alive, then makes the factory
// fail with err for a caller that sees the failure (at once without a
// deadline; with one, it waits on and is cancelled once the attempt failed).
func (h *harness) keepOneAndFail(err error) Handle[*fakeObj] {
	h.t.Helper()
	kept := h.take()
	h.f.set(func(f *fakeFactory) { f.createErr = err })
	ctx, cancel := context.WithCancel(context.Background())
	w := h.takeAsync(ctx)
	waitUntil(h.t, "the attempt failed", func() bool { return h.p.Stats().LastCreateError != nil })
	cancel()
	if r := h.result(w); !errors.Is(r.err, err) {
		h.t.Fatalf("Take = %v, want the factory's error", r.err)
	}
	return kept
}

// While creations are held back, a caller that an object alive may serve
// waits, within its deadline, for a give-back or the next attempt.
func TestCallerWaitsWhileAnObjectAliveMayServeIt(t *testing.T) {
	t.Run("give-back", func(t *testing.T) {
		h := newHarness(t, Config{MaxObjects: 4, BackoffInitial: time.Second, BackoffMax: time.Second})
		kept := h.keepOneAndFail(errors.New("connection refused"))
		w := h.takeAsync(h.withDeadline(2 * time.Second))
		waitUntil(t, "it waits", func() bool { return h.p.Stats().Waiting == 1 })
		h.giveBack(kept)
		r := h.result(w)
		if r.err != nil || r.h.Value() != kept.Value() {
			t.Fatalf("Take = %v, want the object given back", r.err)
		}
		h.giveBack(r.h)
	})
	t.Run("next attempt", func(t *testing.T) {
		h := newHarness(t, Config{MaxObjects: 4, BackoffInitial: time.Second, BackoffMax: time.Second})
		kept := h.keepOneAndFail(errors.New("connection refused"))
		w := h.takeAsync(h.withDeadline(2 * time.Second))
		waitUntil(t, "it waits", func() bool { return h.p.Stats().Waiting == 1 })
		h.f.set(func(f *fakeFactory) { f.createErr = nil })
		h.clk.Advance(time.Second)
		r := h.result(w)
		if r.err != nil {
			t.Fatalf("Take after the next attempt = %v", r.err)
		}
		h.giveBack(r.h)
		h.giveBack(kept)
	})
}

// A caller without any deadline that waits while an object is alive gets
// the outcome of the next attempt: its Take ends even though the factory
// keeps failing.
func TestCallerWithoutDeadlineGetsTheNextAttemptsFailure(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 4, BackoffInitial: time.Second, BackoffMax: time.Second})
	boom := errors.New("connection refused")
	kept := h.keepOneAndFail(boom)
	w := h.takeAsync(context.Background())
	waitUntil(t, "it waits", func() bool { return h.p.Stats().Waiting == 1 })
	if h.f.attempts.Load() != 2 {
		t.Fatal("an attempt was made before the backoff ended")
	}
	h.clk.Advance(time.Second)
	r := h.result(w)
	var ce *CreateError
	if !errors.As(r.err, &ce) || ce.FailedFast || ce.Failures != 2 || !errors.Is(r.err, boom) {
		t.Fatalf("Take = %v, want the second attempt's *CreateError", r.err)
	}
	if n := h.f.attempts.Load(); n != 3 {
		t.Fatalf("%d attempts, want 3", n)
	}
	h.giveBack(kept)
}

// A wait ended by the caller's deadline while creations fail says which
// bound ended it and names the last creation failure.
func TestWaitEndedWhileCreationsFailNamesTheLastFailure(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 3, AcquireTimeout: 3 * time.Second, BackoffInitial: time.Second, BackoffMax: time.Second})
	boom := errors.New("connection refused")
	kept := h.keepOneAndFail(boom) // an object alive: the callers wait
	gate := make(chan struct{})
	h.f.set(func(f *fakeFactory) { f.gate = gate }) // the next attempt hangs
	ctx, cancel := context.WithCancel(context.Background())
	timed, cancelled := h.takeAsync(context.Background()), h.takeAsync(ctx)
	waitUntil(t, "both wait", func() bool { return h.p.Stats().Waiting == 2 })
	h.clk.waitTimers(t, 3)     // the gate's, and both waits' AcquireTimeout from now
	h.clk.Advance(time.Second) // the probe starts, for the first in line, and hangs
	h.ev.wait(t, "retry", 1)
	cancel()
	r := h.result(cancelled)
	var we *WaitError
	if !errors.As(r.err, &we) || !errors.Is(r.err, context.Canceled) || !errors.Is(r.err, boom) || we.Failures != 1 {
		t.Fatalf("cancelled Take = %v, want a *WaitError with context.Canceled and the last failure", r.err)
	}
	var ce *CreateError
	if errors.As(r.err, &ce) {
		t.Fatal("a wait ended by its context must not look like a failed creation")
	}
	h.clk.Advance(2 * time.Second) // AcquireTimeout
	r = h.result(timed)
	if !errors.As(r.err, &we) || !errors.Is(r.err, ErrAcquireTimeout) || !errors.Is(r.err, boom) || !we.Timeout() {
		t.Fatalf("timed-out Take = %v, want a *WaitError with ErrAcquireTimeout and the last failure", r.err)
	}
	if !strings.Contains(r.err.Error(), "AcquireTimeout") || !strings.Contains(r.err.Error(), boom.Error()) {
		t.Fatalf("error %q does not name both", r.err)
	}
	h.f.set(func(f *fakeFactory) { f.createErr = nil })
	close(gate)
	h.giveBack(kept)
}

// While failing, at most one attempt is in flight, however many callers
// wait.
func TestOneAttemptInFlightWhileFailing(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 8, BackoffInitial: time.Second, BackoffMax: time.Second})
	h.failOnce(errors.New("connection refused"))
	gate := make(chan struct{})
	h.f.set(func(f *fakeFactory) { f.gate, f.createErr = gate, nil })
	h.clk.Advance(time.Second) // the gate opens: the first caller's creation is the probe
	h.ev.wait(t, "retry", 1)
	var results []chan takeResult
	for range 6 {
		results = append(results, h.takeAsync(context.Background()))
	}
	waitUntil(t, "all wait", func() bool { return h.p.Stats().Waiting == 6 })
	waitUntil(t, "the probe is made", func() bool { return h.f.attempts.Load() == 2 })
	more := h.takeAsync(context.Background())
	waitUntil(t, "the newcomer waits", func() bool { return h.p.Stats().Waiting == 7 })
	if s := h.p.Stats(); s.Creating != 1 || h.f.attempts.Load() != 2 {
		t.Fatalf("%d creating, %d attempts; want the probe alone in flight", s.Creating, h.f.attempts.Load())
	}
	close(gate) // the probe succeeds: the others start at once
	var held []Handle[*fakeObj]
	for _, r := range append(results, more) {
		res := h.result(r)
		if res.err != nil {
			t.Fatal(res.err)
		}
		held = append(held, res.h)
	}
	for _, hd := range held {
		h.giveBack(hd)
	}
}

// A Create error carrying a retry time (a breaker's rejection) fails every
// caller waiting for a creation with it, Takes that need a creation fail
// fast with it until then, and no attempt is made before it.
func TestRetryAfterErrorFailsTheWaitersAndHoldsCreations(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 4, MaxConcurrentCreates: 1, AcquireTimeout: time.Hour})
	gate := make(chan struct{})
	until := h.clk.Now().Add(5 * time.Second)
	rejected := &retryAfterErr{at: until}
	h.f.set(func(f *fakeFactory) { f.gate, f.createErr = gate, rejected })
	var results []chan takeResult
	for range 3 { // one creation in flight, two pending behind MaxConcurrentCreates
		results = append(results, h.takeAsync(context.Background()))
	}
	waitUntil(t, "all wait", func() bool { return h.p.Stats().Waiting == 3 })
	close(gate)
	for i, r := range results {
		res := h.result(r)
		var ce *CreateError
		if !errors.As(res.err, &ce) || !errors.Is(res.err, rejected) || !ce.RetryAfter().Equal(until) {
			t.Fatalf("caller %d: Take = %v, want a *CreateError with the rejection and its retry time", i, res.err)
		}
	}
	h.f.set(func(f *fakeFactory) { f.gate, f.createErr = nil, nil })
	attempts := h.f.attempts.Load()
	_, err := h.p.Take(context.Background())
	var ce *CreateError
	if !errors.As(err, &ce) || !ce.FailedFast || !errors.Is(err, rejected) {
		t.Fatalf("Take during the pause = %v, want the rejection, failed fast", err)
	}
	if h.f.attempts.Load() != attempts {
		t.Fatal("an attempt was made before the retry time")
	}
	h.clk.Advance(5 * time.Second)
	h.ev.wait(t, "retry", 1)
	h.giveBack(h.take())
}

// IgnoreRetryAfter treats such an error as any other failure.
func TestIgnoreRetryAfter(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2, IgnoreRetryAfter: true})
	rejected := &retryAfterErr{at: h.clk.Now().Add(time.Hour)}
	h.failOnce(rejected)
	h.f.set(func(f *fakeFactory) { f.createErr = nil })
	h.afterBackoff() // a second at most, not an hour
	h.giveBack(h.take())
}

// With BackoffDisabled, each failure goes to its caller and the next
// caller's creation is tried at once, as before.
func TestBackoffDisabled(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2, BackoffDisabled: true})
	boom := errors.New("connection refused")
	for i := range 3 {
		h.failOnce(boom)
		if n := h.f.attempts.Load(); n != int64(i+1) {
			t.Fatalf("%d attempts after %d Takes", n, i+1)
		}
	}
	if s := h.p.Stats(); s.CreateFailuresInARow != 3 || !s.NextCreateAttempt.IsZero() {
		t.Fatalf("stats: %d in a row, next attempt %v; want 3, none", s.CreateFailuresInARow, s.NextCreateAttempt)
	}
	h.f.set(func(f *fakeFactory) { f.createErr = nil })
	h.giveBack(h.take())
}

// Failures are logged at a bounded rate: the first at once, then one line
// per LogInterval with the count of failures it stands for, and the
// recovery.
func TestCreateFailuresAreLoggedAtABoundedRate(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2, AcquireTimeout: time.Hour, BackoffInitial: time.Second, BackoffMax: time.Second, FailureLogInterval: 10 * time.Second})
	const failures = 30
	h.failEverySecond(failures)
	if n := h.f.attempts.Load(); n != failures {
		t.Fatalf("%d attempts, want %d", n, failures)
	}
	lines := strings.Count(h.log.String(), "create failed")
	if lines < 2 || lines > 4 { // the first at once, then one each 10s of the 15-30s
		t.Fatalf("%d lines for %d failures over about %d s, want 2 to 4:\n%s", lines, failures, failures, h.log.String())
	}
	h.f.set(func(f *fakeFactory) { f.createErr = nil })
	h.clk.Advance(10 * time.Second)
	h.ev.wait(t, "retry", 1)
	h.giveBack(h.take())
	h.clk.Tick(t, time.Second) // a tick reports what no line has
	var counted int
	for line := range strings.Lines(h.log.String()) {
		var n int
		if i := strings.Index(line, " failures="); i >= 0 {
			fmt.Sscan(line[i+len(" failures="):], &n)
		}
		counted += n
	}
	if counted != failures {
		t.Fatalf("the lines count %d failures, want %d:\n%s", counted, failures, h.log.String())
	}
	if !strings.Contains(h.log.String(), "recovered=true") {
		t.Fatalf("no line says creations recovered:\n%s", h.log.String())
	}
	for line := range strings.Lines(h.log.String()) {
		if strings.Contains(line, "recovered=true") && !strings.Contains(line, `level=INFO msg="create recovered"`) {
			t.Errorf("a recovery logged as something else: %s", line)
		}
	}
}

// At its retry time the gate is open: a caller that comes at that moment
// gets the attempt, not the old failure at once. (With a real clock the
// actor may see such a Take before its own timer: hopeless() reads the
// clock; integration/sqldriver TestNativePgxThroughTheGuard met it.)
func TestCallerAtTheRetryTimeGetsTheAttempt(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2, BackoffInitial: time.Second, BackoffMax: time.Second})
	boom := errors.New("connection refused")
	for i := range 40 {
		h.f.set(func(f *fakeFactory) { f.createErr = boom })
		_, err := h.p.Take(context.Background())
		var ce *CreateError
		if !errors.As(err, &ce) || ce.RetryAt.IsZero() {
			t.Fatalf("cycle %d: Take = %v, want a *CreateError with the next attempt's time", i, err)
		}
		h.f.set(func(f *fakeFactory) { f.createErr = nil })
		h.clk.Advance(ce.RetryAt.Sub(h.clk.Now()))
		hd, err := h.p.Take(context.Background())
		if err != nil {
			t.Fatalf("cycle %d: Take at the retry time = %v, want the attempt's object", i, err)
		}
		if err := hd.Discard(); err != nil {
			t.Fatal(err)
		}
	}
}

// So is the gate held by an error carrying a retry time (a breaker's
// rejection): a caller that comes at that time, before the actor has
// handled its timer, waits for the attempt the timer starts, and is not
// failed at once with the rejection and a retry time already past.
// integration/sqldriver TestNativePgxThroughTheGuard met it: it waited for
// the breaker's half-open time, and its Take failed fast naming that time.
func TestCallerAtTheRejectionsRetryTimeGetsTheAttempt(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2})
	rejected := &retryAfterErr{at: h.clk.Now().Add(200 * time.Millisecond)}
	h.f.set(func(f *fakeFactory) { f.createErr = rejected })
	if _, err := h.p.Take(context.Background()); !errors.Is(err, rejected) {
		t.Fatalf("Take = %v, want the rejection", err)
	}
	h.f.set(func(f *fakeFactory) { f.createErr = nil })
	h.clk.moveLate(200 * time.Millisecond)
	r := h.takeAsync(context.Background())
	waitUntil(t, "the Take waits or fails", func() bool { return !pending(r) || h.p.Stats().Waiting == 1 && blockedInTake(1) })
	if !pending(r) {
		t.Fatalf("Take at the retry time = %v, want it to wait for the attempt", h.result(r).err)
	}
	h.clk.fireLate()
	res := h.result(r)
	if res.err != nil {
		t.Fatalf("Take at the retry time = %v, want the attempt's object", res.err)
	}
	h.giveBack(res.h)
}

// A recovery that comes before a line may be logged is reported by the
// next tick as a recovery, with the failures no line reported.
func TestRecoveryReportedByATickSaysRecovered(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2, AcquireTimeout: time.Hour, BackoffInitial: time.Second, BackoffMax: time.Second, FailureLogInterval: 10 * time.Second})
	h.failEverySecond(3) // the first failure at Debug (its caller has it), the second at once (the run persists), the third is not
	h.f.set(func(f *fakeFactory) { f.createErr = nil })
	h.clk.Advance(time.Second)
	h.ev.wait(t, "retry", 1)
	h.giveBack(h.take())          // recovered within the log interval: no line yet
	h.clk.Tick(t, 10*time.Second) // the tick reports it
	h.ev.wait(t, "tick", 1)
	lines := strings.Split(strings.TrimSpace(h.log.String()), "\n")
	last := lines[len(lines)-1]
	if len(lines) != 2 || !strings.Contains(last, `level=INFO msg="create recovered"`) || !strings.Contains(last, "failures=1") {
		t.Fatalf("log:\n%s\nwant the first failure, then the recovery with the one failure no line reported", h.log.String())
	}
}

// failEverySecond makes the factory refuse and has n Takes see n attempts
// fail, one a second (a backoff of 1 s), each waiting for the pool's next
// attempt.
func (h *harness) failEverySecond(n int) {
	h.t.Helper()
	h.f.set(func(f *fakeFactory) { f.createErr = errors.New("connection refused") })
	if _, err := h.p.Take(context.Background()); err == nil {
		h.t.Fatal("Take succeeded on a failing factory")
	}
	h.ev.wait(h.t, "created", 1)
	for range n - 1 {
		h.failAgain()
	}
}

// failAgain has a Take see the attempt after the backoff fail.
func (h *harness) failAgain() {
	h.t.Helper()
	h.heldBack()
	h.clk.Advance(time.Second)
	h.ev.wait(h.t, "retry", 1)
	if _, err := h.p.Take(context.Background()); err == nil {
		h.t.Fatal("Take succeeded on a failing factory")
	}
	h.ev.wait(h.t, "created", 1)
}
